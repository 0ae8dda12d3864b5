//===- OneFOneB.cpp - a pipeline's 1F1B schedule --------------------------===//
//
// A pipeline's tick loop (mtf-pipeline-stages) computes every stage at once:
// at tick t stage s runs the forward of microbatch t - s. Its gradient, as
// mtf-autodiff builds any loop's, is a backward loop after it that reads
// what each tick kept, every tick's: GPipe, every microbatch's activations
// held until the backward. Under 1F1B the loss of each microbatch is
// computed in the ticks (mtf-pipeline-stages moves the head in), so the
// backward of tick t needs nothing of later ticks, and stage s can run the
// backward of microbatch m at tick m + 2P - 2 - s, as soon as the stages
// after it have: 2(P - 1 - s) ticks after its forward. Here the forward
// loop and the backward body become three loops over one carry:
//
// - P - 1 ticks of forward only (the pipeline filling up),
// - M ticks of forward and backward,
// - P - 1 ticks of backward only (the pipeline draining),
//
// so a stage idles (P - 1) / (M + P - 1) of the step, as in GPipe, and
// keeps what its backward reads for 2(P - 1 - s) ticks, not for the whole
// step: a line of 2P - 2 carried slots per kept value (and the tick's own
// value), moved one on each tick, from which each stage reads the slot of
// its own delay (elementwise with its stage's 0/1 vector). The backward
// body is stage by stage except for two kinds of op: the shift of the
// activations' gradient from stage s + 1 to s, which the delays (one tick
// less per stage) keep in step, and sums over the stages into the carried
// totals, which add the same terms in another order. What stage 0 takes
// per tick (without the stage dim: `entries` of the attribute) its
// backward reads from the inputs themselves, cut 2(P - 1) ticks later, and
// its gradient is stage 0's, given 2(P - 1) ticks late.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/OneFOneB.h"

#include "compiler/passes/LayoutBridge.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

#include <set>

using namespace mlir;

namespace meshc {
namespace {

using mtf::NamedDim;
using mtf::OpEmitter;
using mtf::TensorType;

TensorType typeOf(Value value) {
  return llvm::cast<TensorType>(value.getType());
}

/// A body for `loop`, its arguments those of the loop's operands.
Block *addBody(mtf::LoopOp loop) {
  Block *body = new Block();
  loop.getBody().push_back(body);
  Location loc = loop.getLoc();
  for (Value value : loop.getCarried())
    body->addArgument(value.getType(), loc);
  for (Value value : loop.getStacked())
    body->addArgument(
        mtf::LoopOp::sliceType(value.getType(), loop.getDim(), loop.getCount()),
        loc);
  for (Value value : loop.getInvariant())
    body->addArgument(value.getType(), loc);
  return body;
}

/// `types` (stacked along `from`, `count` long) stacked along `to` instead.
SmallVector<Type> restacked(TypeRange types, StringRef from, int64_t count,
                            StringRef to, int64_t toCount) {
  SmallVector<Type> result;
  for (Type type : types)
    result.push_back(mtf::LoopOp::stackedType(
        llvm::cast<TensorType>(mtf::LoopOp::sliceType(type, from, count)), to,
        toCount));
  return result;
}

void markBackward(Operation *op) {
  op->setAttr(mtf::MtfDialect::kPhaseAttrName,
              StringAttr::get(op->getContext(), "backward"));
}

} // namespace

FailureOr<LoopGradientValues> scheduleOneFOneB(LoopGradient &gradient) {
  mtf::LoopOp forward = gradient.forward;
  auto attr = forward->getAttrOfType<DictionaryAttr>(
      mtf::MtfDialect::kOneFOneBAttrName);
  int64_t stages = attr.getAs<IntegerAttr>("stages").getInt();
  int64_t micro = attr.getAs<IntegerAttr>("microbatches").getInt();
  auto stage = attr.getAs<StringAttr>("stage");
  int64_t entries = attr.getAs<IntegerAttr>("entries").getInt();
  int64_t ticks = forward.getCount();
  StringRef dim = forward.getDim();
  Location loc = forward.getLoc();
  MLIRContext *context = forward.getContext();
  auto refuse = [&](const Twine &why) {
    return forward.emitError()
           << "the 1F1B schedule cannot run this pipeline's backward beside "
              "its forward: "
           << why;
  };
  if (stages < 2 || ticks != micro + stages - 1)
    return refuse("its ticks (" + Twine(ticks) + ") are not " + Twine(micro) +
                  " microbatches through " + Twine(stages) + " stages");
  // Stage s reads what its forward made 2(P - 1 - s) ticks before: the
  // tick's own value and the 2P - 2 before it, carried.
  const int64_t slots = 2 * stages - 1, kept = slots - 1;

  std::set<std::string> taken;
  for (const auto &[name, size] :
       collectModelDims(forward->getParentOfType<mtf::ProgramOp>()))
    taken.insert(name);
  auto fresh = [&](std::string base) {
    while (taken.count(base))
      base += "_";
    taken.insert(base);
    return StringAttr::get(context, base);
  };
  StringAttr first = fresh((dim + "_first").str()),
             warm = fresh((dim + "_warm").str()),
             steady = fresh((dim + "_steady").str()),
             cool = fresh((dim + "_cool").str()),
             joined = fresh((dim + "_joined").str()),
             unit = fresh((dim + "_unit").str());

  Block &forwardBody = forward.getBodyBlock();
  Operation *forwardYield = forwardBody.getTerminator();
  size_t forwardCarried = forward.getCarried().size();
  size_t ownStacked = gradient.ownStacked;
  size_t backwardCarried = gradient.carried.size();
  Block *backwardBody = gradient.body;
  Operation *backwardYield = backwardBody->getTerminator();

  // What each stacked operand of the backward is per tick: a value of the
  // forward body (what it stacks for the backward, or one of its own
  // stacked operands' slices).
  SmallVector<Value> perTick;
  SmallVector<bool> staged;
  // Per stacked operand: the type it is cast back to after its line (a
  // value per stage that is not a float, cast from one: the head's labels),
  // else null.
  SmallVector<Type> recast;
  // Per stacked operand: whether it is one of the forward's inputs per
  // tick (a stacked operand's slice), not a value the forward computes.
  SmallVector<bool> isInput;
  for (Value operand : gradient.stacked) {
    Value value;
    if (auto result = llvm::dyn_cast<OpResult>(operand);
        result && result.getOwner() == forward.getOperation() &&
        result.getResultNumber() >= forwardCarried + ownStacked)
      value = forwardYield->getOperand(result.getResultNumber());
    for (auto [index, stacked] : llvm::enumerate(forward.getStacked()))
      if (!value && stacked == operand)
        value = forward.getStackedArgs()[index];
    if (!value)
      return refuse("a value the pipeline keeps per tick reaches the loss "
                    "outside its ticks");
    Value input = value;
    if (auto cast = input.getDefiningOp<mtf::CastOp>())
      input = cast.getInput();
    isInput.push_back(llvm::is_contained(forward.getStackedArgs(), input));
    TensorType type = typeOf(value);
    bool isStaged = type.getRank() > 0 && type.getDims()[0].name == stage;
    recast.push_back(Type());
    if (isStaged && !llvm::isa<FloatType>(type.getElementType())) {
      auto cast = value.getDefiningOp<mtf::CastOp>();
      if (!cast ||
          !llvm::isa<FloatType>(typeOf(cast.getInput()).getElementType()))
        return refuse("its backward reads a value per stage that is not a "
                      "float, nor cast from one");
      recast.back() = value.getType();
      value = cast.getInput();
    }
    // Without the stage dim, only what stage 0 takes per tick (read at
    // stage 0's delay).
    if (!isStaged) {
      auto at = llvm::find(forward.getStackedArgs(), value);
      if (at == forward.getStackedArgs().end() ||
          at - forward.getStackedArgs().begin() >= entries)
        return refuse("its backward reads a value without the stage dim "
                      "that is not what stage 0 takes per tick");
    }
    perTick.push_back(value);
    staged.push_back(isStaged);
  }
  // The backward's first carried values, made before the loops (they are
  // constants: the loss is the ticks' own sum).
  OpBuilder b(forward);
  SmallVector<Value> backwardInit;
  for (Value value : gradient.carried) {
    Operation *def = value.getDefiningOp();
    if (def && def->getBlock() == forward->getBlock() &&
        forward->isBeforeInBlock(def)) {
      if (!llvm::isa<mtf::ConstantOp>(def))
        return refuse("the gradient it starts from is computed after it");
      value = b.clone(*def)->getResult(0);
    }
    backwardInit.push_back(value);
  }

  OpEmitter out(forward.getOperation());
  out.setLoc(loc);
  Type f32 = Float32Type::get(context);
  auto vector = [&](StringAttr name, int64_t size) {
    return TensorType::get(context, {NamedDim{name, size}}, f32);
  };
  auto window = [&](OpEmitter &emit, Value value, StringRef from, StringRef to,
                    int64_t size, int64_t offset) {
    return emit
        .tag(mtf::WindowOp::create(emit.builder(), loc, value, from, to, size,
                                   offset))
        ->getResult(0);
  };
  // Ticks [offset, offset + count) of the forward's stacked operand
  // `value` as [name=count, ...] (zeros outside its ticks). Where `value` is
  // itself a window into the ticks (the pipeline's microbatches laid along
  // them), the cut is taken from that window's operand: no copy of all the
  // ticks in between.
  auto cutTicks = [&](Value value, StringAttr name, int64_t count,
                      int64_t offset) -> Value {
    SmallVector<NamedDim> dims(typeOf(value).getDims());
    dims[0] = NamedDim{name, count};
    auto type = TensorType::get(context, dims, typeOf(value).getElementType());
    auto along = value.getDefiningOp<mtf::WindowOp>();
    if (along && along.getTo() == dim && typeOf(value).getDims()[0].name == dim)
      return out
          .tag(mtf::WindowOp::create(
              b, loc, type, along.getInput(), along.getFrom(), name.getValue(),
              static_cast<int64_t>(along.getOffset()) + offset))
          ->getResult(0);
    return out
        .tag(mtf::WindowOp::create(b, loc, type, value, dim, name.getValue(),
                                   offset))
        ->getResult(0);
  };
  // 1 at `index` of [name=size], 0 elsewhere.
  auto oneHot = [&](OpEmitter &emit, StringAttr name, int64_t size,
                    int64_t index) {
    return window(emit, emit.constant(1.0, vector(unit, 1)), unit.getValue(),
                  name.getValue(), size, -index);
  };
  auto range = [&](StringAttr name, int64_t size) {
    return out.tag(mtf::RangeOp::create(b, loc, name.getValue(), size))
        ->getResult(0);
  };
  auto equal = [&](Value lhs, Value rhs) {
    return out.tag(mtf::EqualOp::create(b, loc, lhs, rhs))->getResult(0);
  };

  // The lines: per value the backward reads per stage, 2P - 1 carried
  // slots of it, slot k the forward's of k ticks before. Each tick of the
  // forward moves every slot one on (copies of carried values) and puts
  // the tick's value in slot 0; stage s reads slot 2(P - 1 - s) (an einsum
  // with the stage's 0/1 vector per slot it reads). In the ticks of
  // backward only nothing moves: at the j-th stage s reads slot
  // 2P - 3 - 2s - j, and where that is below 0 it runs the backward of a
  // tick past the last microbatch (a bubble, its gradient zero), which
  // reads slot 0, a forward's values (finite); the forward's inputs per
  // tick (the microbatch stage 0 takes, the loss's weights, the labels)
  // read zero there instead, as the forward would have: the loss weight of
  // the bubble is zero, so is its gradient. The first tick fills every
  // slot: the backward of a stage before its first microbatch reads the
  // first tick's forward (finite values, a zero gradient).
  SmallVector<SmallVector<Value>> slotsOf; // per line, the initial slots
  SmallVector<int64_t> lineOf;             // per backward stacked operand
  SmallVector<Type> elements;              // the lines' element types
  SmallVector<size_t> elementOf;           // per line
  for (auto [value, isStaged] : llvm::zip(perTick, staged)) {
    if (!isStaged) {
      lineOf.push_back(-1);
      continue;
    }
    lineOf.push_back(static_cast<int64_t>(slotsOf.size()));
    TensorType type = typeOf(value);
    Value zero = out.constant(0.0, type);
    slotsOf.push_back(SmallVector<Value>(kept, zero));
    auto *at = llvm::find(elements, type.getElementType());
    elementOf.push_back(static_cast<size_t>(at - elements.begin()));
    if (at == elements.end())
      elements.push_back(type.getElementType());
  }
  size_t lineCount = slotsOf.size();
  auto inElement = [&](Value value, Type element) -> Value {
    if (typeOf(value).getElementType() == element)
      return value;
    return out.tag(mtf::CastOp::create(b, loc, value, element))->getResult(0);
  };
  // Per element type: each stage's 0/1 vector (invariants of the ticks of
  // both), and per slot k < 2P - 2 the 0/1 [cool, stage] of the stages that
  // read it in each tick of backward only (stacked), clamped at 0 and not.
  SmallVector<SmallVector<Value>> stageVectors;
  SmallVector<SmallVector<Value>> coolSelects, coolInputSelects;
  Value coolSlot = out.add(out.add(out.scale(range(stage, stages), -2.0),
                                   out.scale(range(cool, stages - 1), -1.0)),
                           out.scalar(slots - 2, f32));
  TensorType coolType = TensorType::get(
      context, {NamedDim{cool, stages - 1}, NamedDim{stage, stages}}, f32);
  SmallVector<Value> clampedPicks, exactPicks;
  for (int64_t k = 0; k < kept; ++k) {
    Value slotIndex = out.scalar(static_cast<double>(k), f32);
    clampedPicks.push_back(out.sumTo(
        equal(out.max(coolSlot, out.scalar(0.0, f32)), slotIndex), coolType));
    exactPicks.push_back(out.sumTo(equal(coolSlot, slotIndex), coolType));
  }
  for (Type element : elements) {
    SmallVector<Value> vectors, clamped, exact;
    for (int64_t s = 0; s < stages; ++s)
      vectors.push_back(inElement(oneHot(out, stage, stages, s), element));
    for (auto [pick, exactPick] : llvm::zip(clampedPicks, exactPicks)) {
      clamped.push_back(inElement(pick, element));
      exact.push_back(inElement(exactPick, element));
      for (Value select : {clamped.back(), exact.back()})
        markBackward(select.getDefiningOp());
    }
    stageVectors.push_back(vectors);
    coolSelects.push_back(clamped);
    coolInputSelects.push_back(exact);
  }
  auto recastTo = [&](OpEmitter &emit, Value value, Type castTo) -> Value {
    if (!castTo)
      return value;
    return emit
        .tag(mtf::CastOp::create(
            emit.builder(), loc, value,
            llvm::cast<TensorType>(castTo).getElementType()))
        ->getResult(0);
  };
  // Σ_k slot_k · picks_k: each stage its slot (elementwise, so that
  // mtf-fuse makes the sum one step).
  auto pickSlots = [&](OpEmitter &emit, ArrayRef<Value> slotValues,
                       ArrayRef<Value> picks) {
    Value sum;
    for (auto [value, pick] : llvm::zip(slotValues, picks)) {
      Value term = emit.mul(value, pick);
      sum = sum ? emit.add(sum, term) : term;
    }
    return sum;
  };

  // The ops that made each read (from the block's end before it was made)
  // moved to just before the read's first user, so that a read is live
  // only while the backward needs it (they all come before the backward
  // body, which reads them one by one).
  auto readOps = [](Block *body, Operation *before) {
    SmallVector<Operation *> ops;
    for (Operation *op = before ? before->getNextNode() : &body->front(); op;
         op = op->getNextNode())
      ops.push_back(op);
    return ops;
  };
  auto sinkReads = [](ArrayRef<SmallVector<Operation *>> chains,
                      ArrayRef<Value> reads) {
    for (auto [chain, read] : llvm::zip(chains, reads)) {
      if (chain.empty())
        continue;
      Operation *first = nullptr;
      for (Operation *user : read.getUsers())
        if (!first || user->isBeforeInBlock(first))
          first = user;
      if (!first)
        continue;
      for (Operation *op : chain)
        op->moveBefore(first);
    }
  };

  // The forward's stacked operands cut into the ticks of each loop: the
  // first tick (which fills the lines), the rest of the P - 1 of forward
  // only, the M of both.
  SmallVector<Value> firstIn, warmIn, steadyIn;
  for (Value value : forward.getStacked()) {
    firstIn.push_back(cutTicks(value, first, 1, 0));
    if (stages > 2)
      warmIn.push_back(cutTicks(value, warm, stages - 2, 1));
    steadyIn.push_back(cutTicks(value, steady, micro, stages - 1));
  }
  // What stage 0 takes per tick, as its backward reads it: in the M ticks
  // of both, tick j's backward is of tick j + P - 1 - 2(P - 1); in the
  // ticks of backward only, j + M + P - 1 - 2(P - 1).
  SmallVector<Value> steadyEntries, coolEntries;
  for (auto [k, value] : llvm::enumerate(perTick)) {
    if (staged[k])
      continue;
    Value operand =
        forward.getStacked()[llvm::cast<BlockArgument>(value).getArgNumber() -
                             forwardCarried];
    steadyEntries.push_back(cutTicks(operand, steady, micro, -(stages - 1)));
    coolEntries.push_back(
        cutTicks(operand, cool, stages - 1, micro - stages + 1));
    markBackward(steadyEntries.back().getDefiningOp());
    markBackward(coolEntries.back().getDefiningOp());
  }
  SmallVector<Value> invariants(forward.getInvariant());
  TypeRange ownTypes =
      forward.getStackedResults().take_front(ownStacked).getTypes();

  auto cloneForward = [&](OpEmitter &emit, IRMapping &mapping,
                          ValueRange carried, ValueRange stacked,
                          ValueRange invariant) {
    for (auto [arg, value] : llvm::zip(forward.getCarriedArgs(), carried))
      mapping.map(arg, value);
    for (auto [arg, value] : llvm::zip(forward.getStackedArgs(), stacked))
      mapping.map(arg, value);
    for (auto [arg, value] : llvm::zip(forward.getInvariantArgs(), invariant))
      mapping.map(arg, value);
    for (Operation &op : forwardBody.without_terminator())
      emit.builder().clone(op, mapping);
  };
  auto cloneBackward = [&](OpEmitter &emit, IRMapping &mapping,
                           ValueRange carried, ArrayRef<Value> stacked,
                           ValueRange invariant) {
    ValueRange args = backwardBody->getArguments();
    for (auto [arg, value] :
         llvm::zip(args.take_front(backwardCarried), carried))
      mapping.map(arg, value);
    for (auto [arg, value] :
         llvm::zip(args.slice(backwardCarried, stacked.size()), stacked))
      mapping.map(arg, value);
    for (auto [arg, value] : llvm::zip(
             args.drop_front(backwardCarried + stacked.size()), invariant))
      mapping.map(arg, value);
    for (Operation &op : backwardBody->without_terminator())
      emit.builder().clone(op, mapping);
  };
  auto mapped = [](IRMapping &mapping, ValueRange values) {
    SmallVector<Value> result;
    for (Value value : values)
      result.push_back(mapping.lookupOrDefault(value));
    return result;
  };
  ValueRange forwardCarriedYields =
      forwardYield->getOperands().take_front(forwardCarried);
  ValueRange forwardOwnYields =
      forwardYield->getOperands().slice(forwardCarried, ownStacked);
  ValueRange backwardCarriedYields =
      backwardYield->getOperands().take_front(backwardCarried);
  ValueRange backwardStackedYields =
      backwardYield->getOperands().drop_front(backwardCarried);
  // The carried slots of each line, flat: the first `kept` of each.
  auto flatSlots = [&](ArrayRef<SmallVector<Value>> perLine) {
    SmallVector<Value> flat;
    for (const SmallVector<Value> &line : perLine)
      llvm::append_range(flat, ArrayRef(line).take_front(kept));
    return flat;
  };
  auto typesOf = [](ValueRange values) {
    SmallVector<Type> types;
    for (Value value : values)
      types.push_back(value.getType());
    return types;
  };
  // Each line's slots after this tick's forward: slot 0 the tick's value,
  // the others moved one on (all the value in the first tick).
  auto moved = [&](IRMapping &mapping, ValueRange slotArgs, bool fill) {
    SmallVector<SmallVector<Value>> next;
    for (auto [k, line] : llvm::enumerate(lineOf)) {
      if (line < 0)
        continue;
      Value value = mapping.lookupOrDefault(perTick[k]);
      SmallVector<Value> slotValues{value};
      for (int64_t i = 1; i < slots; ++i)
        slotValues.push_back(fill ? value : slotArgs[line * kept + i - 1]);
      next.push_back(slotValues);
    }
    return next;
  };

  // Forward only: the first tick, then the other P - 2.
  SmallVector<Value> carriedNow(forward.getCarried());
  llvm::append_range(carriedNow, flatSlots(slotsOf));
  SmallVector<mtf::LoopOp> forwardLoops;
  for (bool fill : {true, false}) {
    if (!fill && stages == 2)
      break;
    StringAttr name = fill ? first : warm;
    int64_t count = fill ? 1 : stages - 2;
    auto loop = mtf::LoopOp::create(
        b, loc, typesOf(carriedNow),
        restacked(ownTypes, dim, ticks, name.getValue(), count),
        name.getValue(), count, carriedNow, fill ? firstIn : warmIn, invariants,
        /*reverse=*/false);
    out.tag(loop);
    Block *body = addBody(loop);
    OpEmitter emit(*body, "");
    emit.setLoc(loc);
    IRMapping mapping;
    cloneForward(emit, mapping, loop.getCarriedArgs(), loop.getStackedArgs(),
                 loop.getInvariantArgs());
    SmallVector<Value> yielded = mapped(mapping, forwardCarriedYields);
    llvm::append_range(
        yielded,
        flatSlots(
            moved(mapping,
                  ValueRange(loop.getCarriedArgs()).drop_front(forwardCarried),
                  fill)));
    llvm::append_range(yielded, mapped(mapping, forwardOwnYields));
    mtf::YieldOp::create(emit.builder(), loc, yielded);
    carriedNow.assign(loop.getFinals().begin(), loop.getFinals().end());
    forwardLoops.push_back(loop);
  }

  // Forward and backward: M ticks.
  SmallVector<Value> steadyCarried(carriedNow);
  llvm::append_range(steadyCarried, backwardInit);
  SmallVector<Value> steadyInvariants(invariants);
  for (const SmallVector<Value> &vectors : stageVectors)
    llvm::append_range(steadyInvariants, vectors);
  SmallVector<Type> steadyStackedTypes =
      restacked(ownTypes, dim, ticks, steady.getValue(), micro);
  llvm::append_range(steadyStackedTypes,
                     restacked(gradient.stackedResultTypes, dim, ticks,
                               steady.getValue(), micro));
  SmallVector<Value> steadyStacked(steadyIn);
  llvm::append_range(steadyStacked, steadyEntries);
  auto steadyLoop = mtf::LoopOp::create(
      b, loc, typesOf(steadyCarried), steadyStackedTypes, steady.getValue(),
      micro, steadyCarried, steadyStacked, steadyInvariants,
      /*reverse=*/false);
  out.tag(steadyLoop);
  size_t slotCount = lineCount * kept;
  {
    Block *body = addBody(steadyLoop);
    OpEmitter emit(*body, ""), backward(*body, "backward");
    emit.setLoc(loc);
    backward.setLoc(loc);
    ValueRange carriedArgs = steadyLoop.getCarriedArgs();
    ValueRange invariantArgs = steadyLoop.getInvariantArgs();
    IRMapping mapping;
    ValueRange stackedArgs = steadyLoop.getStackedArgs();
    cloneForward(emit, mapping, carriedArgs.take_front(forwardCarried),
                 stackedArgs.take_front(steadyIn.size()),
                 invariantArgs.take_front(invariants.size()));
    SmallVector<SmallVector<Value>> next =
        moved(mapping, carriedArgs.slice(forwardCarried, slotCount), false);
    SmallVector<Value> stackedReads;
    SmallVector<SmallVector<Operation *>> chains;
    size_t entry = steadyIn.size();
    for (auto [k, line] : llvm::enumerate(lineOf)) {
      Operation *last = body->empty() ? nullptr : &body->back();
      if (line < 0) {
        // Stage 0's input of 2(P - 1) ticks before.
        stackedReads.push_back(stackedArgs[entry++]);
        chains.emplace_back();
        continue;
      }
      // Stage s reads slot 2(P - 1 - s).
      SmallVector<Value> slotValues, picks;
      ValueRange vectors = invariantArgs.slice(
          invariants.size() + elementOf[line] * stages, stages);
      for (int64_t s = 0; s < stages; ++s) {
        slotValues.push_back(next[line][2 * (stages - 1 - s)]);
        picks.push_back(vectors[s]);
      }
      stackedReads.push_back(recastTo(
          backward, pickSlots(backward, slotValues, picks), recast[k]));
      chains.push_back(readOps(body, last));
    }
    IRMapping backwardMapping;
    cloneBackward(backward, backwardMapping,
                  carriedArgs.drop_front(forwardCarried + slotCount),
                  stackedReads, invariantArgs.take_front(invariants.size()));
    sinkReads(chains, stackedReads);
    SmallVector<Value> yielded = mapped(mapping, forwardCarriedYields);
    llvm::append_range(yielded, flatSlots(next));
    llvm::append_range(yielded, mapped(backwardMapping, backwardCarriedYields));
    llvm::append_range(yielded, mapped(mapping, forwardOwnYields));
    llvm::append_range(yielded, mapped(backwardMapping, backwardStackedYields));
    mtf::YieldOp::create(emit.builder(), loc, yielded);
  }

  // Backward only: the last P - 1 ticks, the lines no longer moving.
  ValueRange steadyFinalValues = steadyLoop.getFinals();
  SmallVector<Value> coolCarried(
      steadyFinalValues.drop_front(forwardCarried + slotCount));
  SmallVector<Value> coolInvariants(invariants);
  llvm::append_range(coolInvariants,
                     steadyFinalValues.slice(forwardCarried, slotCount));
  SmallVector<Value> coolStacked;
  for (auto [clamped, exact] : llvm::zip(coolSelects, coolInputSelects)) {
    llvm::append_range(coolStacked, clamped);
    llvm::append_range(coolStacked, exact);
  }
  size_t coolEntriesAt = coolStacked.size();
  llvm::append_range(coolStacked, coolEntries);
  auto coolLoop = mtf::LoopOp::create(
      b, loc, typesOf(coolCarried),
      restacked(gradient.stackedResultTypes, dim, ticks, cool.getValue(),
                stages - 1),
      cool.getValue(), stages - 1, coolCarried, coolStacked, coolInvariants,
      /*reverse=*/false);
  markBackward(coolLoop);
  {
    Block *body = addBody(coolLoop);
    OpEmitter backward(*body, "backward");
    backward.setLoc(loc);
    ValueRange invariantArgs = coolLoop.getInvariantArgs();
    ValueRange selectArgs = coolLoop.getStackedArgs();
    SmallVector<Value> stackedReads;
    SmallVector<SmallVector<Operation *>> chains;
    size_t entry = coolEntriesAt;
    for (auto [k, line] : llvm::enumerate(lineOf)) {
      Operation *last = body->empty() ? nullptr : &body->back();
      if (line < 0) {
        stackedReads.push_back(selectArgs[entry++]);
        chains.emplace_back();
        continue;
      }
      // Per element type the clamped and the exact picks.
      ValueRange picks = selectArgs.slice(
          (2 * elementOf[line] + (isInput[k] ? 1 : 0)) * kept, kept);
      ValueRange slotValues =
          invariantArgs.slice(invariants.size() + line * kept, kept);
      stackedReads.push_back(
          recastTo(backward,
                   pickSlots(backward, SmallVector<Value>(slotValues),
                             SmallVector<Value>(picks)),
                   recast[k]));
      chains.push_back(readOps(body, last));
    }
    IRMapping mapping;
    cloneBackward(backward, mapping, coolLoop.getCarriedArgs(), stackedReads,
                  invariantArgs.take_front(invariants.size()));
    sinkReads(chains, stackedReads);
    SmallVector<Value> yielded = mapped(mapping, backwardCarriedYields);
    llvm::append_range(yielded, mapped(mapping, backwardStackedYields));
    mtf::YieldOp::create(backward.builder(), loc, yielded);
  }

  // The gradients of the stacked operands, tick by tick: stage s gave the
  // backward of tick t at tick t + 2P - 2 - s of the three loops, the
  // first M + P - 1 of them ran backward (the j-th: tick j + P - 1).
  LoopGradientValues values;
  llvm::append_range(values.finals, coolLoop.getFinals());
  OpEmitter back(forward.getOperation());
  back.setLoc(loc);
  for (auto [index, type] : llvm::enumerate(gradient.stackedResultTypes)) {
    Value fromSteady = steadyLoop.getStackedResults()[ownStacked + index];
    Value fromCool = coolLoop.getStackedResults()[index];
    TensorType slice =
        llvm::cast<TensorType>(mtf::LoopOp::sliceType(type, dim, ticks));
    Value all = back.add(window(back, fromSteady, steady.getValue(),
                                joined.getValue(), micro + stages - 1, 0),
                         window(back, fromCool, cool.getValue(),
                                joined.getValue(), micro + stages - 1, -micro));
    bool perStage = slice.getRank() > 0 && slice.getDims()[0].name == stage;
    if (!perStage) {
      // The gradient of what stage 0 takes: its backward of tick t ran at
      // tick t + 2P - 2.
      Value operand = gradient.stackedWanted[index];
      auto at = llvm::find(forward.getStacked(), operand);
      if (at == forward.getStacked().end() ||
          at - forward.getStacked().begin() >= entries)
        return refuse("the gradient of a value it reads per tick (" +
                      Twine(index) +
                      ") is neither per stage nor what stage 0 takes");
      values.stackedResults.push_back(
          window(back, all, joined.getValue(), dim, ticks, stages - 1));
      continue;
    }
    Value sum;
    for (int64_t s = 0; s < stages; ++s) {
      Value moved =
          window(back, all, joined.getValue(), dim, ticks, stages - 1 - 2 * s);
      Value select = oneHot(back, stage, stages, s);
      if (typeOf(moved).getElementType() != f32)
        select = back.tag(mtf::CastOp::create(back.builder(), loc, select,
                                              typeOf(moved).getElementType()))
                     ->getResult(0);
      Value term = back.mul(moved, select);
      sum = sum ? back.add(sum, term) : term;
    }
    values.stackedResults.push_back(sum);
  }
  for (Operation *op = coolLoop->getNextNode(); op != forward.getOperation();
       op = op->getNextNode())
    markBackward(op);
  // The forward's own stacked results (the last stage's result per tick):
  // a window that reads only ticks of both (the microbatches that leave the
  // last stage) reads the loop of both; otherwise the ticks of every loop,
  // in order (an add of windows, which a 16-bit tensor stages in f32).
  for (auto [index, result] :
       llvm::enumerate(forward.getStackedResults().take_front(ownStacked))) {
    Value steadyPart = steadyLoop.getStackedResults()[index];
    for (OpOperand &use : llvm::make_early_inc_range(result.getUses())) {
      auto read = llvm::dyn_cast<mtf::WindowOp>(use.getOwner());
      if (!read || read.getFrom() != dim)
        continue;
      TensorType readType = typeOf(read.getResult());
      int64_t size =
          readType.getDims()[*readType.getDimIndex(read.getTo())].size;
      auto offset = static_cast<int64_t>(read.getOffset());
      if (offset < stages - 1 || offset + size > stages - 1 + micro)
        continue;
      OpBuilder at(read);
      auto cut = mtf::WindowOp::create(at, read.getLoc(), readType, steadyPart,
                                       steady.getValue(), read.getTo(),
                                       offset - (stages - 1));
      cut->setDiscardableAttrs(read->getDiscardableAttrDictionary());
      read.getResult().replaceAllUsesWith(cut.getResult());
      read.erase();
    }
    if (result.use_empty())
      continue;
    Value whole;
    int64_t at = 0;
    SmallVector<std::pair<Value, int64_t>> parts;
    for (mtf::LoopOp loop : forwardLoops)
      parts.emplace_back(loop.getStackedResults()[index], loop.getCount());
    parts.emplace_back(steadyLoop.getStackedResults()[index], micro);
    for (auto [part, count] : parts) {
      Value placed = window(
          out, part,
          llvm::cast<TensorType>(part.getType()).getDims()[0].name.getValue(),
          dim, ticks, -at);
      whole = whole ? out.add(whole, placed) : placed;
      at += count;
    }
    result.replaceAllUsesWith(whole);
  }
  for (auto [final, value] : llvm::zip(forward.getFinals(), steadyFinalValues))
    final.replaceAllUsesWith(value);

  llvm::SetVector<Value> forwardStacked(forward.getStacked().begin(),
                                        forward.getStacked().end());
  forward.erase();
  // The ticks laid out whole, now read only in cuts, go.
  for (Value value : forwardStacked)
    if (Operation *def = value.getDefiningOp();
        def && value.use_empty() && isMemoryEffectFree(def))
      def->erase();
  return values;
}

} // namespace meshc
