//===- MtfSteps.cpp - how mtf ops become .mprog steps ---------------------===//
//
// StepOpInterface (and FusibleOpInterface for the constant and the
// reductions) of each op: the step kind it names from
// runtime/core/StepKinds.def and the fields of its steps (docs/mprog.md),
// written through a StepWriter. The families' ops (unary, binary,
// reductions) state theirs in MtfOps.td through the helpers at the top.
//
//===----------------------------------------------------------------------===//

#include "dialect/MtfDialect.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
namespace json = llvm::json;
using meshc::runtime::OpKind;

namespace mlir {
namespace mtf {

StepWriter::~StepWriter() = default;

std::optional<OpKind> stepKindOf(Operation *op) {
  auto step = llvm::dyn_cast<StepOpInterface>(op);
  return step ? step.getStepKind() : std::nullopt;
}

StringRef phaseOf(Operation *op) {
  if (auto phase = op->getAttrOfType<StringAttr>(MtfDialect::kPhaseAttrName))
    return phase.getValue();
  return "forward";
}

SmallVector<PrecisionRule, 1> precisionRulesOf(OperationName name) {
  SmallVector<PrecisionRule, 1> rules;
  auto note = [&](bool has, PrecisionRule rule) {
    if (has)
      rules.push_back(rule);
  };
  note(name.hasTrait<Precision<PrecisionRule::Keep>::Impl>(),
       PrecisionRule::Keep);
  note(name.hasTrait<Precision<PrecisionRule::Low>::Impl>(),
       PrecisionRule::Low);
  note(name.hasTrait<Precision<PrecisionRule::Full>::Impl>(),
       PrecisionRule::Full);
  note(name.hasTrait<Precision<PrecisionRule::Follow>::Impl>(),
       PrecisionRule::Follow);
  note(name.hasTrait<Precision<PrecisionRule::Sink>::Impl>(),
       PrecisionRule::Sink);
  note(name.hasTrait<Precision<PrecisionRule::Refuse>::Impl>(),
       PrecisionRule::Refuse);
  note(name.hasTrait<Precision<PrecisionRule::Region>::Impl>(),
       PrecisionRule::Region);
  return rules;
}

//===----------------------------------------------------------------------===//
// The families
//===----------------------------------------------------------------------===//

LogicalResult writeUnaryStep(Operation *op, StepWriter &writer) {
  writer.push(OpKind::Unary,
              json::Object{{"fn", op->getName().stripDialect()},
                           {"in", writer.buffer(op->getOperand(0))},
                           {"out", writer.buffer(op->getResult(0))}});
  return success();
}

LogicalResult writeBinaryStep(Operation *op, meshc::runtime::BinaryFn fn,
                              StepWriter &writer) {
  using meshc::runtime::BinaryFn;
  bool compares = fn == BinaryFn::Eq || fn == BinaryFn::Lt;
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  if (!compares && !llvm::isa<FloatType>(
                       llvm::cast<TensorType>(lhs.getType()).getElementType()))
    return op->emitError()
           << "the runtime has no i32 elementwise arithmetic yet ('"
           << op->getName() << "'); cast the operands to f32 first";
  Value result = op->getResult(0);
  writer.push(OpKind::Binary,
              json::Object{{"fn", meshc::runtime::binaryFnName(fn)},
                           {"lhs", writer.operand(lhs)},
                           {"rhs", writer.operand(rhs)},
                           {"out", writer.operand(result)},
                           {"sizes", writer.sizes({lhs, rhs, result})}});
  return success();
}

/// The number of elements `op`'s operand has per element of its result.
static int64_t reducedCount(Operation *op) {
  return llvm::cast<TensorType>(op->getOperand(0).getType()).getNumElements() /
         llvm::cast<TensorType>(op->getResult(0).getType()).getNumElements();
}

static StringRef scaleFn() {
  return meshc::runtime::unaryFnName(meshc::runtime::UnaryFn::Scale);
}

LogicalResult writeReduceSteps(Operation *op, StepWriter &writer) {
  Reduction reduction = llvm::cast<ReductionOpInterface>(op).getReduction();
  Value input = op->getOperand(0), result = op->getResult(0);
  writer.push(OpKind::Reduce,
              json::Object{{"fn", reduction == Reduction::Max ? "max" : "sum"},
                           {"in", writer.operand(input)},
                           {"out", writer.operand(result)},
                           {"sizes", writer.sizes({input})}});
  // Only ever local here: the partitioner turns a mean over split
  // dimensions into a sum, its reduction and a scale.
  if (reduction == Reduction::Mean)
    writer.push(
        OpKind::Unary,
        json::Object{{"fn", scaleFn()},
                     {"in", writer.buffer(result)},
                     {"out", writer.buffer(result)},
                     {"value", 1.0 / static_cast<double>(reducedCount(op))}});
  return success();
}

int64_t writeReduceInstructions(Operation *op, FusedProgramBuilder &program) {
  Reduction reduction = llvm::cast<ReductionOpInterface>(op).getReduction();
  int64_t value = program.add(op, reduction == Reduction::Max ? "reduce_max"
                                                              : "reduce_sum");
  if (reduction != Reduction::Mean)
    return value;
  // The unfused steps store the sum before they scale it: a 16-bit mean's
  // sum is rounded there too (fusedProgram rounds the mean itself).
  program.roundTo(
      value,
      llvm::cast<TensorType>(op->getResult(0).getType()).getElementType());
  return program.add(
      json::Object{{"fn", scaleFn()},
                   {"args", json::Array{value}},
                   {"value", 1.0 / static_cast<double>(reducedCount(op))}});
}

//===----------------------------------------------------------------------===//
// Ops that become no step
//===----------------------------------------------------------------------===//

/// The error of an op that cannot stand in a local program.
static LogicalResult notInLocalProgram(Operation *op, StringRef why) {
  return op->emitError() << "'" << op->getName()
                         << "' cannot be written to a .mprog: " << why;
}

std::optional<OpKind> ProgramOp::getStepKind() { return std::nullopt; }
LogicalResult ProgramOp::writeSteps(StepWriter &) {
  return notInLocalProgram(*this, "it is the container of a program");
}

std::optional<OpKind> InputOp::getStepKind() { return std::nullopt; }
LogicalResult InputOp::writeSteps(StepWriter &) { return success(); }

std::optional<OpKind> ParamOp::getStepKind() { return std::nullopt; }
LogicalResult ParamOp::writeSteps(StepWriter &) { return success(); }

std::optional<OpKind> RenameOp::getStepKind() { return std::nullopt; }
LogicalResult RenameOp::writeSteps(StepWriter &) { return success(); }

std::optional<OpKind> SplitDimOp::getStepKind() { return std::nullopt; }
LogicalResult SplitDimOp::writeSteps(StepWriter &) { return success(); }

std::optional<OpKind> MergeDimsOp::getStepKind() { return std::nullopt; }
LogicalResult MergeDimsOp::writeSteps(StepWriter &) { return success(); }

std::optional<OpKind> ToTensorOp::getStepKind() { return std::nullopt; }
LogicalResult ToTensorOp::writeSteps(StepWriter &) { return success(); }

std::optional<OpKind> FromTensorOp::getStepKind() { return std::nullopt; }
LogicalResult FromTensorOp::writeSteps(StepWriter &) { return success(); }

/// One all_reduce step over the buffers of every input ("bufs"), each
/// result in place: a copy first where the emitter gave a result a buffer
/// of its own.
std::optional<OpKind> CombinedAllReduceOp::getStepKind() {
  return OpKind::AllReduce;
}
bool CombinedAllReduceOp::mayWorkInPlace() { return true; }
LogicalResult CombinedAllReduceOp::writeSteps(StepWriter &writer) {
  llvm::json::Array buffers;
  for (auto [input, result] : llvm::zip(getInputs(), getResults())) {
    int64_t in = writer.buffer(input), out = writer.buffer(result);
    if (in != out)
      writer.push(OpKind::Copy, llvm::json::Object{{"in", in}, {"out", out}});
    buffers.push_back(out);
  }
  writer.push(OpKind::AllReduce,
              llvm::json::Object{{"bufs", std::move(buffers)},
                                 {"axes", writer.axisNames(getGridAxes())},
                                 {"reduction", getReduction()}});
  return success();
}

/// A combined all_gather or reduce_scatter step: its tensors as "parts"
/// (each with its in, out, dim and `sizes`: the whole tensor's, `whole`
/// being its result for a gather, its input for a scatter).
static llvm::json::Array combinedParts(Operation *op, ArrayRef<int64_t> dims,
                                       bool gather, StepWriter &writer) {
  llvm::json::Array parts;
  for (auto [input, result, dim] :
       llvm::zip(op->getOperands(), op->getResults(), dims))
    parts.push_back(
        llvm::json::Object{{"in", writer.operand(input)},
                           {"out", writer.operand(result)},
                           {"dim", writer.dimName(input, dim)},
                           {"sizes", writer.sizes({gather ? result : input})}});
  return parts;
}

std::optional<OpKind> CombinedAllGatherOp::getStepKind() {
  return OpKind::AllGather;
}
LogicalResult CombinedAllGatherOp::writeSteps(StepWriter &writer) {
  writer.push(OpKind::AllGather,
              llvm::json::Object{{"parts", combinedParts(*this, getGatherAxes(),
                                                         true, writer)},
                                 {"axes", writer.axisNames(getGridAxes())}});
  return success();
}

std::optional<OpKind> CombinedReduceScatterOp::getStepKind() {
  return OpKind::ReduceScatter;
}
LogicalResult CombinedReduceScatterOp::writeSteps(StepWriter &writer) {
  writer.push(
      OpKind::ReduceScatter,
      llvm::json::Object{
          {"parts", combinedParts(*this, getScatterAxes(), false, writer)},
          {"axes", writer.axisNames(getGridAxes())},
          {"reduction", getReduction()}});
  return success();
}

/// A wait step for the ticket the emitter gave the collective this op
/// completes (the collective's last step carries it as "start").
std::optional<OpKind> WaitOp::getStepKind() { return OpKind::Wait; }
LogicalResult WaitOp::writeSteps(StepWriter &writer) {
  std::optional<int64_t> ticket = writer.ticket(getStart());
  if (!ticket)
    return emitOpError() << "completes a collective that was not started";
  writer.push(OpKind::Wait,
              llvm::json::Object{{"tickets", llvm::json::Array{*ticket}}});
  return success();
}

/// A fill with zeros (for the members no pair targets), then the
/// collective_permute.
std::optional<OpKind> CollectivePermuteOp::getStepKind() {
  return OpKind::CollectivePermute;
}
LogicalResult CollectivePermuteOp::writeSteps(StepWriter &writer) {
  int64_t out = writer.buffer(getResult());
  writer.push(OpKind::Fill, json::Object{{"out", out}, {"value", 0.0}});
  json::Array pairs;
  ArrayRef<int64_t> flat = getPairs();
  for (size_t i = 0; i + 1 < flat.size(); i += 2)
    pairs.push_back(json::Array{flat[i], flat[i + 1]});
  writer.push(OpKind::CollectivePermute,
              json::Object{{"in", writer.buffer(getInput())},
                           {"out", out},
                           {"axes", writer.axisNames(getGridAxes())},
                           {"pairs", std::move(pairs)}});
  return success();
}

std::optional<OpKind> ConstrainOp::getStepKind() { return std::nullopt; }
LogicalResult ConstrainOp::writeSteps(StepWriter &) {
  return notInLocalProgram(*this, "mtf-partition resolves constraints");
}

std::optional<OpKind> LocalGradOp::getStepKind() { return std::nullopt; }
LogicalResult LocalGradOp::writeSteps(StepWriter &) {
  return notInLocalProgram(*this, "mtf-partition resolves local gradients");
}

std::optional<OpKind> TrainOp::getStepKind() { return std::nullopt; }
LogicalResult TrainOp::writeSteps(StepWriter &) {
  return notInLocalProgram(*this, "mtf-autodiff turns it into the backward "
                                  "pass and the update");
}

/// The carried values start in the results' buffers (the body's carried
/// arguments); each iteration's body ends by writing the next ones there
/// (YieldOp), and each stacked operand's slice buffer moves by its own size.
std::optional<OpKind> LoopOp::getStepKind() { return OpKind::Loop; }
LogicalResult LoopOp::writeSteps(StepWriter &writer) {
  for (auto [operand, result] : llvm::zip(getCarried(), getFinals()))
    if (writer.buffer(operand) != writer.buffer(result))
      writer.push(OpKind::Copy, json::Object{{"in", writer.buffer(operand)},
                                             {"out", writer.buffer(result)}});
  FailureOr<json::Array> body = writer.stepsOf(getBodyBlock());
  if (failed(body))
    return failure();
  // A body that computes nothing (an identity layer) leaves the carried
  // values as they came in: no step to repeat.
  if (body->empty())
    return success();
  json::Array stacked;
  for (Value arg : getStackedArgs())
    stacked.push_back(json::Object{{"buf", writer.buffer(arg)},
                                   {"stride", writer.bufferBytes(arg)}});
  for (Value result : getStackedResults())
    stacked.push_back(
        json::Object{{"buf", writer.stackedSlice(result)},
                     {"stride", writer.bufferBytes(result) / getCount()}});
  json::Object step{{"count", getCount()},
                    {"stacked", std::move(stacked)},
                    {"body", std::move(*body)}};
  if (getReverse())
    step["reverse"] = true;
  writer.push(OpKind::Loop, std::move(step));
  return success();
}

/// In a loop's body: the carried values for the next iteration, copied
/// into the carried arguments' buffers, and the values stacked, each into
/// its result's slice of this iteration.
std::optional<OpKind> YieldOp::getStepKind() { return std::nullopt; }
LogicalResult YieldOp::writeSteps(StepWriter &writer) {
  auto loop = llvm::dyn_cast<LoopOp>(getOperation()->getParentOp());
  if (!loop)
    return notInLocalProgram(*this, "it is written with its mtf.fused");
  // The stacked values first: one may be a carried argument, which the
  // carried copies then overwrite.
  // (A value the body computed in its slice needs no copy.)
  for (auto [value, result] :
       llvm::zip(getValues().drop_front(loop.getCarried().size()),
                 loop.getStackedResults()))
    if (writer.buffer(value) != writer.stackedSlice(result))
      writer.push(OpKind::Copy,
                  json::Object{{"in", writer.buffer(value)},
                               {"out", writer.stackedSlice(result)}});
  // The carried copies at once: a carried argument yielded as another (a
  // line of slots moving one on, docs/pipeline.md#1f1b) is read before it
  // is written, so each copy waits for those that read its target.
  SmallVector<std::pair<int64_t, int64_t>> pending; // (from, to)
  for (auto [value, arg] : llvm::zip(getValues(), loop.getCarriedArgs())) {
    int64_t from = writer.buffer(value), to = writer.buffer(arg);
    if (from != to)
      pending.emplace_back(from, to);
  }
  while (!pending.empty()) {
    auto ready = llvm::find_if(pending, [&](const auto &copy) {
      return llvm::none_of(pending, [&](const auto &other) {
        return &other != &copy && other.first == copy.second;
      });
    });
    if (ready == pending.end())
      return emitOpError() << "yields carried arguments in a cycle (each as "
                              "the next), which cannot be written to a "
                              ".mprog yet";
    writer.push(OpKind::Copy,
                json::Object{{"in", ready->first}, {"out", ready->second}});
    pending.erase(ready);
  }
  return success();
}

/// An output of a parameter the step assigns is copied before the update.
std::optional<OpKind> OutputOp::getStepKind() { return std::nullopt; }
LogicalResult OutputOp::writeSteps(StepWriter &writer) {
  if (std::optional<int64_t> snapshot = writer.snapshotBuffer(*this))
    writer.push(OpKind::Copy, json::Object{{"in", writer.buffer(getValue())},
                                           {"out", *snapshot}});
  return success();
}

//===----------------------------------------------------------------------===//
// Ops with steps
//===----------------------------------------------------------------------===//

std::optional<OpKind> ConstantOp::getStepKind() { return OpKind::Fill; }
LogicalResult ConstantOp::writeSteps(StepWriter &writer) {
  writer.push(OpKind::Fill,
              json::Object{{"out", writer.buffer(getResult())},
                           {"value", getValue().convertToDouble()}});
  return success();
}
int64_t ConstantOp::writeFusedInstructions(FusedProgramBuilder &program) {
  return program.add(
      json::Object{{"fn", "const"}, {"value", getValue().convertToDouble()}});
}

/// A parameter's new value is copied into its buffer unless it is there.
std::optional<OpKind> AssignOp::getStepKind() { return OpKind::Copy; }
LogicalResult AssignOp::writeSteps(StepWriter &writer) {
  int64_t from = writer.buffer(getValue());
  int64_t to = writer.paramBuffer(getName());
  if (from != to)
    writer.push(OpKind::Copy, json::Object{{"in", from}, {"out", to}});
  return success();
}

std::optional<OpKind> CastOp::getStepKind() { return OpKind::Cast; }
LogicalResult CastOp::writeSteps(StepWriter &writer) {
  writer.push(OpKind::Cast, json::Object{{"in", writer.buffer(getInput())},
                                         {"out", writer.buffer(getResult())},
                                         {"from", writer.dtype(getInput())},
                                         {"to", writer.dtype(getResult())}});
  return success();
}

/// In a fused body (float types only: mtf-fuse's candidates) the value
/// itself, rounded by fusedProgram to a 16-bit result type.
int64_t CastOp::writeFusedInstructions(FusedProgramBuilder &program) {
  return program.add(
      json::Object{{"fn", scaleFn()},
                   {"args", json::Array{program.valueOf(getInput())}},
                   {"value", 1.0}});
}

std::optional<OpKind> EqualOp::getStepKind() { return OpKind::Binary; }
LogicalResult EqualOp::writeSteps(StepWriter &writer) {
  return writeBinaryStep(*this, getBinaryFn(), writer);
}

std::optional<OpKind> LessOp::getStepKind() { return OpKind::Binary; }
LogicalResult LessOp::writeSteps(StepWriter &writer) {
  return writeBinaryStep(*this, getBinaryFn(), writer);
}

std::optional<OpKind> DropoutMaskOp::getStepKind() { return OpKind::Dropout; }
LogicalResult DropoutMaskOp::writeSteps(StepWriter &writer) {
  writer.push(OpKind::Dropout,
              json::Object{{"out", writer.operand(getResult())},
                           {"sizes", writer.sizes({getResult()})},
                           {"name", getName()},
                           {"rate", getRate().convertToDouble()},
                           {"dims", writer.globalDims(getResult())}});
  return success();
}

std::optional<OpKind> OneHotOp::getStepKind() { return OpKind::OneHot; }
LogicalResult OneHotOp::writeSteps(StepWriter &writer) {
  json::Object step{{"in", writer.operand(getIndices())},
                    {"out", writer.operand(getResult())},
                    {"dim", getDim()},
                    {"sizes", writer.sizes({getIndices(), getResult()})}};
  // A split class dim: this device's block of the global classes.
  for (json::Value &entry : writer.globalDims(getResult())) {
    json::Object &classes = *entry.getAsObject();
    if (*classes.getString("name") != getDim() ||
        classes.getArray("axes")->empty())
      continue;
    classes.erase("name");
    step["classes"] = std::move(classes);
  }
  writer.push(OpKind::OneHot, std::move(step));
  return success();
}

std::optional<OpKind> RangeOp::getStepKind() { return OpKind::Range; }
LogicalResult RangeOp::writeSteps(StepWriter &writer) {
  writer.push(OpKind::Range,
              json::Object{{"out", writer.operand(getResult())},
                           {"sizes", writer.sizes({getResult()})}});
  return success();
}

std::optional<OpKind> WindowOp::getStepKind() { return OpKind::Window; }
LogicalResult WindowOp::writeSteps(StepWriter &writer) {
  writer.push(OpKind::Window,
              json::Object{{"in", writer.operand(getInput())},
                           {"out", writer.operand(getResult())},
                           {"from", getFrom()},
                           {"to", getTo()},
                           {"offset", static_cast<int64_t>(getOffset())},
                           {"sizes", writer.sizes({getInput(), getResult()})}});
  return success();
}

std::optional<OpKind> TopKOp::getStepKind() { return OpKind::TopK; }
LogicalResult TopKOp::writeSteps(StepWriter &writer) {
  writer.push(OpKind::TopK,
              json::Object{{"in", writer.operand(getInput())},
                           {"out", writer.operand(getResult())},
                           {"dim", getDim()},
                           {"k", static_cast<int64_t>(getK())},
                           {"sizes", writer.sizes({getInput()})}});
  return success();
}

std::optional<OpKind> CumsumOp::getStepKind() { return OpKind::Cumsum; }
LogicalResult CumsumOp::writeSteps(StepWriter &writer) {
  writer.push(OpKind::Cumsum,
              json::Object{{"in", writer.operand(getInput())},
                           {"out", writer.operand(getResult())},
                           {"dim", getDim()},
                           {"reverse", getReverse()},
                           {"sizes", writer.sizes({getInput()})}});
  return success();
}

/// The steps of ops over one dim of one input: {in, out, dim, sizes}.
static LogicalResult writeRowStep(OpKind kind, Operation *op, StringRef dim,
                                  StepWriter &writer) {
  Value input = op->getOperand(0);
  writer.push(kind, json::Object{{"in", writer.operand(input)},
                                 {"out", writer.operand(op->getResult(0))},
                                 {"dim", dim},
                                 {"sizes", writer.sizes({input})}});
  return success();
}

std::optional<OpKind> LogSumExpOp::getStepKind() { return OpKind::LogSumExp; }
LogicalResult LogSumExpOp::writeSteps(StepWriter &writer) {
  return writeRowStep(OpKind::LogSumExp, *this, getDim(), writer);
}

std::optional<OpKind> ArgmaxOp::getStepKind() { return OpKind::Argmax; }
LogicalResult ArgmaxOp::writeSteps(StepWriter &writer) {
  return writeRowStep(OpKind::Argmax, *this, getDim(), writer);
}

std::optional<OpKind> SoftmaxOp::getStepKind() { return OpKind::Softmax; }
LogicalResult SoftmaxOp::writeSteps(StepWriter &writer) {
  return writeRowStep(OpKind::Softmax, *this, getDim(), writer);
}

std::optional<OpKind> SoftmaxCrossEntropyOp::getStepKind() {
  return OpKind::SoftmaxCrossEntropy;
}
LogicalResult SoftmaxCrossEntropyOp::writeSteps(StepWriter &writer) {
  writer.push(OpKind::SoftmaxCrossEntropy,
              json::Object{{"logits", writer.operand(getLogits())},
                           {"labels", writer.operand(getLabels())},
                           {"out", writer.operand(getResult())},
                           {"dim", getDim()},
                           {"sizes", writer.sizes({getLogits()})}});
  return success();
}

std::optional<OpKind> EinsumOp::getStepKind() { return OpKind::Einsum; }
LogicalResult EinsumOp::writeSteps(StepWriter &writer) {
  json::Array inputs;
  json::Object sizes = writer.sizes({getResult()});
  for (Value input : getInputs()) {
    inputs.push_back(writer.operand(input));
    for (auto &[key, size] : writer.sizes({input}))
      sizes[key] = size;
  }
  writer.push(OpKind::Einsum, json::Object{{"in", std::move(inputs)},
                                           {"out", writer.operand(getResult())},
                                           {"sizes", std::move(sizes)}});
  return success();
}

/// One step over the body's expression program; the values inside the body
/// get no buffer.
std::optional<OpKind> FusedOp::getStepKind() { return OpKind::Fused; }
LogicalResult FusedOp::writeSteps(StepWriter &writer) {
  FusedProgram program = fusedProgram(*this);
  json::Array inputs, outputs;
  json::Object sizes;
  auto record = [&](Value value) {
    for (auto &[name, size] : writer.sizes({value}))
      sizes[name] = size;
  };
  for (Value input : getInputs()) {
    inputs.push_back(writer.operand(input));
    record(input);
  }
  for (auto [result, value] : llvm::zip(getResults(), program.resultValues)) {
    json::Object out = writer.operand(result);
    out["value"] = value;
    outputs.push_back(std::move(out));
    record(result);
  }
  getBodyBlock().walk([&](Operation *inner) {
    for (Value value : inner->getResults())
      record(value);
  });
  json::Object step = std::move(program.attrs);
  step["in"] = std::move(inputs);
  step["out"] = std::move(outputs);
  step["sizes"] = std::move(sizes);
  writer.push(OpKind::Fused, std::move(step));
  return success();
}

} // namespace mtf
} // namespace mlir

namespace mlir {
namespace mtf {

/// The fields both attention steps share: every operand in "in", the key
/// dim, the head dims, the scale and the sizes of every operand's dims.
static json::Object attentionFields(Operation *op, StringRef keyDim,
                                    ArrayAttr heads, double scale,
                                    StepWriter &writer) {
  json::Array headNames;
  for (Attribute head : heads)
    headNames.push_back(llvm::cast<StringAttr>(head).getValue().str());
  SmallVector<Value> values(op->getOperands());
  json::Array in;
  for (Value operand : values)
    in.push_back(writer.operand(operand));
  return json::Object{{"in", std::move(in)},
                      {"key", keyDim.str()},
                      {"head", std::move(headNames)},
                      {"scale", scale},
                      {"sizes", writer.sizes(values)}};
}

std::optional<OpKind> AttentionOp::getStepKind() { return OpKind::Attention; }
LogicalResult AttentionOp::writeSteps(StepWriter &writer) {
  json::Object fields = attentionFields(*this, getKeyDim(), getHeadDims(),
                                        getScale().convertToDouble(), writer);
  fields["out"] = writer.operand(getResult());
  fields["lse"] = writer.operand(getLogsumexp());
  writer.push(OpKind::Attention, std::move(fields));
  return success();
}

std::optional<OpKind> AttentionGradOp::getStepKind() {
  return OpKind::AttentionGrad;
}
LogicalResult AttentionGradOp::writeSteps(StepWriter &writer) {
  json::Object fields = attentionFields(*this, getKeyDim(), getHeadDims(),
                                        getScale().convertToDouble(), writer);
  fields["out"] = writer.operand(getQueryGrad());
  fields["dk"] = writer.operand(getKeyGrad());
  fields["dv"] = writer.operand(getValueGrad());
  writer.push(OpKind::AttentionGrad, std::move(fields));
  return success();
}

} // namespace mtf
} // namespace mlir
