//===- ProgramCost.cpp - Predicted time of a partitioned program ----------===//

#include "lowering/ProgramCost.h"

#include "compiler/passes/LayoutBridge.h"
#include "dialect/MtfDialect.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"

#include <functional>

namespace meshc {

using namespace mlir;

namespace {

int64_t elementsOf(Value value) {
  if (auto named = llvm::dyn_cast<mtf::TensorType>(value.getType()))
    return named.getNumElements();
  return 0;
}

/// An einsum's FLOPs, 2 · the product of the sizes of every dim its
/// operands and result name (each multiply-add counts two), and its GEMM
/// calls, the product of the dims all of them have (its batch).
void einsumWork(Operation *op, cost::StepWork &work) {
  llvm::StringMap<int64_t> sizes;
  llvm::StringMap<unsigned> holders;
  unsigned tensors = 0;
  auto note = [&](Type type) {
    auto named = llvm::dyn_cast<mtf::TensorType>(type);
    if (!named)
      return;
    ++tensors;
    for (const auto &dim : named.getDims()) {
      sizes[dim.name.getValue()] = dim.size;
      ++holders[dim.name.getValue()];
    }
  };
  for (Value operand : op->getOperands())
    note(operand.getType());
  for (Value result : op->getResults())
    note(result.getType());
  work.flops = 2;
  work.gemmCalls = 1;
  for (const auto &entry : sizes) {
    work.flops *= static_cast<double>(entry.getValue());
    if (holders[entry.getKey()] == tensors)
      work.gemmCalls *= static_cast<double>(entry.getValue());
  }
}

/// Fused attention's GEMM FLOPs: q . k (2·G·M·N·D) and p . v (2·G·M·N·E)
/// forward; the gradient recomputes q . k and adds dv, dp, dq and dk
/// (2·G·M·N·(3D + 2E) in all). One GEMM call per group.
void attentionWork(Operation *op, bool gradient, cost::StepWork &work) {
  FailureOr<mtf::AttentionRoles> roles;
  {
    // A verified op has its roles; an error would say nothing here.
    ScopedDiagnosticHandler quiet(op->getContext(),
                                  [](Diagnostic &) { return success(); });
    roles = mtf::attentionRolesOf(op);
  }
  if (failed(roles))
    return;
  auto product = [](ArrayRef<mtf::NamedDim> dims) {
    double total = 1;
    for (const mtf::NamedDim &dim : dims)
      total *= static_cast<double>(dim.size);
    return total;
  };
  double rows = product(roles->group) * product(roles->query) *
                static_cast<double>(roles->key.size);
  double d = product(roles->head), e = product(roles->value);
  work.flops = 2 * rows * (gradient ? 3 * d + 2 * e : d + e);
  work.gemmCalls = product(roles->group);
}

bool isBf16(Value value) {
  auto named = llvm::dyn_cast<mtf::TensorType>(value.getType());
  return named && named.getElementType().isBF16();
}

/// The work of step `op` on one device.
cost::StepWork workOf(Operation *op) {
  cost::StepWork work;
  double elements = 0;
  for (Value operand : op->getOperands()) {
    work.bytes += static_cast<double>(largestLocalBytes(operand));
    elements = std::max(elements, static_cast<double>(elementsOf(operand)));
  }
  for (Value result : op->getResults()) {
    work.bytes += static_cast<double>(largestLocalBytes(result));
    elements = std::max(elements, static_cast<double>(elementsOf(result)));
  }
  std::optional<runtime::OpKind> kind = mtf::stepKindOf(op);
  if (kind == runtime::OpKind::Einsum) {
    work.gemm = true;
    work.bf16 = op->getNumOperands() > 0 && isBf16(op->getOperand(0));
    einsumWork(op, work);
  } else if (kind == runtime::OpKind::Attention ||
             kind == runtime::OpKind::AttentionGrad) {
    work.gemm = true;
    work.bf16 = isBf16(op->getOperand(0));
    work.attention = true;
    attentionWork(op, *kind == runtime::OpKind::AttentionGrad, work);
  } else if (kind == runtime::OpKind::Fused) {
    // Every body op but the constants (fills) is arithmetic per element.
    int64_t bodyOps = 0;
    for (Operation &inner : op->getRegion(0).front())
      if (mtf::stepKindOf(&inner) &&
          mtf::stepKindOf(&inner) != runtime::OpKind::Fill)
        ++bodyOps;
    work.flops = elements * static_cast<double>(bodyOps);
    work.fused = true;
  } else {
    work.flops = elements;
  }
  return work;
}

/// The collective a step of kind `kind` (one that uses its group) is.
layout::CollectiveKind collectiveKindOf(runtime::OpKind kind) {
  switch (kind) {
  case runtime::OpKind::AllReduce:
    return layout::CollectiveKind::AllReduce;
  case runtime::OpKind::AllGather:
    return layout::CollectiveKind::AllGather;
  case runtime::OpKind::ReduceScatter:
    return layout::CollectiveKind::ReduceScatter;
  case runtime::OpKind::AllToAll:
    return layout::CollectiveKind::AllToAll;
  case runtime::OpKind::CollectivePermute:
    return layout::CollectiveKind::Permute;
  default:
    return layout::CollectiveKind::Slice;
  }
}

/// Whether `op` works on a tensor cut over mesh axis `axis` (an operand or
/// result, or a fused body's, has mtf.blocks over it).
bool cutOver(Operation *op, const std::string &axis) {
  bool cut = false;
  auto note = [&](Operation *holder) {
    auto dims = holder ? holder->getAttrOfType<DictionaryAttr>(
                             mtf::MtfDialect::kBlocksAttrName)
                       : DictionaryAttr();
    if (!dims)
      return;
    for (NamedAttribute entry : dims)
      if (std::optional<DimBlocks> blocks =
              blocksOf(holder, entry.getName().getValue()))
        cut |= llvm::is_contained(blocks->axes, axis);
  };
  note(op);
  for (Value operand : op->getOperands())
    note(operand.getDefiningOp());
  op->walk([&](Operation *inner) { note(inner); });
  return cut;
}

/// How much slower than the machine profile `op` runs under device weights:
/// the profile is the device of the largest weight, a device of weight w is
/// w / max as fast, and the step takes its slowest device's time. Work cut
/// over a weighted axis is cut in proportion (every device the largest
/// block's time: 1); work replicated over one runs whole on the lightest
/// device (max / min).
double weightedSlowdown(Operation *op, const layout::Mesh &mesh,
                        const layout::AxisWeights &weights) {
  double slowdown = 1;
  for (size_t axis = 0; axis < mesh.rank(); ++axis) {
    if (weights.isEven(axis))
      continue;
    const std::vector<double> &of = weights.of(axis);
    if (!cutOver(op, mesh.axisName(axis)))
      slowdown *= *std::max_element(of.begin(), of.end()) /
                  *std::min_element(of.begin(), of.end());
  }
  return slowdown;
}

} // namespace

namespace {

/// The cost of each step of a program on one mesh and machine, computed
/// once per op.
class StepCosts {
public:
  StepCosts(mtf::ProgramOp program, const layout::Mesh &mesh,
            const cost::MachineProfile &machine)
      : mesh(mesh), machine(machine), weights(axisWeightsOf(program, mesh)) {}

  /// The prediction of step `op` of kind `kind` (one run, count 1).
  PredictedStep of(Operation &op, runtime::OpKind kind) {
    auto [it, added] = cache.try_emplace(&op);
    if (added)
      it->second = compute(op, kind);
    PredictedStep step;
    step.op = &op;
    step.kind = kind;
    step.seconds = it->second.seconds;
    step.collective = it->second.collective ? &*it->second.collective : nullptr;
    return step;
  }

private:
  struct Entry {
    double seconds = 0;
    std::optional<CollectiveCost> collective;
  };

  Entry compute(Operation &op, runtime::OpKind kind) {
    Entry entry;
    if (kind == runtime::OpKind::Wait)
      return entry; // its collective's time is the collective's
    if (!runtime::usesGroup(kind)) {
      entry.seconds = cost::stepSeconds(machine, workOf(&op)) *
                      weightedSlowdown(&op, mesh, weights);
      return entry;
    }
    CollectiveCost collective;
    collective.op = &op;
    collective.kind = collectiveKindOf(kind);
    if (auto axes = op.getAttrOfType<DenseI16ArrayAttr>("grid_axes"))
      for (int16_t axis : axes.asArrayRef())
        collective.axes.push_back(static_cast<size_t>(axis));
    // A combined collective's tensors are packed into one buffer.
    int64_t bytes = 0;
    for (Value operand : op.getOperands())
      collective.inBytes += largestLocalBytes(operand);
    if (collective.kind == layout::CollectiveKind::AllGather)
      for (Value result : op.getResults())
        bytes += largestLocalBytes(result);
    else
      bytes = collective.inBytes;
    collective.group = layout::groupSize(collective.axes, mesh);
    collective.received = layout::collectiveBytesPerDevice(
        collective.kind, bytes, collective.group);
    const cost::Link &link = cost::linkOf(machine, mesh, collective.axes);
    collective.interNode = &link == &machine.interNode;
    // (A library's tree all-reduce: across nodes, where NCCL uses its
    // double binary trees; inside a node it rings.)
    collective.seconds =
        cost::collectiveSeconds(collective.kind, bytes, collective.group, link,
                                machine.treeAllReduce && collective.interNode);
    entry.seconds = collective.seconds;
    entry.collective = collective;
    return entry;
  }

  const layout::Mesh &mesh;
  const cost::MachineProfile &machine;
  layout::AxisWeights weights;
  llvm::DenseMap<Operation *, Entry> cache;
};

int64_t loopCount(Operation &loop) {
  return loop.getAttrOfType<IntegerAttr>("count").getInt();
}

/// The microbatches of a training step of `program` (mtf.training's
/// "microbatches"; 1 without).
int64_t microbatchCount(mtf::ProgramOp program) {
  auto training = program->getAttrOfType<DictionaryAttr>(
      mtf::MtfDialect::kTrainingAttrName);
  auto count =
      training ? training.getAs<IntegerAttr>("microbatches") : IntegerAttr();
  return count ? count.getInt() : 1;
}

/// Whether top-level op `op` is an update step: run once per training step
/// with microbatches, where the others run once per microbatch.
bool isUpdate(Operation &op) {
  auto phase = op.getAttrOfType<StringAttr>(mtf::MtfDialect::kPhaseAttrName);
  return phase && phase.getValue() == "update";
}

} // namespace

namespace {

/// Runs `once` (the steps `ops`) `count` times on `clock`: the first two
/// runs step by step, the rest taking the second's time (each run starts
/// as the one before it ends; a collective of `ops` still in flight, carried
/// into the next run, ends as much later).
void repeat(StepClock &clock, int64_t count, ArrayRef<Operation *> ops,
            llvm::function_ref<void()> once) {
  for (int64_t i = 0; i < std::min<int64_t>(count, 2); ++i) {
    double before = clock.now();
    once();
    if (i == 1 && count > 2)
      clock.advance((clock.now() - before) * static_cast<double>(count - 2),
                    ops);
  }
}

/// Whether `op` is a carried wait (it completes its collective in the
/// next iteration, where it resumes).
bool isCarriedWait(Operation *op) {
  auto wait = llvm::dyn_cast<mtf::WaitOp>(op);
  return wait && wait.getCarried();
}

/// Visits the ops of one iteration of loop body `body` in the order a
/// device runs them (Session::runLoop): before an op, the carried waits
/// that resume there (none in the `first` iteration); a carried wait not
/// where it stands.
void forEachInIteration(Block &body, bool first,
                        llvm::function_ref<void(Operation &)> visit) {
  for (Operation &op : body) {
    if (!first)
      for (Operation *carried : mtf::WaitOp::resumedAt(&op))
        visit(*carried);
    if (!isCarriedWait(&op))
      visit(op);
  }
}

/// Visits what runs after a loop's last iteration: its body's carried
/// waits (the loop completes that iteration's collectives).
void forEachAfterLoop(Block &body,
                      llvm::function_ref<void(Operation &)> visit) {
  for (Operation &op : body)
    if (isCarriedWait(&op))
      visit(op);
}

/// Runs step `op` on `clock`, a loop's body once per iteration.
void simulate(Operation &op, StepCosts &costs, StepClock &clock) {
  std::optional<runtime::OpKind> kind = mtf::stepKindOf(&op);
  if (!kind)
    return;
  if (kind == runtime::OpKind::Loop) {
    Block &body = op.getRegion(0).front();
    SmallVector<Operation *> ops;
    for (Operation &inner : body)
      ops.push_back(&inner);
    int64_t iteration = 0;
    auto one = [&](Operation &inner) { simulate(inner, costs, clock); };
    repeat(clock, loopCount(op), ops,
           [&] { forEachInIteration(body, iteration++ == 0, one); });
    forEachAfterLoop(body, one);
    return;
  }
  if (kind == runtime::OpKind::Wait) {
    clock.wait(llvm::cast<mtf::WaitOp>(op).getStart());
    return;
  }
  PredictedStep step = costs.of(op, *kind);
  // (A slice takes the device's block without communicating: it runs on
  // the device, not on a lane, as the runtimes run it.)
  if (step.collective && runtime::communicates(*kind))
    clock.collective(&op, step.seconds, bool(mtf::WaitOp::of(&op)),
                     StepClock::linkOf(*step.collective));
  else
    clock.compute(step.seconds);
}

/// Runs steps `ops` on `clock`.
void simulate(ArrayRef<Operation *> ops, StepCosts &costs, StepClock &clock) {
  for (Operation *op : ops)
    simulate(*op, costs, clock);
}

} // namespace

double StepClock::compute(double seconds) {
  double start = device;
  device += seconds;
  return start;
}

double StepClock::collective(Operation *op, double seconds, bool started,
                             Link link) {
  double &lane = lanes[link];
  lastOnLane[link] = op;
  double start = std::max(device, lane);
  lane = start + seconds;
  if (started && overlaps)
    done[op] = lane;
  else
    device = lane;
  return start;
}

double StepClock::end() const {
  return std::max(device, *std::max_element(lanes.begin(), lanes.end()));
}

double StepClock::wait(Operation *start) {
  double begin = device;
  device = std::max(device, done.lookup(start));
  return begin;
}

void StepClock::advance(double seconds, ArrayRef<Operation *> repeated) {
  device += seconds;
  for (auto [lane, last] : llvm::zip(lanes, lastOnLane))
    if (last && llvm::is_contained(repeated, last))
      lane += seconds;
  // The repeated steps' collectives still in flight (carried into the next
  // iteration) end as much later; one started before them runs on.
  for (Operation *op : repeated)
    if (auto end = done.find(op); end != done.end())
      end->second += seconds;
}

double stepRunOverhead(ModuleOp spmd, const cost::MachineProfile &machine) {
  double overhead = machine.runOverhead;
  spmd.walk([&](mtf::ProgramOp program) {
    if (int64_t microbatches = microbatchCount(program); microbatches > 1)
      overhead = machine.runOverhead * static_cast<double>(microbatches + 1);
  });
  return overhead;
}

ProgramCost predictProgram(ModuleOp spmd, const layout::Mesh &mesh,
                           const cost::MachineProfile &machine) {
  ProgramCost result;
  result.prediction.overhead = stepRunOverhead(spmd, machine);
  spmd.walk([&](mtf::ProgramOp program) {
    StepCosts costs(program, mesh, machine);
    // With microbatches the forward and backward steps run once per
    // microbatch, the update steps once.
    int64_t microbatches = microbatchCount(program);
    if (microbatches > 1)
      result.microbatches = microbatches;
    // The ops of `block`, each run `count` times per step.
    std::function<void(Block &, int64_t)> predict = [&](Block &block,
                                                        int64_t count) {
      for (Operation &op : block) {
        std::optional<runtime::OpKind> kind = mtf::stepKindOf(&op);
        if (!kind)
          continue;
        int64_t runs = count;
        if (&block == &program.getBodyBlock() && !isUpdate(op))
          runs *= microbatches;
        if (kind == runtime::OpKind::Loop) {
          predict(op.getRegion(0).front(), runs * loopCount(op));
          continue;
        }
        if (kind == runtime::OpKind::Wait)
          continue;
        PredictedStep step = costs.of(op, *kind);
        if (step.collective) {
          CollectiveCost collective = *step.collective;
          collective.count = runs;
          result.prediction.communication +=
              collective.seconds * static_cast<double>(runs);
          result.prediction.collectives += runs;
          result.collectives.push_back(collective);
          continue;
        }
        result.prediction.compute += step.seconds * static_cast<double>(runs);
        result.prediction.steps += runs;
      }
    };
    predict(program.getBodyBlock(), 1);

    // The same steps on one device's clocks: what started collectives hide.
    StepClock clock(machine.overlapsCommunication);
    SmallVector<Operation *> perMicrobatch, once;
    for (Operation &op : program.getBodyBlock())
      (microbatches > 1 && isUpdate(op) ? once : perMicrobatch).push_back(&op);
    repeat(clock, microbatches, perMicrobatch,
           [&] { simulate(perMicrobatch, costs, clock); });
    simulate(once, costs, clock);
    double sum = result.prediction.compute + result.prediction.communication;
    // (The two sums add in different orders: a last-bit difference is
    // not overlap.)
    double hidden = sum - clock.end();
    result.prediction.hidden = hidden > 1e-6 * sum ? hidden : 0;
  });
  return result;
}

void forEachPredictedStep(
    ModuleOp spmd, const layout::Mesh &mesh,
    const cost::MachineProfile &machine,
    llvm::function_ref<void(const PredictedStep &)> visit) {
  spmd.walk([&](mtf::ProgramOp program) {
    StepCosts costs(program, mesh, machine);
    std::function<void(Operation &, int64_t)> walkOne = [&](Operation &op,
                                                            int64_t iteration) {
      std::optional<runtime::OpKind> kind = mtf::stepKindOf(&op);
      if (!kind)
        return;
      if (kind == runtime::OpKind::Loop) {
        int64_t count = loopCount(op);
        bool reverse = op.hasAttr("reverse");
        Block &body = op.getRegion(0).front();
        for (int64_t i = 0; i < count; ++i)
          forEachInIteration(body, i == 0, [&](Operation &inner) {
            walkOne(inner, reverse ? count - 1 - i : i);
          });
        forEachAfterLoop(body, [&](Operation &carried) {
          walkOne(carried, reverse ? 0 : count - 1);
        });
        return;
      }
      PredictedStep step = costs.of(op, *kind);
      step.iteration = iteration;
      visit(step);
    };
    // With microbatches: the forward and backward steps once per
    // microbatch, then the update steps.
    int64_t microbatches = microbatchCount(program);
    for (int64_t k = 0; k < microbatches; ++k)
      for (Operation &op : program.getBodyBlock())
        if (microbatches == 1 || !isUpdate(op))
          walkOne(op, -1);
    for (Operation &op : program.getBodyBlock())
      if (microbatches > 1 && isUpdate(op))
        walkOne(op, -1);
  });
}

} // namespace meshc
