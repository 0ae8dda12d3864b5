//===- EmitMprog.cpp - local mtf programs to .mprog -----------------------===//
//
// Values that are views of one another (to_tensor/from_tensor, rename, an
// in-place all-reduce) share a buffer. Buffers live from their first
// definition to their last use (inputs, parameters and outputs for the whole
// step) and are placed first-fit in one arena; a step's outputs are placed
// before the buffers it reads for the last time are released, so no step
// writes over its own operands unless it works in place. Step kinds and
// unary/binary functions are spelled by the runtime's tables
// (runtime/core/StepKinds.def, runtime/core/ElementFunctions.def), so the
// emitter cannot write one the runtime lacks.
//
//===----------------------------------------------------------------------===//

#include "lowering/EmitMprog.h"

#include "compiler/passes/LayoutBridge.h"
#include "lowering/Partitioner.h"
#include "runtime/core/StepKinds.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>

using namespace mlir;
namespace json = llvm::json;
namespace shard = mlir::shard;

namespace meshc {
namespace {

constexpr int64_t kAlignment = 64;

/// A buffer: one class of aliased values.
struct BufferInfo {
  int64_t id = 0;
  std::string dtype;
  std::vector<int64_t> shape;
  /// The value that first defines it: its dims' blocks are the buffer's.
  Value first;
  int64_t bytes = 0;
  int64_t offset = 0;
  int64_t firstDef = 0, lastUse = 0;
  bool pinned = false; // input, parameter or output: lives all step long
  MemoryUse use = MemoryUse::Activations;
  /// A loop's slice of a stacked operand: no space of its own, it starts
  /// where that operand's buffer does and moves by its own bytes per
  /// iteration.
  std::optional<size_t> sliceOf;
};

std::string dtypeOf(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isSignlessInteger(32))
    return "i32";
  if (type.isBF16())
    return "bf16";
  if (type.isF16())
    return "f16";
  return "?";
}

Type elementOf(Type type) {
  if (auto named = llvm::dyn_cast<mtf::TensorType>(type))
    return named.getElementType();
  return llvm::cast<RankedTensorType>(type).getElementType();
}

/// The emitter is the StepWriter of the ops it writes: each op's
/// StepOpInterface writes its own steps (dialect/MtfSteps.cpp,
/// CollectiveSteps.cpp).
class MprogEmitter : public mtf::StepWriter {
public:
  MprogEmitter(mtf::ProgramOp program, const MprogOptions &options)
      : program(program), options(options),
        mesh(toMesh(program.getMeshAttr())) {}

  FailureOr<json::Value> run(MemoryPlanStats *stats);
  /// The buffers and their plan, without the program's JSON.
  FailureOr<MemoryPlanStats> plan();

  // StepWriter.
  void push(runtime::OpKind kind, json::Object fields) override;
  int64_t buffer(Value value) override { return bufferOf(value); }
  json::Object operand(Value value) override;
  json::Object sizes(ArrayRef<Value> values) override;
  /// `size`, or {"axes": [...], "blocks": [...]} when the dim is cut into
  /// unequal blocks (mtf.blocks), which the loader resolves per device.
  json::Value extent(Value value, StringRef dim, int64_t size) override;
  std::string dimName(Value value, int64_t position) override {
    return dimNames(value)[position];
  }
  json::Array globalDims(Value value) override {
    return std::move(*tensorEntry("", "", value).getArray("dims"));
  }
  std::string dtype(Value value) override {
    return dtypeOf(elementOf(value.getType()));
  }
  json::Array axisNames(ArrayRef<int16_t> axes) override;
  /// Each member's block as a size or, where it differs between groups, a
  /// per-device size over the dim's other axes.
  FailureOr<json::Value> memberBlocks(Operation *op, Value cut, StringRef dim,
                                      ArrayRef<int16_t> group) override;
  int64_t paramBuffer(StringRef name) override {
    return paramBuffers.lookup(name);
  }
  FailureOr<json::Array> stepsOf(Block &block) override;
  int64_t bufferBytes(Value value) override { return infoOf(value).bytes; }
  int64_t stackedSlice(Value result) override {
    return stackedSlices.lookup(result);
  }
  std::optional<int64_t> ticket(Operation *start) override {
    auto it = tickets.find(start);
    return it == tickets.end() ? std::nullopt
                               : std::optional<int64_t>(it->second);
  }
  std::optional<int64_t> snapshotBuffer(Operation *output) override {
    auto it = snapshots.find(output);
    return it == snapshots.end() ? std::nullopt
                                 : std::optional<int64_t>(it->second);
  }

private:
  /// The program's ops in order, each loop followed by its body's ops
  /// (terminator included), in `order`; loopEnd maps each loop to the
  /// position of its body's last op.
  LogicalResult flatten();
  LogicalResult assignBuffers();
  void planMemory();
  LogicalResult emitStep(Operation &op);
  /// The shape of a buffer, each size as extent() gives it.
  json::Array bufferShape(const BufferInfo &info);
  json::Object tensorEntry(StringRef role, StringRef name, Value value);
  /// A param or output whose leading dims cut a model dim (mtf.model_dims, the
  /// interleaved schedule): its dims as the model declares them, the cut
  /// dims merged into one, from `entry`'s global dims; else none.
  std::optional<json::Array> modelDims(Value value, const json::Object &entry);
  /// The classes synthetic labels `input` range over: those of their first
  /// consumer, as in the reference interpreter. The labels may reach it
  /// through views and collectives; its class dimension is always whole
  /// there (the partitioner gathers it), so the local size is the global
  /// one; 2 when no consumer takes classes.
  int64_t labelRange(Value input);
  /// The global entry ({name, size, axes}) of dim `dim` of local `value`,
  /// as tensorEntry describes it.
  json::Object globalDim(Value value, StringRef dim);
  /// The "training" member: optimizer, hyper-parameters, loss output and,
  /// for local SGD, which parameters are averaged over which axes.
  json::Object trainingEntry(DictionaryAttr training);
  /// Dim names of a named or ranked value.
  std::vector<std::string> dimNames(Value value);
  int64_t bufferOf(Value value) {
    return buffers[leaderIndex.lookup(aliases.getLeaderValue(value))].id;
  }
  BufferInfo &infoOf(Value value) {
    return buffers[leaderIndex.lookup(aliases.getLeaderValue(value))];
  }

  mtf::ProgramOp program;
  const MprogOptions &options;
  layout::Mesh mesh;
  llvm::EquivalenceClasses<Value> aliases;
  llvm::DenseMap<Value, size_t> leaderIndex;
  std::vector<BufferInfo> buffers;
  /// Dim names of ranked values, inherited from the mtf.to_tensor they come
  /// from.
  llvm::DenseMap<Value, std::vector<std::string>> rankedNames;
  int64_t arenaBytes = 0;
  /// The most bytes live at once (pinned buffers and live temporaries).
  int64_t peakLiveBytes = 0;
  std::array<int64_t, kMemoryUses> peakByUse = {};
  /// Outputs of assigned parameters -> the buffer their value is copied to.
  llvm::DenseMap<Operation *, int64_t> snapshots;
  /// Parameter (and slot) name -> buffer id.
  llvm::StringMap<int64_t> paramBuffers;
  /// Where push() appends.
  json::Array steps;
  /// flatten()'s program order and loop ends.
  std::vector<Operation *> order;
  llvm::DenseMap<Operation *, int64_t> loopEnd;
  llvm::DenseMap<Operation *, mtf::LoopOp> loops;
  /// A loop's stacked result -> the buffer of its moving slice.
  llvm::DenseMap<Value, int64_t> stackedSlices;
  /// Started collectives (mtf.wait) -> their tickets, in order of writing.
  llvm::DenseMap<Operation *, int64_t> tickets;
  /// The carried waits written as such: their collectives' results are
  /// stacked slices (a wait whose results are not is written where it is).
  llvm::DenseSet<Operation *> carriedWaits;

  /// The ticket of started collective `start`, given on first ask.
  int64_t ticketOf(Operation *start) {
    auto [it, fresh] =
        tickets.try_emplace(start, static_cast<int64_t>(tickets.size()));
    return it->second;
  }
  /// Keeps the buffers of the collectives carried waits complete live over
  /// their loop's whole body: their collective of one iteration runs into
  /// the next.
  void planCarriedWaits();
};

/// What an op is to the program's interface with the world: a tensor the
/// step reads from outside (an input, a parameter, an optimizer slot), one
/// it hands out (an output), or neither.
struct Boundary {
  enum Kind { None, Input, Param, Slot, Output } kind = None;
  StringRef name;
  mtf::InitAttr init; ///< A parameter's or slot's.
  /// Whether the step reads it from outside (its buffer lives all step).
  bool isSource() const {
    return kind == Input || kind == Param || kind == Slot;
  }
  bool isParam() const { return kind == Param || kind == Slot; }
};

Boundary boundaryOf(Operation &op) {
  if (auto param = llvm::dyn_cast<mtf::ParamOp>(op))
    return {param.getSlot() ? Boundary::Slot : Boundary::Param, param.getName(),
            param.getInit()};
  if (auto input = llvm::dyn_cast<mtf::InputOp>(op))
    return {Boundary::Input, input.getName(), {}};
  if (auto output = llvm::dyn_cast<mtf::OutputOp>(op))
    return {Boundary::Output, output.getName(), {}};
  return {};
}

/// What the buffer `op` defines holds.
MemoryUse useOf(Operation &op) {
  switch (boundaryOf(op).kind) {
  case Boundary::Param:
    return MemoryUse::Parameters;
  case Boundary::Slot:
    return MemoryUse::OptimizerSlots;
  case Boundary::Input:
    return MemoryUse::Inputs;
  default:
    break;
  }
  if (llvm::isa<shard::ShardDialect>(op.getDialect()))
    return MemoryUse::Collectives;
  auto phase = op.getAttrOfType<StringAttr>(mtf::MtfDialect::kPhaseAttrName);
  if (!phase)
    return MemoryUse::Activations;
  if (phase.getValue() == "update")
    return MemoryUse::Update;
  bool grouped = llvm::any_of(mtf::MtfDialect::kGroupAttrNames,
                              [&](StringRef name) { return op.hasAttr(name); });
  return grouped ? MemoryUse::Recomputed : MemoryUse::Backward;
}

/// Whether `op`'s result is a view of its operand (the View trait).
bool isView(Operation *op) { return op->hasTrait<mtf::View>(); }

/// The value `value` was resharded or viewed from: follows views and
/// collectives back to the first value that is neither.
Value sourceOf(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (Value started = mtf::WaitOp::throughWait(value); started != value) {
      value = started;
      continue;
    }
    if (!isView(def) && !llvm::isa<shard::ShardDialect>(def->getDialect()))
      break;
    value = def->getOperand(0);
  }
  return value;
}

/// For a result of an op with a body (mtf.fused), the body value it yields;
/// else `value`.
Value yieldedValue(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def || def->getNumRegions() != 1)
    return value;
  Value inner = def->getRegion(0).front().getTerminator()->getOperand(
      llvm::cast<OpResult>(value).getResultNumber());
  // A body that passes an argument on: the operand it stands for.
  if (auto arg = llvm::dyn_cast<BlockArgument>(inner))
    return def->getOperand(arg.getArgNumber());
  return inner;
}

LogicalResult MprogEmitter::flatten() {
  for (Operation &op : program.getBodyBlock()) {
    order.push_back(&op);
    auto loop = llvm::dyn_cast<mtf::LoopOp>(op);
    if (!loop)
      continue;
    loops[&op] = loop;
    for (Operation &inner : loop.getBodyBlock()) {
      if (mtf::stepKindOf(&inner) == runtime::OpKind::Loop)
        return inner.emitError() << "a loop inside a loop's body cannot be "
                                    "written to a .mprog yet";
      order.push_back(&inner);
    }
    loopEnd[&op] = static_cast<int64_t>(order.size()) - 1;
  }
  return success();
}

LogicalResult MprogEmitter::assignBuffers() {
  if (failed(flatten()))
    return failure();
  for (Operation *op : order)
    for (Value result : op->getResults())
      aliases.insert(result);
  // A loop's carried argument is its result's buffer, every iteration
  // writing the next value there; an invariant argument is its operand's.
  llvm::DenseSet<Value> loopArgs;
  for (Operation *op : order) {
    if (isView(op))
      aliases.unionSets(op->getOperand(0), op->getResult(0));
    // A wait's results are its collective's.
    if (auto wait = llvm::dyn_cast<mtf::WaitOp>(op))
      for (auto [value, result] :
           llvm::zip(wait.getValues(), wait.getResults()))
        aliases.unionSets(value, result);
    if (mtf::LoopOp loop = loops.lookup(op)) {
      for (BlockArgument arg : loop.getBodyBlock().getArguments()) {
        aliases.insert(arg);
        loopArgs.insert(arg);
      }
      for (auto [arg, result] :
           llvm::zip(loop.getCarriedArgs(), loop.getFinals()))
        aliases.unionSets(arg, result);
      // A value carried on from a loop before, read by nothing else, is
      // this loop's carried buffer already: no copy, no second buffer (a
      // pipeline's lines of slots through its loops, docs/pipeline.md).
      for (auto [operand, result] :
           llvm::zip(loop.getCarried(), loop.getFinals()))
        if (operand.hasOneUse() && operand.getDefiningOp<mtf::LoopOp>() &&
            operand.getParentBlock() == loop->getBlock())
          aliases.unionSets(operand, result);
      for (auto [arg, operand] :
           llvm::zip(loop.getInvariantArgs(), loop.getInvariant()))
        aliases.unionSets(arg, operand);
    }
  }
  // An all-reduce works in place only when it is the last reader of its
  // input's buffer (through any view) and that buffer is not pinned: the
  // partitioner places a deferred all-reduce right after the partial sums,
  // and later adds of partial sums may still read them.
  // (A loop's arguments are read again in the next iteration: never in
  // place.)
  llvm::DenseMap<Value, int64_t> lastRead;
  llvm::DenseSet<Value> pinnedClasses;
  for (Value arg : loopArgs)
    pinnedClasses.insert(aliases.getLeaderValue(arg));
  int64_t position = 0;
  for (Operation *each : order) {
    Operation &op = *each;
    Boundary boundary = boundaryOf(op);
    // A wait keeps its collective's inputs live, it does not read them: a
    // started all-reduce still works in place (nothing between its start
    // and its wait touches its buffers).
    auto wait = llvm::dyn_cast<mtf::WaitOp>(op);
    for (Value operand : wait ? wait.getValues() : op.getOperands()) {
      Value leader = aliases.getLeaderValue(operand);
      lastRead[leader] = std::max(lastRead.lookup(leader), position);
      if (boundary.kind == Boundary::Output)
        pinnedClasses.insert(leader);
    }
    if (boundary.isSource())
      pinnedClasses.insert(aliases.getLeaderValue(op.getResult(0)));
    ++position;
  }
  position = 0;
  for (Operation *each : order) {
    Operation &op = *each;
    auto step = llvm::dyn_cast<mtf::StepOpInterface>(op);
    if (step && step.mayWorkInPlace()) {
      // Result i over operand i; never two results over one class.
      llvm::SmallVector<Value> leaders;
      for (Value operand : op.getOperands())
        leaders.push_back(aliases.getLeaderValue(operand));
      for (unsigned i = 0; i < op.getNumResults() && i < leaders.size(); ++i)
        if (!pinnedClasses.contains(leaders[i]) &&
            lastRead.lookup(leaders[i]) == position &&
            llvm::count(leaders, leaders[i]) == 1)
          aliases.unionSets(op.getOperand(i), op.getResult(i));
    }
    ++position;
  }
  // A value a loop's body computes and stacks is computed in place in its
  // result's slice of the iteration (no copy at the yield), where its whole
  // class is the body's own: no argument, source, output or outer value.
  llvm::DenseMap<Value, Value> stackedInPlace; // leader -> stacked result
  for (auto [op, loop] : loops) {
    Block &loopBody = loop.getBodyBlock();
    for (auto [value, result] :
         llvm::zip(loopBody.getTerminator()->getOperands().drop_front(
                       loop.getCarried().size()),
                   loop.getStackedResults())) {
      Value leader = aliases.getLeaderValue(value);
      if (pinnedClasses.contains(leader) || stackedInPlace.count(leader))
        continue;
      bool own = llvm::all_of(
          llvm::make_range(aliases.findLeader(value), aliases.member_end()),
          [&](Value member) {
            return llvm::isa<OpResult>(member) &&
                   member.getDefiningOp()->getBlock() == &loopBody;
          });
      if (own)
        stackedInPlace[leader] = result;
    }
  }
  // One buffer per class, in order of first definition.
  int64_t index = 0;
  for (Operation *each : order) {
    Operation &op = *each;
    Boundary boundary = boundaryOf(op);
    SmallVector<Value> defined(op.getResults());
    mtf::LoopOp loop = loops.lookup(&op);
    if (loop)
      llvm::append_range(defined, loop.getStackedArgs());
    for (Value result : defined) {
      Value leader = aliases.getLeaderValue(result);
      if (auto stacked = stackedInPlace.find(leader);
          stacked != stackedInPlace.end() && !leaderIndex.count(leader)) {
        const BufferInfo &slice =
            buffers[stackedSlices.lookup(stacked->second)];
        if (slice.shape == largestLocalShape(result)) {
          leaderIndex[leader] = slice.id;
          continue;
        }
      }
      auto [it, inserted] = leaderIndex.try_emplace(leader, buffers.size());
      BufferInfo *info = nullptr;
      if (inserted) {
        buffers.emplace_back();
        info = &buffers.back();
        info->id = buffers.size() - 1;
        info->dtype = dtypeOf(elementOf(result.getType()));
        info->shape = largestLocalShape(result);
        if (llvm::any_of(info->shape, ShapedType::isDynamic))
          return op.emitError() << "a dynamic size without its blocks "
                                   "(mtf.blocks) cannot be planned";
        info->first = result;
        int64_t elements = 1;
        for (int64_t size : info->shape)
          elements *= size;
        info->bytes = elements *
                      (elementOf(result.getType()).getIntOrFloatBitWidth() / 8);
        info->firstDef = index;
        info->use = useOf(op);
        if (loop && llvm::isa<BlockArgument>(result)) {
          // A stacked operand's slice.
          auto arg = llvm::cast<BlockArgument>(result);
          info->sliceOf = leaderIndex.lookup(
              aliases.getLeaderValue(loop->getOperand(arg.getArgNumber())));
          info->use = buffers[*info->sliceOf].use;
        }
        if (info->dtype == "?")
          return op.emitError() << "the .mprog runtime handles f32, i32, "
                                   "bf16 and f16 tensors; got "
                                << elementOf(result.getType());
        if (boundary.isSource() && info->dtype != "f32" && info->dtype != "i32")
          return op.emitError()
                 << (boundary.kind == Boundary::Input ? "input" : "param")
                 << " '" << boundary.name << "' is " << info->dtype
                 << "; a .mprog's inputs and params are f32 or i32: declare "
                    "it f32 and cast it where it is used";
      }
      info = &buffers[it->second];
      if (boundary.isSource())
        info->pinned = true;
    }
    // Each stacked result's slice: iteration i's yielded value is copied
    // to position i.
    if (loop)
      for (auto [result, value] : llvm::zip(
               loop.getStackedResults(),
               loop.getBodyBlock().getTerminator()->getOperands().drop_front(
                   loop.getCarried().size()))) {
        size_t whole = leaderIndex.lookup(aliases.getLeaderValue(result));
        BufferInfo slice = buffers[whole];
        slice.id = buffers.size();
        slice.shape.erase(slice.shape.begin());
        slice.bytes /= loop.getCount();
        slice.first = value;
        slice.sliceOf = whole;
        stackedSlices[result] = slice.id;
        buffers.push_back(slice);
      }
    // A loop's operands and results live through its whole body.
    int64_t until = loop ? loopEnd.lookup(loop) : index;
    for (Value operand : op.getOperands()) {
      BufferInfo &info = infoOf(operand);
      info.lastUse = std::max(info.lastUse, until);
      if (boundary.kind == Boundary::Output)
        info.pinned = true;
    }
    if (loop)
      for (Value result : loop.getResults()) {
        BufferInfo &info = infoOf(result);
        info.lastUse = std::max(info.lastUse, until);
      }
    if (boundary.kind == Boundary::Output)
      if (std::string dtype = infoOf(op.getOperand(0)).dtype;
          dtype != "f32" && dtype != "i32")
        return op.emitError()
               << "output '" << boundary.name << "' is " << dtype
               << "; a .mprog's outputs are f32 or i32: output a "
                  "cast(x, f32) of it";
    ++index;
  }
  for (BufferInfo &info : buffers)
    info.lastUse = std::max(info.lastUse, info.firstDef);
  planCarriedWaits();

  // An output of a parameter that the step assigns shows the value the step
  // read: it is copied into a buffer of its own before the update.
  Block &body = program.getBodyBlock();
  llvm::StringSet<> assigned;
  for (auto assign : body.getOps<mtf::AssignOp>())
    assigned.insert(assign.getName());
  llvm::DenseMap<Value, bool> assignedParams;
  for (Operation &op : body)
    if (Boundary param = boundaryOf(op);
        param.isParam() && assigned.contains(param.name))
      assignedParams[aliases.getLeaderValue(op.getResult(0))] = true;
  for (Operation &op : body) {
    if (boundaryOf(op).kind != Boundary::Output ||
        !assignedParams.lookup(aliases.getLeaderValue(op.getOperand(0))))
      continue;
    BufferInfo copy = infoOf(op.getOperand(0));
    copy.id = buffers.size();
    copy.pinned = true;
    snapshots[&op] = copy.id;
    buffers.push_back(copy);
  }
  return success();
}

void MprogEmitter::planCarriedWaits() {
  for (auto [index, op] : llvm::enumerate(order)) {
    mtf::LoopOp loop = loops.lookup(op);
    if (!loop)
      continue;
    for (auto wait : loop.getBodyBlock().getOps<mtf::WaitOp>()) {
      if (!wait.getCarried() ||
          !llvm::all_of(wait.getValues(), [&](Value result) {
            return infoOf(result).sliceOf.has_value();
          }))
        continue;
      carriedWaits.insert(wait);
      // Its inputs, from the body's first step to its end (unless it reads
      // them only where it starts).
      std::optional<runtime::OpKind> kind = mtf::stepKindOf(wait.getStart());
      if (kind && runtime::readsInputsAtStart(*kind))
        continue;
      for (Value kept : wait.getKept()) {
        BufferInfo &info = infoOf(kept);
        if (info.pinned || info.sliceOf)
          continue;
        info.firstDef = std::min(info.firstDef, static_cast<int64_t>(index));
        info.lastUse = std::max(info.lastUse, loopEnd.lookup(op));
      }
    }
  }
}

void MprogEmitter::planMemory() {
  // Pinned buffers first, side by side; the rest first-fit by liveness.
  int64_t top = 0;
  auto align = [](int64_t bytes) {
    return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  };
  for (BufferInfo &info : buffers)
    if (info.pinned) {
      info.offset = top;
      top += align(info.bytes);
    }
  std::map<int64_t, int64_t> live; // offset -> end, of placed temporaries
  std::vector<BufferInfo *> temporaries;
  for (BufferInfo &info : buffers)
    if (!info.pinned && !info.sliceOf)
      temporaries.push_back(&info);
  arenaBytes = top;
  peakLiveBytes = top;
  int64_t liveBytes = top;
  std::array<int64_t, kMemoryUses> liveByUse = {};
  for (const BufferInfo &info : buffers)
    if (info.pinned)
      liveByUse[static_cast<size_t>(info.use)] += align(info.bytes);
  peakByUse = liveByUse;
  int64_t steps = static_cast<int64_t>(order.size());
  std::vector<std::vector<BufferInfo *>> byDef(steps), byEnd(steps);
  for (BufferInfo *info : temporaries) {
    byDef[info->firstDef].push_back(info);
    byEnd[info->lastUse].push_back(info);
  }
  for (int64_t step = 0; step < steps; ++step) {
    for (BufferInfo *info : byDef[step]) {
      int64_t candidate = top;
      for (auto [offset, end] : live) {
        if (candidate + align(info->bytes) <= offset)
          break;
        candidate = std::max(candidate, align(end));
      }
      info->offset = candidate;
      live[candidate] = candidate + info->bytes;
      arenaBytes = std::max(arenaBytes, align(candidate + info->bytes));
      liveBytes += align(info->bytes);
      liveByUse[static_cast<size_t>(info->use)] += align(info->bytes);
    }
    if (liveBytes > peakLiveBytes) {
      peakLiveBytes = liveBytes;
      peakByUse = liveByUse;
    }
    for (BufferInfo *info : byEnd[step]) {
      live.erase(info->offset);
      liveBytes -= align(info->bytes);
      liveByUse[static_cast<size_t>(info->use)] -= align(info->bytes);
    }
  }
  for (BufferInfo &info : buffers)
    if (info.sliceOf)
      info.offset = buffers[*info.sliceOf].offset;
}

std::vector<std::string> MprogEmitter::dimNames(Value value) {
  if (auto named = llvm::dyn_cast<mtf::TensorType>(value.getType())) {
    std::vector<std::string> names;
    for (const mtf::NamedDim &dim : named.getDims())
      names.push_back(dim.name.getValue().str());
    return names;
  }
  return rankedNames.lookup(value);
}

json::Object MprogEmitter::operand(Value value) {
  json::Array dims;
  for (const std::string &name : dimNames(value))
    dims.push_back(name);
  return json::Object{{"buf", bufferOf(value)}, {"dims", std::move(dims)}};
}

void MprogEmitter::push(runtime::OpKind kind, json::Object fields) {
  fields["op"] = runtime::opName(kind);
  steps.push_back(std::move(fields));
}

json::Object MprogEmitter::sizes(ArrayRef<Value> values) {
  json::Object sizes;
  for (Value value : values) {
    std::vector<std::string> names = dimNames(value);
    std::vector<int64_t> shape = largestLocalShape(value);
    for (auto [name, size] : llvm::zip(names, shape))
      sizes[name] = extent(value, name, size);
  }
  return sizes;
}

/// The op whose mtf.blocks describe `value`: its defining op, the body op
/// that makes a fused result, the input a fused body's argument stands for.
static Operation *blocksSource(Value value) {
  if (auto arg = llvm::dyn_cast<BlockArgument>(value)) {
    Operation *parent = arg.getOwner()->getParentOp();
    return parent && arg.getArgNumber() < parent->getNumOperands()
               ? blocksSource(parent->getOperand(arg.getArgNumber()))
               : nullptr;
  }
  if (Value yielded = yieldedValue(value); yielded != value)
    return blocksSource(yielded);
  if (Value started = mtf::WaitOp::throughWait(value); started != value)
    return blocksSource(started);
  return value.getDefiningOp();
}

json::Value MprogEmitter::extent(Value value, StringRef dim, int64_t size) {
  std::optional<DimBlocks> blocks = blocksOf(blocksSource(value), dim);
  // Equal blocks, and whole dims, are listed only where a ranked type
  // leaves them dynamic.
  if (!blocks || llvm::all_equal(blocks->sizes))
    return blocks ? blocks->sizes.front() : size;
  json::Array axes, sizes;
  for (const std::string &axis : blocks->axes)
    axes.push_back(axis);
  for (int64_t block : blocks->sizes)
    sizes.push_back(block);
  return json::Object{{"axes", std::move(axes)}, {"blocks", std::move(sizes)}};
}

FailureOr<json::Value> MprogEmitter::memberBlocks(Operation *op, Value cut,
                                                  StringRef dim,
                                                  ArrayRef<int16_t> group) {
  std::optional<DimBlocks> blocks = blocksOf(blocksSource(cut), dim);
  if (!blocks || llvm::all_equal(blocks->sizes))
    return json::Value(nullptr);
  // Where each of the dim's axes is in the group, or among the others.
  std::vector<std::string> others;
  std::vector<int64_t> groupShape, otherShape;
  for (int16_t axis : group) {
    if (!llvm::is_contained(blocks->axes, mesh.axisName(axis)))
      return op->emitError()
             << "the collective moves '" << dim << "' over mesh axis '"
             << mesh.axisName(axis) << "', which does not cut it";
    groupShape.push_back(mesh.axisSize(axis));
  }
  for (const std::string &axis : blocks->axes)
    if (llvm::none_of(group,
                      [&](int16_t g) { return mesh.axisName(g) == axis; })) {
      others.push_back(axis);
      otherShape.push_back(mesh.axisSize(*mesh.axisIndex(axis)));
    }
  // Mixed-radix digits of `index` over `shape`, the last fastest.
  auto digits = [](int64_t index, ArrayRef<int64_t> shape) {
    std::vector<int64_t> result(shape.size());
    for (size_t i = shape.size(); i-- > 0;) {
      result[i] = index % shape[i];
      index /= shape[i];
    }
    return result;
  };
  int64_t members = 1, variants = 1;
  for (int64_t size : groupShape)
    members *= size;
  for (int64_t size : otherShape)
    variants *= size;
  json::Array list;
  for (int64_t member = 0; member < members; ++member) {
    std::vector<int64_t> memberCoords = digits(member, groupShape);
    std::vector<int64_t> sizes;
    for (int64_t variant = 0; variant < variants; ++variant) {
      std::vector<int64_t> otherCoords = digits(variant, otherShape);
      // The shard index over the dim's axes, first axis most significant.
      int64_t shard = 0;
      for (const std::string &axis : blocks->axes) {
        size_t position = *mesh.axisIndex(axis);
        auto inGroup = llvm::find_if(
            group, [&](int16_t g) { return mesh.axisName(g) == axis; });
        int64_t coord =
            inGroup != group.end()
                ? memberCoords[inGroup - group.begin()]
                : otherCoords[llvm::find(others, axis) - others.begin()];
        shard = shard * mesh.axisSize(position) + coord;
      }
      sizes.push_back(blocks->sizes[size_t(shard)]);
    }
    if (llvm::all_equal(sizes)) {
      list.push_back(sizes.front());
      continue;
    }
    json::Array axes, values;
    for (const std::string &axis : others)
      axes.push_back(axis);
    for (int64_t size : sizes)
      values.push_back(size);
    list.push_back(
        json::Object{{"axes", std::move(axes)}, {"blocks", std::move(values)}});
  }
  return json::Value(std::move(list));
}

json::Array MprogEmitter::bufferShape(const BufferInfo &info) {
  json::Array shape;
  std::vector<std::string> names = dimNames(info.first);
  for (auto [index, size] : llvm::enumerate(info.shape))
    shape.push_back(index < names.size()
                        ? extent(info.first, names[index], size)
                        : json::Value(size));
  return shape;
}

json::Array MprogEmitter::axisNames(ArrayRef<int16_t> axes) {
  json::Array names;
  for (int16_t axis : axes)
    names.push_back(mesh.axisName(axis));
  return names;
}

std::optional<json::Array> MprogEmitter::modelDims(Value value,
                                                   const json::Object &entry) {
  auto cuts = program->getAttrOfType<DictionaryAttr>(
      mtf::MtfDialect::kModelDimsAttrName);
  const json::Array *dims = entry.getArray("dims");
  if (!cuts || !dims)
    return std::nullopt;
  auto type = llvm::cast<mtf::TensorType>(value.getType());
  for (NamedAttribute cut : cuts) {
    auto names = llvm::cast<ArrayAttr>(cut.getValue());
    if (type.getRank() < static_cast<int64_t>(names.size()) ||
        !llvm::all_of(llvm::enumerate(names), [&](auto named) {
          return type.getDims()[named.index()].name == named.value();
        }))
      continue;
    int64_t size = 1;
    for (size_t d = 0; d < names.size(); ++d)
      size *= *(*dims)[d].getAsObject()->getInteger("size");
    json::Array model{
        json::Object{{"name", cut.getName().getValue()}, {"size", size}}};
    for (size_t d = names.size(); d < dims->size(); ++d) {
      const json::Object &dim = *(*dims)[d].getAsObject();
      model.push_back(json::Object{{"name", *dim.getString("name")},
                                   {"size", *dim.getInteger("size")}});
    }
    return model;
  }
  return std::nullopt;
}

json::Object MprogEmitter::tensorEntry(StringRef role, StringRef name,
                                       Value value) {
  Value source = value;
  Operation *def = source.getDefiningOp();
  while (def && isView(def)) {
    source = def->getOperand(0);
    def = source.getDefiningOp();
  }
  // A fused result has the layout of the body op that makes it, a loop's
  // result that of the value its body yields, and where that is a fused
  // result without one (a gradient's halves added and cast,
  // mtf-interleave-halves), that of the op its body yields.
  auto type = llvm::cast<mtf::TensorType>(value.getType());
  mtf::LayoutAttr attr;
  if (def) {
    Value made = yieldedValue(source);
    attr = resultLayoutAttr(made);
    for (Value inner = made; !attr && made.getDefiningOp() &&
                             (inner = yieldedValue(made)) != made;) {
      made = inner;
      attr = resultLayoutAttr(made);
    }
  }
  if (auto named = value.getDefiningOp())
    if (auto own = named->getAttrOfType<mtf::LayoutAttr>(
            mtf::MtfDialect::kLayoutAttrName))
      attr = own;
  json::Array dims;
  for (const mtf::NamedDim &dim : type.getDims()) {
    json::Array axes;
    int64_t shards = 1;
    if (attr)
      for (StringAttr axis : attr.getAxesFor(dim.name.getValue())) {
        axes.push_back(axis.getValue());
        shards *= mesh.axisSize(*mesh.axisIndex(axis.getValue().str()));
      }
    json::Object entry{{"name", dim.name.getValue()},
                       {"size", dim.size * shards},
                       {"axes", std::move(axes)}};
    // Unequal blocks: the global size is their sum, and the loader takes
    // each device's block and offset from the list.
    if (std::optional<DimBlocks> blocks =
            blocksOf(blocksSource(value), dim.name.getValue())) {
      json::Array sizes;
      int64_t total = 0;
      for (int64_t block : blocks->sizes) {
        sizes.push_back(block);
        total += block;
      }
      entry["size"] = total;
      entry["blocks"] = std::move(sizes);
    }
    dims.push_back(std::move(entry));
  }
  return json::Object{{"role", role},
                      {"name", name},
                      {"buffer", bufferOf(value)},
                      {"dtype", dtypeOf(type.getElementType())},
                      {"dims", std::move(dims)}};
}

json::Object MprogEmitter::globalDim(Value value, StringRef dim) {
  json::Object global = tensorEntry("", "", value);
  for (json::Value &entry : *global.getArray("dims"))
    if (*entry.getAsObject()->getString("name") == dim)
      return std::move(*entry.getAsObject());
  llvm_unreachable("globalDim: the value has no such dim");
}

json::Object MprogEmitter::trainingEntry(DictionaryAttr training) {
  json::Object entry;
  if (auto optimizer = training.getAs<StringAttr>("optimizer"))
    entry["optimizer"] = optimizer.getValue();
  if (auto loss = training.getAs<StringAttr>("loss"))
    entry["loss"] = loss.getValue();
  json::Object hyper;
  std::optional<int64_t> syncEvery;
  if (auto dict = training.getAs<DictionaryAttr>("hyperparams"))
    for (NamedAttribute attr : dict) {
      double value = 0;
      if (auto f = llvm::dyn_cast<FloatAttr>(attr.getValue()))
        value = f.getValueAsDouble();
      else if (auto i = llvm::dyn_cast<IntegerAttr>(attr.getValue()))
        value = static_cast<double>(i.getInt());
      hyper[attr.getName().getValue()] = value;
      if (attr.getName() == "sync_every")
        syncEvery = static_cast<int64_t>(value);
    }
  entry["hyperparams"] = std::move(hyper);
  if (auto count = training.getAs<IntegerAttr>("microbatches")) {
    llvm::StringSet<> names;
    if (auto list = training.getAs<ArrayAttr>("accumulators"))
      for (auto name : list.getAsRange<StringAttr>())
        names.insert(name.getValue());
    json::Array accumulators;
    for (Operation &op : program.getBodyBlock())
      if (Boundary slot = boundaryOf(op);
          slot.kind == Boundary::Slot && names.contains(slot.name))
        accumulators.push_back(bufferOf(op.getResult(0)));
    entry["microbatches"] = json::Object{
        {"count", count.getInt()}, {"accumulators", std::move(accumulators)}};
  }
  std::vector<size_t> axes = dataParallelAxes(program, mesh);
  if (syncEvery && !axes.empty()) {
    json::Array axisList, bufferList;
    for (size_t axis : axes)
      axisList.push_back(mesh.axisName(axis));
    for (Operation &op : program.getBodyBlock())
      if (boundaryOf(op).kind == Boundary::Param)
        bufferList.push_back(bufferOf(op.getResult(0)));
    entry["sync"] = json::Object{{"every", *syncEvery},
                                 {"axes", std::move(axisList)},
                                 {"buffers", std::move(bufferList)}};
  }
  return entry;
}

FailureOr<json::Array> MprogEmitter::stepsOf(Block &block) {
  json::Array outer = std::move(steps);
  steps = json::Array();
  for (Operation &op : block)
    if (failed(emitStep(op))) {
      steps = std::move(outer);
      return failure();
    }
  json::Array inner = std::move(steps);
  steps = std::move(outer);
  return inner;
}

LogicalResult MprogEmitter::emitStep(Operation &op) {
  auto step = llvm::dyn_cast<mtf::StepOpInterface>(op);
  if (!step)
    return op.emitError() << "'" << op.getName()
                          << "' cannot be written to a .mprog: it states no "
                             "steps (StepOpInterface)";
  // The carried waits resumed here complete their collectives of the
  // iteration before first; a carried wait writes no step where it is.
  for (Operation *wait : mtf::WaitOp::resumedAt(&op))
    if (carriedWaits.contains(wait))
      push(runtime::OpKind::Wait,
           json::Object{
               {"tickets", json::Array{ticketOf(
                               llvm::cast<mtf::WaitOp>(wait).getStart())}},
               {"carried", true}});
  if (carriedWaits.contains(&op))
    return success();
  size_t first = steps.size();
  if (failed(step.writeSteps(*this)))
    return failure();
  if (!mtf::WaitOp::of(&op))
    return success();
  // A started collective: its last step (after any copy or fill that
  // prepares its buffer) carries the ticket its wait names.
  json::Object *last =
      steps.size() > first ? steps.back().getAsObject() : nullptr;
  std::optional<runtime::OpKind> kind =
      last ? runtime::opKindNamed(last->getString("op").value_or(""))
           : std::nullopt;
  if (!kind || runtime::stepGroup(*kind) != runtime::StepGroup::Collective)
    return op.emitError() << "a started collective must end in a collective "
                             "step";
  (*last)["start"] = ticketOf(&op);
  return success();
}

FailureOr<MemoryPlanStats> MprogEmitter::plan() {
  // Ranked values carry the dim names of the named tensor they came from
  // (through mtf.to_tensor, then each collective on its operand 0; a
  // combined collective's result i on its operand i).
  program.getBody().walk([&](Operation *op) {
    if (auto wait = llvm::dyn_cast<mtf::WaitOp>(op))
      for (auto [value, result] :
           llvm::zip(wait.getValues(), wait.getResults()))
        rankedNames[result] = dimNames(value);
    else if (op->getNumResults() == 1 && op->getNumOperands() >= 1 &&
             llvm::isa<RankedTensorType>(op->getResult(0).getType()))
      rankedNames[op->getResult(0)] = dimNames(op->getOperand(0));
    else if (op->getNumResults() > 1 &&
             op->getNumResults() == op->getNumOperands())
      for (auto [operand, result] :
           llvm::zip(op->getOperands(), op->getResults()))
        if (llvm::isa<RankedTensorType>(result.getType()))
          rankedNames[result] = dimNames(operand);
  });
  if (failed(assignBuffers()))
    return failure();
  planMemory();
  MemoryPlanStats stats{arenaBytes, 0, static_cast<int64_t>(buffers.size()),
                        peakLiveBytes, peakByUse};
  for (const BufferInfo &info : buffers)
    stats.unplannedBytes += info.bytes;
  return stats;
}

int64_t MprogEmitter::labelRange(Value input) {
  for (Operation &user : program.getBodyBlock()) {
    if (auto xent = llvm::dyn_cast<mtf::SoftmaxCrossEntropyOp>(user)) {
      if (sourceOf(xent.getLabels()) != input)
        continue;
      auto logits = llvm::cast<mtf::TensorType>(xent.getLogits().getType());
      return logits.getDims()[*logits.getDimIndex(xent.getDim())].size;
    }
    if (auto oneHot = llvm::dyn_cast<mtf::OneHotOp>(user)) {
      if (sourceOf(oneHot.getIndices()) != input)
        continue;
      // The class dim may be split: its global size.
      return *globalDim(oneHot.getResult(), oneHot.getDim()).getInteger("size");
    }
  }
  return 2;
}

FailureOr<json::Value> MprogEmitter::run(MemoryPlanStats *stats) {
  FailureOr<MemoryPlanStats> planned = plan();
  if (failed(planned))
    return failure();

  json::Array tensors;
  for (Operation &op : program.getBodyBlock())
    if (Boundary param = boundaryOf(op); param.isParam())
      paramBuffers[param.name] = bufferOf(op.getResult(0));
  for (Operation &op : program.getBodyBlock()) {
    size_t first = steps.size();
    if (failed(emitStep(op)))
      return failure();
    if (auto phase =
            op.getAttrOfType<StringAttr>(mtf::MtfDialect::kPhaseAttrName))
      for (size_t i = first; i < steps.size(); ++i)
        (*steps[i].getAsObject())["phase"] = phase.getValue();
    Boundary boundary = boundaryOf(op);
    if (boundary.kind == Boundary::None)
      continue;
    Value value = boundary.isSource() ? op.getResult(0) : op.getOperand(0);
    StringRef role = boundary.kind == Boundary::Input    ? "input"
                     : boundary.kind == Boundary::Output ? "output"
                                                         : "param";
    json::Object entry = tensorEntry(role, boundary.name, value);
    if (boundary.kind == Boundary::Input && dtype(value) == "i32")
      entry["range"] = json::Array{0, labelRange(value)};
    if (boundary.isParam()) {
      json::Array args;
      for (double arg : boundary.init.getArgs().asArrayRef())
        args.push_back(arg);
      entry["init"] = json::Object{
          {"kind", mtf::stringifyInitKind(boundary.init.getKind())},
          {"args", std::move(args)}};
    }
    // A param (or its gradient, an output) of dims that cut a model dim:
    // the dims the model declares.
    if (boundary.kind != Boundary::Input)
      if (std::optional<json::Array> model = modelDims(value, entry))
        entry["model_dims"] = std::move(*model);
    if (std::optional<int64_t> snapshot = snapshotBuffer(&op))
      entry["buffer"] = *snapshot;
    tensors.push_back(std::move(entry));
  }

  json::Array bufferList;
  for (const BufferInfo &info : buffers) {
    bufferList.push_back(json::Object{{"id", info.id},
                                      {"dtype", info.dtype},
                                      {"shape", bufferShape(info)},
                                      {"offset", info.offset},
                                      {"bytes", info.bytes}});
  }
  json::Array meshAxes;
  for (const layout::MeshAxis &axis : mesh.axes())
    meshAxes.push_back(json::Object{{"name", axis.name}, {"size", axis.size}});
  std::string source;
  if (auto loc = llvm::dyn_cast<FileLineColLoc>(program.getLoc()))
    source = loc.getFilename().str();
  if (stats)
    *stats = *planned;
  json::Object top{{"format", "meshc-mprog"},
                   {"version", 1},
                   {"program", program.getSymName()},
                   {"source", source},
                   {"mesh", std::move(meshAxes)},
                   {"seed", static_cast<int64_t>(options.seed)},
                   {"arena_bytes", arenaBytes},
                   {"buffers", std::move(bufferList)},
                   {"tensors", std::move(tensors)},
                   {"steps", std::move(steps)}};
  if (auto training = program->getAttrOfType<DictionaryAttr>(
          mtf::MtfDialect::kTrainingAttrName))
    top["training"] = trainingEntry(training);
  return json::Value(std::move(top));
}

/// The one partitioned program of `module`, or null after an error.
mtf::ProgramOp localProgram(ModuleOp module) {
  SmallVector<mtf::ProgramOp> programs(module.getOps<mtf::ProgramOp>());
  if (programs.size() != 1 || !programs.front().getLocal()) {
    emitError(module.getLoc())
        << "a .mprog holds one partitioned (local) program; got "
        << programs.size() << " program(s)";
    return nullptr;
  }
  return programs.front();
}

} // namespace

const char *memoryUseName(MemoryUse use) {
  switch (use) {
  case MemoryUse::Parameters:
    return "parameters";
  case MemoryUse::OptimizerSlots:
    return "optimizer slots";
  case MemoryUse::Inputs:
    return "inputs";
  case MemoryUse::Activations:
    return "forward activations";
  case MemoryUse::Recomputed:
    return "recomputed activations";
  case MemoryUse::Backward:
    return "gradients and backward values";
  case MemoryUse::Update:
    return "optimizer update";
  case MemoryUse::Collectives:
    return "collective results";
  }
  return "?";
}

FailureOr<json::Value> emitMprog(ModuleOp module, const MprogOptions &options,
                                 MemoryPlanStats *stats) {
  mtf::ProgramOp program = localProgram(module);
  if (!program)
    return failure();
  return MprogEmitter(program, options).run(stats);
}

FailureOr<MemoryPlanStats> planMprogMemory(ModuleOp module) {
  mtf::ProgramOp program = localProgram(module);
  if (!program)
    return failure();
  MprogOptions options;
  return MprogEmitter(program, options).plan();
}

} // namespace meshc
