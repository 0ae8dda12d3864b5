//===- StepKinds.h - The step kinds of .mprog programs ----------*- C++ -*-===//
//
// OpKind and what the table of StepKinds.def says about each kind: its "op"
// spelling, whether it runs over a group of devices, its trace category.
// Plain constexpr C++ with no dependencies, so the compiler's emitter takes
// its spellings from here too and cannot write a kind the runtime lacks.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CORE_STEPKINDS_H
#define MESHC_RUNTIME_CORE_STEPKINDS_H

#include <cstddef>
#include <optional>
#include <string_view>

namespace meshc::runtime {

/// The step kinds (the "op" field), in the order of StepKinds.def.
enum class OpKind {
#define MESHC_STEP_KIND(Kind, Spelling, Group, Category) Kind,
#include "runtime/core/StepKinds.def"
};

/// The number of step kinds.
constexpr size_t kStepKindCount = 0
#define MESHC_STEP_KIND(Kind, Spelling, Group, Category) +1
#include "runtime/core/StepKinds.def"
    ;

/// How a step kind relates to the devices of its "axes" group.
enum class StepGroup {
  /// The device alone.
  None,
  /// The device's rank in its group, without communication (slice).
  Rank,
  /// Communication over the group.
  Collective,
};

namespace detail {
struct StepKindInfo {
  const char *spelling;
  StepGroup group;
  const char *category;
};
inline constexpr StepKindInfo kStepKindInfo[] = {
#define MESHC_STEP_KIND(Kind, Spelling, Group, Category)                       \
  {Spelling, StepGroup::Group, Category},
#include "runtime/core/StepKinds.def"
};
} // namespace detail

/// The "op" spelling of `op`.
constexpr const char *opName(OpKind op) {
  return detail::kStepKindInfo[static_cast<size_t>(op)].spelling;
}
/// How steps of kind `op` use their group.
constexpr StepGroup stepGroup(OpKind op) {
  return detail::kStepKindInfo[static_cast<size_t>(op)].group;
}
/// True for the steps that run over a group of devices (the collectives,
/// and slice, which needs the device's rank in its group).
constexpr bool usesGroup(OpKind op) { return stepGroup(op) != StepGroup::None; }
/// True for the steps that communicate over their group (the collectives;
/// not slice): the runtimes run them on a device's lane.
constexpr bool communicates(OpKind op) {
  return stepGroup(op) == StepGroup::Collective;
}
/// True for the collectives that copy their inputs into their scratch
/// before they communicate (all_gather, reduce_scatter, all_to_all; plain
/// or combined): started, they read their inputs only where they start, so
/// a step after the start may write them before the wait
/// (docs/mprog.md#overlapped-collectives).
constexpr bool readsInputsAtStart(OpKind op) {
  return op == OpKind::AllGather || op == OpKind::ReduceScatter ||
         op == OpKind::AllToAll;
}
/// The step trace's category of `op` ("elementwise", "reduction", "gemm",
/// "collective", "copy").
constexpr const char *opCategory(OpKind op) {
  return detail::kStepKindInfo[static_cast<size_t>(op)].category;
}
/// The kind spelled `spelling`, if any.
constexpr std::optional<OpKind> opKindNamed(std::string_view spelling) {
  for (size_t kind = 0; kind < kStepKindCount; ++kind)
    if (spelling == detail::kStepKindInfo[kind].spelling)
      return static_cast<OpKind>(kind);
  return std::nullopt;
}

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_CORE_STEPKINDS_H
