//===- Collectives.h - Collective communication interface -------*- C++ -*-===//
//
// A collective over mesh axes [a1, a2] runs in groups: the devices that share
// every coordinate except those of a1 and a2. A device's rank in its group is
// its shard index over the axes (coord[a1] * size(a2) + coord[a2]), the same
// number that picks its block of a dim split over [a1, a2]. partitionMesh
// computes the groups; a backend's Collectives turns each group into one
// Communicator per member (as ncclCommInitRank or MPI_Comm_split would), and
// every member calls the same collective with the same sizes.
//
// Buffers follow NCCL's in-place conventions so backends can map them 1:1:
// allGather and reduceScatter work on `size` contiguous chunks of which the
// member's own is chunk `rank`. Under device weights the members' blocks of
// the dim a collective cuts or joins can differ (the step lists them): the
// variable-count forms (allGatherV, reduceScatterV, allToAllV; MPI's
// Allgatherv, Reduce_scatter, Alltoallv) take one count per member, the
// chunks still contiguous in rank order. splitCopies and concatCopies give
// the strided copies between a tensor and such chunks, for every backend.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_COLLECTIVES_H
#define MESHC_RUNTIME_COLLECTIVES_H

#include "runtime/Program.h"
#include "runtime/core/layout/Mesh.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace meshc::runtime {

/// How the devices of a mesh fall into groups for collectives over some axes.
struct GroupPartition {
  /// Each group's device ids in rank order.
  std::vector<std::vector<int64_t>> groups;
  /// Per device id: the group it is in.
  std::vector<size_t> groupOf;
  /// Per device id: its rank in that group.
  std::vector<int64_t> rankOf;
};

/// The groups of `mesh` for collectives over `axes` (names of mesh axes, each
/// at most once; an empty list gives groups of one device).
GroupPartition partitionMesh(const layout::Mesh &mesh,
                             const std::vector<std::string> &axes);

/// One member's handle on its group. Calls block until every member of the
/// group has made the same call; throws CollectiveAborted after
/// Collectives::abort().
class Communicator {
public:
  /// The communicator of member `rank` of a group of `size`.
  Communicator(int64_t rank, int64_t size)
      : memberRank(rank), groupSize(size) {}
  virtual ~Communicator();

  /// This member's rank in [0, size()).
  int64_t rank() const { return memberRank; }
  /// The number of members.
  int64_t size() const { return groupSize; }

  /// In place: every member's `count` elements at `data` become the
  /// element-wise reduction over the group. Every member ends with
  /// bit-identical values.
  virtual void allReduce(void *data, int64_t count, DType dtype,
                         Reduction reduction) = 0;
  /// In place: `data` holds size() chunks of `chunkCount` elements; on return
  /// chunk rank() holds the reduction over the group of every member's chunk
  /// rank(). The other chunks are clobbered.
  virtual void reduceScatter(void *data, int64_t chunkCount, DType dtype,
                             Reduction reduction) = 0;
  /// In place: `data` holds size() chunks of `chunkBytes`; on entry chunk
  /// rank() is this member's; on return chunk i is member i's.
  virtual void allGather(void *data, int64_t chunkBytes) = 0;
  /// `in` and `out` (disjoint) hold size() chunks of `chunkBytes`: chunk j of
  /// `in` goes to member j, and chunk i of `out` comes from member i.
  virtual void allToAll(const void *in, void *out, int64_t chunkBytes) = 0;

  /// allGather with chunk i of `chunkBytes[i]` (size() entries, the same on
  /// every member).
  virtual void allGatherV(void *data,
                          const std::vector<int64_t> &chunkBytes) = 0;
  /// reduceScatter with chunk i of `chunkCounts[i]` elements (the same list
  /// on every member); on return chunk rank() holds the reduction.
  virtual void reduceScatterV(void *data,
                              const std::vector<int64_t> &chunkCounts,
                              DType dtype, Reduction reduction) = 0;
  /// allToAll with chunks of their own sizes: chunk j of `in` (`sendBytes[j]`)
  /// goes to member j, chunk i of `out` (`receiveBytes[i]`) comes from member
  /// i; member i's sendBytes[j] equals member j's receiveBytes[i].
  virtual void allToAllV(const void *in, const std::vector<int64_t> &sendBytes,
                         void *out,
                         const std::vector<int64_t> &receiveBytes) = 0;

private:
  int64_t memberRank;
  int64_t groupSize;
};

/// The blocks, in rank order, of the dim a collective over `members`
/// devices cuts or joins: `listed` (the step's, under device weights) or,
/// when it is empty, `size` cut into equal blocks.
std::vector<int64_t> groupBlocks(const std::vector<int64_t> &listed,
                                 int64_t members, int64_t size);
/// Where each of `blocks` starts: their running sum, from 0.
std::vector<int64_t> blockStarts(const std::vector<int64_t> &blocks);

/// The sizes of the chunks `blocks` cut a tensor [outer, sum(blocks), inner]
/// into: outer · block · inner · `elementBytes` each (1: elements).
std::vector<int64_t> chunkSizes(int64_t outer, int64_t inner,
                                const std::vector<int64_t> &blocks,
                                int64_t elementBytes);

/// One strided copy: `rows` runs of `width` bytes, read `srcPitch` apart from
/// `srcOffset` and written `dstPitch` apart from `dstOffset` (byte offsets
/// into the buffers of the move it belongs to).
struct StridedCopy {
  int64_t dstOffset = 0;
  int64_t dstPitch = 0;
  int64_t srcOffset = 0;
  int64_t srcPitch = 0;
  int64_t width = 0;
  int64_t rows = 0;
};
/// A row-major tensor [outer, sum(blocks), inner] of `elementBytes` elements
/// cut along its middle dim into contiguous chunks [outer, blocks[g], inner],
/// chunk 0 first: one copy per chunk.
std::vector<StridedCopy> splitCopies(int64_t outer, int64_t inner,
                                     const std::vector<int64_t> &blocks,
                                     int64_t elementBytes);
/// The inverse of splitCopies: contiguous chunks joined along the middle dim.
std::vector<StridedCopy> concatCopies(int64_t outer, int64_t inner,
                                      const std::vector<int64_t> &blocks,
                                      int64_t elementBytes);

/// Runs `copies` from `src` to `dst` in a backend's memory.
using CopyRunner = std::function<void(const std::vector<StridedCopy> &copies,
                                      const char *src, char *dst)>;
/// Runs the all_reduce `step` through `comm` for every backend: in place on
/// Step::out (`out`, its bytes), or, combined (AllReduceAttrs::buffers, `at`
/// giving each one's bytes), packed end to end into `scratch` by `copy`,
/// reduced in one call and copied back.
void runAllReduceStep(const Step &step, Communicator &comm, DType dtype,
                      char *out,
                      const std::function<char *(const Operand &)> &at,
                      char *scratch, const CopyRunner &copy);

/// Which part of a collective step to run: all of it, or for a started one
/// of a kind that reads its inputs at its start (readsInputsAtStart) the
/// copy of its inputs into its scratch where it starts (on the device's
/// thread), then the rest (on the session's lane).
enum class CollectivePart { Whole, Pack, Rest };

/// Runs the all_gather, reduce_scatter, all_to_all or slice `step` through
/// `comm` for every backend: `in` and `out` are the step's operands' bytes,
/// `scratch` its scratch, `dtype` their element type, and `copy` moves bytes
/// in the backend's memory. Each works on its members' blocks of the dim it
/// cuts or joins (groupBlocks) and calls the equal-chunk form of `comm` when
/// the step lists none. A combined all_gather or reduce_scatter ("parts")
/// packs its parts' blocks into `scratch` (member g's chunk holding block g
/// of every part, in part order), moves them in one collective and unpacks
/// them; `at` gives each part's operands' bytes. `part`: all of it, only the
/// copies out of the inputs (Pack), or everything after them (Rest).
void runMoveStep(const Step &step, Communicator &comm, DType dtype,
                 const char *in, char *out, char *scratch,
                 const CopyRunner &copy,
                 const std::function<char *(const Operand &)> &at,
                 CollectivePart part = CollectivePart::Whole);

/// A backend's collectives: a factory of communicators.
class Collectives {
public:
  virtual ~Collectives();

  /// Creates one communicator per device for the groups of `partition`
  /// (indexed by device id). Called before any device runs.
  virtual std::vector<std::unique_ptr<Communicator>>
  split(const GroupPartition &partition) = 0;
  /// Wakes every member blocked in a collective of any communicator made
  /// here; they, and all later calls, throw CollectiveAborted. Used when one
  /// device fails so the others do not wait for it forever.
  virtual void abort() = 0;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_COLLECTIVES_H
