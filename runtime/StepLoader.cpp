//===- StepLoader.cpp - Reading and validating .mprog steps ---------------===//
//
// One parser per op kind over shared operand checks. Each step's contract:
//  - every dim of an operand has an entry in "sizes" (or is derived from one
//    by a collective's group size), and every entry of "sizes" is used;
//  - an operand fits its buffer: elements x dtype bytes <= buffer bytes;
//  - outputs never partially overlap inputs; elementwise steps may write in
//    place (same bytes, same dims);
//  - collectives and slice keep the dim order of `in` in `out`, and the dim
//    they cut is divisible by the group size.
//
//===----------------------------------------------------------------------===//

#include "runtime/StepLoader.h"

#include "runtime/EinsumPlan.h"
#include "runtime/Error.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace meshc::runtime {

DType parseDType(const JsonNode &node) {
  std::string name = node.string();
  if (name == "f32")
    return DType::F32;
  if (name == "i32")
    return DType::I32;
  if (layout::elementBytes(name) != 0)
    node.fail("dtype \"" + name +
              "\" is not supported by the cpu backend (supported: f32, i32)");
  node.fail("unknown dtype \"" + name + "\" (supported: f32, i32)");
}

int64_t checkedProduct(const JsonNode &node,
                       const std::vector<int64_t> &factors, int64_t scale) {
  int64_t product = scale;
  for (int64_t factor : factors)
    if (__builtin_mul_overflow(product, factor, &product))
      node.fail("sizes are too large: their product overflows 64 bits");
  return product;
}

layout::TensorLayout parseGlobalDims(const JsonNode &node,
                                     const std::string &name,
                                     const layout::Mesh &mesh,
                                     std::vector<layout::Dim> &dims) {
  std::vector<std::vector<std::string>> axes;
  dims.clear();
  for (const JsonNode &dim : node.elements()) {
    dims.push_back({dim.member("name").string(), dim.member("size").integer()});
    std::optional<JsonNode> dimAxes = dim.optionalMember("axes");
    axes.push_back(dimAxes ? dimAxes->strings() : std::vector<std::string>());
  }
  layout::Result<layout::TensorLayout> layout =
      layout::TensorLayout::fromAxes(name, dims, axes, mesh);
  if (!layout)
    node.fail(layout.error().message);
  return *layout;
}

namespace {

/// "'a', 'b'".
std::string quoted(const std::vector<std::string> &names) {
  std::string text;
  for (const std::string &name : names)
    text += (text.empty() ? "'" : ", '") + name + "'";
  return text;
}

/// Picks the enumerator spelled by `node` among `choices`.
template <typename Enum>
Enum choose(const JsonNode &node, const char *what,
            const std::vector<std::pair<const char *, Enum>> &choices) {
  std::string text = node.string();
  std::string known;
  for (const auto &[name, value] : choices) {
    if (text == name)
      return value;
    known += (known.empty() ? "" : ", ") + std::string(name);
  }
  node.fail("unknown " + std::string(what) + " \"" + text +
            "\" (known: " + known + ")");
}

/// Every op with its spelling.
std::vector<std::pair<const char *, OpKind>> allOps() {
  std::vector<std::pair<const char *, OpKind>> ops;
  for (int op = 0; op <= static_cast<int>(OpKind::Slice); ++op)
    ops.emplace_back(opName(static_cast<OpKind>(op)), static_cast<OpKind>(op));
  return ops;
}

const std::vector<std::pair<const char *, Reduction>> kReductions = {
    {"sum", Reduction::Sum}, {"max", Reduction::Max}};

using SizeOverrides = std::map<std::string, int64_t>;

/// Parses one step.
class StepParser {
public:
  StepParser(const JsonNode &node, Program &program,
             const std::map<int64_t, size_t> &bufferIndex)
      : node(node), program(program), bufferIndex(bufferIndex) {}

  Step parse(size_t index);

private:
  const Buffer &bufferOf(const Operand &operand) const {
    return program.buffers[operand.buffer];
  }
  std::string bufferName(const Operand &operand) const {
    return "buffer " + std::to_string(bufferOf(operand).id);
  }
  int64_t bytesOf(const Operand &operand) const {
    return operand.shape.elements() * dtypeBytes(bufferOf(operand).dtype);
  }

  size_t bufferRef(const JsonNode &ref) const {
    int64_t id = ref.integer();
    auto found = bufferIndex.find(id);
    if (found == bufferIndex.end())
      ref.fail("buffer " + std::to_string(id) + " is not declared");
    return found->second;
  }

  /// A whole buffer, as fill, copy, unary, cast and all_reduce see it.
  Operand flat(const std::string &key) const {
    Operand operand;
    operand.buffer = bufferRef(node.member(key));
    operand.shape.sizes = {bufferOf(operand).elements};
    return operand;
  }

  void readSizes() {
    sizesNode = node.member("sizes");
    for (const auto &[name, size] : sizesNode->members())
      sizes[name] = size.integerAtLeast(0);
  }

  Operand operand(const std::string &key, const SizeOverrides &overrides = {}) {
    return operandAt(node.member(key), overrides);
  }

  Operand operandAt(const JsonNode &at, const SizeOverrides &overrides = {}) {
    Operand operand;
    operand.buffer = bufferRef(at.member("buf"));
    JsonNode dims = at.member("dims");
    std::vector<JsonNode> names = dims.elements();
    if (names.size() > kMaxRank)
      dims.fail("operand has " + std::to_string(names.size()) +
                " dims; the runtime supports at most " +
                std::to_string(kMaxRank));
    for (const JsonNode &nameNode : names) {
      std::string name = nameNode.string();
      if (operand.shape.has(name))
        nameNode.fail("dim '" + name + "' appears twice");
      auto override = overrides.find(name);
      auto size = sizes.find(name);
      if (size == sizes.end())
        nameNode.fail("dim '" + name + "' has no entry in \"sizes\"");
      used.insert(name);
      operand.shape.names.push_back(name);
      operand.shape.sizes.push_back(
          override != overrides.end() ? override->second : size->second);
    }
    int64_t bytes = checkedProduct(at, operand.shape.sizes,
                                   dtypeBytes(bufferOf(operand).dtype));
    if (bytes > bufferOf(operand).bytes)
      at.fail("operand " + operand.shape.str() + " needs " +
              std::to_string(bytes) + " bytes but " + bufferName(operand) +
              " has " + std::to_string(bufferOf(operand).bytes));
    return operand;
  }

  void requireDType(const std::string &key, const Operand &operand,
                    DType dtype) const {
    if (bufferOf(operand).dtype != dtype)
      node.member(key).fail(std::string(opName(step.op)) + " needs " +
                            dtypeName(dtype) + " here but " +
                            bufferName(operand) + " is " +
                            dtypeName(bufferOf(operand).dtype));
  }

  void requireSameCount(const Operand &in, const Operand &out) const {
    if (in.shape.elements() != out.shape.elements())
      node.fail(std::string(opName(step.op)) + " needs buffers of the same " +
                "element count: " + bufferName(in) + " has " +
                std::to_string(in.shape.elements()) + ", " + bufferName(out) +
                " has " + std::to_string(out.shape.elements()));
  }

  /// Every dim of `part` is a dim of `whole`.
  void requireSubset(const std::string &key, const Operand &part,
                     const std::string &wholeKey, const Operand &whole) const {
    for (const std::string &name : part.shape.names)
      if (!whole.shape.has(name))
        node.member(key).fail("dim '" + name + "' is not a dim of " + wholeKey +
                              " " + whole.shape.str());
  }

  /// `a` and `b` have the same dims, in any order.
  void requireSameSet(const std::string &key, const Operand &a,
                      const std::string &otherKey, const Operand &b) const {
    requireSubset(key, a, otherKey, b);
    requireSubset(otherKey, b, key, a);
  }

  /// `out` has the dims of `in` in the same order.
  void requireSameOrder(const Operand &in, const Operand &out) const {
    if (in.shape.names != out.shape.names)
      node.member("out").fail("dims [" + quoted(out.shape.names) +
                              "] differ from in dims [" +
                              quoted(in.shape.names) + "]; " + opName(step.op) +
                              " keeps the dim order");
  }

  bool overlaps(const Operand &a, const Operand &b) const {
    int64_t aBegin = bufferOf(a).offset, bBegin = bufferOf(b).offset;
    int64_t aEnd = aBegin + bytesOf(a), bEnd = bBegin + bytesOf(b);
    return aBegin < bEnd && bBegin < aEnd && aEnd > aBegin && bEnd > bBegin;
  }

  /// `out` shares no byte with `in`, or (when `inPlace`) is exactly `in`.
  void requireNoOverlap(const Operand &in, const Operand &out,
                        bool inPlace = false) const {
    if (!overlaps(in, out))
      return;
    if (inPlace && bufferOf(in).offset == bufferOf(out).offset &&
        in.shape.names == out.shape.names)
      return;
    node.member("out").fail(
        bufferName(out) + " [" + std::to_string(bufferOf(out).offset) + ", " +
        std::to_string(bufferOf(out).offset + bytesOf(out)) + ") overlaps " +
        bufferName(in) + " [" + std::to_string(bufferOf(in).offset) + ", " +
        std::to_string(bufferOf(in).offset + bytesOf(in)) + ") that " +
        opName(step.op) + " reads" +
        (inPlace ? " (only an exact in-place update is allowed)" : ""));
  }

  /// The "dim"-like member `key`, which must be a dim of `operand`.
  std::string dimOf(const std::string &key, const Operand &operand,
                    const std::string &operandKey) const {
    JsonNode dim = node.member(key);
    std::string name = dim.string();
    if (!operand.shape.has(name))
      dim.fail("'" + name + "' is not a dim of " + operandKey + " " +
               operand.shape.str());
    return name;
  }

  /// Reads "axes" into step.group; returns the group size.
  int64_t readAxes() {
    JsonNode axesNode = node.member("axes");
    std::vector<std::string> axes;
    int64_t size = 1;
    for (const JsonNode &axis : axesNode.elements()) {
      std::string name = axis.string();
      std::optional<size_t> index = program.mesh.axisIndex(name);
      if (!index)
        axis.fail("'" + name + "' is not a mesh axis (mesh axes: " +
                  quoted(program.mesh.axisNames()) + ")");
      if (std::find(axes.begin(), axes.end(), name) != axes.end())
        axis.fail("mesh axis '" + name + "' is listed twice");
      axes.push_back(name);
      size *= program.mesh.axisSize(*index);
    }
    auto found =
        std::find(program.groupAxes.begin(), program.groupAxes.end(), axes);
    step.group = found - program.groupAxes.begin();
    if (found == program.groupAxes.end())
      program.groupAxes.push_back(axes);
    return size;
  }

  /// sizes[dim] divided by the group size `groupSize`.
  int64_t sizeOverGroup(const std::string &dim, int64_t groupSize) const {
    int64_t size = sizes.at(dim);
    if (size % groupSize != 0)
      sizesNode->member(dim).fail(
          "size " + std::to_string(size) + " of dim '" + dim +
          "' is not divisible by the group size " + std::to_string(groupSize));
    return size / groupSize;
  }

  void parseElementwise();
  void parseEinsum();
  void parseBinaryLike();
  void parseClassIndex();
  void parseDropout();
  void parseWindow();
  void parseCollective();

  /// `operand` without dim `dim`.
  static Operand without(Operand operand, const std::string &dim) {
    int pos = operand.shape.position(dim);
    operand.shape.sizes.erase(operand.shape.sizes.begin() + pos);
    operand.shape.names.erase(operand.shape.names.begin() + pos);
    return operand;
  }

  const JsonNode &node;
  Program &program;
  const std::map<int64_t, size_t> &bufferIndex;
  Step step;
  std::optional<JsonNode> sizesNode;
  std::map<std::string, int64_t> sizes;
  std::set<std::string> used;
};

Step StepParser::parse(size_t index) {
  step.index = index;
  step.op = choose(node.member("op"), "op", allOps());
  if (std::optional<JsonNode> phase = node.optionalMember("phase"))
    step.phase = choose<Phase>(*phase, "phase",
                               {{"forward", Phase::Forward},
                                {"backward", Phase::Backward},
                                {"update", Phase::Update}});
  switch (step.op) {
  case OpKind::Fill:
  case OpKind::Copy:
  case OpKind::Unary:
  case OpKind::Cast:
    parseElementwise();
    break;
  case OpKind::Einsum:
    parseEinsum();
    break;
  case OpKind::Binary:
  case OpKind::Reduce:
  case OpKind::Softmax:
  case OpKind::Cumsum:
  case OpKind::TopK:
  case OpKind::SoftmaxCrossEntropy:
    parseBinaryLike();
    break;
  case OpKind::OneHot:
  case OpKind::Argmax:
    parseClassIndex();
    break;
  case OpKind::Dropout:
    parseDropout();
    break;
  case OpKind::Window:
    parseWindow();
    break;
  case OpKind::Range:
    readSizes();
    step.out = operand("out");
    if (step.out.shape.names.size() != 1)
      node.member("out").fail("range needs a one-dim out, got " +
                              step.out.shape.str());
    break;
  default:
    parseCollective();
    break;
  }
  if (sizesNode)
    for (const auto &[name, size] : sizesNode->members())
      if (!used.count(name))
        size.fail("dim '" + name + "' is not a dim of any operand");
  return step;
}

void StepParser::parseElementwise() {
  step.out = flat("out");
  Operand &out = step.out;
  if (step.op == OpKind::Fill) {
    JsonNode value = node.member("value");
    step.value = value.number();
    if (bufferOf(out).dtype == DType::I32 &&
        (step.value != std::trunc(step.value) || std::abs(step.value) > 2e9))
      value.fail("value " + value.json().dump() + " is not an i32 but " +
                 bufferName(out) + " is i32");
    return;
  }
  step.in = {flat("in")};
  const Operand &in = step.in[0];
  if (step.op == OpKind::Copy) {
    if (bytesOf(in) != bytesOf(out))
      node.fail("copy needs buffers of the same size: " + bufferName(in) +
                " holds " + std::to_string(bytesOf(in)) + " bytes, " +
                bufferName(out) + " holds " + std::to_string(bytesOf(out)));
    return;
  }
  requireSameCount(in, out);
  requireNoOverlap(in, out, /*inPlace=*/true);
  if (step.op == OpKind::Cast) {
    JsonNode from = node.member("from"), to = node.member("to");
    if (parseDType(from) != bufferOf(in).dtype)
      from.fail("cast from " + from.string() + " but " + bufferName(in) +
                " is " + dtypeName(bufferOf(in).dtype));
    if (parseDType(to) != bufferOf(out).dtype)
      to.fail("cast to " + to.string() + " but " + bufferName(out) + " is " +
              dtypeName(bufferOf(out).dtype));
    return;
  }
  step.unary = choose<UnaryFn>(node.member("fn"), "unary fn",
                               {{"relu", UnaryFn::Relu},
                                {"gelu", UnaryFn::Gelu},
                                {"exp", UnaryFn::Exp},
                                {"log", UnaryFn::Log},
                                {"tanh", UnaryFn::Tanh},
                                {"sqrt", UnaryFn::Sqrt},
                                {"rsqrt", UnaryFn::Rsqrt},
                                {"negate", UnaryFn::Negate},
                                {"scale", UnaryFn::Scale},
                                {"positive", UnaryFn::Positive},
                                {"gelu_grad", UnaryFn::GeluGrad}});
  requireDType("in", in, DType::F32);
  requireDType("out", out, DType::F32);
  if (step.unary == UnaryFn::Scale)
    step.value = node.member("value").number();
}

void StepParser::parseEinsum() {
  readSizes();
  JsonNode inputs = node.member("in");
  for (const JsonNode &input : inputs.elements())
    step.in.push_back(operandAt(input));
  if (step.in.empty())
    inputs.fail("einsum needs at least one operand");
  step.out = operand("out");
  requireDType("out", step.out, DType::F32);
  std::vector<PlannedTensor> planned;
  for (size_t i = 0; i < step.in.size(); ++i) {
    if (bufferOf(step.in[i]).dtype != DType::F32)
      inputs.elements()[i].fail("einsum needs f32 operands but " +
                                bufferName(step.in[i]) + " is i32");
    requireNoOverlap(step.in[i], step.out);
    planned.push_back({false, bufferOf(step.in[i]).offset, step.in[i].shape});
  }
  for (const std::string &name : step.out.shape.names)
    if (std::none_of(step.in.begin(), step.in.end(),
                     [&](const Operand &in) { return in.shape.has(name); }))
      node.member("out").fail("dim '" + name + "' is in no einsum operand");
  step.einsum =
      planEinsum(planned, {false, bufferOf(step.out).offset, step.out.shape});
  step.scratchBytes = step.einsum.scratchBytes;
}

void StepParser::parseBinaryLike() {
  readSizes();
  Operand &out = step.out;
  switch (step.op) {
  case OpKind::Binary:
    step.binary = choose<BinaryFn>(node.member("fn"), "binary fn",
                                   {{"add", BinaryFn::Add},
                                    {"sub", BinaryFn::Sub},
                                    {"mul", BinaryFn::Mul},
                                    {"div", BinaryFn::Div},
                                    {"max", BinaryFn::Max},
                                    {"min", BinaryFn::Min},
                                    {"eq", BinaryFn::Eq},
                                    {"lt", BinaryFn::Lt}});
    step.in = {operand("lhs"), operand("rhs")};
    out = operand("out");
    if (step.binary == BinaryFn::Eq || step.binary == BinaryFn::Lt) {
      // eq and lt compare two f32 or two i32 operands.
      DType lhs = bufferOf(step.in[0]).dtype, rhs = bufferOf(step.in[1]).dtype;
      if (lhs != rhs)
        node.member("rhs").fail(
            std::string(step.binary == BinaryFn::Eq ? "eq" : "lt") +
            " compares operands of one dtype but " + bufferName(step.in[0]) +
            " is " + dtypeName(lhs) + " and " + bufferName(step.in[1]) +
            " is " + dtypeName(rhs));
    } else {
      requireDType("lhs", step.in[0], DType::F32);
      requireDType("rhs", step.in[1], DType::F32);
    }
    requireSubset("lhs", step.in[0], "out", out);
    requireSubset("rhs", step.in[1], "out", out);
    requireNoOverlap(step.in[0], out, /*inPlace=*/true);
    requireNoOverlap(step.in[1], out, /*inPlace=*/true);
    break;
  case OpKind::Reduce:
    step.reduction = choose(node.member("fn"), "reduce fn", kReductions);
    step.in = {operand("in")};
    out = operand("out");
    requireDType("in", step.in[0], DType::F32);
    requireSubset("out", out, "in", step.in[0]);
    requireNoOverlap(step.in[0], out);
    break;
  case OpKind::Softmax:
  case OpKind::Cumsum:
  case OpKind::TopK:
    step.in = {operand("in")};
    out = operand("out");
    requireDType("in", step.in[0], DType::F32);
    step.dim = dimOf("dim", step.in[0], "in");
    requireSameSet("in", step.in[0], "out", out);
    requireNoOverlap(step.in[0], out, /*inPlace=*/step.op == OpKind::Softmax);
    if (step.op == OpKind::Cumsum)
      if (std::optional<JsonNode> reverse = node.optionalMember("reverse"))
        step.reverse = reverse->boolean();
    if (step.op == OpKind::TopK) {
      JsonNode k = node.member("k");
      int64_t size =
          step.in[0].shape.sizes[step.in[0].shape.position(step.dim)];
      step.k = k.integer();
      if (step.k < 1 || step.k > size)
        k.fail("k " + std::to_string(step.k) + " is outside [1, " +
               std::to_string(size) + "] (the size of '" + step.dim + "')");
    }
    break;
  default: {
    step.in = {operand("logits"), operand("labels")};
    out = operand("out");
    requireDType("logits", step.in[0], DType::F32);
    requireDType("labels", step.in[1], DType::I32);
    step.dim = dimOf("dim", step.in[0], "logits");
    if (step.in[1].shape.has(step.dim))
      node.member("labels").fail("labels must not have the class dim '" +
                                 step.dim + "'");
    if (out.shape.has(step.dim))
      node.member("out").fail("out must not have the class dim '" + step.dim +
                              "'");
    Operand rows = without(step.in[0], step.dim);
    requireSameSet("labels", step.in[1], "logits without '" + step.dim + "'",
                   rows);
    requireSameSet("out", out, "logits without '" + step.dim + "'", rows);
    requireNoOverlap(step.in[0], out);
    requireNoOverlap(step.in[1], out);
    break;
  }
  }
  requireDType("out", out, DType::F32);
}

void StepParser::parseClassIndex() {
  readSizes();
  step.in = {operand("in")};
  step.out = operand("out");
  const Operand &in = step.in[0];
  const Operand &out = step.out;
  if (step.op == OpKind::OneHot) {
    requireDType("in", in, DType::I32);
    requireDType("out", out, DType::F32);
    step.dim = dimOf("dim", out, "out");
    if (in.shape.has(step.dim))
      node.member("in").fail("in must not have the class dim '" + step.dim +
                             "'");
    requireSameSet("in", in, "out without '" + step.dim + "'",
                   without(out, step.dim));
  } else {
    requireDType("in", in, DType::F32);
    requireDType("out", out, DType::I32);
    step.dim = dimOf("dim", in, "in");
    if (out.shape.has(step.dim))
      node.member("out").fail("out must not have the class dim '" + step.dim +
                              "'");
    requireSameSet("out", out, "in without '" + step.dim + "'",
                   without(in, step.dim));
  }
  requireNoOverlap(in, out);
}

void StepParser::parseWindow() {
  readSizes();
  step.in = {operand("in")};
  step.out = operand("out");
  const Operand &in = step.in[0], &out = step.out;
  requireDType("in", in, DType::F32);
  requireDType("out", out, DType::F32);
  step.dim = dimOf("from", in, "in");
  step.toDim = dimOf("to", out, "out");
  if (step.toDim != step.dim && in.shape.has(step.toDim))
    node.member("to").fail("in already has dim '" + step.toDim + "'");
  requireSameSet("in", without(in, step.dim), "out", without(out, step.toDim));
  step.offset = node.member("offset").integer();
  requireNoOverlap(in, out);
}

void StepParser::parseDropout() {
  readSizes();
  step.out = operand("out");
  const Operand &out = step.out;
  requireDType("out", out, DType::F32);
  JsonNode name = node.member("name");
  step.dropoutName = name.string();
  if (step.dropoutName.empty())
    name.fail("dropout name is empty");
  JsonNode rate = node.member("rate");
  step.dropoutRate = rate.number();
  if (!(step.dropoutRate >= 0 && step.dropoutRate < 1))
    rate.fail("dropout rate " + rate.json().dump() + " is outside [0, 1)");
  JsonNode dims = node.member("dims");
  step.dropoutLayout =
      parseGlobalDims(dims, step.dropoutName, program.mesh, step.dropoutDims);
  std::vector<std::string> names;
  for (const layout::Dim &dim : step.dropoutDims)
    names.push_back(dim.name);
  if (names != out.shape.names)
    node.member("out").fail("dims [" + quoted(out.shape.names) +
                            "] differ from the dropout dims [" + quoted(names) +
                            "]; out is this device's block of them, in order");
  std::vector<int64_t> block =
      step.dropoutLayout.sliceShape(step.dropoutDims, program.mesh);
  for (size_t d = 0; d < block.size(); ++d)
    if (out.shape.sizes[d] != block[d])
      sizesNode->member(names[d]).fail(
          "size " + std::to_string(out.shape.sizes[d]) + " of dim '" +
          names[d] + "' is not its block of the dropout dims (" +
          std::to_string(step.dropoutDims[d].size) + " in " +
          std::to_string(step.dropoutLayout.shardCount(d, program.mesh)) +
          " blocks of " + std::to_string(block[d]) + ")");
}

void StepParser::parseCollective() {
  int64_t groupSize = readAxes();
  if (step.op == OpKind::AllReduce) {
    step.out = flat("buf");
    step.reduction = choose(node.member("reduction"), "reduction", kReductions);
    return;
  }
  readSizes();
  if (step.op == OpKind::AllGather) {
    step.out = operand("out");
    step.dim = dimOf("dim", step.out, "out");
    step.in = {operand("in", {{step.dim, sizeOverGroup(step.dim, groupSize)}})};
    int64_t outer = 1;
    for (int d = 0; d < step.out.shape.position(step.dim); ++d)
      outer *= step.out.shape.sizes[d];
    step.scratchBytes = outer == 1 ? 0 : bytesOf(step.out);
  } else {
    step.in = {operand("in")};
    const Operand &in = step.in[0];
    SizeOverrides outSizes;
    if (step.op == OpKind::AllToAll) {
      step.dim = dimOf("split_dim", in, "in");
      step.concatDim = dimOf("concat_dim", in, "in");
      if (step.dim == step.concatDim)
        node.member("concat_dim")
            .fail("split_dim and concat_dim are both '" + step.dim + "'");
      outSizes[step.dim] = sizeOverGroup(step.dim, groupSize);
      outSizes[step.concatDim] = checkedProduct(
          node.member("concat_dim"), {sizes.at(step.concatDim)}, groupSize);
      step.scratchBytes = 2 * bytesOf(in);
    } else {
      step.dim = dimOf("dim", in, "in");
      outSizes[step.dim] = sizeOverGroup(step.dim, groupSize);
      if (step.op == OpKind::ReduceScatter) {
        step.reduction =
            choose(node.member("reduction"), "reduction", kReductions);
        step.scratchBytes = bytesOf(in);
      }
    }
    step.out = operand("out", outSizes);
  }
  requireSameOrder(step.in[0], step.out);
  if (bufferOf(step.in[0]).dtype != bufferOf(step.out).dtype)
    node.member("out").fail(bufferName(step.out) + " is " +
                            dtypeName(bufferOf(step.out).dtype) + " but " +
                            bufferName(step.in[0]) + " is " +
                            dtypeName(bufferOf(step.in[0]).dtype));
  requireNoOverlap(step.in[0], step.out);
}

} // namespace

Step parseStep(const JsonNode &node, size_t index, Program &program,
               const std::map<int64_t, size_t> &bufferIndex) {
  return StepParser(node, program, bufferIndex).parse(index);
}

} // namespace meshc::runtime
