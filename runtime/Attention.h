//===- Attention.h - The geometry of attention steps ------------*- C++ -*-===//
//
// The fused attention steps ("attention", "attention_grad", docs/mprog.md
// #attention) see their operands by role, not by name: the dims of k other
// than the key and head dims are the group dims G, those of q other than G
// and the head dims the query dims M, those of v other than G and the key
// the value dims E, the head dims D, the key dim N. Roles belong to an
// operand's dims, not to names: a name may be a head dim of q and k and a
// value dim of v and o (charlm's d_k).
//
// The loader derives the roles from the operands' named shapes, checks them
// (planAttention) and keeps an AttentionGeometry in the step: the size of
// each role and, for each operand and each role it is indexed by, its
// strides along the role's dims. From these a device makes (fillTables),
// for each operand and role, a table of element offsets (entry i: the
// offset of the i-th index of the role's dims, row-major in the role's dim
// order). So the element (g, m, d) of q is at offsets(Q, Group)[g] +
// offsets(Q, Query)[m] + offsets(Q, Head)[d], whatever q's dim order; a
// bias lacking some dims has 0 along them (broadcast). The CPU and CUDA
// kernels read the same tables. The loader only counts their entries (a
// table is as long as its role has indexes, which the program's text does
// not bound), the CPU makes them in the step's scratch at each run, CUDA
// once in allocate().
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_ATTENTION_H
#define MESHC_RUNTIME_ATTENTION_H

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace meshc::runtime {

struct NamedShape;

/// The roles of attention's dims: G, M, N, D, E.
enum AttentionRole : int {
  kGroupRole,
  kQueryRole,
  kKeyRole,
  kHeadRole,
  kValueRole,
  kAttentionRoles
};

/// The operands of the attention steps. attention reads q, k, v (and bias)
/// and writes o and lse; attention_grad reads q, k, v, o, lse, dout (and
/// bias) and writes dq, dk and dv.
enum AttentionOperand : int {
  kQ,
  kK,
  kV,
  kBias,
  kO,
  kLse,
  kDOut,
  kDQ,
  kDK,
  kDV,
  kAttentionOperands
};

/// "q", "k", ... (the names messages use).
const char *attentionOperandName(AttentionOperand operand);
/// Whether `operand` is indexed by `role` (q by G, M, D; k by G, N, D; v by
/// G, N, E; bias by G, M, N; o and dout by G, M, E; lse by G, M; dq, dk, dv
/// as q, k, v).
bool attentionIndexes(AttentionOperand operand, AttentionRole role);

/// The sizes of the roles and where each operand's elements are along them.
/// The offset tables themselves are made by the devices (fillTables), not
/// by the loader: they have as many entries as the roles have indexes.
struct AttentionGeometry {
  /// G, M, N, D, E: the product of each role's sizes (1 for no dims).
  std::array<int64_t, kAttentionRoles> size = {1, 1, 1, 1, 1};
  /// The dims of each role, in the order its indexes run (G in k's order,
  /// M in q's, D in "head" order, E in v's), and their sizes.
  std::array<std::vector<std::string>, kAttentionRoles> dims;
  std::array<std::vector<int64_t>, kAttentionRoles> dimSizes;
  /// Per operand and role it is indexed by: the operand's stride along
  /// each of the role's dims (0 along one it lacks).
  std::array<std::array<std::vector<int64_t>, kAttentionRoles>,
             kAttentionOperands>
      steps;
  /// Where the table of (operand, role) starts among the tables (in
  /// entries); -1 when the step lacks the operand or the operand is not
  /// indexed by the role.
  std::array<std::array<int64_t, kAttentionRoles>, kAttentionOperands> start;
  /// The table's stride where entry i is i * stride for every i (0 for a
  /// role of at most one index), else -1.
  std::array<std::array<int64_t, kAttentionRoles>, kAttentionOperands> stride;
  /// The entries of all tables together.
  int64_t tableEntries = 0;

  AttentionGeometry();
  /// Whether the step has `operand` (bias is optional).
  bool has(AttentionOperand operand) const {
    return start[operand][kGroupRole] >= 0;
  }
  /// Writes the tables into `tables` (tableEntries entries): entry i of the
  /// table of (operand, role) is the offset of the role's i-th index
  /// (row-major over its dims) in the operand.
  void fillTables(int64_t *tables) const;
  /// The table of (operand, role) among `tables`; `role` must index
  /// `operand`.
  const int64_t *offsets(const int64_t *tables, AttentionOperand operand,
                         AttentionRole role) const {
    return tables + start[operand][role];
  }
};

/// What planAttention found wrong: the operand it concerns (or -1), else
/// the attribute ("key", or "head" with the list position `index`, -1 for
/// the list), and the message.
struct AttentionIssue {
  int operand = -1;
  std::string attr;
  int index = -1;
  std::string message;
};

/// Derives the roles of an attention step's dims from its operands'
/// shapes (`shapes[o]` null where the step lacks operand o: bias, and the
/// operands of the other kind), checks them and fills `geometry`. Returns
/// the first problem, if any: the key or a head dim that is not a dim of q
/// and k (or is listed twice), q with the key dim, an operand lacking a
/// group dim, value dims that are query dims, an output or saved operand
/// without exactly its roles' dims, a bias dim that is no group, query or
/// key dim, sizes whose tables or working memory overflow 64 bits (attr
/// "sizes").
std::optional<AttentionIssue>
planAttention(const std::array<const NamedShape *, kAttentionOperands> &shapes,
              const std::string &key, const std::vector<std::string> &head,
              AttentionGeometry &geometry);

/// The CPU kernel's blocks: query rows per block, keys per block.
constexpr int64_t kAttentionQueryBlock = 64;
constexpr int64_t kAttentionKeyBlock = 128;

/// The CPU kernel's blocks for a step (kAttentionQueryBlock and
/// kAttentionKeyBlock, less where the step has fewer rows or keys) and the
/// parts of one thread's working memory (offsets in floats, each part on a
/// 64-byte line): the packed blocks of q, k, v (and o, dout), a block of
/// scores (and of their gradient), the running rows, and for the gradient
/// a block of dk and dv and all of one group's dq. `total` is -1 when it
/// overflows 64 bits.
struct AttentionWork {
  int64_t queryBlock = 1, keyBlock = 1;
  int64_t q = 0, k = 0, v = 0, o = 0, dout = 0, scores = 0, dscores = 0, dk = 0,
          dv = 0, dq = 0, rowsA = 0, rowsB = 0, total = 0;
};
AttentionWork attentionWork(const AttentionGeometry &geometry, bool grad);
/// The floats of working memory one thread of the CPU kernel needs.
int64_t attentionWorkFloats(const AttentionGeometry &geometry, bool grad);
/// The bytes the offset tables take at the start of the step's scratch
/// (a multiple of 64).
int64_t attentionTableBytes(const AttentionGeometry &geometry);
/// The step's scratch on the CPU: its offset tables, then the working
/// memory of the device's own thread (the helpers have theirs); -1 when it
/// overflows 64 bits.
int64_t attentionScratchBytes(const AttentionGeometry &geometry, bool grad);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_ATTENTION_H
