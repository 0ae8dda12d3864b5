//===- Interpreter.cpp - reference interpreter of mtf programs ------------===//
//
// A run is one pass over the program's block in program order. Sources make
// tensors (given inputs, runtime::fillBlock for synthetic inputs, the
// current parameter values, runtime::DropoutMask for dropout masks, splats);
// every compute op is one walk over a named index space (NamedIndex.h),
// computed in double; mtf.output collects results and mtf.assign the next
// parameter values. interpretRuns keeps the parameters (initialised from
// the given values or runtime::fillBlock) across runs and installs each
// run's assigns after the run. Values are kept until the end: the
// interpreter runs small test programs, so it trades memory and speed for
// code a reader can check line by line.
//
//===----------------------------------------------------------------------===//

#include "compiler/interpreter/Interpreter.h"
#include "compiler/interpreter/NamedIndex.h"
#include "runtime/core/HalfFloat.h"
#include "runtime/core/Random.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace meshc::interp {
namespace {

/// An einsum walks every combination of its dimensions once per operand;
/// beyond this many multiply-adds it would run for minutes.
constexpr uint64_t kMaxEinsumWork = 2'000'000'000;
/// Largest tensor the interpreter materialises (2 GiB of doubles).
constexpr uint64_t kMaxElements = uint64_t(1) << 28;
/// Class count of synthetic i32 inputs that feed no cross-entropy as labels.
constexpr int64_t kDefaultIntRange = 2;

/// An integer exactly, anything else with up to 6 significant digits.
std::string formatNumber(double value) {
  if (value == std::trunc(value) && std::fabs(value) < 9.2e18)
    return std::to_string(static_cast<int64_t>(value));
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%g", value);
  return text;
}

bool isInt32(double value) {
  return value == std::trunc(value) && value >= -2147483648.0 &&
         value <= 2147483647.0;
}

/// The row-major offset of the first element of `tensor` satisfying `pred`.
template <typename Pred>
std::optional<int64_t> findElement(const Tensor &tensor, Pred pred) {
  for (size_t i = 0; i < tensor.data.size(); ++i)
    if (pred(tensor.data[i]))
      return static_cast<int64_t>(i);
  return std::nullopt;
}

/// `[batch=2]`: where element `offset` of `tensor` lies, for messages.
std::string whereIs(const Tensor &tensor, int64_t offset) {
  return formatNamed(tensor.dims, indexAt(tensor.shape, offset));
}

/// `tensor` without dimension `dim`, zero-filled: the per-row scratch of
/// softmax and cross-entropy.
Tensor withoutDim(const Tensor &tensor, llvm::StringRef dim) {
  Tensor rest;
  for (size_t d = 0; d < tensor.dims.size(); ++d) {
    if (tensor.dims[d] == dim)
      continue;
    rest.dims.push_back(tensor.dims[d]);
    rest.shape.push_back(tensor.shape[d]);
  }
  rest.data.assign(countElements(rest.shape), 0.0);
  return rest;
}

/// gelu with the tanh approximation: x (1 + tanh(c (x + 0.044715 x^3))) / 2
/// with c = sqrt(2 / pi).
double gelu(double x) {
  const double sqrtTwoOverPi = std::sqrt(2.0 / 3.141592653589793);
  return 0.5 * x *
         (1.0 + std::tanh(sqrtTwoOverPi * (x + 0.044715 * x * x * x)));
}

/// d/dx of gelu: with u = c (x + 0.044715 x^3) and t = tanh(u),
/// gelu = x (1 + t) / 2, so gelu' = (1 + t) / 2 + x (1 - t^2) u' / 2 with
/// u' = c (1 + 3 * 0.044715 x^2).
double geluGrad(double x) {
  const double sqrtTwoOverPi = std::sqrt(2.0 / 3.141592653589793);
  double t = std::tanh(sqrtTwoOverPi * (x + 0.044715 * x * x * x));
  double du = sqrtTwoOverPi * (1.0 + 3.0 * 0.044715 * x * x);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du;
}

/// A zero-filled tensor of `type`, or an error at `op` when it is too big.
FailureOr<Tensor> allocate(Operation *op, Type type) {
  auto tensorType = llvm::cast<mtf::TensorType>(type);
  Tensor tensor;
  for (const mtf::NamedDim &dim : tensorType.getDims()) {
    tensor.dims.push_back(dim.name.getValue().str());
    tensor.shape.push_back(dim.size);
  }
  tensor.isInteger = tensorType.getElementType().isInteger(32);
  uint64_t count = countElements(tensor.shape);
  if (count > kMaxElements)
    return op->emitOpError()
           << "result has " << count
           << " elements, more than the reference interpreter's limit of "
           << kMaxElements;
  tensor.data.assign(count, 0.0);
  return tensor;
}

/// Contract: the given tensor has the dimensions of `op`'s result in order
/// with their sizes, one value per element, and i32 values exactly when the
/// result is i32. `what` ("input", "parameter") and `name` are for messages.
FailureOr<Tensor> checkGiven(Operation *op, llvm::StringRef what,
                             llvm::StringRef name, const Tensor &given) {
  Type type = op->getResult(0).getType();
  FailureOr<Tensor> expected = allocate(op, type);
  if (failed(expected))
    return failure();
  if (given.dims != expected->dims || given.shape != expected->shape)
    return op->emitOpError()
           << "given " << what << " '" << name << "' has dimensions "
           << (given.dims.size() == given.shape.size()
                   ? formatNamed(given.dims, given.shape)
                   : "of " + std::to_string(given.dims.size()) + " names and " +
                         std::to_string(given.shape.size()) + " sizes")
           << ", expected " << formatNamed(expected->dims, expected->shape);
  if (given.data.size() != expected->data.size())
    return op->emitOpError() << "given " << what << " '" << name << "' holds "
                             << given.data.size() << " values, expected "
                             << expected->data.size();
  Type elementType = llvm::cast<mtf::TensorType>(type).getElementType();
  if (given.isInteger != expected->isInteger)
    return op->emitOpError()
           << "given " << what << " '" << name << "' holds "
           << (given.isInteger ? "integers" : "floating-point values")
           << " but the " << what << " is " << elementType;
  if (expected->isInteger)
    if (std::optional<int64_t> bad =
            findElement(given, [](double x) { return !isInt32(x); }))
      return op->emitOpError()
             << "given " << what << " '" << name << "' holds "
             << formatNumber(given.data[*bad]) << " at " << whereIs(given, *bad)
             << ", which is not an i32";
  return given;
}

runtime::InitSpec initSpecOf(mtf::InitAttr init) {
  llvm::ArrayRef<double> args = init.getArgs().asArrayRef();
  runtime::InitSpec spec;
  switch (init.getKind()) {
  case mtf::InitKind::zeros:
    spec.kind = runtime::InitSpec::Kind::Zeros;
    break;
  case mtf::InitKind::ones:
    spec.kind = runtime::InitSpec::Kind::Ones;
    break;
  case mtf::InitKind::constant:
    spec.kind = runtime::InitSpec::Kind::Constant;
    break;
  case mtf::InitKind::normal:
    spec.kind = runtime::InitSpec::Kind::Normal;
    break;
  case mtf::InitKind::uniform:
    spec.kind = runtime::InitSpec::Kind::Uniform;
    break;
  }
  if (!args.empty())
    spec.a = args[0];
  if (args.size() > 1)
    spec.b = args[1];
  return spec;
}

/// The parameters and slots by name.
using ParamValues = std::map<std::string, Tensor>;

/// The state of one run: the value of every SSA value computed so far.
class ProgramRun {
public:
  /// Run number `runIndex` (of the dropout masks) from parameter values
  /// `params`.
  ProgramRun(mtf::ProgramOp program, const Options &options, uint64_t runIndex,
             const ParamValues &params)
      : program(program), options(options), runIndex(runIndex), params(params) {
  }

  /// Runs the program; returns its outputs.
  FailureOr<std::map<std::string, Tensor>> run();
  /// After run(): the values the run's mtf.assign ops give parameters.
  ParamValues &assignedParams() { return assigned; }

private:
  void findLabelRanges();
  bool skips(Operation *op) const;
  LogicalResult checkOperandsEvaluated(Operation *op) const;
  LogicalResult evaluate(Operation *op);

  const Tensor &valueOf(Value value) const {
    auto it = values.find(value);
    assert(it != values.end() && "operand evaluated before its use");
    return it->second;
  }
  /// Binds `value` to `tensor`. A bf16 or f16 value holds what the runtime
  /// stores: the f32 result rounded to the type (core/HalfFloat.h); f32
  /// values stay exact doubles.
  LogicalResult define(Value value, FailureOr<Tensor> tensor) {
    if (failed(tensor))
      return failure();
    auto type = llvm::dyn_cast<mtf::TensorType>(value.getType());
    Type element = type ? type.getElementType() : Type();
    if (element && element.isBF16())
      for (double &x : tensor->data)
        x = half::roundToBf16(static_cast<float>(x));
    else if (element && element.isF16())
      for (double &x : tensor->data)
        x = half::roundToF16(static_cast<float>(x));
    values.try_emplace(value, std::move(*tensor));
    return success();
  }

  FailureOr<Tensor> input(mtf::InputOp op);
  FailureOr<Tensor> constant(mtf::ConstantOp op);
  FailureOr<Tensor> dropoutMask(mtf::DropoutMaskOp op);
  FailureOr<Tensor> einsum(mtf::EinsumOp op);
  FailureOr<Tensor> rename(mtf::RenameOp op);
  /// split_dim, merge_dims: the same data under the result's dims.
  FailureOr<Tensor> reshaped(Operation *op);
  FailureOr<Tensor> cast(mtf::CastOp op);
  template <typename Fn> FailureOr<Tensor> unary(Operation *op, Fn fn);
  template <typename Fn> FailureOr<Tensor> binary(Operation *op, Fn fn);
  FailureOr<Tensor> divide(mtf::DivOp op);
  template <typename Fn>
  FailureOr<Tensor> reduce(Operation *op, double init, Fn combine);
  FailureOr<Tensor> reduceMean(mtf::ReduceMeanOp op);
  FailureOr<Tensor> softmax(mtf::SoftmaxOp op);
  FailureOr<Tensor> logSumExp(mtf::LogSumExpOp op);
  FailureOr<Tensor> crossEntropy(mtf::SoftmaxCrossEntropyOp op);
  FailureOr<Tensor> oneHot(mtf::OneHotOp op);
  FailureOr<Tensor> argmax(mtf::ArgmaxOp op);
  FailureOr<Tensor> range(mtf::RangeOp op);
  FailureOr<Tensor> cumsum(mtf::CumsumOp op);
  FailureOr<Tensor> window(mtf::WindowOp op);
  FailureOr<Tensor> topK(mtf::TopKOp op);
  LogicalResult attention(mtf::AttentionOp op);
  LogicalResult attentionGrad(mtf::AttentionGradOp op);
  LogicalResult loop(mtf::LoopOp op);
  LogicalResult checkInt32Result(Operation *op, const Tensor &result);

  mtf::ProgramOp program;
  const Options &options;
  uint64_t runIndex;
  /// The parameter values at the start of the run.
  const ParamValues &params;
  llvm::DenseMap<Value, Tensor> values;
  /// Upper bound (exclusive) of each synthetic i32 input, by input name.
  llvm::StringMap<int64_t> labelRanges;
  std::map<std::string, Tensor> outputs;
  ParamValues assigned;
  /// The iterations of the loops being run, outermost first.
  std::vector<int64_t> iterations;
};

FailureOr<std::map<std::string, Tensor>> ProgramRun::run() {
  findLabelRanges();
  for (Operation &op : program.getBodyBlock()) {
    if (skips(&op))
      continue;
    if (failed(checkOperandsEvaluated(&op)) || failed(evaluate(&op)))
      return failure();
  }
  return std::move(outputs);
}

/// An evaluation run executes forward ops only: it skips backward and update
/// ops (those with mtf.phase) and assigns nothing.
bool ProgramRun::skips(Operation *op) const {
  return options.eval && (op->hasAttr(mtf::MtfDialect::kPhaseAttrName) ||
                          llvm::isa<mtf::AssignOp>(op));
}

/// In an evaluation run, a forward op reading what a skipped op computes has
/// no value to read.
LogicalResult ProgramRun::checkOperandsEvaluated(Operation *op) const {
  for (OpOperand &operand : op->getOpOperands()) {
    if (values.count(operand.get()))
      continue;
    InFlightDiagnostic diag = op->emitOpError()
                              << "operand #" << operand.getOperandNumber()
                              << " is computed by ";
    if (Operation *def = operand.get().getDefiningOp())
      diag << "'" << def->getName() << "' with "
           << mtf::MtfDialect::kPhaseAttrName << " = "
           << def->getAttr(mtf::MtfDialect::kPhaseAttrName) << ", ";
    else
      diag << "an op ";
    return diag << "which an evaluation run skips";
  }
  return success();
}

/// Synthetic labels must be valid class indices: an i32 input used as the
/// labels of a cross-entropy or the indices of a one-hot (directly or through
/// layout constraints, which the partitioner turns into collectives) draws
/// from [0, size) of the class dimension of the first such use in program
/// order. The .mprog emitter writes the same range.
void ProgramRun::findLabelRanges() {
  auto record = [&](Value source, mtf::TensorType type, StringRef dim) {
    while (auto constrain = source.getDefiningOp<mtf::ConstrainOp>())
      source = constrain.getInput();
    auto labels = source.getDefiningOp<mtf::InputOp>();
    if (!labels)
      return;
    int64_t classes = type.getDims()[*type.getDimIndex(dim)].size;
    labelRanges.try_emplace(labels.getName(), classes);
  };
  for (Operation &op : program.getBodyBlock()) {
    if (auto xent = llvm::dyn_cast<mtf::SoftmaxCrossEntropyOp>(op))
      record(xent.getLabels(),
             llvm::cast<mtf::TensorType>(xent.getLogits().getType()),
             xent.getDim());
    else if (auto hot = llvm::dyn_cast<mtf::OneHotOp>(op))
      record(hot.getIndices(), llvm::cast<mtf::TensorType>(hot.getType()),
             hot.getDim());
  }
}

LogicalResult ProgramRun::evaluate(Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](mtf::InputOp op) { return define(op, input(op)); })
      .Case([&](mtf::ParamOp op) {
        // The value at the start of the run, whatever this run assigns.
        return define(op, params.at(op.getName().str()));
      })
      .Case([&](mtf::ConstantOp op) { return define(op, constant(op)); })
      .Case([&](mtf::DropoutMaskOp op) { return define(op, dropoutMask(op)); })
      .Case([&](mtf::EinsumOp op) { return define(op, einsum(op)); })
      .Case([&](mtf::RenameOp op) { return define(op, rename(op)); })
      .Case<mtf::SplitDimOp, mtf::MergeDimsOp>(
          [&](auto op) { return define(op, reshaped(op)); })
      .Case([&](mtf::ConstrainOp op) {
        return define(op, valueOf(op.getInput()));
      })
      .Case([&](mtf::CastOp op) { return define(op, cast(op)); })
      .Case([&](mtf::ReluOp op) {
        return define(op, unary(op, [](double x) { return x > 0 ? x : 0.0; }));
      })
      .Case([&](mtf::GeluOp op) { return define(op, unary(op, gelu)); })
      .Case([&](mtf::GeluGradOp op) { return define(op, unary(op, geluGrad)); })
      .Case([&](mtf::SigmoidOp op) {
        return define(
            op, unary(op, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }));
      })
      .Case([&](mtf::SiluOp op) {
        return define(
            op, unary(op, [](double x) { return x / (1.0 + std::exp(-x)); }));
      })
      .Case([&](mtf::PositiveOp op) {
        return define(op,
                      unary(op, [](double x) { return x > 0 ? 1.0 : 0.0; }));
      })
      .Case([&](mtf::LocalGradOp op) {
        return define(op, valueOf(op.getInput()));
      })
      .Case([&](mtf::ExpOp op) {
        return define(op, unary(op, [](double x) { return std::exp(x); }));
      })
      .Case([&](mtf::LogOp op) {
        return define(op, unary(op, [](double x) { return std::log(x); }));
      })
      .Case([&](mtf::TanhOp op) {
        return define(op, unary(op, [](double x) { return std::tanh(x); }));
      })
      .Case([&](mtf::SqrtOp op) {
        return define(op, unary(op, [](double x) { return std::sqrt(x); }));
      })
      .Case([&](mtf::RsqrtOp op) {
        return define(op,
                      unary(op, [](double x) { return 1.0 / std::sqrt(x); }));
      })
      .Case([&](mtf::NegateOp op) {
        return define(op, unary(op, [](double x) { return -x; }));
      })
      .Case([&](mtf::AddOp op) {
        return define(op, binary(op, [](double a, double b) { return a + b; }));
      })
      .Case([&](mtf::SubOp op) {
        return define(op, binary(op, [](double a, double b) { return a - b; }));
      })
      .Case([&](mtf::MulOp op) {
        return define(op, binary(op, [](double a, double b) { return a * b; }));
      })
      .Case([&](mtf::DivOp op) { return define(op, divide(op)); })
      .Case([&](mtf::EqualOp op) {
        return define(op, binary(op, [](double a, double b) {
                        return a == b ? 1.0 : 0.0;
                      }));
      })
      .Case([&](mtf::LessOp op) {
        return define(op, binary(op, [](double a, double b) {
                        return a < b ? 1.0 : 0.0;
                      }));
      })
      .Case([&](mtf::RangeOp op) { return define(op, range(op)); })
      .Case([&](mtf::CumsumOp op) { return define(op, cumsum(op)); })
      .Case([&](mtf::WindowOp op) { return define(op, window(op)); })
      .Case([&](mtf::TopKOp op) { return define(op, topK(op)); })
      .Case([&](mtf::OneHotOp op) { return define(op, oneHot(op)); })
      .Case([&](mtf::ArgmaxOp op) { return define(op, argmax(op)); })
      .Case([&](mtf::MaxOp op) {
        return define(
            op, binary(op, [](double a, double b) { return a > b ? a : b; }));
      })
      .Case([&](mtf::MinOp op) {
        return define(
            op, binary(op, [](double a, double b) { return a < b ? a : b; }));
      })
      .Case([&](mtf::ReduceSumOp op) {
        return define(
            op, reduce(op, 0.0, [](double acc, double x) { return acc + x; }));
      })
      .Case([&](mtf::ReduceMeanOp op) { return define(op, reduceMean(op)); })
      .Case([&](mtf::ReduceMaxOp op) {
        return define(
            op, reduce(op, -std::numeric_limits<double>::infinity(),
                       [](double acc, double x) { return x > acc ? x : acc; }));
      })
      .Case([&](mtf::SoftmaxOp op) { return define(op, softmax(op)); })
      .Case([&](mtf::LogSumExpOp op) { return define(op, logSumExp(op)); })
      .Case([&](mtf::SoftmaxCrossEntropyOp op) {
        return define(op, crossEntropy(op));
      })
      .Case([&](mtf::OutputOp op) {
        outputs[op.getName().str()] = valueOf(op.getValue());
        return success();
      })
      .Case([&](mtf::AssignOp op) {
        assigned[op.getName().str()] = valueOf(op.getValue());
        return success();
      })
      // mtf.train asks the autodiff pass for backward and update ops; on its
      // own it computes nothing.
      .Case([&](mtf::TrainOp) { return success(); })
      .Case([&](mtf::LoopOp op) { return loop(op); })
      .Case([&](mtf::AttentionOp op) { return attention(op); })
      .Case([&](mtf::AttentionGradOp op) { return attentionGrad(op); })
      .Default([&](Operation *op) {
        return op->emitOpError()
               << "is not supported by the reference interpreter";
      });
}

//===----------------------------------------------------------------------===//
// Loops
//===----------------------------------------------------------------------===//

/// Iteration i of the body (from the last down with `reverse`) sees the
/// carried values, slice i of each stacked operand (along its first dim)
/// and the invariants; the values it yields after the carried ones are
/// stacked into the other results, at position i.
LogicalResult ProgramRun::loop(mtf::LoopOp op) {
  Block &body = op.getBodyBlock();
  size_t carriedCount = op.getCarried().size();
  std::vector<Tensor> carried, stacked;
  for (Value value : op.getCarried())
    carried.push_back(valueOf(value));
  for (Value value : op.getStackedResults()) {
    FailureOr<Tensor> tensor = allocate(op, value.getType());
    if (failed(tensor))
      return failure();
    stacked.push_back(std::move(*tensor));
  }
  auto slice = [](const Tensor &whole, int64_t i) {
    Tensor part;
    part.dims.assign(whole.dims.begin() + 1, whole.dims.end());
    part.shape.assign(whole.shape.begin() + 1, whole.shape.end());
    part.isInteger = whole.isInteger;
    size_t size = whole.data.size() / size_t(whole.shape.front());
    part.data.assign(whole.data.begin() + i * size,
                     whole.data.begin() + (i + 1) * size);
    return part;
  };
  iterations.push_back(0);
  const int64_t count = static_cast<int64_t>(op.getCount());
  for (int64_t k = 0; k < count; ++k) {
    int64_t i = op.getReverse() ? count - 1 - k : k;
    iterations.back() = i;
    for (auto [arg, value] : llvm::zip(op.getCarriedArgs(), carried))
      values.insert_or_assign(arg, value);
    for (auto [arg, operand] : llvm::zip(op.getStackedArgs(), op.getStacked()))
      values.insert_or_assign(arg, slice(valueOf(operand), i));
    for (auto [arg, operand] :
         llvm::zip(op.getInvariantArgs(), op.getInvariant()))
      values.insert_or_assign(arg, valueOf(operand));
    for (Operation &inner : body.without_terminator())
      if (failed(checkOperandsEvaluated(&inner)) || failed(evaluate(&inner)))
        return failure();
    for (auto [index, value] :
         llvm::enumerate(body.getTerminator()->getOperands())) {
      const Tensor &yielded = valueOf(value);
      if (index < carriedCount) {
        carried[index] = yielded;
        continue;
      }
      Tensor &into = stacked[index - carriedCount];
      std::copy(yielded.data.begin(), yielded.data.end(),
                into.data.begin() + i * yielded.data.size());
    }
    // The next iteration defines the body's values anew.
    body.walk([&](Operation *inner) {
      for (Value result : inner->getResults())
        values.erase(result);
    });
  }
  iterations.pop_back();
  for (auto [result, value] : llvm::zip(op.getFinals(), carried))
    if (failed(define(result, value)))
      return failure();
  for (auto [result, value] : llvm::zip(op.getStackedResults(), stacked))
    if (failed(define(result, value)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

FailureOr<Tensor> ProgramRun::input(mtf::InputOp op) {
  FailureOr<Tensor> tensor = allocate(op, op.getType());
  if (failed(tensor))
    return failure();
  auto given = options.inputs.find(op.getName().str());
  if (given != options.inputs.end())
    return checkGiven(op, "input", op.getName(), given->second);

  std::vector<int64_t> origin(tensor->shape.size(), 0);
  if (tensor->isInteger) {
    int64_t high = labelRanges.lookup(op.getName());
    std::vector<int32_t> values(tensor->data.size());
    runtime::fillBlockInt(0, high > 0 ? high : kDefaultIntRange, options.seed,
                          op.getName(), tensor->shape, origin, tensor->shape,
                          values.data());
    tensor->data.assign(values.begin(), values.end());
  } else {
    runtime::InitSpec standardNormal{runtime::InitSpec::Kind::Normal, 0.0, 1.0};
    std::vector<float> values(tensor->data.size());
    runtime::fillBlock(standardNormal, options.seed, op.getName(),
                       tensor->shape, origin, tensor->shape, values.data());
    tensor->data.assign(values.begin(), values.end());
  }
  return tensor;
}

FailureOr<Tensor> ProgramRun::constant(mtf::ConstantOp op) {
  FailureOr<Tensor> tensor = allocate(op, op.getType());
  if (failed(tensor))
    return failure();
  std::fill(tensor->data.begin(), tensor->data.end(),
            op.getValue().convertToDouble());
  return tensor;
}

/// All ones in an evaluation run; else element i is what the runtime's
/// DropoutMask gives in this run, rounded to f32.
FailureOr<Tensor> ProgramRun::dropoutMask(mtf::DropoutMaskOp op) {
  FailureOr<Tensor> tensor = allocate(op, op.getType());
  if (failed(tensor))
    return failure();
  if (options.eval) {
    std::fill(tensor->data.begin(), tensor->data.end(), 1.0);
    return tensor;
  }
  // In a loop body, a mask per iteration: "name@i" per enclosing loop.
  std::string stream = op.getName().str();
  for (int64_t iteration : iterations)
    stream += "@" + std::to_string(iteration);
  runtime::DropoutMask mask(options.seed, stream, runIndex,
                            op.getRate().convertToDouble());
  for (size_t i = 0; i < tensor->data.size(); ++i)
    tensor->data[i] = static_cast<float>(mask.scale(i));
  return tensor;
}

//===----------------------------------------------------------------------===//
// Contraction and renaming
//===----------------------------------------------------------------------===//

/// Walks the result's dimensions followed by every operand dimension the
/// result drops; each point adds the product of the operands there.
FailureOr<Tensor> ProgramRun::einsum(mtf::EinsumOp op) {
  FailureOr<Tensor> result = allocate(op, op.getType());
  if (failed(result))
    return failure();
  std::vector<std::string> walkDims = result->dims;
  std::vector<int64_t> walkShape = result->shape;
  std::vector<const Tensor *> operands;
  for (Value input : op.getInputs()) {
    const Tensor &operand = valueOf(input);
    operands.push_back(&operand);
    for (size_t d = 0; d < operand.dims.size(); ++d)
      if (llvm::find(walkDims, operand.dims[d]) == walkDims.end()) {
        walkDims.push_back(operand.dims[d]);
        walkShape.push_back(operand.shape[d]);
      }
  }
  uint64_t work = llvm::SaturatingMultiply(
      countElements(walkShape), static_cast<uint64_t>(operands.size()));
  if (work > kMaxEinsumWork)
    return op.emitOpError()
           << "needs " << work
           << " multiply-adds, more than the reference interpreter's limit of "
           << kMaxEinsumWork;

  std::vector<std::vector<int64_t>> operandStrides;
  for (const Tensor *operand : operands)
    operandStrides.push_back(stridesAlong(*operand, walkDims));
  std::vector<int64_t> resultStrides = stridesAlong(*result, walkDims);
  forEachIndex(walkShape, [&](const std::vector<int64_t> &index) {
    double product = 1.0;
    for (size_t k = 0; k < operands.size(); ++k)
      product *= operands[k]->data[offsetAt(index, operandStrides[k])];
    result->data[offsetAt(index, resultStrides)] += product;
  });
  return result;
}

FailureOr<Tensor> ProgramRun::rename(mtf::RenameOp op) {
  Tensor result = valueOf(op.getInput());
  for (std::string &dim : result.dims)
    if (dim == op.getFrom())
      dim = op.getTo().str();
  return result;
}

FailureOr<Tensor> ProgramRun::reshaped(Operation *op) {
  const Tensor &input = valueOf(op->getOperand(0));
  auto type = llvm::cast<mtf::TensorType>(op->getResult(0).getType());
  std::optional<ArrayRef<int64_t>> blocks;
  unsigned index = 0;
  if (auto split = llvm::dyn_cast<mtf::SplitDimOp>(op)) {
    blocks = split.getBlocks();
    index = split.getDimIndex();
  } else {
    auto merge = llvm::cast<mtf::MergeDimsOp>(op);
    blocks = merge.getBlocks();
    index = merge.getOuterIndex();
  }
  if (!blocks) {
    // The same elements in the same order.
    Tensor result = input;
    result.dims.clear();
    result.shape.clear();
    for (const mtf::NamedDim &dim : type.getDims()) {
      result.dims.push_back(dim.name.getValue().str());
      result.shape.push_back(dim.size);
    }
    return result;
  }
  // Blocks: outer index a holds the next blocks[a] elements of the whole
  // dim, then zeros up to the inner size. Both sides as [before, ..,
  // after], the whole dim against outer x inner.
  FailureOr<Tensor> result = allocate(op, type);
  if (failed(result))
    return failure();
  bool split = llvm::isa<mtf::SplitDimOp>(op);
  const std::vector<int64_t> &cut = split ? result->shape : input.shape;
  int64_t before = 1, after = 1;
  for (unsigned d = 0; d < index; ++d)
    before *= cut[d];
  for (size_t d = index + 2; d < cut.size(); ++d)
    after *= cut[d];
  int64_t inner = cut[index + 1], whole = 0;
  for (int64_t block : *blocks)
    whole += block;
  for (int64_t b = 0; b < before; ++b) {
    int64_t first = 0;
    for (auto [outer, block] : llvm::enumerate(*blocks)) {
      for (int64_t i = 0; i < block; ++i) {
        int64_t wholeAt = ((b * whole) + first + i) * after;
        int64_t cutAt =
            ((b * int64_t(blocks->size()) + int64_t(outer)) * inner + i) *
            after;
        for (int64_t e = 0; e < after; ++e) {
          if (split)
            result->data[cutAt + e] = input.data[wholeAt + e];
          else
            result->data[wholeAt + e] = input.data[cutAt + e];
        }
      }
      first += block;
    }
  }
  return result;
}

/// To i32: truncation toward zero, saturating at the i32 bounds, NaN to 0
/// (what a C++ float-to-int conversion leaves undefined). From i32 and
/// between float types: the value unchanged (floats are held as doubles).
FailureOr<Tensor> ProgramRun::cast(mtf::CastOp op) {
  Tensor result = valueOf(op.getInput());
  bool toInteger =
      llvm::cast<mtf::TensorType>(op.getType()).getElementType().isInteger(32);
  if (toInteger && !result.isInteger)
    for (double &x : result.data)
      x = std::isnan(x)        ? 0.0
          : x <= -2147483648.0 ? -2147483648.0
          : x >= 2147483647.0  ? 2147483647.0
                               : std::trunc(x);
  result.isInteger = toInteger;
  return result;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

template <typename Fn>
FailureOr<Tensor> ProgramRun::unary(Operation *op, Fn fn) {
  Tensor result = valueOf(op->getOperand(0));
  for (double &x : result.data)
    x = fn(x);
  return result;
}

/// Walks the result's dimensions; an operand lacking one of them has stride
/// 0 along it, i.e. is repeated (broadcasting by name).
template <typename Fn>
FailureOr<Tensor> ProgramRun::binary(Operation *op, Fn fn) {
  FailureOr<Tensor> result = allocate(op, op->getResult(0).getType());
  if (failed(result))
    return failure();
  const Tensor &lhs = valueOf(op->getOperand(0));
  const Tensor &rhs = valueOf(op->getOperand(1));
  std::vector<int64_t> lhsStrides = stridesAlong(lhs, result->dims);
  std::vector<int64_t> rhsStrides = stridesAlong(rhs, result->dims);
  std::vector<int64_t> resultStrides = stridesAlong(*result, result->dims);
  forEachIndex(result->shape, [&](const std::vector<int64_t> &index) {
    result->data[offsetAt(index, resultStrides)] =
        fn(lhs.data[offsetAt(index, lhsStrides)],
           rhs.data[offsetAt(index, rhsStrides)]);
  });
  if (result->isInteger && failed(checkInt32Result(op, *result)))
    return failure();
  return result;
}

/// Floats divide in IEEE double (x/0 is an infinity); i32 divides like C,
/// truncating toward zero, and a zero divisor is an error.
FailureOr<Tensor> ProgramRun::divide(mtf::DivOp op) {
  const Tensor &rhs = valueOf(op.getRhs());
  if (!rhs.isInteger)
    return binary(op, [](double a, double b) { return a / b; });
  if (std::optional<int64_t> zero =
          findElement(rhs, [](double x) { return x == 0.0; }))
    return op.emitOpError() << "divides an i32 by zero at "
                            << whereIs(rhs, *zero) << " of the divisor";
  return binary(op, [](double a, double b) {
    return static_cast<double>(static_cast<int64_t>(a) /
                               static_cast<int64_t>(b));
  });
}

LogicalResult ProgramRun::checkInt32Result(Operation *op,
                                           const Tensor &result) {
  std::optional<int64_t> bad =
      findElement(result, [](double x) { return !isInt32(x); });
  if (!bad)
    return success();
  return op->emitOpError() << "i32 result " << formatNumber(result.data[*bad])
                           << " at " << whereIs(result, *bad)
                           << " is outside the i32 range";
}

//===----------------------------------------------------------------------===//
// Reductions and normalisation
//===----------------------------------------------------------------------===//

/// Walks the operand's dimensions; the result has stride 0 along the ones it
/// drops, so every operand element is combined into its result element.
template <typename Fn>
FailureOr<Tensor> ProgramRun::reduce(Operation *op, double init, Fn combine) {
  FailureOr<Tensor> result = allocate(op, op->getResult(0).getType());
  if (failed(result))
    return failure();
  std::fill(result->data.begin(), result->data.end(), init);
  const Tensor &input = valueOf(op->getOperand(0));
  std::vector<int64_t> inputStrides = stridesAlong(input, input.dims);
  std::vector<int64_t> resultStrides = stridesAlong(*result, input.dims);
  forEachIndex(input.shape, [&](const std::vector<int64_t> &index) {
    double &acc = result->data[offsetAt(index, resultStrides)];
    acc = combine(acc, input.data[offsetAt(index, inputStrides)]);
  });
  return result;
}

FailureOr<Tensor> ProgramRun::reduceMean(mtf::ReduceMeanOp op) {
  FailureOr<Tensor> result =
      reduce(op, 0.0, [](double acc, double x) { return acc + x; });
  if (failed(result))
    return failure();
  double reduced = static_cast<double>(valueOf(op.getInput()).data.size()) /
                   static_cast<double>(result->data.size());
  for (double &x : result->data)
    x /= reduced;
  return result;
}

/// The row maximum of `input` along `dim` and the sum of exp(x - max) per
/// row, each a tensor of input's other dims; subtracting the row maximum
/// keeps exp from overflowing. Softmax and logsumexp are made of them.
struct RowExpSums {
  Tensor max, sum;
  std::vector<int64_t> strides, rowStrides;
};
RowExpSums rowExpSums(const Tensor &input, llvm::StringRef dim) {
  RowExpSums rows{withoutDim(input, dim),
                  withoutDim(input, dim),
                  stridesAlong(input, input.dims),
                  {}};
  rows.rowStrides = stridesAlong(rows.max, input.dims);
  std::fill(rows.max.data.begin(), rows.max.data.end(),
            -std::numeric_limits<double>::infinity());
  forEachIndex(input.shape, [&](const std::vector<int64_t> &index) {
    double &top = rows.max.data[offsetAt(index, rows.rowStrides)];
    top = std::max(top, input.data[offsetAt(index, rows.strides)]);
  });
  forEachIndex(input.shape, [&](const std::vector<int64_t> &index) {
    int64_t row = offsetAt(index, rows.rowStrides);
    rows.sum.data[row] += std::exp(input.data[offsetAt(index, rows.strides)] -
                                   rows.max.data[row]);
  });
  return rows;
}

//===----------------------------------------------------------------------===//
// Fused attention
//===----------------------------------------------------------------------===//

namespace {

/// The element offsets of one tensor along one role of an attention's dims
/// (AttentionRoles): entry i is the offset of the role's i-th multi-index
/// (row-major over the role's dims); all zero where the tensor lacks them.
std::vector<int64_t> roleOffsets(const Tensor &tensor,
                                 ArrayRef<mtf::NamedDim> role) {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  for (const mtf::NamedDim &dim : role) {
    names.push_back(dim.name.getValue().str());
    sizes.push_back(dim.size);
  }
  std::vector<int64_t> strides = stridesAlong(tensor, names);
  std::vector<int64_t> offsets;
  forEachIndex(sizes, [&](const std::vector<int64_t> &index) {
    offsets.push_back(offsetAt(index, strides));
  });
  return offsets;
}

/// One attention tensor addressed by role: at(g, m, n, d, e).
struct RoleView {
  std::vector<int64_t> group, query, key, head, value;
  RoleView(const Tensor &tensor, const mtf::AttentionRoles &roles, bool hasHead,
           bool hasValue) {
    group = roleOffsets(tensor, roles.group);
    query = roleOffsets(tensor, roles.query);
    key = roleOffsets(tensor, {roles.key});
    head = roleOffsets(tensor, hasHead ? ArrayRef<mtf::NamedDim>(roles.head)
                                       : ArrayRef<mtf::NamedDim>());
    value = roleOffsets(tensor, hasValue ? ArrayRef<mtf::NamedDim>(roles.value)
                                         : ArrayRef<mtf::NamedDim>());
  }
};

/// The scores, probabilities and sizes of one attention, in double.
struct AttentionRun {
  mtf::AttentionRoles roles;
  int64_t groups = 1, queries = 1, keys = 1, heads = 1, values = 1;
  const Tensor *q, *k, *v, *bias;
  std::optional<RoleView> qv, kv, vv, bv;

  void init() {
    for (const mtf::NamedDim &dim : roles.group)
      groups *= dim.size;
    for (const mtf::NamedDim &dim : roles.query)
      queries *= dim.size;
    keys = roles.key.size;
    for (const mtf::NamedDim &dim : roles.head)
      heads *= dim.size;
    for (const mtf::NamedDim &dim : roles.value)
      values *= dim.size;
    // A tensor's key offsets are zero when it lacks the key dim (query).
    qv.emplace(*q, roles, true, false);
    kv.emplace(*k, roles, true, false);
    vv.emplace(*v, roles, false, true);
    if (bias)
      bv.emplace(*bias, roles, false, false);
  }
  /// scale * q . k + bias for row (g, m), over every key.
  std::vector<double> scores(int64_t g, int64_t m, double scale) const {
    std::vector<double> row(keys);
    for (int64_t n = 0; n < keys; ++n) {
      double dot = 0;
      for (int64_t d = 0; d < heads; ++d)
        dot += q->data[qv->group[g] + qv->query[m] + qv->head[d]] *
               k->data[kv->group[g] + kv->key[n] + kv->head[d]];
      row[n] = scale * dot;
      if (bias)
        row[n] += bias->data[bv->group[g] + bv->query[m] + bv->key[n]];
    }
    return row;
  }
};

double logSumExpOf(const std::vector<double> &row) {
  double top = -std::numeric_limits<double>::infinity();
  for (double x : row)
    top = std::max(top, x);
  if (std::isinf(top))
    return top;
  double sum = 0;
  for (double x : row)
    sum += std::exp(x - top);
  return top + std::log(sum);
}

} // namespace

/// result[g,m,e] = sum_n softmax_n(scale q.k + bias)[g,m,n] v[g,n,e];
/// logsumexp[g,m] = log sum_n exp(scores).
LogicalResult ProgramRun::attention(mtf::AttentionOp op) {
  FailureOr<mtf::AttentionRoles> roles = mtf::attentionRolesOf(op);
  FailureOr<Tensor> out = allocate(op, op.getResult().getType());
  FailureOr<Tensor> stats = allocate(op, op.getLogsumexp().getType());
  if (failed(roles) || failed(out) || failed(stats))
    return failure();
  AttentionRun run{*roles};
  run.q = &valueOf(op.getQuery());
  run.k = &valueOf(op.getKey());
  run.v = &valueOf(op.getValue());
  run.bias = op.getBias() ? &valueOf(op.getBias()) : nullptr;
  run.init();
  RoleView ov(*out, *roles, false, true), sv(*stats, *roles, false, false);
  double scale = op.getScale().convertToDouble();
  for (int64_t g = 0; g < run.groups; ++g)
    for (int64_t m = 0; m < run.queries; ++m) {
      std::vector<double> row = run.scores(g, m, scale);
      double lse = logSumExpOf(row);
      stats->data[sv.group[g] + sv.query[m]] = lse;
      for (int64_t e = 0; e < run.values; ++e) {
        // A row with no key (or every key masked with -inf) attends to
        // nothing: 0, as the kernels give (FlashAttention's convention).
        double sum = 0;
        for (int64_t n = 0; n < run.keys && !std::isinf(lse); ++n)
          sum +=
              std::exp(row[n] - lse) *
              run.v->data[run.vv->group[g] + run.vv->key[n] + run.vv->value[e]];
        out->data[ov.group[g] + ov.query[m] + ov.value[e]] = sum;
      }
    }
  if (failed(define(op.getResult(), std::move(out))))
    return failure();
  return define(op.getLogsumexp(), std::move(stats));
}

/// The gradients of query, key and value, from the probabilities
/// exp(scores - logsumexp): dv = p^T g, ds = p (g v^T - rowsum(g o)),
/// dq = scale ds k, dk = scale ds^T q.
LogicalResult ProgramRun::attentionGrad(mtf::AttentionGradOp op) {
  FailureOr<mtf::AttentionRoles> roles = mtf::attentionRolesOf(op);
  FailureOr<Tensor> dq = allocate(op, op.getQueryGrad().getType());
  FailureOr<Tensor> dk = allocate(op, op.getKeyGrad().getType());
  FailureOr<Tensor> dv = allocate(op, op.getValueGrad().getType());
  if (failed(roles) || failed(dq) || failed(dk) || failed(dv))
    return failure();
  AttentionRun run{*roles};
  run.q = &valueOf(op.getQuery());
  run.k = &valueOf(op.getKey());
  run.v = &valueOf(op.getValue());
  run.bias = op.getBias() ? &valueOf(op.getBias()) : nullptr;
  run.init();
  const Tensor &o = valueOf(op.getResult());
  const Tensor &stats = valueOf(op.getLogsumexp());
  const Tensor &g = valueOf(op.getGrad());
  RoleView ov(o, *roles, false, true), gv(g, *roles, false, true),
      sv(stats, *roles, false, false);
  RoleView dqv(*dq, *roles, true, false), dkv(*dk, *roles, true, false),
      dvv(*dv, *roles, false, true);
  for (Tensor *t : {&*dq, &*dk, &*dv})
    std::fill(t->data.begin(), t->data.end(), 0.0);
  double scale = op.getScale().convertToDouble();
  for (int64_t b = 0; b < run.groups; ++b)
    for (int64_t m = 0; m < run.queries; ++m) {
      std::vector<double> p = run.scores(b, m, scale);
      double lse = stats.data[sv.group[b] + sv.query[m]];
      if (std::isinf(lse) && lse < 0)
        continue; // attends to nothing: no gradient
      double rowDot = 0;
      for (int64_t e = 0; e < run.values; ++e)
        rowDot += g.data[gv.group[b] + gv.query[m] + gv.value[e]] *
                  o.data[ov.group[b] + ov.query[m] + ov.value[e]];
      for (int64_t n = 0; n < run.keys; ++n) {
        p[n] = std::exp(p[n] - lse);
        double dp = 0;
        for (int64_t e = 0; e < run.values; ++e) {
          double ge = g.data[gv.group[b] + gv.query[m] + gv.value[e]];
          dv->data[dvv.group[b] + dvv.key[n] + dvv.value[e]] += p[n] * ge;
          dp +=
              ge *
              run.v->data[run.vv->group[b] + run.vv->key[n] + run.vv->value[e]];
        }
        double ds = scale * p[n] * (dp - rowDot);
        for (int64_t d = 0; d < run.heads; ++d) {
          dq->data[dqv.group[b] + dqv.query[m] + dqv.head[d]] +=
              ds *
              run.k->data[run.kv->group[b] + run.kv->key[n] + run.kv->head[d]];
          dk->data[dkv.group[b] + dkv.key[n] + dkv.head[d]] +=
              ds *
              run.q
                  ->data[run.qv->group[b] + run.qv->query[m] + run.qv->head[d]];
        }
      }
    }
  if (failed(define(op.getQueryGrad(), std::move(dq))) ||
      failed(define(op.getKeyGrad(), std::move(dk))))
    return failure();
  return define(op.getValueGrad(), std::move(dv));
}

/// exp(x - max) / sum(exp(x - max)) along `dim`.
FailureOr<Tensor> ProgramRun::softmax(mtf::SoftmaxOp op) {
  const Tensor &input = valueOf(op.getInput());
  RowExpSums rows = rowExpSums(input, op.getDim());
  Tensor result = input;
  forEachIndex(input.shape, [&](const std::vector<int64_t> &index) {
    int64_t row = offsetAt(index, rows.rowStrides);
    int64_t at = offsetAt(index, rows.strides);
    result.data[at] =
        std::exp(input.data[at] - rows.max.data[row]) / rows.sum.data[row];
  });
  return result;
}

/// max + log(sum(exp(x - max))) along `dim`, per row.
FailureOr<Tensor> ProgramRun::logSumExp(mtf::LogSumExpOp op) {
  RowExpSums rows = rowExpSums(valueOf(op.getInput()), op.getDim());
  for (size_t row = 0; row < rows.sum.data.size(); ++row)
    rows.sum.data[row] = rows.max.data[row] + std::log(rows.sum.data[row]);
  return rows.sum;
}

/// logsumexp(logits) - logits[label] along the class dimension, per row.
FailureOr<Tensor> ProgramRun::crossEntropy(mtf::SoftmaxCrossEntropyOp op) {
  const Tensor &logits = valueOf(op.getLogits());
  const Tensor &labels = valueOf(op.getLabels());
  size_t classPos = llvm::find(logits.dims, op.getDim()) - logits.dims.begin();
  int64_t classes = logits.shape[classPos];
  if (std::optional<int64_t> bad = findElement(labels, [&](double label) {
        return label < 0 || label >= static_cast<double>(classes);
      }))
    return op.emitOpError()
           << "label " << formatNumber(labels.data[*bad]) << " at "
           << whereIs(labels, *bad) << " is outside [0, " << classes
           << ") of class dimension '" << op.getDim() << "'";

  FailureOr<Tensor> result = allocate(op, op.getType());
  if (failed(result))
    return failure();
  Tensor rowMax = *result, rowSum = *result, picked = *result;
  std::fill(rowMax.data.begin(), rowMax.data.end(),
            -std::numeric_limits<double>::infinity());
  std::vector<int64_t> strides = stridesAlong(logits, logits.dims);
  std::vector<int64_t> rowStrides = stridesAlong(*result, logits.dims);
  std::vector<int64_t> labelStrides = stridesAlong(labels, logits.dims);
  auto at = [&](const std::vector<int64_t> &index) {
    return logits.data[offsetAt(index, strides)];
  };
  forEachIndex(logits.shape, [&](const std::vector<int64_t> &index) {
    double &top = rowMax.data[offsetAt(index, rowStrides)];
    top = std::max(top, at(index));
  });
  forEachIndex(logits.shape, [&](const std::vector<int64_t> &index) {
    int64_t row = offsetAt(index, rowStrides);
    rowSum.data[row] += std::exp(at(index) - rowMax.data[row]);
    double label = labels.data[offsetAt(index, labelStrides)];
    if (static_cast<double>(index[classPos]) == label)
      picked.data[row] = at(index);
  });
  for (size_t row = 0; row < result->data.size(); ++row)
    result->data[row] =
        rowMax.data[row] + std::log(rowSum.data[row]) - picked.data[row];
  return result;
}

/// 1 where the result's `dim` coordinate equals the index, 0 elsewhere;
/// every index must lie in [0, size of `dim`).
FailureOr<Tensor> ProgramRun::oneHot(mtf::OneHotOp op) {
  const Tensor &indices = valueOf(op.getIndices());
  auto type = llvm::cast<mtf::TensorType>(op.getType());
  int64_t size = type.getDims()[*type.getDimIndex(op.getDim())].size;
  if (std::optional<int64_t> bad = findElement(indices, [&](double index) {
        return index < 0 || index >= static_cast<double>(size);
      }))
    return op.emitOpError()
           << "index " << formatNumber(indices.data[*bad]) << " at "
           << whereIs(indices, *bad) << " is outside [0, " << size
           << ") of dimension '" << op.getDim() << "'";

  FailureOr<Tensor> result = allocate(op, op.getType());
  if (failed(result))
    return failure();
  size_t pos = llvm::find(result->dims, op.getDim()) - result->dims.begin();
  std::vector<int64_t> indexStrides = stridesAlong(indices, result->dims);
  std::vector<int64_t> resultStrides = stridesAlong(*result, result->dims);
  forEachIndex(result->shape, [&](const std::vector<int64_t> &index) {
    double wanted = indices.data[offsetAt(index, indexStrides)];
    result->data[offsetAt(index, resultStrides)] =
        static_cast<double>(index[pos]) == wanted ? 1.0 : 0.0;
  });
  return result;
}

/// The coordinate along `dim` of the first maximum of each row, ignoring
/// NaN (never greater than anything); 0 for a row of NaNs only. The walk is
/// row-major, so each row is visited in increasing coordinate order.
FailureOr<Tensor> ProgramRun::argmax(mtf::ArgmaxOp op) {
  const Tensor &input = valueOf(op.getInput());
  FailureOr<Tensor> result = allocate(op, op.getType());
  if (failed(result))
    return failure();
  size_t pos = llvm::find(input.dims, op.getDim()) - input.dims.begin();
  std::vector<double> top(result->data.size(), 0.0);
  std::vector<bool> found(result->data.size(), false);
  std::vector<int64_t> strides = stridesAlong(input, input.dims);
  std::vector<int64_t> rowStrides = stridesAlong(*result, input.dims);
  forEachIndex(input.shape, [&](const std::vector<int64_t> &index) {
    double x = input.data[offsetAt(index, strides)];
    int64_t row = offsetAt(index, rowStrides);
    if (std::isnan(x) || (found[row] && !(x > top[row])))
      return;
    found[row] = true;
    top[row] = x;
    result->data[row] = static_cast<double>(index[pos]);
  });
  return result;
}

/// Element i is i.
FailureOr<Tensor> ProgramRun::range(mtf::RangeOp op) {
  FailureOr<Tensor> result = allocate(op, op.getType());
  if (failed(result))
    return failure();
  for (size_t i = 0; i < result->data.size(); ++i)
    result->data[i] = static_cast<double>(i);
  return result;
}

/// The running sum along `dim`, from coordinate 0 up (or, with `reverse`,
/// from the last coordinate down).
FailureOr<Tensor> ProgramRun::cumsum(mtf::CumsumOp op) {
  const Tensor &input = valueOf(op.getInput());
  Tensor result = input;
  Tensor running = withoutDim(input, op.getDim());
  size_t pos = llvm::find(input.dims, op.getDim()) - input.dims.begin();
  int64_t size = input.shape[pos];
  std::vector<int64_t> strides = stridesAlong(input, input.dims);
  std::vector<int64_t> rowStrides = stridesAlong(running, input.dims);
  forEachIndex(input.shape, [&](const std::vector<int64_t> &visited) {
    std::vector<int64_t> index = visited;
    if (op.getReverse())
      index[pos] = size - 1 - index[pos];
    double &sum = running.data[offsetAt(index, rowStrides)];
    sum += input.data[offsetAt(index, strides)];
    result.data[offsetAt(index, strides)] = sum;
  });
  return result;
}

/// result[.., j, ..] = input[.., j + offset, ..] along `from` -> `to`, 0
/// outside the input.
FailureOr<Tensor> ProgramRun::window(mtf::WindowOp op) {
  const Tensor &input = valueOf(op.getInput());
  FailureOr<Tensor> result = allocate(op, op.getType());
  if (failed(result))
    return failure();
  size_t pos = llvm::find(result->dims, op.getTo()) - result->dims.begin();
  int64_t size =
      input.shape[llvm::find(input.dims, op.getFrom()) - input.dims.begin()];
  // The input's strides with `from` standing where `to` is in the result.
  std::vector<std::string> inputDims = input.dims;
  *llvm::find(inputDims, op.getFrom()) = op.getTo().str();
  Tensor renamed;
  renamed.dims = inputDims;
  renamed.shape = input.shape;
  std::vector<int64_t> inputStrides = stridesAlong(renamed, result->dims);
  std::vector<int64_t> resultStrides = stridesAlong(*result, result->dims);
  int64_t offset = static_cast<int64_t>(op.getOffset());
  forEachIndex(result->shape, [&](const std::vector<int64_t> &index) {
    int64_t source = index[pos] + offset;
    double value = 0;
    if (source >= 0 && source < size) {
      std::vector<int64_t> at = index;
      at[pos] = source;
      value = input.data[offsetAt(at, inputStrides)];
    }
    result->data[offsetAt(index, resultStrides)] = value;
  });
  return result;
}

/// Per row along `dim`: 1 at the k largest (the first of equal ones; NaN
/// never before a number), else 0.
FailureOr<Tensor> ProgramRun::topK(mtf::TopKOp op) {
  const Tensor &input = valueOf(op.getInput());
  Tensor result = input;
  size_t pos = llvm::find(input.dims, op.getDim()) - input.dims.begin();
  int64_t size = input.shape[pos];
  int64_t k = static_cast<int64_t>(op.getK());
  std::vector<int64_t> strides = stridesAlong(input, input.dims);
  std::vector<int64_t> rowShape = input.shape;
  rowShape[pos] = 1;
  forEachIndex(rowShape, [&](const std::vector<int64_t> &row) {
    std::vector<int64_t> index = row;
    auto at = [&](int64_t c) {
      index[pos] = c;
      return offsetAt(index, strides);
    };
    for (int64_t c = 0; c < size; ++c) {
      double x = input.data[at(c)];
      // The rank of c: how many elements come before it in the order.
      int64_t before = 0;
      for (int64_t o = 0; o < size; ++o) {
        double y = input.data[at(o)];
        bool ahead = std::isnan(x)
                         ? (!std::isnan(y) || o < c)
                         : (!std::isnan(y) && (y > x || (y == x && o < c)));
        before += ahead ? 1 : 0;
      }
      result.data[at(c)] = before < k ? 1.0 : 0.0;
    }
  });
  return result;
}

LogicalResult checkGivenNames(mtf::ProgramOp program, const Options &options) {
  llvm::StringSet<> inputs, params;
  for (Operation &op : program.getBodyBlock()) {
    if (auto input = llvm::dyn_cast<mtf::InputOp>(op))
      inputs.insert(input.getName());
    else if (auto param = llvm::dyn_cast<mtf::ParamOp>(op))
      params.insert(param.getName());
  }
  for (const auto &entry : options.inputs)
    if (!inputs.contains(entry.first))
      return program.emitError() << "given input '" << entry.first
                                 << "' is not an input of the program";
  for (const auto &entry : options.params)
    if (!params.contains(entry.first))
      return program.emitError()
             << "given parameter '" << entry.first
             << "' is not a parameter or slot of the program";
  return success();
}

/// Every parameter and slot: its given value, else its initializer's.
FailureOr<ParamValues> initialParams(mtf::ProgramOp program,
                                     const Options &options) {
  ParamValues params;
  for (Operation &op : program.getBodyBlock()) {
    auto param = llvm::dyn_cast<mtf::ParamOp>(op);
    if (!param)
      continue;
    std::string name = param.getName().str();
    auto given = options.params.find(name);
    FailureOr<Tensor> tensor =
        given != options.params.end()
            ? checkGiven(param, "parameter", name, given->second)
            : allocate(param, param.getType());
    if (failed(tensor))
      return failure();
    if (given == options.params.end()) {
      std::vector<int64_t> origin(tensor->shape.size(), 0);
      std::vector<float> values(tensor->data.size());
      runtime::fillBlock(initSpecOf(param.getInit()), options.seed, name,
                         tensor->shape, origin, tensor->shape, values.data());
      tensor->data.assign(values.begin(), values.end());
    }
    params.emplace(name, std::move(*tensor));
  }
  return params;
}

} // namespace

FailureOr<Result> interpretRuns(mtf::ProgramOp program,
                                const Options &options) {
  if (program.getLocal())
    return program.emitOpError()
           << "is local (one device's part of an SPMD program); the reference "
              "interpreter runs global programs";
  if (failed(mlir::verify(program)))
    return failure();
  if (options.steps < 1)
    return program.emitOpError()
           << "needs at least one run, got steps = " << options.steps;
  if (failed(checkGivenNames(program, options)))
    return failure();
  FailureOr<ParamValues> params = initialParams(program, options);
  if (failed(params))
    return failure();

  Result result;
  result.params = std::move(*params);
  for (int64_t step = 0; step < options.steps; ++step) {
    ProgramRun run(program, options,
                   options.firstRun + static_cast<uint64_t>(step),
                   result.params);
    FailureOr<std::map<std::string, Tensor>> outputs = run.run();
    if (failed(outputs))
      return failure();
    result.outputs = std::move(*outputs);
    // Only now: every read in the run saw the values from its start.
    for (auto &entry : run.assignedParams())
      result.params[entry.first] = std::move(entry.second);
  }
  return result;
}

FailureOr<std::map<std::string, Tensor>> interpret(mtf::ProgramOp program,
                                                   const Options &options) {
  FailureOr<Result> result = interpretRuns(program, options);
  if (failed(result))
    return failure();
  return std::move(result->outputs);
}

} // namespace meshc::interp
