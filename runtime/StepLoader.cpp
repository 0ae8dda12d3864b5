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
  if (name == "bf16")
    return DType::BF16;
  if (name == "f16")
    return DType::F16;
  node.fail("unknown dtype \"" + name + "\" (supported: f32, i32, bf16, f16)");
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
                                     std::vector<layout::Dim> &dims,
                                     layout::TensorLayout::BlockLists &blocks) {
  std::vector<std::vector<std::string>> axes;
  std::vector<std::optional<JsonNode>> lists;
  dims.clear();
  blocks.clear();
  for (const JsonNode &dim : node.elements()) {
    dims.push_back({dim.member("name").string(), dim.member("size").integer()});
    std::optional<JsonNode> dimAxes = dim.optionalMember("axes");
    axes.push_back(dimAxes ? dimAxes->strings() : std::vector<std::string>());
    lists.push_back(dim.optionalMember("blocks"));
  }
  // Listed blocks may cut a size their axes do not divide; the others may
  // not (checked below, after the axes).
  layout::AxisWeights listed = layout::AxisWeights::even(mesh);
  listed.allowIndivisible();
  layout::Result<layout::TensorLayout> layout =
      layout::TensorLayout::fromAxes(name, dims, axes, mesh, &listed);
  if (!layout)
    node.fail(layout.error().message);
  for (size_t d = 0; d < dims.size(); ++d) {
    int64_t shards = layout->shardCount(d, mesh);
    blocks.emplace_back();
    if (!lists[d]) {
      if (dims[d].size % shards != 0)
        node.fail(layout::TensorLayout::fromAxes(name, dims, axes, mesh)
                      .error()
                      .message);
      continue;
    }
    blocks.back() = parseBlockList(*lists[d], dims[d], shards, name);
  }
  return *layout;
}

std::vector<int64_t> parseBlockList(const JsonNode &node,
                                    const layout::Dim &dim, int64_t shards,
                                    const std::string &name) {
  std::vector<int64_t> blocks;
  int64_t total = 0;
  for (const JsonNode &block : node.elements()) {
    blocks.push_back(block.integerAtLeast(0));
    if (__builtin_add_overflow(total, blocks.back(), &total))
      block.fail("the blocks' sum overflows 64 bits");
  }
  if (static_cast<int64_t>(blocks.size()) != shards || total != dim.size)
    node.fail("dim '" + dim.name + "' of " + name + " has " +
              std::to_string(blocks.size()) + " blocks summing to " +
              std::to_string(total) + "; its split needs " +
              std::to_string(shards) + " summing to its size " +
              std::to_string(dim.size));
  return blocks;
}

std::vector<int64_t>
programBlock(const Program &program, const std::vector<layout::Dim> &dims,
             const layout::TensorLayout &layout,
             const layout::TensorLayout::BlockLists &blocks) {
  return program.device < 0
             ? layout.maxBlockShape(dims, program.mesh, blocks)
             : layout.blockShape(dims, program.mesh, blocks, program.device);
}

namespace {

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

/// The kind spelled by the "op" member `node`.
OpKind parseOpKind(const JsonNode &node) {
  std::string text = node.string();
  if (std::optional<OpKind> kind = opKindNamed(text))
    return *kind;
  std::string known;
  for (size_t kind = 0; kind < kStepKindCount; ++kind)
    known += (known.empty() ? "" : ", ") +
             std::string(opName(static_cast<OpKind>(kind)));
  node.fail("unknown op \"" + text + "\" (known: " + known + ")");
}

const std::vector<std::pair<const char *, UnaryFn>> kUnaryFns = {
#define MESHC_UNARY_FN(Fn, Spelling) {Spelling, UnaryFn::Fn},
#include "runtime/core/ElementFunctions.def"
};

const std::vector<std::pair<const char *, BinaryFn>> kBinaryFns = {
#define MESHC_BINARY_FN(Fn, Spelling) {Spelling, BinaryFn::Fn},
#include "runtime/core/ElementFunctions.def"
};

const std::vector<std::pair<const char *, Reduction>> kReductions = {
    {"sum", Reduction::Sum}, {"max", Reduction::Max}};

using SizeOverrides = std::map<std::string, int64_t>;

/// Parses one step.
class StepParser {
public:
  /// `parentAxes`: parsing a part of a combined collective ("parts"),
  /// whose group is its parent step's.
  StepParser(const JsonNode &node, Program &program,
             const std::map<int64_t, size_t> &bufferIndex,
             const LoopReach &reach,
             const std::vector<std::string> *parentAxes = nullptr)
      : node(node), program(program), bufferIndex(bufferIndex), reach(reach),
        parentAxes(parentAxes) {}

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

  /// `operand`'s buffer holds `dtype`; F32 stands for any float type
  /// (f32, bf16, f16: kernels see the 16-bit ones widened to f32).
  void requireDType(const std::string &key, const Operand &operand,
                    DType dtype) const {
    DType actual = bufferOf(operand).dtype;
    if (dtype == DType::F32 ? !isFloat(actual) : actual != dtype)
      node.member(key).fail(std::string(opName(kind)) + " needs " +
                            (dtype == DType::F32 ? "a float type (f32, bf16, "
                                                   "f16)"
                                                 : dtypeName(dtype)) +
                            " here but " + bufferName(operand) + " is " +
                            dtypeName(actual));
  }

  void requireSameCount(const Operand &in, const Operand &out) const {
    if (in.shape.elements() != out.shape.elements())
      node.fail(std::string(opName(kind)) + " needs buffers of the same " +
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
                              quoted(in.shape.names) + "]; " + opName(kind) +
                              " keeps the dim order");
  }

  /// How far the enclosing loops move `operand`'s buffer.
  int64_t reachOf(const Operand &operand) const {
    return reach.empty() ? 0 : reach[operand.buffer];
  }

  /// Whether `a` and `b` may share a byte in some iteration of the
  /// enclosing loops (a moved buffer counts every place it moves to).
  bool overlaps(const Operand &a, const Operand &b) const {
    int64_t aBegin = bufferOf(a).offset, bBegin = bufferOf(b).offset;
    int64_t aEnd = aBegin + bytesOf(a), bEnd = bBegin + bytesOf(b);
    if (aEnd == aBegin || bEnd == bBegin)
      return false;
    return aBegin < bEnd + reachOf(b) && bBegin < aEnd + reachOf(a);
  }

  /// `out` shares no byte with `in`, or (when `inPlace`) is exactly `in`.
  void requireNoOverlap(const Operand &in, const Operand &out,
                        bool inPlace = false) const {
    if (!overlaps(in, out))
      return;
    if (inPlace && bufferOf(in).offset == bufferOf(out).offset &&
        in.shape.names == out.shape.names)
      return;
    std::string moved;
    for (const Operand *operand : {&in, &out})
      if (reachOf(*operand) > 0 && moved.empty())
        moved = " (a loop moves " + bufferName(*operand) + " up to " +
                std::to_string(reachOf(*operand)) + " bytes further)";
    node.member("out").fail(
        bufferName(out) + " [" + std::to_string(bufferOf(out).offset) + ", " +
        std::to_string(bufferOf(out).offset + bytesOf(out)) + ") overlaps " +
        bufferName(in) + " [" + std::to_string(bufferOf(in).offset) + ", " +
        std::to_string(bufferOf(in).offset + bytesOf(in)) + ") that " +
        opName(kind) + " reads" +
        (inPlace ? " (only an exact in-place update is allowed)" : "") + moved);
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

  /// Reads "axes" into `attrs`; returns the group size.
  int64_t readAxes(GroupAttrs &attrs) {
    std::vector<std::string> axes;
    int64_t size = 1;
    if (parentAxes) {
      for (const std::string &name : *parentAxes)
        size *= program.mesh.axisSize(*program.mesh.axisIndex(name));
      groupAxes = *parentAxes;
      attrs.group = std::find(program.groupAxes.begin(),
                              program.groupAxes.end(), *parentAxes) -
                    program.groupAxes.begin();
      return size;
    }
    JsonNode axesNode = node.member("axes");
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
    groupAxes = axes;
    auto found =
        std::find(program.groupAxes.begin(), program.groupAxes.end(), axes);
    attrs.group = found - program.groupAxes.begin();
    if (found == program.groupAxes.end())
      program.groupAxes.push_back(axes);
    return size;
  }

  /// The member `key` of a collective over `groupSize` devices (read by
  /// readAxes) that cuts or joins dim `dim`, whose joined size is `joined`:
  /// each member's block in rank order, or empty when the step has none
  /// (equal blocks). `own` becomes this device's block; in the program of
  /// the largest blocks (device -1) the largest, and the blocks are not
  /// checked to add up, each being the largest of any group.
  std::vector<int64_t> readBlocks(const char *key, const std::string &dim,
                                  int64_t groupSize, int64_t joined,
                                  int64_t &own) const {
    std::optional<JsonNode> listNode = node.optionalMember(key);
    if (!listNode)
      return {};
    std::vector<int64_t> blocks;
    for (const JsonNode &block : listNode->elements())
      blocks.push_back(block.integerAtLeast(0));
    if (static_cast<int64_t>(blocks.size()) != groupSize)
      listNode->fail("lists " + std::to_string(blocks.size()) +
                     " blocks of dim '" + dim + "', but the group over [" +
                     quoted(groupAxes) + "] has " + std::to_string(groupSize) +
                     " members");
    if (program.device < 0) {
      own = *std::max_element(blocks.begin(), blocks.end());
      return blocks;
    }
    std::vector<int64_t> coords = program.mesh.coordinates(program.device);
    int64_t rank = 0;
    for (const std::string &axis : groupAxes) {
      size_t position = *program.mesh.axisIndex(axis);
      rank = rank * program.mesh.axisSize(position) + coords[position];
    }
    own = blocks[size_t(rank)];
    int64_t sum = 0;
    for (int64_t block : blocks)
      if (__builtin_add_overflow(sum, block, &sum))
        listNode->fail("the blocks of dim '" + dim +
                       "' add up to more than a 64-bit integer holds");
    if (sum != joined)
      listNode->fail("the blocks of dim '" + dim + "' add up to " +
                     std::to_string(sum) + ", but its joined size is " +
                     std::to_string(joined));
    return blocks;
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

  // One parser per kind, chosen by the type of its attributes (a kind of
  // StepKinds.def without one does not compile).
  void parseAttrs(FillAttrs &attrs);
  void parseAttrs(CopyAttrs &attrs);
  void parseAttrs(EinsumAttrs &attrs);
  void parseAttrs(UnaryAttrs &attrs);
  void parseAttrs(CastAttrs &attrs);
  void parseAttrs(BinaryAttrs &attrs);
  void parseAttrs(ReduceAttrs &attrs);
  void parseAttrs(SoftmaxAttrs &attrs);
  void parseAttrs(SoftmaxCrossEntropyAttrs &attrs);
  void parseAttrs(OneHotAttrs &attrs);
  void parseAttrs(ArgmaxAttrs &attrs);
  void parseAttrs(LogSumExpAttrs &attrs);
  void parseAttrs(DropoutAttrs &attrs);
  void parseAttrs(RangeAttrs &attrs);
  void parseAttrs(CumsumAttrs &attrs);
  void parseAttrs(WindowAttrs &attrs);
  void parseAttrs(TopKAttrs &attrs);
  void parseAttrs(AllReduceAttrs &attrs);
  void parseAttrs(AllGatherAttrs &attrs);
  void parseAttrs(ReduceScatterAttrs &attrs);
  void parseAttrs(AllToAllAttrs &attrs);
  void parseAttrs(SliceAttrs &attrs);
  void parseAttrs(CollectivePermuteAttrs &attrs);
  void parseAttrs(FusedAttrs &attrs);
  void parseAttrs(LoopAttrs &attrs);
  void parseAttrs(AttentionAttrs &attrs);
  void parseAttrs(AttentionGradAttrs &attrs);
  void parseAttrs(WaitAttrs &attrs);
  /// "start": a collective that runs beside the steps up to its wait.
  void parseStart();
  /// The operands of an attention step: `in` (reading the operands `reads`
  /// in order, then bias when "in" has one more), and the outputs
  /// `writes` (the members of those names; the first is Step::out). Reads
  /// "key", "head" and "scale" into `spec`, plans the geometry and the
  /// CPU kernel's scratch. Returns the output operands.
  std::vector<Operand> parseAttention(
      AttentionSpec &spec, const std::vector<AttentionOperand> &reads,
      const std::vector<std::pair<AttentionOperand, const char *>> &writes);
  /// A fused body instruction that makes value `value`.
  FusedInstr parseInstr(const JsonNode &at, int32_t value, size_t reduced);

  /// The flat out and in of unary and cast: same element count, in place or
  /// apart.
  void parseFlatInOut();
  /// The in and out of softmax, cumsum and top_k (f32 in, the same dims in
  /// any order); returns the "dim" of in.
  std::string parseRows();
  /// The in and out of one_hot and argmax.
  void parseClassIndexOperands();
  /// The checks every collective but all_reduce ends with.
  void finishCollective();
  /// A combined all_gather or reduce_scatter: its "parts" into
  /// attrs.parts; false where the step has none.
  template <typename Attrs> bool parseParts(Attrs &attrs);
  /// Fails at a "sizes" entry that no operand uses.
  void requireSizesUsed() const;
  void stageHalfOperands();

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
  const LoopReach &reach;
  OpKind kind = OpKind::Fill;
  const std::vector<std::string> *parentAxes = nullptr;
  Step step;
  std::optional<JsonNode> sizesNode;
  /// The mesh axes of the step's group (readAxes).
  std::vector<std::string> groupAxes;
  std::map<std::string, int64_t> sizes;
  std::set<std::string> used;
};

Step StepParser::parse(size_t index) {
  step.index = index;
  kind = parseOpKind(node.member("op"));
  if (std::optional<JsonNode> phase = node.optionalMember("phase"))
    step.phase = choose<Phase>(*phase, "phase",
                               {{"forward", Phase::Forward},
                                {"backward", Phase::Backward},
                                {"update", Phase::Update}});
  switch (kind) {
#define MESHC_STEP_KIND(Kind, Spelling, Group, Category)                       \
  case OpKind::Kind: {                                                         \
    Kind##Attrs attrs;                                                         \
    parseAttrs(attrs);                                                         \
    step.attrs = std::move(attrs);                                             \
    break;                                                                     \
  }
#include "runtime/core/StepKinds.def"
  }
  parseStart();
  requireSizesUsed();
  stageHalfOperands();
  return step;
}

void StepParser::parseStart() {
  std::optional<JsonNode> start = node.optionalMember("start");
  if (!start)
    return;
  if (parentAxes)
    start->fail("a part of a combined collective starts with its step, "
                "not on its own");
  if (stepGroup(kind) != StepGroup::Collective)
    start->fail(std::string("only a collective starts and runs beside "
                            "later steps; ") +
                opName(kind) + " runs to completion");
  step.ticket = start->integerAtLeast(0);
}

void StepParser::parseAttrs(WaitAttrs &attrs) {
  JsonNode list = node.member("tickets");
  std::vector<JsonNode> tickets = list.elements();
  if (tickets.empty())
    list.fail("a wait names at least one ticket");
  for (const JsonNode &ticket : tickets) {
    int64_t value = ticket.integerAtLeast(0);
    for (int64_t earlier : attrs.tickets)
      if (earlier == value)
        ticket.fail("ticket " + std::to_string(value) + " is listed twice");
    attrs.tickets.push_back(value);
  }
  if (std::optional<JsonNode> carried = node.optionalMember("carried"))
    attrs.carried = carried->boolean();
}

void StepParser::requireSizesUsed() const {
  if (sizesNode)
    for (const auto &[name, size] : sizesNode->members())
      if (!used.count(name))
        size.fail("dim '" + name + "' is not a dim of any operand");
}

template <typename Attrs> bool StepParser::parseParts(Attrs &attrs) {
  std::optional<JsonNode> list = node.optionalMember("parts");
  if (!list || parentAxes)
    return false;
  std::string what = std::string("a combined ") + opName(kind);
  for (const char *key : {"in", "out", "dim", "sizes", "blocks"})
    if (std::optional<JsonNode> stray = node.optionalMember(key))
      stray->fail(what + " lists its tensors in \"parts\", not \"" + key +
                  "\"");
  readAxes(attrs);
  std::vector<JsonNode> partNodes = list->elements();
  if (partNodes.size() < 2)
    list->fail("\"parts\" lists " + std::to_string(partNodes.size()) +
               " tensor" + (partNodes.size() == 1 ? "" : "s") + "; " + what +
               " has at least 2");
  std::set<size_t> seen;
  for (const JsonNode &partNode : partNodes) {
    StepParser part(partNode, program, bufferIndex, reach, &groupAxes);
    part.kind = kind;
    Attrs own;
    part.parseAttrs(own);
    part.requireSizesUsed();
    if (!own.blocks.empty())
      partNode.member("blocks").fail(what + " moves equal blocks");
    MovePart moved{part.step.in[0], part.step.out, own.dim};
    for (const Operand *operand : {&moved.in, &moved.out})
      if (!seen.insert(operand->buffer).second)
        partNode.fail(bufferName(*operand) + " is in two parts");
    if (!attrs.parts.empty() &&
        bufferOf(moved.in).dtype != bufferOf(attrs.parts.front().in).dtype)
      partNode.fail(bufferName(moved.in) + " holds " +
                    dtypeName(bufferOf(moved.in).dtype) + ", the first part " +
                    dtypeName(bufferOf(attrs.parts.front().in).dtype) + ": " +
                    what + " packs one element type");
    step.scratchBytes +=
        bytesOf(kind == OpKind::AllGather ? moved.out : moved.in);
    attrs.parts.push_back(std::move(moved));
  }
  step.in = {attrs.parts.front().in};
  step.out = attrs.parts.front().out;
  attrs.dim = attrs.parts.front().dim;
  return true;
}

/// The kernels compute in f32: every bf16 or f16 operand of a computing step
/// (each of `in` and each output, Step::outputs) gets an f32 copy in the
/// scratch, after the step's own scratch (fill, copy, cast and fused convert
/// themselves; collectives and slice move the 16-bit elements as they are,
/// and so does a window between buffers of one element type: it computes
/// nothing). An einsum's plan reads and writes the copies.
void StepParser::stageHalfOperands() {
  // A fused step reads and writes 16-bit operands itself.
  if (kind == OpKind::Fill || kind == OpKind::Copy || kind == OpKind::Cast ||
      kind == OpKind::Loop || kind == OpKind::Fused || usesGroup(kind))
    return;
  if (kind == OpKind::Window &&
      bufferOf(step.in[0]).dtype == bufferOf(step.out).dtype)
    return;
  auto align = [](int64_t bytes) { return (bytes + 63) / 64 * 64; };
  int64_t end = align(step.scratchBytes);
  bool staged = false;
  auto stage = [&](Operand &operand) {
    if (!isHalf(bufferOf(operand).dtype))
      return;
    operand.staging = end;
    end = align(end + operand.shape.elements() * int64_t(sizeof(float)));
    staged = true;
  };
  for (Operand &in : step.in)
    stage(in);
  for (Operand *out : step.outputs())
    stage(*out);
  if (!staged)
    return;
  step.scratchBytes = end;
  if (auto *einsum = std::get_if<EinsumAttrs>(&step.attrs)) {
    // The plan's arena tensors are the operands' buffers, by offset.
    std::vector<const Operand *> operands;
    for (const Operand &in : step.in)
      operands.push_back(&in);
    operands.push_back(&step.out);
    auto redirect = [&](PlannedTensor &tensor) {
      if (tensor.inScratch)
        return;
      for (const Operand *operand : operands)
        if (operand->staging >= 0 &&
            bufferOf(*operand).offset == tensor.offset) {
          tensor.inScratch = true;
          tensor.offset = operand->staging;
          return;
        }
    };
    for (EinsumStage &stage : einsum->plan.stages)
      if (stage.isGemm) {
        redirect(stage.gemm.a);
        redirect(stage.gemm.b);
        redirect(stage.gemm.c);
      } else {
        redirect(stage.reduce.src);
        redirect(stage.reduce.dst);
      }
  }
}

void StepParser::parseAttrs(FillAttrs &attrs) {
  step.out = flat("out");
  JsonNode value = node.member("value");
  attrs.value = value.number();
  if (bufferOf(step.out).dtype == DType::I32 &&
      (attrs.value != std::trunc(attrs.value) || std::abs(attrs.value) > 2e9))
    value.fail("value " + value.json().dump() + " is not an i32 but " +
               bufferName(step.out) + " is i32");
}

void StepParser::parseAttrs(CopyAttrs &) {
  step.out = flat("out");
  step.in = {flat("in")};
  const Operand &in = step.in[0], &out = step.out;
  if (bytesOf(in) != bytesOf(out))
    node.fail("copy needs buffers of the same size: " + bufferName(in) +
              " holds " + std::to_string(bytesOf(in)) + " bytes, " +
              bufferName(out) + " holds " + std::to_string(bytesOf(out)));
}

void StepParser::parseFlatInOut() {
  step.out = flat("out");
  step.in = {flat("in")};
  requireSameCount(step.in[0], step.out);
  requireNoOverlap(step.in[0], step.out, /*inPlace=*/true);
}

void StepParser::parseAttrs(UnaryAttrs &attrs) {
  parseFlatInOut();
  attrs.fn = choose(node.member("fn"), "unary fn", kUnaryFns);
  requireDType("in", step.in[0], DType::F32);
  requireDType("out", step.out, DType::F32);
  if (attrs.fn == UnaryFn::Scale)
    attrs.value = node.member("value").number();
}

void StepParser::parseAttrs(CastAttrs &) {
  parseFlatInOut();
  const Operand &in = step.in[0], &out = step.out;
  JsonNode from = node.member("from"), to = node.member("to");
  if (parseDType(from) != bufferOf(in).dtype)
    from.fail("cast from " + from.string() + " but " + bufferName(in) + " is " +
              dtypeName(bufferOf(in).dtype));
  if (parseDType(to) != bufferOf(out).dtype)
    to.fail("cast to " + to.string() + " but " + bufferName(out) + " is " +
            dtypeName(bufferOf(out).dtype));
}

void StepParser::parseAttrs(EinsumAttrs &attrs) {
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
    if (!isFloat(bufferOf(step.in[i]).dtype))
      inputs.elements()[i].fail("einsum needs float operands but " +
                                bufferName(step.in[i]) + " is i32");
    requireNoOverlap(step.in[i], step.out);
    planned.push_back({false, bufferOf(step.in[i]).offset, step.in[i].shape,
                       int64_t(step.in[i].buffer)});
  }
  for (const std::string &name : step.out.shape.names)
    if (std::none_of(step.in.begin(), step.in.end(),
                     [&](const Operand &in) { return in.shape.has(name); }))
      node.member("out").fail("dim '" + name + "' is in no einsum operand");
  attrs.plan = planEinsum(planned, {false, bufferOf(step.out).offset,
                                    step.out.shape, int64_t(step.out.buffer)});
  step.scratchBytes = attrs.plan.scratchBytes;
}

void StepParser::parseAttrs(BinaryAttrs &attrs) {
  readSizes();
  attrs.fn = choose(node.member("fn"), "binary fn", kBinaryFns);
  step.in = {operand("lhs"), operand("rhs")};
  step.out = operand("out");
  const Operand &lhs = step.in[0], &rhs = step.in[1], &out = step.out;
  if (attrs.fn == BinaryFn::Eq || attrs.fn == BinaryFn::Lt) {
    // eq and lt compare two f32 or two i32 operands.
    DType lhsType = bufferOf(lhs).dtype, rhsType = bufferOf(rhs).dtype;
    if (lhsType != rhsType)
      node.member("rhs").fail(std::string(binaryFnName(attrs.fn)) +
                              " compares operands of one dtype but " +
                              bufferName(lhs) + " is " + dtypeName(lhsType) +
                              " and " + bufferName(rhs) + " is " +
                              dtypeName(rhsType));
  } else {
    requireDType("lhs", lhs, DType::F32);
    requireDType("rhs", rhs, DType::F32);
  }
  requireSubset("lhs", lhs, "out", out);
  requireSubset("rhs", rhs, "out", out);
  requireNoOverlap(lhs, out, /*inPlace=*/true);
  requireNoOverlap(rhs, out, /*inPlace=*/true);
  requireDType("out", out, DType::F32);
}

void StepParser::parseAttrs(ReduceAttrs &attrs) {
  readSizes();
  attrs.fn = choose(node.member("fn"), "reduce fn", kReductions);
  step.in = {operand("in")};
  step.out = operand("out");
  requireDType("in", step.in[0], DType::F32);
  requireSubset("out", step.out, "in", step.in[0]);
  requireNoOverlap(step.in[0], step.out);
  requireDType("out", step.out, DType::F32);
}

std::string StepParser::parseRows() {
  readSizes();
  step.in = {operand("in")};
  step.out = operand("out");
  const Operand &in = step.in[0], &out = step.out;
  requireDType("in", in, DType::F32);
  std::string dim = dimOf("dim", in, "in");
  requireSameSet("in", in, "out", out);
  requireNoOverlap(in, out, /*inPlace=*/kind == OpKind::Softmax);
  return dim;
}

void StepParser::parseAttrs(SoftmaxAttrs &attrs) {
  attrs.dim = parseRows();
  requireDType("out", step.out, DType::F32);
}

void StepParser::parseAttrs(CumsumAttrs &attrs) {
  attrs.dim = parseRows();
  if (std::optional<JsonNode> reverse = node.optionalMember("reverse"))
    attrs.reverse = reverse->boolean();
  requireDType("out", step.out, DType::F32);
}

void StepParser::parseAttrs(TopKAttrs &attrs) {
  attrs.dim = parseRows();
  const NamedShape &in = step.in[0].shape;
  JsonNode k = node.member("k");
  int64_t size = in.sizes[in.position(attrs.dim)];
  attrs.k = k.integer();
  if (attrs.k < 1 || attrs.k > size)
    k.fail("k " + std::to_string(attrs.k) + " is outside [1, " +
           std::to_string(size) + "] (the size of '" + attrs.dim + "')");
  requireDType("out", step.out, DType::F32);
}

void StepParser::parseAttrs(SoftmaxCrossEntropyAttrs &attrs) {
  readSizes();
  step.in = {operand("logits"), operand("labels")};
  step.out = operand("out");
  const Operand &logits = step.in[0], &labels = step.in[1], &out = step.out;
  requireDType("logits", logits, DType::F32);
  requireDType("labels", labels, DType::I32);
  attrs.dim = dimOf("dim", logits, "logits");
  if (labels.shape.has(attrs.dim))
    node.member("labels").fail("labels must not have the class dim '" +
                               attrs.dim + "'");
  if (out.shape.has(attrs.dim))
    node.member("out").fail("out must not have the class dim '" + attrs.dim +
                            "'");
  Operand rows = without(logits, attrs.dim);
  std::string rowsKey = "logits without '" + attrs.dim + "'";
  requireSameSet("labels", labels, rowsKey, rows);
  requireSameSet("out", out, rowsKey, rows);
  requireNoOverlap(logits, out);
  requireNoOverlap(labels, out);
  requireDType("out", out, DType::F32);
}

void StepParser::parseClassIndexOperands() {
  readSizes();
  step.in = {operand("in")};
  step.out = operand("out");
}

void StepParser::parseAttrs(OneHotAttrs &attrs) {
  parseClassIndexOperands();
  const Operand &in = step.in[0], &out = step.out;
  requireDType("in", in, DType::I32);
  requireDType("out", out, DType::F32);
  attrs.dim = dimOf("dim", out, "out");
  if (in.shape.has(attrs.dim))
    node.member("in").fail("in must not have the class dim '" + attrs.dim +
                           "'");
  requireSameSet("in", in, "out without '" + attrs.dim + "'",
                 without(out, attrs.dim));
  requireNoOverlap(in, out);
  int64_t block = out.shape.sizes[out.shape.position(attrs.dim)];
  attrs.classes = block;
  std::optional<JsonNode> classes = node.optionalMember("classes");
  if (!classes)
    return;
  JsonNode size = classes->member("size");
  attrs.classes = size.integer();
  if (attrs.classes <= 0)
    size.fail("one_hot classes " + std::to_string(attrs.classes) +
              " must be positive");
  std::optional<JsonNode> axes = classes->optionalMember("axes");
  std::optional<JsonNode> list = classes->optionalMember("blocks");
  layout::AxisWeights listed = layout::AxisWeights::even(program.mesh);
  if (list)
    listed.allowIndivisible();
  layout::Result<layout::TensorLayout> split = layout::TensorLayout::fromAxes(
      "one_hot", {{attrs.dim, attrs.classes}},
      {axes ? axes->strings() : std::vector<std::string>()}, program.mesh,
      &listed);
  if (!split)
    classes->fail(split.error().message);
  attrs.layout = *split;
  attrs.blocks.emplace_back();
  if (list)
    attrs.blocks.back() =
        parseBlockList(*list, {attrs.dim, attrs.classes},
                       attrs.layout.shardCount(0, program.mesh), "one_hot");
  int64_t expected = programBlock(program, {{attrs.dim, attrs.classes}},
                                  attrs.layout, attrs.blocks)[0];
  if (block != expected)
    sizesNode->member(attrs.dim).fail(
        "size " + std::to_string(block) + " of the class dim '" + attrs.dim +
        "' is not its block of " + std::to_string(attrs.classes) +
        " classes (" + std::to_string(expected) + ")");
}

void StepParser::parseAttrs(ArgmaxAttrs &attrs) {
  parseClassIndexOperands();
  const Operand &in = step.in[0], &out = step.out;
  requireDType("in", in, DType::F32);
  requireDType("out", out, DType::I32);
  attrs.dim = dimOf("dim", in, "in");
  if (out.shape.has(attrs.dim))
    node.member("out").fail("out must not have the class dim '" + attrs.dim +
                            "'");
  requireSameSet("out", out, "in without '" + attrs.dim + "'",
                 without(in, attrs.dim));
  requireNoOverlap(in, out);
}

void StepParser::parseAttrs(LogSumExpAttrs &attrs) {
  parseClassIndexOperands();
  const Operand &in = step.in[0], &out = step.out;
  requireDType("in", in, DType::F32);
  requireDType("out", out, DType::F32);
  attrs.dim = dimOf("dim", in, "in");
  if (out.shape.has(attrs.dim))
    node.member("out").fail("out must not have the reduced dim '" + attrs.dim +
                            "'");
  requireSameSet("out", out, "in without '" + attrs.dim + "'",
                 without(in, attrs.dim));
  requireNoOverlap(in, out);
}

void StepParser::parseAttrs(RangeAttrs &) {
  readSizes();
  step.out = operand("out");
  if (step.out.shape.names.size() != 1)
    node.member("out").fail("range needs a one-dim out, got " +
                            step.out.shape.str());
}

void StepParser::parseAttrs(WindowAttrs &attrs) {
  readSizes();
  step.in = {operand("in")};
  step.out = operand("out");
  const Operand &in = step.in[0], &out = step.out;
  requireDType("in", in, DType::F32);
  requireDType("out", out, DType::F32);
  attrs.dim = dimOf("from", in, "in");
  attrs.toDim = dimOf("to", out, "out");
  if (attrs.toDim != attrs.dim && in.shape.has(attrs.toDim))
    node.member("to").fail("in already has dim '" + attrs.toDim + "'");
  requireSameSet("in", without(in, attrs.dim), "out",
                 without(out, attrs.toDim));
  attrs.offset = node.member("offset").integer();
  requireNoOverlap(in, out);
}

void StepParser::parseAttrs(DropoutAttrs &attrs) {
  readSizes();
  step.out = operand("out");
  const Operand &out = step.out;
  requireDType("out", out, DType::F32);
  JsonNode name = node.member("name");
  attrs.name = name.string();
  if (attrs.name.empty())
    name.fail("dropout name is empty");
  JsonNode rate = node.member("rate");
  attrs.rate = rate.number();
  if (!(attrs.rate >= 0 && attrs.rate < 1))
    rate.fail("dropout rate " + rate.json().dump() + " is outside [0, 1)");
  JsonNode dims = node.member("dims");
  attrs.layout =
      parseGlobalDims(dims, attrs.name, program.mesh, attrs.dims, attrs.blocks);
  std::vector<std::string> names;
  for (const layout::Dim &dim : attrs.dims)
    names.push_back(dim.name);
  if (names != out.shape.names)
    node.member("out").fail("dims [" + quoted(out.shape.names) +
                            "] differ from the dropout dims [" + quoted(names) +
                            "]; out is this device's block of them, in order");
  std::vector<int64_t> block =
      programBlock(program, attrs.dims, attrs.layout, attrs.blocks);
  for (size_t d = 0; d < block.size(); ++d)
    if (out.shape.sizes[d] != block[d])
      sizesNode->member(names[d]).fail(
          "size " + std::to_string(out.shape.sizes[d]) + " of dim '" +
          names[d] + "' is not its block of the dropout dims (" +
          std::to_string(attrs.dims[d].size) + " cut into " +
          std::to_string(attrs.layout.shardCount(d, program.mesh)) +
          " blocks; this device's is " + std::to_string(block[d]) + ")");
}

void StepParser::parseAttrs(AllReduceAttrs &attrs) {
  readAxes(attrs);
  attrs.reduction = choose(node.member("reduction"), "reduction", kReductions);
  std::optional<JsonNode> list = node.optionalMember("bufs");
  if (!list) {
    step.out = flat("buf");
    return;
  }
  // Combined: the buffers packed end to end into the scratch.
  if (std::optional<JsonNode> single = node.optionalMember("buf"))
    single->fail("an all_reduce has \"buf\" or \"bufs\", not both");
  std::vector<JsonNode> refs = list->elements();
  if (refs.size() < 2)
    list->fail("\"bufs\" lists " + std::to_string(refs.size()) + " buffer" +
               (refs.size() == 1 ? "" : "s") +
               "; a combined all_reduce has at least 2 (one is \"buf\")");
  int64_t bytes = 0;
  for (const JsonNode &ref : refs) {
    Operand buffer;
    buffer.buffer = bufferRef(ref);
    buffer.shape.sizes = {bufferOf(buffer).elements};
    for (const Operand &earlier : attrs.buffers)
      if (earlier.buffer == buffer.buffer)
        ref.fail("buffer " + std::to_string(ref.integer()) +
                 " is listed twice in \"bufs\"");
    if (!attrs.buffers.empty() &&
        bufferOf(buffer).dtype != bufferOf(attrs.buffers.front()).dtype)
      ref.fail("buffer " + std::to_string(ref.integer()) + " holds " +
               dtypeName(bufferOf(buffer).dtype) + ", buffer " +
               std::to_string(refs.front().integer()) + " " +
               dtypeName(bufferOf(attrs.buffers.front()).dtype) +
               ": a combined all_reduce packs one element type");
    bytes += bytesOf(buffer);
    attrs.buffers.push_back(buffer);
  }
  step.out = attrs.buffers.front();
  step.scratchBytes = bytes;
}

void StepParser::parseAttrs(AllGatherAttrs &attrs) {
  if (parseParts(attrs))
    return;
  int64_t groupSize = readAxes(attrs);
  readSizes();
  step.out = operand("out");
  attrs.dim = dimOf("dim", step.out, "out");
  int64_t own = 0;
  attrs.blocks =
      readBlocks("blocks", attrs.dim, groupSize, sizes.at(attrs.dim), own);
  if (attrs.blocks.empty())
    own = sizeOverGroup(attrs.dim, groupSize);
  step.in = {operand("in", {{attrs.dim, own}})};
  int64_t outer = 1;
  for (int d = 0; d < step.out.shape.position(attrs.dim); ++d)
    outer *= step.out.shape.sizes[d];
  step.scratchBytes = outer == 1 ? 0 : bytesOf(step.out);
  finishCollective();
}

void StepParser::parseAttrs(ReduceScatterAttrs &attrs) {
  if (parseParts(attrs)) {
    attrs.reduction =
        choose(node.member("reduction"), "reduction", kReductions);
    return;
  }
  int64_t groupSize = readAxes(attrs);
  readSizes();
  step.in = {operand("in")};
  attrs.dim = dimOf("dim", step.in[0], "in");
  int64_t own = 0;
  attrs.blocks =
      readBlocks("blocks", attrs.dim, groupSize, sizes.at(attrs.dim), own);
  if (attrs.blocks.empty())
    own = sizeOverGroup(attrs.dim, groupSize);
  SizeOverrides outSizes = {{attrs.dim, own}};
  if (!parentAxes)
    attrs.reduction =
        choose(node.member("reduction"), "reduction", kReductions);
  step.scratchBytes = bytesOf(step.in[0]);
  step.out = operand("out", outSizes);
  finishCollective();
}

void StepParser::parseAttrs(AllToAllAttrs &attrs) {
  int64_t groupSize = readAxes(attrs);
  readSizes();
  step.in = {operand("in")};
  const Operand &in = step.in[0];
  attrs.splitDim = dimOf("split_dim", in, "in");
  attrs.concatDim = dimOf("concat_dim", in, "in");
  if (attrs.splitDim == attrs.concatDim)
    node.member("concat_dim")
        .fail("split_dim and concat_dim are both '" + attrs.splitDim + "'");
  SizeOverrides outSizes;
  int64_t ownSplit = 0, ownConcat = 0;
  attrs.splitBlocks = readBlocks("split_blocks", attrs.splitDim, groupSize,
                                 sizes.at(attrs.splitDim), ownSplit);
  outSizes[attrs.splitDim] = attrs.splitBlocks.empty()
                                 ? sizeOverGroup(attrs.splitDim, groupSize)
                                 : ownSplit;
  std::optional<JsonNode> joined = node.optionalMember("concat_size");
  if (node.optionalMember("concat_blocks") && !joined)
    node.member("concat_blocks")
        .fail("an all_to_all with \"concat_blocks\" needs \"concat_size\", "
              "the joined size of its concat dim");
  if (joined && !node.optionalMember("concat_blocks"))
    joined->fail("\"concat_size\" goes with \"concat_blocks\"");
  int64_t concatSize = joined ? joined->integerAtLeast(0) : 0;
  attrs.concatBlocks = readBlocks("concat_blocks", attrs.concatDim, groupSize,
                                  concatSize, ownConcat);
  if (attrs.concatBlocks.empty())
    outSizes[attrs.concatDim] = checkedProduct(
        node.member("concat_dim"), {sizes.at(attrs.concatDim)}, groupSize);
  else if (program.device >= 0 && ownConcat != sizes.at(attrs.concatDim))
    node.member("concat_blocks")
        .fail("this device's block of dim '" + attrs.concatDim + "' is " +
              std::to_string(ownConcat) + " but its size in \"sizes\" is " +
              std::to_string(sizes.at(attrs.concatDim)));
  else
    outSizes[attrs.concatDim] = concatSize;
  step.out = operand("out", outSizes);
  // The chunks to send, then those received.
  step.scratchBytes = bytesOf(in) + bytesOf(step.out);
  finishCollective();
}

void StepParser::parseAttrs(SliceAttrs &attrs) {
  int64_t groupSize = readAxes(attrs);
  readSizes();
  step.in = {operand("in")};
  attrs.dim = dimOf("dim", step.in[0], "in");
  int64_t own = 0;
  attrs.blocks =
      readBlocks("blocks", attrs.dim, groupSize, sizes.at(attrs.dim), own);
  if (attrs.blocks.empty())
    own = sizeOverGroup(attrs.dim, groupSize);
  step.out = operand("out", {{attrs.dim, own}});
  finishCollective();
}

void StepParser::parseAttrs(CollectivePermuteAttrs &attrs) {
  int64_t groupSize = readAxes(attrs);
  step.in = {flat("in")};
  step.out = flat("out");
  const Operand &in = step.in[0], &out = step.out;
  if (bufferOf(in).dtype != bufferOf(out).dtype)
    node.member("out").fail(
        bufferName(out) + " is " + dtypeName(bufferOf(out).dtype) + " but " +
        bufferName(in) + " is " + dtypeName(bufferOf(in).dtype));
  if (bytesOf(in) != bytesOf(out))
    node.member("out").fail(
        "a collective_permute moves its whole in: " + bufferName(in) +
        " holds " + std::to_string(bytesOf(in)) + " bytes, " + bufferName(out) +
        " " + std::to_string(bytesOf(out)));
  requireNoOverlap(in, out);
  JsonNode list = node.member("pairs");
  std::vector<JsonNode> pairNodes = list.elements();
  if (pairNodes.empty())
    list.fail("a collective_permute lists at least one [source, target] "
              "pair");
  std::set<int64_t> sources, targets;
  for (const JsonNode &pairNode : pairNodes) {
    std::vector<JsonNode> ends = pairNode.elements();
    if (ends.size() != 2)
      pairNode.fail("a pair is [source, target], got " +
                    std::to_string(ends.size()) + " entries");
    int64_t members[2];
    for (size_t i = 0; i < 2; ++i) {
      members[i] = ends[i].integerAtLeast(0);
      if (members[i] >= groupSize)
        ends[i].fail("member " + std::to_string(members[i]) +
                     " is outside the group over [" + quoted(groupAxes) +
                     "], whose ranks are 0.." + std::to_string(groupSize - 1));
    }
    if (!sources.insert(members[0]).second)
      ends[0].fail("member " + std::to_string(members[0]) +
                   " is the source of two pairs");
    if (!targets.insert(members[1]).second)
      ends[1].fail("member " + std::to_string(members[1]) +
                   " is the target of two pairs");
    attrs.pairs.emplace_back(members[0], members[1]);
  }
}

void StepParser::finishCollective() {
  requireSameOrder(step.in[0], step.out);
  if (bufferOf(step.in[0]).dtype != bufferOf(step.out).dtype)
    node.member("out").fail(bufferName(step.out) + " is " +
                            dtypeName(bufferOf(step.out).dtype) + " but " +
                            bufferName(step.in[0]) + " is " +
                            dtypeName(bufferOf(step.in[0]).dtype));
  requireNoOverlap(step.in[0], step.out);
}

FusedInstr StepParser::parseInstr(const JsonNode &at, int32_t value,
                                  size_t reduced) {
  FusedInstr instr;
  JsonNode fnNode = at.member("fn");
  std::string fn = fnNode.string();
  size_t arity = 1;
  if (fn == "const") {
    instr.kind = FusedInstr::Kind::Const;
    instr.value = static_cast<float>(at.member("value").number());
    arity = 0;
  } else if (fn == "reduce_sum" || fn == "reduce_max") {
    instr.kind = fn == "reduce_sum" ? FusedInstr::Kind::ReduceSum
                                    : FusedInstr::Kind::ReduceMax;
    if (reduced == 0)
      fnNode.fail(fn + " in a fused body that reduces no dims (\"reduced\" "
                       "is 0)");
  } else if (auto unary = std::find_if(
                 kUnaryFns.begin(), kUnaryFns.end(),
                 [&](const auto &entry) { return fn == entry.first; });
             unary != kUnaryFns.end()) {
    instr.kind = FusedInstr::Kind::Unary;
    instr.unary = unary->second;
    if (instr.unary == UnaryFn::Scale)
      instr.value = static_cast<float>(at.member("value").number());
  } else if (auto binary = std::find_if(
                 kBinaryFns.begin(), kBinaryFns.end(),
                 [&](const auto &entry) { return fn == entry.first; });
             binary != kBinaryFns.end()) {
    instr.kind = FusedInstr::Kind::Binary;
    instr.binary = binary->second;
    arity = 2;
  } else {
    std::string known = "const, reduce_sum, reduce_max";
    for (const auto &[name, unused] : kUnaryFns)
      known += std::string(", ") + name;
    for (const auto &[name, unused] : kBinaryFns)
      known += std::string(", ") + name;
    fnNode.fail("unknown fused fn \"" + fn + "\" (known: " + known + ")");
  }
  if (std::optional<JsonNode> round = at.optionalMember("round")) {
    std::string type = round->string();
    if (type != "bf16" && type != "f16")
      round->fail("\"" + type +
                  "\" is not a 16-bit float type (bf16, f16); a value "
                  "without \"round\" stays f32");
    instr.round = type == "bf16" ? DType::BF16 : DType::F16;
  }
  if (arity == 0)
    return instr;
  JsonNode argsNode = at.member("args");
  std::vector<JsonNode> args = argsNode.elements();
  if (args.size() != arity)
    argsNode.fail(fn + " takes " + std::to_string(arity) +
                  " argument(s), got " + std::to_string(args.size()));
  for (size_t i = 0; i < arity; ++i) {
    int64_t arg = args[i].integerAtLeast(0);
    if (arg >= value)
      args[i].fail(
          "value " + std::to_string(arg) + " is not defined before value " +
          std::to_string(value) + " (the operands are values 0.." +
          std::to_string(step.in.size() - 1) + ", then one per instruction)");
    instr.args[i] = static_cast<int32_t>(arg);
  }
  return instr;
}

void StepParser::parseAttrs(FusedAttrs &attrs) {
  readSizes();
  JsonNode dimsNode = node.member("dims");
  for (const JsonNode &dim : dimsNode.elements()) {
    std::string name = dim.string();
    if (std::find(attrs.dims.begin(), attrs.dims.end(), name) !=
        attrs.dims.end())
      dim.fail("dim '" + name + "' appears twice");
    auto size = sizes.find(name);
    if (size == sizes.end())
      dim.fail("dim '" + name + "' has no entry in \"sizes\"");
    used.insert(name);
    attrs.dims.push_back(name);
    attrs.sizes.push_back(size->second);
  }
  if (attrs.dims.size() > kMaxRank)
    dimsNode.fail("fused step has " + std::to_string(attrs.dims.size()) +
                  " dims; the runtime supports at most " +
                  std::to_string(kMaxRank));
  JsonNode reducedNode = node.member("reduced");
  attrs.reduced = static_cast<size_t>(reducedNode.integerAtLeast(0));
  if (attrs.reduced > attrs.dims.size())
    reducedNode.fail("reduces " + std::to_string(attrs.reduced) +
                     " dims but the step has " +
                     std::to_string(attrs.dims.size()));
  // Every dim of an operand is an iteration dim.
  auto iterationOperand = [&](const JsonNode &at) {
    Operand operand = operandAt(at);
    for (const std::string &name : operand.shape.names)
      if (std::find(attrs.dims.begin(), attrs.dims.end(), name) ==
          attrs.dims.end())
        at.member("dims").fail("dim '" + name +
                               "' is not an iteration dim of the fused step "
                               "(\"dims\")");
    return operand;
  };
  JsonNode inNode = node.member("in");
  for (const JsonNode &at : inNode.elements()) {
    step.in.push_back(iterationOperand(at));
    if (!isFloat(bufferOf(step.in.back()).dtype))
      at.fail("fused needs float operands but " + bufferName(step.in.back()) +
              " is i32");
  }
  // The dims each value varies along: an operand's, the union of an
  // instruction's arguments', less the reduced dims after a reduction.
  std::vector<std::set<std::string>> varies;
  for (const Operand &in : step.in)
    varies.emplace_back(in.shape.names.begin(), in.shape.names.end());
  JsonNode bodyNode = node.member("body");
  std::set<std::string> reducedDims(attrs.dims.end() - attrs.reduced,
                                    attrs.dims.end());
  for (const JsonNode &at : bodyNode.elements()) {
    int32_t value = static_cast<int32_t>(varies.size());
    attrs.body.push_back(parseInstr(at, value, attrs.reduced));
    const FusedInstr &instr = attrs.body.back();
    std::set<std::string> dims;
    for (int32_t arg : instr.args)
      if (arg >= 0)
        dims.insert(varies[arg].begin(), varies[arg].end());
    if (instr.kind == FusedInstr::Kind::ReduceSum ||
        instr.kind == FusedInstr::Kind::ReduceMax)
      for (const std::string &name : reducedDims)
        dims.erase(name);
    varies.push_back(std::move(dims));
  }
  JsonNode outNode = node.member("out");
  std::vector<JsonNode> outs = outNode.elements();
  if (outs.empty())
    outNode.fail("a fused step writes at least one output");
  for (const JsonNode &at : outs) {
    Operand out = iterationOperand(at);
    JsonNode valueNode = at.member("value");
    int64_t value = valueNode.integerAtLeast(0);
    if (value >= static_cast<int64_t>(varies.size()))
      valueNode.fail("value " + std::to_string(value) +
                     " is not a value of the body (it has " +
                     std::to_string(varies.size()) + ")");
    for (const std::string &name : varies[value])
      if (!out.shape.has(name))
        at.member("dims").fail("value " + std::to_string(value) +
                               " varies along '" + name + "', which " +
                               out.shape.str() + " lacks");
    if (!isFloat(bufferOf(out).dtype))
      at.fail("fused writes float outputs but " + bufferName(out) + " is i32");
    for (const Operand &in : step.in)
      if (overlaps(in, out))
        at.fail(bufferName(out) + " overlaps " + bufferName(in) +
                ", which the fused step reads");
    for (const Operand &other : attrs.outs)
      if (overlaps(other, out))
        at.fail(bufferName(out) + " overlaps " + bufferName(other) +
                ", which the fused step also writes");
    attrs.outs.push_back(out);
    attrs.outValues.push_back(static_cast<int32_t>(value));
  }
  std::vector<NamedShape> shapes;
  for (const Operand &in : step.in) {
    shapes.push_back(in.shape);
    attrs.types.push_back(bufferOf(in).dtype);
  }
  for (const Operand &out : attrs.outs) {
    shapes.push_back(out.shape);
    attrs.types.push_back(bufferOf(out).dtype);
  }
  step.out = attrs.outs.front();
  attrs.plan = planFused(attrs.body, attrs.outValues, attrs.dims, attrs.sizes,
                         attrs.reduced, shapes, step.in.size(), attrs.types);
  step.scratchBytes = attrs.plan.scratchFloats() * int64_t(sizeof(float));
}

void StepParser::parseAttrs(LoopAttrs &attrs) {
  attrs.count = node.member("count").integerAtLeast(1);
  if (std::optional<JsonNode> reverse = node.optionalMember("reverse")) {
    if (!reverse->json().is_boolean())
      reverse->fail("expected true or false, got " +
                    describeJson(reverse->json()));
    attrs.reverse = reverse->json().get<bool>();
  }
  LoopReach inner =
      reach.empty() ? LoopReach(program.buffers.size(), 0) : reach;
  if (std::optional<JsonNode> stacked = node.optionalMember("stacked"))
    for (const JsonNode &entry : stacked->elements()) {
      StackedBuffer moved;
      JsonNode ref = entry.member("buf");
      moved.buffer = bufferRef(ref);
      const Buffer &buffer = program.buffers[moved.buffer];
      std::string name = "buffer " + std::to_string(buffer.id);
      for (const StackedBuffer &other : attrs.stacked)
        if (other.buffer == moved.buffer)
          ref.fail(name + " is stacked twice in one loop");
      for (const Tensor &tensor : program.tensors)
        if (tensor.buffer == moved.buffer)
          ref.fail(name + " holds " + roleName(tensor.role) + " '" +
                   tensor.name +
                   "', which never moves; a loop moves buffers of slices");
      JsonNode strideNode = entry.member("stride");
      moved.stride = strideNode.integerAtLeast(1);
      if (moved.stride < buffer.bytes)
        strideNode.fail("stride " + std::to_string(moved.stride) +
                        " is less than the " + std::to_string(buffer.bytes) +
                        " bytes of " + name + ": its slices would overlap");
      int64_t far = 0, end = 0;
      if (__builtin_mul_overflow(attrs.count - 1, moved.stride, &far) ||
          __builtin_add_overflow(far, inner[moved.buffer], &far) ||
          __builtin_add_overflow(buffer.offset + buffer.bytes, far, &end) ||
          end > program.arenaBytes)
        strideNode.fail(name + " at [" + std::to_string(buffer.offset) + ", " +
                        std::to_string(buffer.offset + buffer.bytes) +
                        ") moved " + std::to_string(attrs.count - 1) +
                        " times by " + std::to_string(moved.stride) +
                        " bytes leaves the arena of " +
                        std::to_string(program.arenaBytes) + " bytes");
      inner[moved.buffer] = far;
      program.loopReach.resize(program.buffers.size(), 0);
      program.loopReach[moved.buffer] =
          std::max(program.loopReach[moved.buffer], far);
      attrs.stacked.push_back(moved);
    }
  JsonNode bodyNode = node.member("body");
  std::vector<JsonNode> bodySteps = bodyNode.elements();
  if (bodySteps.empty())
    bodyNode.fail("a loop needs at least one step in its body");
  attrs.body = program.loopBodies.size();
  program.loopBodies.emplace_back();
  std::vector<Step> body;
  for (size_t i = 0; i < bodySteps.size(); ++i) {
    Step bodyStep = parseStep(bodySteps[i], i, program, bufferIndex, inner);
    if (std::optional<JsonNode> phase = bodySteps[i].optionalMember("phase");
        phase && bodyStep.phase != step.phase)
      phase->fail(std::string("a body step runs in its loop's phase (\"") +
                  phaseName(step.phase) + "\")");
    bodyStep.phase = step.phase;
    step.scratchBytes = std::max(step.scratchBytes, bodyStep.scratchBytes);
    body.push_back(std::move(bodyStep));
  }
  program.loopBodies[attrs.body] = std::move(body);
}

std::vector<Operand> StepParser::parseAttention(
    AttentionSpec &spec, const std::vector<AttentionOperand> &reads,
    const std::vector<std::pair<AttentionOperand, const char *>> &writes) {
  readSizes();
  const std::string what = opName(kind);
  JsonNode inNode = node.member("in");
  std::vector<JsonNode> inputs = inNode.elements();
  if (inputs.size() != reads.size() && inputs.size() != reads.size() + 1) {
    std::string names;
    for (AttentionOperand read : reads)
      names += std::string(attentionOperandName(read)) + ", ";
    inNode.fail(what + " reads " + names +
                "and an optional bias: " + std::to_string(reads.size()) +
                " or " + std::to_string(reads.size() + 1) + " operands, got " +
                std::to_string(inputs.size()));
  }
  spec.bias = inputs.size() > reads.size();
  std::vector<AttentionOperand> order = reads;
  if (spec.bias)
    order.push_back(kBias);
  // Where each operand is, for the messages.
  std::array<std::optional<JsonNode>, kAttentionOperands> at;
  for (size_t i = 0; i < inputs.size(); ++i) {
    step.in.push_back(operandAt(inputs[i]));
    at[order[i]] = inputs[i];
  }
  std::vector<Operand> outs;
  for (const auto &[operand, key] : writes) {
    at[operand] = node.member(key);
    outs.push_back(operandAt(*at[operand]));
  }
  // Read after the operands, so that a missing operand is found first.
  JsonNode keyNode = node.member("key");
  spec.key = keyNode.string();
  JsonNode headNode = node.member("head");
  spec.head = headNode.strings();
  JsonNode scaleNode = node.member("scale");
  spec.scale = scaleNode.number();
  if (!std::isfinite(spec.scale))
    scaleNode.fail("scale " + scaleNode.json().dump() +
                   " is not a finite number");
  std::array<const NamedShape *, kAttentionOperands> shapes{};
  for (size_t i = 0; i < order.size(); ++i)
    shapes[order[i]] = &step.in[i].shape;
  for (size_t i = 0; i < writes.size(); ++i)
    shapes[writes[i].first] = &outs[i].shape;
  if (std::optional<AttentionIssue> issue =
          planAttention(shapes, spec.key, spec.head, spec.geometry)) {
    if (issue->operand >= 0)
      at[issue->operand]->fail(issue->message);
    if (issue->attr == "head" && issue->index >= 0)
      headNode.elements()[size_t(issue->index)].fail(issue->message);
    node.member(issue->attr).fail(issue->message);
  }
  for (size_t i = 0; i < step.in.size(); ++i)
    if (!isFloat(bufferOf(step.in[i]).dtype))
      at[order[i]]->fail(what + " needs float operands but " +
                         bufferName(step.in[i]) + " (" +
                         attentionOperandName(order[i]) + ") is i32");
  for (size_t i = 0; i < outs.size(); ++i) {
    const Operand &out = outs[i];
    const JsonNode &where = *at[writes[i].first];
    if (!isFloat(bufferOf(out).dtype))
      where.fail(what + " writes float outputs but " + bufferName(out) + " (" +
                 attentionOperandName(writes[i].first) + ") is i32");
    for (size_t j = 0; j < step.in.size(); ++j)
      if (overlaps(step.in[j], out))
        where.fail(
            bufferName(out) + " (" + attentionOperandName(writes[i].first) +
            ") overlaps " + bufferName(step.in[j]) + " (" +
            attentionOperandName(order[j]) + "), which " + what + " reads");
    for (size_t j = 0; j < i; ++j)
      if (overlaps(outs[j], out))
        where.fail(bufferName(out) + " (" +
                   attentionOperandName(writes[i].first) + ") overlaps " +
                   bufferName(outs[j]) + " (" +
                   attentionOperandName(writes[j].first) + "), which " + what +
                   " also writes");
  }
  step.out = outs.front();
  // The offset tables and the CPU kernel's working memory for one thread
  // (planAttention checked that they fit 64 bits).
  step.scratchBytes =
      attentionScratchBytes(spec.geometry, kind == OpKind::AttentionGrad);
  return outs;
}

void StepParser::parseAttrs(AttentionAttrs &attrs) {
  std::vector<Operand> outs =
      parseAttention(attrs, {kQ, kK, kV}, {{kO, "out"}, {kLse, "lse"}});
  attrs.lse = outs[1];
}

void StepParser::parseAttrs(AttentionGradAttrs &attrs) {
  std::vector<Operand> outs =
      parseAttention(attrs, {kQ, kK, kV, kO, kLse, kDOut},
                     {{kDQ, "out"}, {kDK, "dk"}, {kDV, "dv"}});
  attrs.dk = outs[1];
  attrs.dv = outs[2];
}

/// Fails at the first step of `steps` (at `nodes`) that uses a buffer of
/// `moved` (every buffer some loop moves) outside the loops that move it
/// (`enclosing`), recursing into bodies.
void checkMovedUses(const std::vector<JsonNode> &nodes,
                    const std::vector<Step> &steps, const Program &program,
                    const std::set<size_t> &moved, std::set<size_t> enclosing) {
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step &step = steps[i];
    if (step.op() == OpKind::Loop) {
      std::set<size_t> inner = enclosing;
      for (const StackedBuffer &stacked : step.as<LoopAttrs>().stacked)
        inner.insert(stacked.buffer);
      checkMovedUses(nodes[i].member("body").elements(), program.bodyOf(step),
                     program, moved, inner);
      continue;
    }
    for (const Operand *operand : step.operands())
      if (size_t buffer = operand->buffer;
          moved.count(buffer) && !enclosing.count(buffer))
        nodes[i].fail("buffer " + std::to_string(program.buffers[buffer].id) +
                      " is moved by a loop this step is not in; only that "
                      "loop's body may use it");
  }
}

} // namespace

Step parseStep(const JsonNode &node, size_t index, Program &program,
               const std::map<int64_t, size_t> &bufferIndex,
               const LoopReach &reach) {
  return StepParser(node, program, bufferIndex, reach).parse(index);
}

void numberBodySteps(const JsonNode &steps, Program &program) {
  program.bodySteps.clear();
  std::set<size_t> moved;
  for (size_t body = 0; body < program.loopBodies.size(); ++body)
    for (size_t position = 0; position < program.loopBodies[body].size();
         ++position) {
      program.loopBodies[body][position].index = program.stepCount();
      program.bodySteps.emplace_back(body, position);
    }
  for (size_t i = 0; i < program.stepCount(); ++i)
    if (const Step &step = program.step(i); step.op() == OpKind::Loop)
      for (const StackedBuffer &stacked : step.as<LoopAttrs>().stacked)
        moved.insert(stacked.buffer);
  if (!moved.empty())
    checkMovedUses(steps.elements(), program.steps, program, moved, {});
}

} // namespace meshc::runtime
