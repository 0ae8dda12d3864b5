//===- AttentionKernel.h - Fused attention on the CPU -----------*- C++ -*-===//
//
// The attention and attention_grad steps (docs/mprog.md#attention) as
// FlashAttention-2 computes them: the scores of one block of query rows
// against one block of keys at a time (AttentionWork's blocks), never all of
// a row's scores at once. The forward pass keeps each row's running maximum
// and sum (the online softmax) and rescales its output accumulator when the
// maximum grows; the backward pass recomputes each block's probabilities
// from the saved log-sum-exp. The products are cblas_sgemm calls on the
// operands where their rows and columns are plain strided matrices (else on
// packed copies of the block), the row functions Highway's (VectorMath.h).
//
// The work is cut into units that write disjoint elements, so that the
// threads of a device share them (CpuDevice runs them with its WorkerPool,
// after making the offset tables in the step's scratch): each unit gets one
// thread's working memory of attentionWorkFloats floats.
// The result of a unit does not depend on which thread runs it or on how
// the units are shared.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CPU_ATTENTIONKERNEL_H
#define MESHC_RUNTIME_CPU_ATTENTIONKERNEL_H

#include "runtime/Program.h"

#include <array>
#include <cstdint>

namespace meshc::runtime {

/// Where the kernel finds each operand of the step (f32; null for those the
/// step lacks; the inputs are only read) and the step's offset tables
/// (AttentionGeometry::fillTables).
struct AttentionPointers {
  std::array<float *, kAttentionOperands> data{};
  const int64_t *tables = nullptr;
};

/// The units of the forward pass: one per group and block of query rows.
int64_t attentionForwardUnits(const AttentionGeometry &geometry);
/// Forward unit `unit`: o and lse of its rows.
void attentionForward(const AttentionSpec &spec, const AttentionPointers &data,
                      int64_t unit, float *work);

/// The backward pass runs either per group (attentionGradGroup, one unit
/// per group: every block pair once, dq accumulated in the working memory),
/// or, when there are too few groups to share among the threads, in two
/// passes: per group and block of keys (attentionGradKeys: dk and dv), then
/// per group and block of query rows (attentionGradQueries: dq), which
/// computes the scores and their gradient twice but shares them among more
/// units. Both add the same terms in the same order.
int64_t attentionKeyUnits(const AttentionGeometry &geometry);
int64_t attentionQueryUnits(const AttentionGeometry &geometry);
void attentionGradGroup(const AttentionSpec &spec,
                        const AttentionPointers &data, int64_t group,
                        float *work);
void attentionGradKeys(const AttentionSpec &spec, const AttentionPointers &data,
                       int64_t unit, float *work);
void attentionGradQueries(const AttentionSpec &spec,
                          const AttentionPointers &data, int64_t unit,
                          float *work);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_CPU_ATTENTIONKERNEL_H
