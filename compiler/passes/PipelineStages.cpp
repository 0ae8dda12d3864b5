//===- PipelineStages.cpp - mtf-pipeline-stages ---------------------------===//
//
// A repeat whose layer dim the layout splits over mesh axes (`layers:p`)
// becomes a pipeline of P stages of consecutive layers (GPipe's schedule,
// built as MaxText builds its pipeline: one SPMD program over a stage dim).
// The loop over L layers is rewritten, in the global program, into a loop
// over M + P - 1 ticks (M microbatches of the batch). Every tick each stage
// runs its L / P layers on the microbatch it holds, stage 0 takes the next
// microbatch, the last stage's result is kept, and the activations move one
// stage on (a shift along the stage dim, which mtf-partition makes one
// collective_permute between neighbours). The stage dim takes the layer
// dim's layout rule, so each device holds its stages' weights and works on
// them only. The result equals the unpipelined loop's: the same layers in
// the same order on every example (docs/pipeline.md).
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LayoutBridge.h"
#include "compiler/passes/Passes.h"
#include "compiler/passes/Pipeliner.h"
#include "dialect/OpEmitter.h"
#include "runtime/core/layout/LayoutRules.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace meshc {
#define GEN_PASS_DEF_MTFPIPELINESTAGES
#include "compiler/passes/Passes.h.inc"
} // namespace meshc
namespace meshc::pipeline {

LogicalResult Pipeliner::check() {
  auto refuse = [&](const Twine &why) {
    return loop.emitError()
           << "the layout pipelines this repeat ('" << loop.getDim()
           << "' over " << s.stages << " stages), but " << why;
  };
  if (!s.stagesCut.empty()) {
    std::string cut;
    llvm::raw_string_ostream os(cut);
    llvm::interleaveComma(s.stagesCut, os);
    return refuse("the device weights would cut its " + Twine(s.stages) +
                  " stages unequally too ([" + cut +
                  "] per device), where each device runs one stage; weights "
                  "that give each device one of them cut the layers in "
                  "proportion");
  }
  if (s.rounds > 1) {
    if (s.roundLayers == 0)
      return refuse(
          Twine(loop.getCount()) + " layers do not cut into " +
          Twine(s.rounds) +
          " rounds of equal size (the interleaved schedule runs "
          "the layers in --virtual-stages rounds, each cut into the " +
          Twine(s.stages) +
          " stages; a number of virtual stages that divides " +
          Twine(loop.getCount()) + " does)");
    if (s.perStage == 0)
      return refuse(Twine(s.roundLayers) + " layers a round (" +
                    Twine(loop.getCount()) + " in " + Twine(s.rounds) +
                    " rounds) do not cut into " + Twine(s.stages) +
                    " stages of equal size (with --uneven, or --axis-weights "
                    "on the stage axes, stages may hold unequal numbers of "
                    "layers)");
    if (s.microbatches % s.stages != 0)
      return refuse("the interleaved schedule runs the microbatches in "
                    "groups of one per stage, and " +
                    Twine(s.microbatches) +
                    " microbatches do not cut into "
                    "groups of " +
                    Twine(s.stages) +
                    " (as in Megatron-LM, the microbatches must be a multiple "
                    "of the stages)");
    for (auto [index, stacked] : llvm::enumerate(loop.getStacked())) {
      auto param = stacked.getDefiningOp<mtf::ParamOp>();
      if (!param || param.getSlot() ||
          llvm::count_if(stacked.getUsers(), [&](Operation *user) {
            return user == loop.getOperation();
          }) != 1)
        return refuse("its stacked operand #" + Twine(index) + " (" +
                      describe(stacked.getType()) +
                      ") is not a parameter it reads once; the interleaved "
                      "schedule stores each stacked parameter by rounds, "
                      "[rounds, layers of a round, ...], so that each device "
                      "holds its own blocks");
    }
  }
  if (s.perStage == 0)
    return refuse(Twine(loop.getCount()) + " layers do not cut into " +
                  Twine(s.stages) +
                  " stages of equal size (with --uneven, or --axis-weights "
                  "on the stage axes, stages may hold unequal numbers of "
                  "layers)");
  if (!loop.getStackedResults().empty())
    return refuse("its body stacks per-layer values, which a pipeline does "
                  "not keep");
  for (auto [index, value] : llvm::enumerate(loop.getCarried())) {
    TensorType type = tensorType(value);
    if (s.microbatches > 1 && !type.hasDim(s.batch.getValue()))
      return refuse("the value it passes from layer to layer (#" +
                    Twine(index) + ", " + describe(type) + ") has no dim '" +
                    s.batch.getValue() + "' to cut into " +
                    Twine(s.microbatches) + " microbatches");
  }
  SmallVector<Value> cut(loop.getCarried());
  for (Value value : loop.getInvariant())
    if (tensorType(value).hasDim(s.batch.getValue()))
      cut.push_back(value);
  for (Value value : cut) {
    std::optional<unsigned> index =
        tensorType(value).getDimIndex(s.batch.getValue());
    if (s.microbatches > 1 &&
        tensorType(value).getDims()[*index].size % s.microbatches != 0)
      return refuse("its '" + s.batch.getValue() + "' (" +
                    Twine(tensorType(value).getDims()[*index].size) +
                    ") does not cut into " + Twine(s.microbatches) +
                    " microbatches of equal size");
  }
  WalkResult walk = loop.getBodyBlock().walk([&](Operation *op) {
    if (llvm::isa<mtf::DropoutMaskOp>(op)) {
      op->emitError() << "dropout inside a pipelined repeat is not supported "
                         "yet (a mask is drawn per layer and example, which "
                         "the stages would draw differently)";
      return WalkResult::interrupt();
    }
    if (llvm::isa<mtf::LoopOp>(op)) {
      op->emitError() << "a loop inside a pipelined repeat is not supported";
      return WalkResult::interrupt();
    }
    if (s.microbatches == 1)
      return WalkResult::advance();
    // Each microbatch runs through the layers on its own: no op may mix
    // the examples of the batch.
    for (NamedAttribute attr : op->getAttrs())
      if (auto name = llvm::dyn_cast<StringAttr>(attr.getValue());
          name && name == s.batch &&
          !attr.getName().getValue().starts_with("mtf.")) {
        op->emitError() << "works along '" << s.batch.getValue()
                        << "', which mixes the examples that a pipeline cuts "
                           "into microbatches";
        return WalkResult::interrupt();
      }
    bool reads = llvm::any_of(op->getOperandTypes(), [&](Type type) {
      auto tensor = llvm::dyn_cast<TensorType>(type);
      return tensor && tensor.hasDim(s.batch.getValue());
    });
    bool keeps = llvm::all_of(op->getResultTypes(), [&](Type type) {
      auto tensor = llvm::dyn_cast<TensorType>(type);
      return !tensor || tensor.hasDim(s.batch.getValue());
    });
    if (reads && !keeps && !llvm::isa<mtf::YieldOp>(op)) {
      op->emitError() << "reduces over '" << s.batch.getValue()
                      << "', which mixes the examples that a pipeline cuts "
                         "into microbatches";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (s.schedule == meshc::PipelineSchedule::OneFOneB)
    return findHead();
  return success();
}

TensorType Pipeliner::inner(TensorType type, bool staged) const {
  SmallVector<NamedDim> dims;
  if (staged)
    dims.push_back({s.stage, s.stages});
  for (NamedDim dim : type.getDims()) {
    if (s.microbatches > 1 && dim.name == s.batch)
      dim = {s.examples, dim.size / s.microbatches};
    dims.push_back(dim);
  }
  return withDims(type, dims);
}

Value Pipeliner::addUnit(OpEmitter &emit, Value value, StringAttr dim) {
  TensorType type = tensorType(value);
  SmallVector<NamedDim> dims{{dim, 1}};
  llvm::append_range(dims, type.getDims());
  return emit.broadcastTo(value, withDims(type, dims));
}

Value Pipeliner::stageVector(OpEmitter &emit, Value like, int64_t index) {
  Type element = tensorType(like).getElementType();
  MLIRContext *context = like.getContext();
  Value one = emit.constant(
      1.0, TensorType::get(context, {NamedDim{s.last, 1}}, element));
  return emit
      .tag(mtf::WindowOp::create(emit.builder(), emit.getLoc(), one,
                                 s.last.getValue(), s.stage.getValue(),
                                 s.stages, -index))
      ->getResult(0);
}

Value Pipeliner::unitVector(OpEmitter &emit, Type element, StringAttr dim,
                            int64_t size, int64_t index) {
  Value one = emit.constant(
      1.0, TensorType::get(loop.getContext(), {NamedDim{s.last, 1}}, element));
  return emit
      .tag(mtf::WindowOp::create(emit.builder(), emit.getLoc(), one,
                                 s.last.getValue(), dim.getValue(), size,
                                 -index))
      ->getResult(0);
}

Value Pipeliner::stagesVector(OpEmitter &emit, Value like,
                              llvm::function_ref<bool(int64_t)> in) {
  Type element = tensorType(like).getElementType();
  MLIRContext *context = like.getContext();
  Value sum;
  for (int64_t first = 0; first < s.stages;) {
    if (!in(first)) {
      ++first;
      continue;
    }
    int64_t end = first;
    while (end < s.stages && in(end))
      ++end;
    Value ones = emit.constant(
        1.0,
        TensorType::get(context, {NamedDim{s.last, end - first}}, element));
    Value run =
        emit.tag(mtf::WindowOp::create(emit.builder(), emit.getLoc(), ones,
                                       s.last.getValue(), s.stage.getValue(),
                                       s.stages, -first))
            ->getResult(0);
    sum = sum ? emit.add(sum, run) : run;
    first = end;
  }
  return sum ? sum
             : emit.constant(0.0, TensorType::get(context,
                                                  {NamedDim{s.stage, s.stages}},
                                                  element));
}

TensorType Pipeliner::microbatched(TensorType type, StringAttr examples) const {
  SmallVector<NamedDim> dims;
  for (NamedDim dim : type.getDims()) {
    if (dim.name != s.batch) {
      dims.push_back(dim);
      continue;
    }
    dims.push_back(
        {examples ? examples : s.examples, dim.size / s.microbatches});
    dims.push_back({s.micro, s.microbatches});
  }
  return withDims(type, dims);
}

SmallVector<SmallVector<Value>> Pipeliner::layersOfStages(OpEmitter &emit) {
  OpBuilder &b = emit.builder();
  Location loc = loop.getLoc();
  // Each stacked weight [layers=L, ...] as [stage=P, layer=K, ...], and the
  // k-th layer of every stage, [stage=P, ...].
  SmallVector<SmallVector<Value>> weights;
  for (Value stacked : loop.getStacked()) {
    TensorType type = tensorType(stacked);
    ArrayRef<NamedDim> rest = type.getDims().drop_front();
    SmallVector<NamedDim> cut{{s.stage, s.stages}, {s.layer, s.perStage}};
    cut.append(rest.begin(), rest.end());
    Value split =
        mtf::SplitDimOp::create(
            b, loc, withDims(type, cut), stacked, loop.getDimAttr(),
            s.blocks.empty() ? nullptr : b.getDenseI64ArrayAttr(s.blocks))
            .getResult();
    SmallVector<NamedDim> one{{s.stage, s.stages}};
    one.append(rest.begin(), rest.end());
    weights.push_back(eachLayer(emit, split, withDims(type, one)));
  }
  return weights;
}

SmallVector<Value> Pipeliner::eachLayer(OpEmitter &emit, Value blocks,
                                        TensorType layerType) {
  SmallVector<Value> layers;
  for (int64_t k = 0; k < s.perStage; ++k) {
    Value slice = blocks;
    if (s.perStage > 1)
      slice = emit.tag(mtf::WindowOp::create(emit.builder(), loop.getLoc(),
                                             blocks, s.layer.getValue(),
                                             s.last.getValue(), 1, k))
                  ->getResult(0);
    layers.push_back(emit.sumTo(slice, layerType));
  }
  return layers;
}

Value Pipeliner::alongTicks(OpEmitter &emit, Value value, int64_t at,
                            bool spread) {
  OpBuilder &b = emit.builder();
  Location loc = loop.getLoc();
  TensorType type = tensorType(value);
  StringAttr examples = spread ? stackedExamples() : s.examples;
  Value cut =
      s.microbatches > 1
          ? mtf::SplitDimOp::create(b, loc, microbatched(type, examples), value,
                                    s.batch, nullptr)
                .getResult()
          : addUnit(emit, value, s.micro);
  // Interleaved: each group's microbatches enter in its first round.
  StringAttr from = s.micro;
  if (s.rounds > 1) {
    cut = toEntries(emit, cut);
    from = s.entry;
  }
  // The microbatches padded with zeros to the ticks, the ticks first (one
  // window that also transposes: no copy of the batch in between).
  SmallVector<NamedDim> first{{s.ticksDim, s.ticks}};
  llvm::append_range(
      first,
      renameDim(inner(type, /*staged=*/false), s.examples, examples).getDims());
  return emit
      .tag(mtf::WindowOp::create(b, loc, withDims(type, first), cut,
                                 from.getValue(), s.ticksDim.getValue(), -at))
      ->getResult(0);
}

Value Pipeliner::backToBatch(OpEmitter &emit, Value kept, TensorType type) {
  OpBuilder &b = emit.builder();
  // Microbatch m left the last stage at tick m + P - 1: one window takes
  // those ticks, in the batch's order.
  TensorType ordered = s.microbatches > 1
                           ? microbatched(type, stackedExamples())
                           : withDims(type, [&] {
                               SmallVector<NamedDim> dims{{s.micro, 1}};
                               llvm::append_range(dims, type.getDims());
                               return dims;
                             }());
  Value window;
  if (s.rounds > 1) {
    // Interleaved: entry e leaves the last stage in its last round, at tick
    // e + V P - 1.
    window = emit.tag(mtf::WindowOp::create(
                          b, loop.getLoc(),
                          replaceDim(ordered, s.micro,
                                     {{s.entry, s.rounds * s.microbatches}}),
                          kept, s.ticksDim.getValue(), s.entry.getValue(),
                          s.rounds * s.stages - 1))
                 ->getResult(0);
    window = fromEntries(emit, window);
  } else {
    window = emit.tag(mtf::WindowOp::create(b, loop.getLoc(), ordered, kept,
                                            s.ticksDim.getValue(),
                                            s.micro.getValue(),
                                            static_cast<int64_t>(s.stages - 1)))
                 ->getResult(0);
  }
  if (s.microbatches == 1)
    return emit.sumTo(window, type);
  return mtf::MergeDimsOp::create(b, loop.getLoc(), type, window,
                                  stackedExamples(), nullptr)
      .getResult();
}

void Pipeliner::rewrite() {
  OpEmitter emit(loop);
  OpBuilder &b = emit.builder();
  Location loc = loop.getLoc();

  // Each stacked weight's layers, an invariant of the ticks per layer of
  // a stage.
  bool circular = s.rounds > 1;
  SmallVector<SmallVector<Value>> weights =
      circular ? blocksOfRounds(emit) : layersOfStages(emit);

  // What moves through the stages: the carried values and, with
  // microbatches, the per-example values every layer reads (they travel
  // with their microbatch, unchanged).
  size_t carried = loop.getCarried().size();
  SmallVector<Value> moving(loop.getCarried());
  SmallVector<int64_t> travelsAt; // per invariant: its index in `moving`
  for (Value value : loop.getInvariant()) {
    bool travels =
        s.microbatches > 1 && tensorType(value).hasDim(s.batch.getValue());
    travelsAt.push_back(travels ? static_cast<int64_t>(moving.size()) : -1);
    if (travels)
      moving.push_back(value);
  }

  bool oneFOneB = s.schedule == meshc::PipelineSchedule::OneFOneB;
  // 1F1B: the values the head reads beside the loop's results, made before
  // the loop (none of them depends on it).
  SmallVector<Value> headPerExample, headInvariant;
  if (oneFOneB) {
    llvm::SetVector<Value> outside;
    for (Operation *op : head)
      for (Value operand : op->getOperands())
        if (operand.getDefiningOp() != loop.getOperation() &&
            !llvm::is_contained(head, operand.getDefiningOp()))
          outside.insert(operand);
    llvm::DenseSet<Operation *> needed;
    SmallVector<Value> work(outside.begin(), outside.end());
    while (!work.empty()) {
      Operation *op = work.pop_back_val().getDefiningOp();
      if (!op || op->getBlock() != loop->getBlock() ||
          !loop->isBeforeInBlock(op) || !needed.insert(op).second)
        continue;
      llvm::append_range(work, op->getOperands());
    }
    for (Operation *op = loop->getNextNode(); op;) {
      Operation *next = op->getNextNode();
      if (needed.contains(op))
        op->moveBefore(loop);
      op = next;
    }
    for (Value value : outside)
      (tensorType(value).hasDim(s.batch.getValue()) ? headPerExample
                                                    : headInvariant)
          .push_back(value);
  }

  // Each of them as one microbatch per tick, [ticks=T, ...] (zeros after
  // the last microbatch), and its state on the stages, zeros first.
  SmallVector<Value> ticksIn, states;
  for (Value value : moving) {
    ticksIn.push_back(alongTicks(emit, value, 0, /*spread=*/true));
    states.push_back(
        emit.constant(0.0, inner(tensorType(value), /*staged=*/true)));
  }
  // 1F1B: the loss's sum so far (carried), the head's per-example values
  // as the last stage's microbatch per tick, and the loss's weight per tick
  // and stage: 1/M on the last stage in the ticks a microbatch leaves it.
  Value lossWeights;
  if (oneFOneB) {
    TensorType lossType = tensorType(train.getLoss());
    states.push_back(emit.constant(0.0, lossType));
    for (Value value : headPerExample)
      ticksIn.push_back(lastStageTicks(emit, value));
    MLIRContext *context = loop.getContext();
    Type element = lossType.getElementType();
    Value valid = emit.constant(
        1.0 / static_cast<double>(s.microbatches),
        TensorType::get(context, {NamedDim{s.micro, s.microbatches}}, element));
    valid = emit.tag(mtf::WindowOp::create(b, loc, valid, s.micro.getValue(),
                                           s.ticksDim.getValue(), s.ticks,
                                           -(s.stages - 1)))
                ->getResult(0);
    lossWeights =
        emit
            .tag(mtf::EinsumOp::create(
                b, loc,
                ValueRange{valid, stageVector(emit, valid, s.stages - 1)},
                ArrayRef<StringRef>{s.ticksDim.getValue(), s.stage.getValue()}))
            ->getResult(0);
    ticksIn.push_back(lossWeights);
  }
  // Interleaved: which round's block each stage runs per tick (selects its
  // weights), and per moving value the ticks whose last stage's result
  // stage 0 takes at the next tick.
  size_t selectAt = ticksIn.size(), wrapAt = 0;
  if (circular) {
    Type element = weights.empty()
                       ? Type(b.getF32Type())
                       : tensorType(weights.front().front()).getElementType();
    ticksIn.push_back(roundSelect(emit, element));
    wrapAt = ticksIn.size();
    for (Value value : moving)
      ticksIn.push_back(wrapTicks(emit, tensorType(value).getElementType()));
  }

  SmallVector<Value> invariants;
  for (const SmallVector<Value> &layers : weights)
    llvm::append_range(invariants, layers);
  size_t originalInvariants = invariants.size();
  for (auto [value, at] : llvm::zip(loop.getInvariant(), travelsAt))
    if (at < 0)
      invariants.push_back(value);
  size_t headInvariantsAt = invariants.size();
  llvm::append_range(invariants, headInvariant);

  SmallVector<Type> stateTypes, keptTypes;
  for (Value state : states)
    stateTypes.push_back(state.getType());
  for (Value state : ArrayRef(states).take_front(carried)) {
    TensorType type = tensorType(state);
    keptTypes.push_back(mtf::LoopOp::stackedType(
        renameDim(withDims(type, type.getDims().drop_front()), s.examples,
                  stackedExamples()),
        s.ticksDim.getValue(), s.ticks));
  }
  auto ticks = mtf::LoopOp::create(b, loc, stateTypes, keptTypes,
                                   s.ticksDim.getValue(), s.ticks, states,
                                   ticksIn, invariants, /*reverse=*/false);
  emit.tag(ticks);
  Block *body = new Block();
  ticks.getBody().push_back(body);
  for (Value state : states)
    body->addArgument(state.getType(), loc);
  for (Value in : ticksIn)
    body->addArgument(
        mtf::LoopOp::sliceType(in.getType(), s.ticksDim.getValue(), s.ticks),
        loc);
  for (Value invariant : invariants)
    body->addArgument(invariant.getType(), loc);
  ValueRange args = body->getArguments();
  ValueRange stateArgs = args.take_front(states.size());
  ValueRange inArgs = args.slice(states.size(), ticksIn.size());
  ValueRange invariantArgs = args.drop_front(states.size() + ticksIn.size());

  OpEmitter tick(*body, "");
  tick.setLoc(loc);
  OpBuilder &tb = tick.builder();
  // Stage 0 takes this tick's microbatch (the shift left its slot zero):
  // the microbatch times a 0/1 vector along the stages, computed on each
  // device for its own stages (its gradient, a sum over the stages, is one
  // all-reduce of a microbatch where a slice would gather every stage).
  SmallVector<Value> current;
  for (auto [state, in] : llvm::zip(stateArgs.take_front(moving.size()),
                                    inArgs.take_front(moving.size()))) {
    // Spread: each device stacks its share of the examples; the whole
    // microbatch is gathered here, one all-gather a tick.
    Value entry = in;
    if (s.spread)
      entry = mtf::RenameOp::create(tb, loc, entry, s.spread.getValue(),
                                    s.examples.getValue())
                  .getResult();
    Value placed =
        tick.tag(mtf::EinsumOp::create(
                     tb, loc, ValueRange{entry, stageVector(tick, entry, 0)},
                     tensorType(state).getDimNames()))
            ->getResult(0);
    current.push_back(tick.add(state, placed));
  }
  // Interleaved: each stage's weights of this tick, the blocks of the round
  // it runs ([round, stage, ...] times the tick's 0/1 [round, stage]).
  SmallVector<Value> layerWeights(invariantArgs.take_front(originalInvariants));
  if (circular)
    for (Value &weight : layerWeights) {
      SmallVector<StringRef> names;
      for (NamedDim dim : tensorType(weight).getDims())
        if (dim.name != s.round)
          names.push_back(dim.name.getValue());
      weight =
          tick.tag(mtf::EinsumOp::create(
                       tb, loc, ValueRange{weight, inArgs[selectAt]}, names))
              ->getResult(0);
    }
  // Each stage's layers, one after the other, on every stage at once.
  Block &layerBody = loop.getBodyBlock();
  for (int64_t k = 0; k < s.perStage; ++k) {
    IRMapping mapping;
    for (auto [arg, value] : llvm::zip(loop.getCarriedArgs(), current))
      mapping.map(arg, value);
    for (auto [j, arg] : llvm::enumerate(loop.getStackedArgs()))
      mapping.map(arg, layerWeights[j * s.perStage + k]);
    size_t staying = originalInvariants;
    for (auto [arg, at] : llvm::zip(loop.getInvariantArgs(), travelsAt))
      mapping.map(arg, at >= 0 ? current[at] : invariantArgs[staying++]);
    for (Operation &op : layerBody.without_terminator()) {
      Operation *clone = tb.clone(op, mapping);
      bool staged = llvm::any_of(clone->getOperandTypes(), [&](Type type) {
        auto tensor = llvm::dyn_cast<TensorType>(type);
        return tensor && tensor.hasDim(s.stage.getValue());
      });
      for (Value result : clone->getResults())
        if (auto type = llvm::dyn_cast<TensorType>(result.getType()))
          result.setType(inner(type, staged));
    }
    Operation *yield = layerBody.getTerminator();
    // Uneven stages: a stage past its own layers (its padding, zero
    // weights) passes its activations on as they came, exactly:
    // new = layer * a + old * (1 - a), a 0/1 along the stages.
    bool all = llvm::all_of(s.blocks, [&](int64_t n) { return n > k; });
    for (size_t index = 0; index < carried; ++index) {
      Value next = mapping.lookupOrDefault(yield->getOperand(index));
      if (!all) {
        // The 0/1 vectors in the value's element type (each carried value
        // its own: they may differ). A padded layer must compute finite
        // values on zero weights (0 * NaN is NaN): layer norms, attention
        // and MLPs do.
        Value active = stagesVector(
            tick, next, [&](int64_t stage) { return s.blocks[stage] > k; });
        Value idle = stagesVector(
            tick, next, [&](int64_t stage) { return s.blocks[stage] <= k; });
        next = tick.add(tick.mul(next, active), tick.mul(current[index], idle));
      }
      current[index] = next;
    }
  }
  // 1F1B: the head on every stage's result (only the last stage's counts:
  // the loss's weights are zero elsewhere, and where no microbatch leaves
  // it), its loss added to the sum.
  Value lossSum;
  if (oneFOneB) {
    IRMapping mapping;
    for (auto [result, value] : llvm::zip(loop.getFinals(), current))
      mapping.map(result, value);
    ValueRange perExampleArgs =
        inArgs.slice(moving.size(), headPerExample.size());
    for (auto [value, arg] : llvm::zip(headPerExample, perExampleArgs)) {
      Value slice = arg;
      Type element = tensorType(value).getElementType();
      if (element != tensorType(arg).getElementType())
        slice = mtf::CastOp::create(tb, loc, arg, element).getResult();
      mapping.map(value, slice);
    }
    for (auto [value, arg] :
         llvm::zip(headInvariant, invariantArgs.drop_front(headInvariantsAt)))
      mapping.map(value, arg);
    for (Operation *op : head) {
      Operation *clone = tb.clone(*op, mapping);
      bool staged = llvm::any_of(clone->getOperandTypes(), [&](Type type) {
        auto tensor = llvm::dyn_cast<TensorType>(type);
        return tensor && tensor.hasDim(s.stage.getValue());
      });
      for (Value result : clone->getResults())
        if (auto type = llvm::dyn_cast<TensorType>(result.getType()))
          result.setType(inner(type, staged));
    }
    Value perStage = mapping.lookup(train.getLoss());
    Value weighted = tick.tag(mtf::EinsumOp::create(
                                  tb, loc, ValueRange{perStage, inArgs.back()},
                                  ArrayRef<StringRef>{}))
                         ->getResult(0);
    lossSum = tick.add(stateArgs.back(), weighted);
  }
  // The last stage's result is kept (a sum over the stages of the result
  // times the last stage's 0/1 vector: one all-reduce of a microbatch); the
  // others move one stage on.
  SmallVector<Value> yielded, kept;
  for (auto [value, keptType] : llvm::zip(current, keptTypes)) {
    TensorType slice = llvm::cast<TensorType>(
        mtf::LoopOp::sliceType(keptType, s.ticksDim.getValue(), s.ticks));
    Value last =
        tick
            .tag(mtf::EinsumOp::create(
                tb, loc,
                ValueRange{value, stageVector(tick, value, s.stages - 1)},
                renameDim(slice, stackedExamples(), s.examples).getDimNames()))
            ->getResult(0);
    // Spread: each device keeps its share of the examples (the stages' sum
    // a reduce-scatter).
    if (s.spread)
      last = mtf::RenameOp::create(tb, loc, last, s.examples.getValue(),
                                   s.spread.getValue())
                 .getResult();
    kept.push_back(last);
  }
  for (auto [index, value] : llvm::enumerate(current)) {
    Value next = mtf::WindowOp::create(tb, loc, value, s.stage.getValue(),
                                       s.stage.getValue(), s.stages, -1)
                     .getResult();
    if (circular) {
      // Interleaved: where a microbatch's next round starts at the next
      // tick, the last stage's result moves to stage 0 (a shift by P - 1:
      // one collective_permute from the last stage to the first), else
      // zero there (times a 0/1 per tick: exact).
      Value wrapped =
          mtf::WindowOp::create(tb, loc, value, s.stage.getValue(),
                                s.stage.getValue(), s.stages, s.stages - 1)
              .getResult();
      next = tick.add(next, tick.mul(wrapped, inArgs[wrapAt + index]));
    }
    yielded.push_back(next);
  }
  if (lossSum)
    yielded.push_back(lossSum);
  llvm::append_range(yielded, kept);
  mtf::YieldOp::create(tb, loc, yielded);

  // Back to the batch.
  b.setInsertionPointAfter(ticks);
  for (auto [result, kept] :
       llvm::zip(loop.getFinals(), ticks.getStackedResults()))
    result.replaceAllUsesWith(backToBatch(emit, kept, tensorType(result)));
  if (oneFOneB) {
    // The loss trained is the ticks' sum; the head after the loop computes
    // the outputs (the same loss among them) from the kept results.
    train.getLossMutable().assign(ticks.getFinals().back());
    Builder attrs(loop.getContext());
    ticks->setAttr(
        mtf::MtfDialect::kOneFOneBAttrName,
        attrs.getDictionaryAttr(
            {attrs.getNamedAttr("stages", attrs.getI64IntegerAttr(s.stages)),
             attrs.getNamedAttr("microbatches",
                                attrs.getI64IntegerAttr(s.microbatches)),
             attrs.getNamedAttr("stage", s.stage),
             attrs.getNamedAttr("entries",
                                attrs.getI64IntegerAttr(moving.size()))}));
  }
  loop.erase();
}

} // namespace meshc::pipeline

namespace {

using namespace meshc::pipeline;

/// The product of the sizes of `axes` in `mesh`.
int64_t sizeOf(const meshc::layout::Mesh &mesh,
               const std::vector<std::string> &axes) {
  int64_t size = 1;
  for (const std::string &axis : axes)
    if (std::optional<size_t> index = mesh.axisIndex(axis))
      size *= mesh.axisSize(*index);
  return size;
}

/// A name no dim of the program has, from `base`.
StringAttr freshName(MLIRContext *context, std::set<std::string> &taken,
                     std::string base) {
  while (taken.count(base))
    base += "_";
  taken.insert(base);
  return StringAttr::get(context, base);
}

struct MtfPipelineStagesPass
    : public meshc::impl::MtfPipelineStagesBase<MtfPipelineStagesPass> {
  using MtfPipelineStagesBase::MtfPipelineStagesBase;

  void runOnOperation() override {
    mtf::ProgramOp program = getOperation();
    meshc::layout::Result<meshc::layout::Mesh> parsedMesh =
        meshc::layout::Mesh::parse(mesh);
    meshc::layout::Result<meshc::layout::LayoutRules> rules =
        meshc::layout::LayoutRules::parse(layout);
    if (!parsedMesh.ok() || !rules.ok()) {
      program.emitError() << "mtf-pipeline-stages: cannot read the mesh '"
                          << mesh << "' or the layout '" << layout << "'";
      return signalPassFailure();
    }
    FailureOr<meshc::layout::AxisWeights> optioned =
        meshc::optionWeights(program, *parsedMesh, axisWeights, uneven);
    if (failed(optioned))
      return signalPassFailure();
    meshc::layout::AxisWeights weights = *optioned;
    MLIRContext *context = &getContext();
    std::set<std::string> taken;
    for (const auto &[name, size] : meshc::collectModelDims(program))
      taken.insert(name);
    SmallVector<NamedAttribute> aliases, shapes, modelDims;
    if (auto existing = program->getAttrOfType<DictionaryAttr>(
            mtf::MtfDialect::kLayoutAliasesAttrName))
      llvm::append_range(aliases, existing.getValue());
    SmallVector<mtf::LoopOp> loops(program.getBody().getOps<mtf::LoopOp>());
    for (mtf::LoopOp loop : loops) {
      const std::vector<std::string> *axes =
          rules->axesFor(loop.getDim().str());
      if (!axes || axes->empty())
        continue;
      Stages s;
      s.stages = sizeOf(*parsedMesh, *axes);
      // The layers of each stage: the blocks the layout cuts the layer dim
      // into (equal, or under --uneven / weights as mtf-apply-layout cuts
      // them); perStage 0 refuses.
      std::vector<size_t> axisIndices;
      for (const std::string &axis : *axes)
        if (std::optional<size_t> index = parsedMesh->axisIndex(axis))
          axisIndices.push_back(*index);
      // The layers the layout cuts into the stages: under the interleaved
      // schedule each of its V rounds (L / V layers), else all L.
      bool interleaved = schedule == meshc::PipelineSchedule::Interleaved;
      if (interleaved) {
        s.rounds = std::max<int64_t>(virtualStages, 2);
        s.roundLayers =
            loop.getCount() % s.rounds == 0 ? loop.getCount() / s.rounds : 0;
      }
      int64_t layers = interleaved ? s.roundLayers : loop.getCount();
      if (layers == 0) {
        s.perStage = 0;
      } else if (weights.allowsIndivisible(axisIndices)) {
        std::vector<int64_t> blocks =
            meshc::layout::cutBlocks(layers, axisIndices, *parsedMesh, weights);
        s.perStage = *llvm::max_element(blocks);
        if (!llvm::all_equal(blocks))
          s.blocks.assign(blocks.begin(), blocks.end());
        // The stage dim is cut by the same weights: one per device, or
        // refused.
        std::vector<int64_t> stagesCut = meshc::layout::cutBlocks(
            s.stages, axisIndices, *parsedMesh, weights);
        if (llvm::any_of(stagesCut, [](int64_t n) { return n != 1; }))
          s.stagesCut.assign(stagesCut.begin(), stagesCut.end());
      } else {
        s.perStage = layers % s.stages == 0 ? layers / s.stages : 0;
      }
      s.microbatches = microbatches;
      s.schedule = schedule;
      // Interleaved: V rounds of blocks of K layers, T = V M + P - 1 ticks
      // of one block each.
      s.ticks = s.rounds * s.microbatches + s.stages - 1;
      s.batch = StringAttr::get(context, batchDim);
      std::string dim = loop.getDim().str();
      s.stage = freshName(context, taken, dim + "_stage");
      s.layer = freshName(context, taken, dim + "_layer");
      s.ticksDim = freshName(context, taken, dim + "_tick");
      s.last = freshName(context, taken, dim + "_one");
      s.micro = freshName(context, taken, batchDim + "_micro");
      s.examples = freshName(context, taken, batchDim + "_mb");
      // Where the batch is split over a stage axis too, the stacks along
      // the ticks keep it so split (Stages::spread).
      if (const std::vector<std::string> *batchAxes = rules->axesFor(batchDim);
          batchAxes && microbatches > 1) {
        bool overStages = llvm::any_of(*batchAxes, [&](const std::string &a) {
          return llvm::is_contained(*axes, a);
        });
        bool even = llvm::all_of(*batchAxes, [&](const std::string &a) {
          std::optional<size_t> index = parsedMesh->axisIndex(a);
          return index && weights.isEven(*index);
        });
        std::optional<int64_t> examples;
        for (Value value : loop.getCarried())
          if (std::optional<unsigned> d =
                  tensorType(value).getDimIndex(batchDim.getValue()))
            examples = tensorType(value).getDims()[*d].size / microbatches;
        if (overStages && even && examples &&
            *examples % sizeOf(*parsedMesh, *batchAxes) == 0)
          s.spread = freshName(context, taken, batchDim + "_spread");
      }
      if (s.rounds > 1) {
        s.round = freshName(context, taken, dim + "_round");
        s.group = freshName(context, taken, batchDim + "_group");
        s.inGroup = freshName(context, taken, batchDim + "_in_group");
        s.slot = freshName(context, taken, batchDim + "_slot");
        s.entry = freshName(context, taken, batchDim + "_entry");
        s.entryRound = freshName(context, taken, batchDim + "_entry_round");
        s.inRound = freshName(context, taken, dim + "_in_round");
      }
      Pipeliner pipeliner(loop, s);
      if (failed(pipeliner.check()))
        return signalPassFailure();
      pipeliner.rewrite();
      aliases.push_back(NamedAttribute(s.stage, StringAttr::get(context, dim)));
      if (s.rounds > 1)
        aliases.push_back(
            NamedAttribute(s.inRound, StringAttr::get(context, dim)));
      Builder b(context);
      SmallVector<NamedAttribute> shape{
          b.getNamedAttr("stages", b.getI64IntegerAttr(s.stages)),
          b.getNamedAttr("per_stage", b.getI64IntegerAttr(s.perStage)),
          b.getNamedAttr("microbatches", b.getI64IntegerAttr(s.microbatches)),
          b.getNamedAttr("ticks", b.getI64IntegerAttr(s.ticks)),
          b.getNamedAttr("schedule",
                         b.getStringAttr(meshc::choiceName(
                             meshc::scheduleChoices(), s.schedule)))};
      if (!s.blocks.empty())
        shape.push_back(
            b.getNamedAttr("blocks", b.getDenseI64ArrayAttr(s.blocks)));
      if (s.rounds > 1) {
        shape.push_back(
            b.getNamedAttr("virtual_stages", b.getI64IntegerAttr(s.rounds)));
        modelDims.push_back(
            NamedAttribute(StringAttr::get(context, dim),
                           b.getArrayAttr({s.round, s.inRound})));
      }
      // The loop is gone (rewrite erased it): its dim by the name kept.
      shapes.push_back(NamedAttribute(StringAttr::get(context, dim),
                                      b.getDictionaryAttr(shape)));
      if (s.microbatches > 1)
        aliases.push_back(NamedAttribute(
            s.examples,
            ArrayAttr::get(context, {s.batch, StringAttr::get(context, dim)})));
      if (s.spread)
        aliases.push_back(NamedAttribute(s.spread, s.batch));
    }
    if (!aliases.empty()) {
      program->setAttr(mtf::MtfDialect::kLayoutAliasesAttrName,
                       DictionaryAttr::get(context, aliases));
      program->setAttr(mtf::MtfDialect::kPipelinesAttrName,
                       DictionaryAttr::get(context, shapes));
      if (!modelDims.empty())
        program->setAttr(mtf::MtfDialect::kModelDimsAttrName,
                         DictionaryAttr::get(context, modelDims));
    }
    if (failed(verify(program)))
      return signalPassFailure();
  }
};

} // namespace
