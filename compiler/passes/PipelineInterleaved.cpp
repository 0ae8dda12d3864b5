//===- PipelineInterleaved.cpp - the interleaved schedule's parts ---------===//
//
// The interleaved schedule (docs/pipeline.md#interleaved): each stacked
// parameter stored by rounds [round, in_round, ...], the microbatches'
// entries into stage 0 (each group of P in its first round), the tick's 0/1
// selecting each stage's round, and the ticks at which stage 0 takes the last
// stage's result back for a microbatch's next round.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/Pipeliner.h"

namespace meshc::pipeline {

TensorType replaceDim(TensorType type, StringAttr from, ArrayRef<NamedDim> to) {
  SmallVector<NamedDim> dims;
  for (NamedDim dim : type.getDims()) {
    if (dim.name == from)
      dims.append(to.begin(), to.end());
    else
      dims.push_back(dim);
  }
  return withDims(type, dims);
}

Value Pipeliner::toEntries(OpEmitter &emit, Value value) {
  OpBuilder &b = emit.builder();
  Location loc = loop.getLoc();
  int64_t groups = s.microbatches / s.stages, group = s.rounds * s.stages;
  // [micro] -> [group, in_group] -> [group, slot] (the first round of
  // each group's slots) -> [entry].
  Value cut = mtf::SplitDimOp::create(
                  b, loc,
                  replaceDim(tensorType(value), s.micro,
                             {{s.group, groups}, {s.inGroup, s.stages}}),
                  value, s.micro, nullptr)
                  .getResult();
  Value slots =
      emit
          .tag(mtf::WindowOp::create(
              b, loc, replaceDim(tensorType(cut), s.inGroup, {{s.slot, group}}),
              cut, s.inGroup.getValue(), s.slot.getValue(), 0))
          ->getResult(0);
  return mtf::MergeDimsOp::create(
             b, loc,
             replaceDim(replaceDim(tensorType(slots), s.slot, {}), s.group,
                        {{s.entry, groups * group}}),
             slots, s.group, nullptr)
      .getResult();
}

Value Pipeliner::fromEntries(OpEmitter &emit, Value value) {
  OpBuilder &b = emit.builder();
  Location loc = loop.getLoc();
  int64_t groups = s.microbatches / s.stages, group = s.rounds * s.stages;
  Value cut =
      mtf::SplitDimOp::create(b, loc,
                              replaceDim(tensorType(value), s.entry,
                                         {{s.group, groups}, {s.slot, group}}),
                              value, s.entry, nullptr)
          .getResult();
  Value first =
      emit.tag(mtf::WindowOp::create(
                   b, loc,
                   replaceDim(tensorType(cut), s.slot, {{s.inGroup, s.stages}}),
                   cut, s.slot.getValue(), s.inGroup.getValue(), 0))
          ->getResult(0);
  return mtf::MergeDimsOp::create(
             b, loc,
             replaceDim(replaceDim(tensorType(first), s.inGroup, {}), s.group,
                        {{s.micro, s.microbatches}}),
             first, s.group, nullptr)
      .getResult();
}

Value Pipeliner::byEntryRound(OpEmitter &emit, Value perRound) {
  OpBuilder &b = emit.builder();
  Location loc = loop.getLoc();
  int64_t groups = s.microbatches / s.stages;
  // [group, entry_round, in_group, ...] -> [group, slot, ...] -> [entry].
  SmallVector<NamedDim> dims{
      {s.group, groups}, {s.entryRound, s.rounds}, {s.inGroup, s.stages}};
  for (NamedDim dim : tensorType(perRound).getDims())
    if (dim.name != s.entryRound)
      dims.push_back(dim);
  Value spread =
      emit.broadcastTo(perRound, withDims(tensorType(perRound), dims));
  Value slots = mtf::MergeDimsOp::create(
                    b, loc,
                    replaceDim(replaceDim(tensorType(spread), s.inGroup, {}),
                               s.entryRound, {{s.slot, s.rounds * s.stages}}),
                    spread, s.entryRound, nullptr)
                    .getResult();
  return mtf::MergeDimsOp::create(
             b, loc,
             replaceDim(replaceDim(tensorType(slots), s.slot, {}), s.group,
                        {{s.entry, s.rounds * s.microbatches}}),
             slots, s.group, nullptr)
      .getResult();
}

Value Pipeliner::roundSelect(OpEmitter &emit, Type element) {
  OpBuilder &b = emit.builder();
  Location loc = loop.getLoc();
  // [entry_round, round]: the identity; then [entry, round]: 1 where the
  // entry is a block of that round.
  Value identity;
  for (int64_t v = 0; v < s.rounds; ++v) {
    Value term =
        emit
            .tag(mtf::EinsumOp::create(
                b, loc,
                ValueRange{unitVector(emit, element, s.entryRound, s.rounds, v),
                           unitVector(emit, element, s.round, s.rounds, v)},
                ArrayRef<StringRef>{s.entryRound.getValue(),
                                    s.round.getValue()}))
            ->getResult(0);
    identity = identity ? emit.add(identity, term) : term;
  }
  Value byEntry = byEntryRound(emit, identity);
  // Stage s runs entry e at tick e + s.
  Value select;
  for (int64_t stage = 0; stage < s.stages; ++stage) {
    Value ticks =
        emit.tag(mtf::WindowOp::create(b, loc, byEntry, s.entry.getValue(),
                                       s.ticksDim.getValue(), s.ticks, -stage))
            ->getResult(0);
    Value term =
        emit
            .tag(mtf::EinsumOp::create(
                b, loc,
                ValueRange{ticks,
                           unitVector(emit, element, s.stage, s.stages, stage)},
                ArrayRef<StringRef>{s.ticksDim.getValue(), s.round.getValue(),
                                    s.stage.getValue()}))
            ->getResult(0);
    select = select ? emit.add(select, term) : term;
  }
  return select;
}

Value Pipeliner::wrapTicks(OpEmitter &emit, Type element) {
  OpBuilder &b = emit.builder();
  Location loc = loop.getLoc();
  // 1 in the rounds after the first: the entries that take the last
  // stage's result of the tick before.
  Value later = emit.sub(
      emit.constant(1.0, TensorType::get(loop.getContext(),
                                         {NamedDim{s.entryRound, s.rounds}},
                                         element)),
      unitVector(emit, element, s.entryRound, s.rounds, 0));
  // Entry e enters at tick e: the wrap is at tick e - 1.
  return emit
      .tag(mtf::WindowOp::create(b, loc, byEntryRound(emit, later),
                                 s.entry.getValue(), s.ticksDim.getValue(),
                                 s.ticks, 1))
      ->getResult(0);
}

SmallVector<SmallVector<Value>> Pipeliner::blocksOfRounds(OpEmitter &emit) {
  OpBuilder &b = emit.builder();
  Location loc = loop.getLoc();
  SmallVector<SmallVector<Value>> weights;
  for (Value stacked : loop.getStacked()) {
    TensorType type = tensorType(stacked);
    ArrayRef<NamedDim> rest = type.getDims().drop_front();
    // The parameter itself is stored by rounds: element [v, i, ...] is
    // layer v * L / V + i, as in [layers, ...] (check() made sure only this
    // repeat reads it). The layout cuts in_round as it would cut the
    // layers, so each device holds its stage's block of every round.
    SmallVector<NamedDim> stored{{s.round, s.rounds},
                                 {s.inRound, s.roundLayers}};
    stored.append(rest.begin(), rest.end());
    SmallVector<OpOperand *> others;
    for (OpOperand &use : stacked.getUses())
      if (use.getOwner() != loop.getOperation())
        others.push_back(&use);
    stacked.setType(withDims(type, stored));
    if (!others.empty()) {
      // Its other readers read it as the model declares it (merged back:
      // a gather where the stages are split).
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointAfter(stacked.getDefiningOp());
      Value merged =
          mtf::MergeDimsOp::create(b, loc, type, stacked, s.round, nullptr)
              .getResult();
      for (OpOperand *use : others)
        use->set(merged);
    }
    // [round, stage, layer=K, ...]: each stage's block of each round,
    // padded with zeros to K layers where the stages are uneven (one window
    // on each device).
    SmallVector<NamedDim> cut{
        {s.round, s.rounds}, {s.stage, s.stages}, {s.layer, s.perStage}};
    cut.append(rest.begin(), rest.end());
    Value blocks =
        mtf::SplitDimOp::create(
            b, loc, withDims(type, cut), stacked, s.inRound,
            s.blocks.empty() ? nullptr : b.getDenseI64ArrayAttr(s.blocks))
            .getResult();
    SmallVector<NamedDim> one{{s.round, s.rounds}, {s.stage, s.stages}};
    one.append(rest.begin(), rest.end());
    weights.push_back(eachLayer(emit, blocks, withDims(type, one)));
  }
  return weights;
}

} // namespace meshc::pipeline
