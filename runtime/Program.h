//===- Program.h - A loaded and validated .mprog ----------------*- C++ -*-===//
//
// The in-memory form of a compiled SPMD program (docs/mprog.md): the mesh,
// one arena per device cut into buffers, the global tensors (inputs,
// parameters, outputs) with their layouts, and the steps every device runs in
// order. The loader builds it and checks everything a backend relies on
// (buffers inside the arena, every step operand inside its buffer, dtypes,
// dims, mesh axes), so backends execute it without further checks.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_PROGRAM_H
#define MESHC_RUNTIME_PROGRAM_H

#include "runtime/Attention.h"
#include "runtime/DType.h"
#include "runtime/ElementFunctions.h"
#include "runtime/FusedStep.h"
#include "runtime/core/Random.h"
#include "runtime/core/StepKinds.h"
#include "runtime/core/layout/Mesh.h"
#include "runtime/core/layout/TensorLayout.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace meshc::runtime {

/// The most dims one step operand may have (kernels keep index state on the
/// stack).
constexpr size_t kMaxRank = 16;

/// Named dims with their local sizes: how a step sees a buffer's data,
/// row-major in the order of `names`.
struct NamedShape {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;

  /// The product of the sizes (1 for a scalar).
  int64_t elements() const;
  /// The position of dim `name`, or -1.
  int position(const std::string &name) const;
  /// True when dim `name` is one of the names.
  bool has(const std::string &name) const { return position(name) >= 0; }
  /// "[batch=16, io=64]".
  std::string str() const;
};

/// One slot of the arena.
struct Buffer {
  int64_t id = 0;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t offset = 0;
  int64_t bytes = 0;
  /// The product of `shape`: how many elements flat steps touch.
  int64_t elements = 0;
};

/// What a global tensor is to the program.
enum class Role { Input, Param, Output };
/// "input", "param", "output".
const char *roleName(Role role);

/// The number of elements of `shape` (1 for a scalar).
int64_t product(const std::vector<int64_t> &shape);

/// A global tensor bound to the buffer holding each device's block.
struct Tensor {
  Role role = Role::Input;
  std::string name;
  /// Index into Program::buffers.
  size_t buffer = 0;
  DType dtype = DType::F32;
  /// Global dims (names and global sizes).
  std::vector<layout::Dim> dims;
  /// The split of each dim over mesh axes (as layout::TensorLayout does it).
  layout::TensorLayout layout = layout::TensorLayout::replicated(0);
  /// Per dim, the unequal blocks the .mprog lists (device weights); empty
  /// lists for dims cut into equal blocks.
  layout::TensorLayout::BlockLists blocks;
  /// How a parameter is initialised.
  InitSpec init;
  /// For i32 inputs: synthetic values are uniform in [first, second).
  std::optional<std::pair<int64_t, int64_t>> range;
  /// A param (or output: its gradient) whose leading dims cut one dim of the
  /// model (the interleaved schedule's [round, stage, layer, ...] for [layers,
  /// ...]): its dims as the model declares them, the same elements in the same
  /// row-major order. Checkpoints, --dump-params and --init-params use these.
  /// Empty: `dims` are the model's.
  std::vector<layout::Dim> modelDims;

  /// The global shape.
  std::vector<int64_t> globalShape() const;
  /// The dims as the model declares them (modelDims, else dims), and their
  /// shape.
  const std::vector<layout::Dim> &declaredDims() const {
    return modelDims.empty() ? dims : modelDims;
  }
  std::vector<int64_t> declaredShape() const;
  /// The shape and the global offsets of device `deviceId`'s block.
  std::vector<int64_t> blockShape(const layout::Mesh &mesh,
                                  int64_t deviceId) const;
  std::vector<int64_t> blockOffset(const layout::Mesh &mesh,
                                   int64_t deviceId) const;
  /// The largest block along each dim.
  std::vector<int64_t> maxBlockShape(const layout::Mesh &mesh) const;
};

/// A box of a tensor in its declared dims (Tensor::declaredDims) that a run
/// of a block's row-major elements covers.
struct DeclaredBox {
  std::vector<int64_t> offset, shape;
  /// The first element of the run in the block.
  int64_t start = 0;
};
/// Whether `declared` declares a tensor of `dims`: its first dim merges the
/// leading dims of `dims` (its size their product), the others are the same
/// (Tensor::modelDims, a checkpoint's model_dims).
bool declaresDims(const std::vector<layout::Dim> &dims,
                  const std::vector<layout::Dim> &declared);
/// The boxes, in the block's order, that the block at `offset` of `shape`
/// of a tensor of `dims` covers in `declared`, whose first dim merges the
/// leading dims of `dims` (the rest are the same): one box where `declared`
/// is empty or equals `dims`.
std::vector<DeclaredBox> declaredBoxes(const std::vector<layout::Dim> &dims,
                                       const std::vector<layout::Dim> &declared,
                                       const std::vector<int64_t> &offset,
                                       const std::vector<int64_t> &shape);

/// Which part of a training program a step belongs to: an eval run executes
/// only the forward steps, a training run all of them.
enum class Phase { Forward, Backward, Update };
/// "forward", "backward", "update".
const char *phaseName(Phase phase);
/// How reduce, all_reduce and reduce_scatter combine elements.
enum class Reduction { Sum, Max };

/// A buffer as one step sees it. Flat operands (fill, copy, unary, cast,
/// all_reduce) have no names and one size, the buffer's element count.
struct Operand {
  size_t buffer = 0;
  NamedShape shape;
  /// -1: the kernel reads or writes the buffer itself. Else the byte offset
  /// in the device scratch of the operand's f32 copy: a bf16 or f16 buffer
  /// is widened into it before the step and an output narrowed from it
  /// after (the loader plans these "staging" areas after the step's own
  /// scratch).
  int64_t staging = -1;
};

/// A tensor of an einsum plan: in the arena (an operand's buffer) or in the
/// device's scratch, at a byte offset.
struct PlannedTensor {
  bool inScratch = false;
  int64_t offset = 0;
  NamedShape shape;
  /// For a tensor in the arena: the index of the buffer it is (a loop may
  /// move it; -1 for none).
  int64_t buffer = -1;
};

/// dst = the sum of src over the dims dst lacks, laid out in dst's dim order
/// (a transpose when no dim is missing).
struct ReduceStage {
  PlannedTensor src;
  PlannedTensor dst;
};

/// For p < batch: c[p] (m x n) = op(a[p]) (m x k) * op(b[p]) (k x n), where
/// a[p] is stored m x k (k x m when transA) and b[p] k x n (n x k when
/// transB), all row-major and batches contiguous.
struct GemmStage {
  PlannedTensor a, b, c;
  bool transA = false;
  bool transB = false;
  int64_t batch = 1, m = 1, n = 1, k = 1;
};

/// One stage of an einsum: exactly one of the two is meaningful.
struct EinsumStage {
  bool isGemm = false;
  ReduceStage reduce;
  GemmStage gemm;
};

/// An einsum lowered at load time to reductions/transposes and batched GEMMs
/// whose temporaries live in the device scratch.
struct EinsumPlan {
  std::vector<EinsumStage> stages;
  int64_t scratchBytes = 0;
};

// The attributes of each step kind: kind K of StepKinds.def has KAttrs,
// which holds what a K step has besides its operands.

/// fill: the value written.
struct FillAttrs {
  double value = 0;
};
/// copy: none (the bytes of in).
struct CopyAttrs {};
/// einsum: the plan made at load time.
struct EinsumAttrs {
  EinsumPlan plan;
};
/// unary: the function.
struct UnaryAttrs {
  UnaryFn fn = UnaryFn::Relu;
  /// The factor of Scale.
  double value = 0;
};
/// cast: none (it converts between its buffers' dtypes).
struct CastAttrs {};
/// binary: the function.
struct BinaryAttrs {
  BinaryFn fn = BinaryFn::Add;
};
/// reduce: how elements combine.
struct ReduceAttrs {
  Reduction fn = Reduction::Sum;
};
/// softmax: the dim normalised over.
struct SoftmaxAttrs {
  std::string dim;
};
/// logsumexp: the dim of in reduced.
struct LogSumExpAttrs {
  std::string dim;
};
/// softmax_cross_entropy: the class dim of the logits.
struct SoftmaxCrossEntropyAttrs {
  std::string dim;
};
/// one_hot: the class dim of out. out holds one block of the class dim when
/// `layout` splits it: block b of the `classes` classes is this device's,
/// as for any tensor of dims [dim=classes] with that layout.
struct OneHotAttrs {
  std::string dim;
  /// Every index must lie in [0, classes).
  int64_t classes = 0;
  /// The split of [dim=classes] over the mesh (whole when not split).
  layout::TensorLayout layout = layout::TensorLayout::replicated(1);
  /// The class dim's unequal blocks, when the .mprog lists them.
  layout::TensorLayout::BlockLists blocks;
};
/// argmax: the dim of in searched.
struct ArgmaxAttrs {
  std::string dim;
};
/// dropout: the global shape the mask is drawn over, with its split over the
/// mesh (out is this device's block of it), the stream name and the rate.
struct DropoutAttrs {
  std::vector<layout::Dim> dims;
  layout::TensorLayout layout = layout::TensorLayout::replicated(0);
  /// Per dim, the unequal blocks the .mprog lists (empty: equal blocks).
  layout::TensorLayout::BlockLists blocks;
  std::string name;
  double rate = 0;
};
/// range: none (out[i] = i).
struct RangeAttrs {};
/// cumsum: the dim summed along.
struct CumsumAttrs {
  std::string dim;
  /// Run from the last coordinate down.
  bool reverse = false;
};
/// window: out[.., j, ..] = in[.., j + offset, ..] along in's `dim` and out's
/// `toDim` (0 outside in).
struct WindowAttrs {
  std::string dim;
  std::string toDim;
  int64_t offset = 0;
};
/// top_k: how many elements per row along `dim` get 1.
struct TopKAttrs {
  std::string dim;
  int64_t k = 1;
};
/// What every step that uses a group has: the index of its "axes" in
/// Program::groupAxes.
struct GroupAttrs {
  size_t group = 0;
};
/// all_reduce: how members combine. In place on Step::out, or, combined
/// ("bufs" in the .mprog), on every buffer of `buffers` (Step::out is the
/// first), packed end to end into the step's scratch for one collective.
struct AllReduceAttrs : GroupAttrs {
  Reduction reduction = Reduction::Sum;
  std::vector<Operand> buffers;
};
// The collectives that cut or join a dim carry, under device weights, each
// group member's block of it in rank order ("blocks" in the .mprog); empty
// when the blocks are equal (groupBlocks in Collectives.h).
/// One tensor of a combined all_gather or reduce_scatter ("parts" in the
/// .mprog): its operands and the dim it joins or cuts into equal blocks.
struct MovePart {
  Operand in, out;
  std::string dim;
};
/// all_gather: the dim concatenated. Combined, `parts` lists every tensor
/// (Step::in/out and `dim` are the first's), gathered in one collective.
struct AllGatherAttrs : GroupAttrs {
  std::string dim;
  std::vector<int64_t> blocks;
  std::vector<MovePart> parts;
};
/// reduce_scatter: the dim cut and how members combine; combined, as
/// all_gather.
struct ReduceScatterAttrs : GroupAttrs {
  std::string dim;
  Reduction reduction = Reduction::Sum;
  std::vector<int64_t> blocks;
  std::vector<MovePart> parts;
};
/// all_to_all: the dim cut and the dim concatenated.
struct AllToAllAttrs : GroupAttrs {
  std::string splitDim;
  std::string concatDim;
  std::vector<int64_t> splitBlocks;
  std::vector<int64_t> concatBlocks;
};
/// slice: the dim cut.
struct SliceAttrs : GroupAttrs {
  std::string dim;
  std::vector<int64_t> blocks;
};

/// collective_permute: member `source` of the group sends its whole `in`
/// to member `target`'s `out`, for each (source, target) pair (each member
/// a source at most once and a target at most once); a member no pair
/// targets keeps its `out`. Pipeline stages pass activations and gradients
/// this way (XLA's CollectivePermute, NCCL's send/recv).
struct CollectivePermuteAttrs : GroupAttrs {
  std::vector<std::pair<int64_t, int64_t>> pairs;
};

/// fused: an expression program (FusedStep.h). Its inputs are Step::in,
/// its outputs `outs` (Step::out is the first); output i writes value
/// outValues[i].
struct FusedAttrs {
  std::vector<Operand> outs;
  std::vector<int32_t> outValues;
  /// The element types of the inputs, then the outputs: a 16-bit operand is
  /// read and written as it is (widened and rounded by the kernel, never
  /// staged in the scratch).
  std::vector<DType> types;
  /// The iteration dims and sizes, the last `reduced` of them reduced by
  /// the body's reductions.
  std::vector<std::string> dims;
  std::vector<int64_t> sizes;
  size_t reduced = 0;
  std::vector<FusedInstr> body;
  FusedPlan plan;
};

/// A buffer a loop moves: in iteration i the body sees it `i * stride` bytes
/// further into the arena (a slice of a stacked tensor: a layer's weights,
/// its saved activations, its gradient).
struct StackedBuffer {
  /// Index into Program::buffers.
  size_t buffer = 0;
  int64_t stride = 0;
};

/// loop: the body (Program::loopBodies[body]) runs `count` times, iteration
/// i from 0 up (from count - 1 down when `reverse`), each stacked buffer
/// moved to iteration i's slice. The session runs it; devices run the body's
/// steps.
struct LoopAttrs {
  int64_t count = 1;
  bool reverse = false;
  std::vector<StackedBuffer> stacked;
  size_t body = 0;
};

/// What both attention steps have besides their operands: the key dim (one
/// dim of k), the head dims (contracted between q and k), the scale of the
/// scores, and the geometry the loader plans from the operands (the roles
/// of their dims, the roles' sizes, the operands' strides along them:
/// Attention.h).
struct AttentionSpec {
  std::string key;
  std::vector<std::string> head;
  double scale = 1;
  /// Whether Step::in ends with a bias.
  bool bias = false;
  AttentionGeometry geometry;
};

/// attention: fused scaled dot-product attention (FlashAttention).
/// Step::in is q, k, v (and bias), Step::out is o; `lse` is the second
/// output, each row's log-sum-exp of the scores.
struct AttentionAttrs : AttentionSpec {
  Operand lse;
};

/// attention_grad: the gradients of attention. Step::in is q, k, v, o,
/// lse, dout (and bias), Step::out is dq; `dk` and `dv` are the other
/// outputs.
struct AttentionGradAttrs : AttentionSpec {
  Operand dk, dv;
};
/// wait: completes the collectives started (Step::ticket) under `tickets`;
/// a started collective's operands may be used only after its wait
/// (docs/mprog.md#overlapped-collectives).
struct WaitAttrs {
  std::vector<int64_t> tickets;
  /// A carried wait (docs/mprog.md#collectives-carried-across-iterations):
  /// in a loop body, it completes the collectives its tickets started later
  /// in the body in the iteration before (none in the first); the loop
  /// completes the last iteration's when it ends.
  bool carried = false;
};

namespace detail {
template <typename First, typename... Rest>
using VariantOfRest = std::variant<Rest...>;
} // namespace detail

/// The attributes of a step: alternative i is those of OpKind i.
using StepAttrs = detail::VariantOfRest<void
#define MESHC_STEP_KIND(Kind, Spelling, Group, Category) , Kind##Attrs
#include "runtime/core/StepKinds.def"
                                        >;

// A kind uses a group exactly when its attributes carry one.
#define MESHC_STEP_KIND(Kind, Spelling, Group, Category)                       \
  static_assert(std::is_base_of_v<GroupAttrs, Kind##Attrs> ==                  \
                    (StepGroup::Group != StepGroup::None),                     \
                #Kind "Attrs must derive from GroupAttrs exactly when "        \
                      "StepKinds.def gives " #Kind " a group");
#include "runtime/core/StepKinds.def"

/// One step of the program, validated.
struct Step {
  /// Position in the "steps" array.
  size_t index = 0;
  Phase phase = Phase::Forward;
  /// The operands read: einsum inputs; binary lhs, rhs;
  /// softmax_cross_entropy logits, labels; attention q, k, v (bias);
  /// attention_grad q, k, v, o, lse, dout (bias); the single input of the
  /// others (none for fill, range, dropout and all_reduce).
  std::vector<Operand> in;
  /// The operand written (the buffer itself for all_reduce; the first of
  /// several: outputs()).
  Operand out;
  /// Scratch this step needs on every device.
  int64_t scratchBytes = 0;
  /// Where in the device scratch the step's scratch starts: 0, but for a
  /// started collective a place of its own while it runs beside the steps
  /// up to its wait (assigned by the loader).
  int64_t scratchOffset = 0;
  /// A started collective ("start" in the .mprog): the ticket its wait step
  /// names; -1 for a step that runs to completion.
  int64_t ticket = -1;
  /// The kind's attributes; their alternative is the step's kind.
  StepAttrs attrs;

  /// The step's kind.
  OpKind op() const { return static_cast<OpKind>(attrs.index()); }
  /// The attributes of a step of the kind whose attributes are `Attrs`.
  template <typename Attrs> const Attrs &as() const {
    return std::get<Attrs>(attrs);
  }
  /// The index into Program::groupAxes of a step that uses a group
  /// (usesGroup(op())); none for the others.
  std::optional<size_t> group() const;
  /// The operands the step writes: a fused step's outs; attention's out and
  /// lse; attention_grad's out (dq), dk and dv; else out.
  std::vector<const Operand *> outputs() const;
  std::vector<Operand *> outputs();
  /// Every operand the step reads or writes: in, outputs(), and the
  /// members of a combined collective (all_reduce "bufs", "parts").
  std::vector<const Operand *> operands() const;
};

/// Local SGD: after every `every`-th training run, the param buffers are
/// averaged over the mesh-axis groups of `axes`.
struct SyncSpec {
  int64_t every = 1;
  std::vector<std::string> axes;
  /// Indexes into Program::buffers, each a param's.
  std::vector<size_t> buffers;
  /// The steps that do it on every device: per buffer, an all_reduce (sum)
  /// and a unary scale by 1/G. Their index is steps.size() + position.
  std::vector<Step> steps;
};

/// Gradient accumulation (meshc --microbatches): a training run is `count`
/// runs of the forward and backward steps, each on the next microbatch of
/// the inputs (the program's batch), then one run of the update steps; after
/// it the `accumulators` (the gradient sums the backward steps add to) are
/// zeroed, and every output is the mean of its microbatch values.
struct MicrobatchSpec {
  int64_t count = 1;
  /// Indexes into Program::buffers, each a param's (a slot's).
  std::vector<size_t> accumulators;
};

/// The "training" member: what the compiler says about a training program.
/// Only `sync` and `microbatches` change how the program runs.
struct TrainingSpec {
  /// Informational: the optimizer's name and hyperparameters.
  std::string optimizer;
  std::vector<std::pair<std::string, double>> hyperparams;
  /// The scalar output that is the training loss (empty: not named).
  std::string loss;
  std::optional<SyncSpec> sync;
  std::optional<MicrobatchSpec> microbatches;
};

/// A loaded .mprog.
struct Program {
  /// Where it was read from, for messages.
  std::string fileName;
  std::string name;
  std::string source;
  layout::Mesh mesh;
  uint64_t seed = 0;
  int64_t arenaBytes = 0;
  std::vector<Buffer> buffers;
  std::vector<Tensor> tensors;
  std::vector<Step> steps;
  /// The bodies of the loop steps (LoopAttrs::body), nested loops' after
  /// their parents'. Their steps are numbered after `steps`, in file order
  /// (depth first), and the training.sync steps after them.
  std::vector<std::vector<Step>> loopBodies;
  /// Per body step, numbered from steps.size(): its body and position.
  std::vector<std::pair<size_t, size_t>> bodySteps;
  /// The distinct "axes" lists of the steps that use a group, in first-use
  /// order.
  std::vector<std::vector<std::string>> groupAxes;
  /// The largest scratch any step needs.
  int64_t scratchBytes = 0;
  /// Per buffer, the most bytes the loops around any of its uses move it
  /// by (the loader's LoopReach at its deepest; empty without loops).
  std::vector<int64_t> loopReach;
  /// Present for training programs.
  std::optional<TrainingSpec> training;
  /// The device whose block sizes this program's steps and buffers have,
  /// or -1: each the largest of any device (what the arena is planned for).
  int64_t device = -1;
  /// When the .mprog gives some sizes per device (unequal blocks under
  /// device weights, docs/mprog.md#per-device-sizes): the program device d
  /// runs at index d, devices with the same blocks sharing one. Empty when
  /// every device runs this program.
  std::vector<std::shared_ptr<const Program>> perDevice;

  /// The program device `deviceId` runs: its own, or this one.
  const Program &on(int64_t deviceId) const {
    return perDevice.empty() ? *this : *perDevice[size_t(deviceId)];
  }
  /// The step at `index`: steps[index], then the loop bodies' steps, then
  /// training.sync's steps.
  const Step &step(size_t index) const;
  /// How many steps steps and the loop bodies hold: the index of the first
  /// training.sync step.
  size_t stepCount() const { return steps.size() + bodySteps.size(); }
  /// Where step `index` is, for messages: "step 4", "step 4 (loop) body
  /// step 2", "training.sync".
  std::string stepLabel(size_t index) const;
  /// The last step a device runs for `step`: itself, or for a loop the
  /// last step of its body (in the last iteration).
  const Step &lastRun(const Step &step) const {
    return step.op() == OpKind::Loop ? lastRun(bodyOf(step).back()) : step;
  }
  /// The steps of loop step `loop`'s body.
  const std::vector<Step> &bodyOf(const Step &loop) const {
    return loopBodies[loop.as<LoopAttrs>().body];
  }

  /// The tensor of `role` called `name`, or null.
  const Tensor *findTensor(Role role, const std::string &name) const;
  /// Per step index, where device `deviceId`'s block starts in the global
  /// dims of a step that draws on them: dropout (every dim of its mask),
  /// one_hot (its class dim, one offset); empty for the other steps.
  std::vector<std::vector<int64_t>> blockOffsets(int64_t deviceId) const;
};

/// Whether param `tensor` is a gradient accumulator of `program`'s
/// training.microbatches: zero between training runs, so it is not dumped,
/// checkpointed or read by --init-params, and a program with microbatches
/// restores a checkpoint of one without (and the other way round).
bool isAccumulator(const Program &program, const Tensor &tensor);

/// The params of `program` (optimizer slots included, gradient
/// accumulators not), in file order.
std::vector<const Tensor *> paramsOf(const Program &program);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_PROGRAM_H
