//===- Collectives.cpp - Collective communication interface ---------------===//
//
// The mesh partition into collective groups.
//
//===----------------------------------------------------------------------===//

#include "runtime/Collectives.h"

#include "runtime/Error.h"

#include <map>
#include <utility>

namespace meshc::runtime {

Communicator::~Communicator() = default;
Collectives::~Collectives() = default;

GroupPartition partitionMesh(const layout::Mesh &mesh,
                             const std::vector<std::string> &axes) {
  std::vector<bool> inGroup(mesh.rank(), false);
  std::vector<size_t> axisIndices;
  for (const std::string &name : axes) {
    size_t axis = *mesh.axisIndex(name);
    inGroup[axis] = true;
    axisIndices.push_back(axis);
  }
  int64_t devices = mesh.numDevices();
  GroupPartition partition;
  partition.groupOf.resize(devices);
  partition.rankOf.resize(devices);
  // Devices agreeing on every coordinate outside `axes` share a group; the
  // key is those coordinates (group ids follow the lowest device id).
  std::map<std::vector<int64_t>, size_t> groupIds;
  for (int64_t device = 0; device < devices; ++device) {
    std::vector<int64_t> coords = mesh.coordinates(device);
    std::vector<int64_t> key;
    for (size_t axis = 0; axis < coords.size(); ++axis)
      if (!inGroup[axis])
        key.push_back(coords[axis]);
    auto [it, fresh] = groupIds.emplace(key, partition.groups.size());
    if (fresh)
      partition.groups.emplace_back();
    int64_t rank = 0;
    for (size_t axis : axisIndices)
      rank = rank * mesh.axisSize(axis) + coords[axis];
    partition.groupOf[device] = it->second;
    partition.rankOf[device] = rank;
  }
  int64_t groupSize = devices / static_cast<int64_t>(partition.groups.size());
  for (auto &group : partition.groups)
    group.resize(groupSize);
  for (int64_t device = 0; device < devices; ++device)
    partition.groups[partition.groupOf[device]][partition.rankOf[device]] =
        device;
  return partition;
}

std::vector<int64_t> groupBlocks(const std::vector<int64_t> &listed,
                                 int64_t members, int64_t size) {
  if (!listed.empty())
    return listed;
  return std::vector<int64_t>(size_t(members), size / members);
}

std::vector<int64_t> blockStarts(const std::vector<int64_t> &blocks) {
  std::vector<int64_t> starts;
  int64_t start = 0;
  for (int64_t block : blocks) {
    starts.push_back(start);
    start += block;
  }
  return starts;
}

std::vector<int64_t> chunkSizes(int64_t outer, int64_t inner,
                                const std::vector<int64_t> &blocks,
                                int64_t elementBytes) {
  std::vector<int64_t> sizes;
  for (int64_t block : blocks)
    sizes.push_back(outer * block * inner * elementBytes);
  return sizes;
}

std::vector<StridedCopy> splitCopies(int64_t outer, int64_t inner,
                                     const std::vector<int64_t> &blocks,
                                     int64_t elementBytes) {
  int64_t row = 0;
  for (int64_t block : blocks)
    row += block * inner * elementBytes;
  std::vector<StridedCopy> copies;
  int64_t chunk = 0;
  for (int64_t start : blockStarts(blocks)) {
    int64_t width = blocks[copies.size()] * inner * elementBytes;
    copies.push_back(
        {chunk, width, start * inner * elementBytes, row, width, outer});
    chunk += width * outer;
  }
  return copies;
}

std::vector<StridedCopy> concatCopies(int64_t outer, int64_t inner,
                                      const std::vector<int64_t> &blocks,
                                      int64_t elementBytes) {
  std::vector<StridedCopy> copies =
      splitCopies(outer, inner, blocks, elementBytes);
  for (StridedCopy &copy : copies) {
    std::swap(copy.dstOffset, copy.srcOffset);
    std::swap(copy.dstPitch, copy.srcPitch);
  }
  return copies;
}

namespace {

/// A row-major shape seen as [outer, size, inner] around dim `dim`.
struct Around {
  int64_t outer = 1, size = 1, inner = 1;
};
Around around(const NamedShape &shape, const std::string &dim) {
  Around view;
  int pos = shape.position(dim);
  for (int d = 0; d < static_cast<int>(shape.sizes.size()); ++d)
    (d < pos    ? view.outer
     : d == pos ? view.size
                : view.inner) *= shape.sizes[d];
  return view;
}

/// One contiguous copy of `bytes`, as a StridedCopy.
std::vector<StridedCopy> contiguous(int64_t dstOffset, int64_t srcOffset,
                                    int64_t bytes) {
  return {{dstOffset, bytes, srcOffset, bytes, bytes, 1}};
}

} // namespace

void runAllReduceStep(const Step &step, Communicator &comm, DType dtype,
                      char *out,
                      const std::function<char *(const Operand &)> &at,
                      char *scratch, const CopyRunner &copy) {
  const AllReduceAttrs &attrs = step.as<AllReduceAttrs>();
  if (attrs.buffers.empty()) {
    comm.allReduce(out, step.out.shape.elements(), dtype, attrs.reduction);
    return;
  }
  int64_t bytes = dtypeBytes(dtype), offset = 0;
  auto whole = [&](const Operand &buffer, bool pack) {
    int64_t width = buffer.shape.elements() * bytes;
    StridedCopy run{
        pack ? offset : 0, width, pack ? 0 : offset, width, width, 1};
    if (pack)
      copy({run}, at(buffer), scratch);
    else
      copy({run}, scratch, at(buffer));
    offset += width;
  };
  for (const Operand &buffer : attrs.buffers)
    whole(buffer, true);
  comm.allReduce(scratch, offset / bytes, dtype, attrs.reduction);
  offset = 0;
  for (const Operand &buffer : attrs.buffers)
    whole(buffer, false);
}

namespace {

/// The chunk copies of one part of a combined all_gather or reduce_scatter:
/// `copies` (one per member chunk, chunk g at g times the part's chunk
/// bytes on the packed side) moved to the packed buffer's layout, where
/// member g's chunk holds every part's block g in part order (`total`
/// bytes; this part's at `prefix`). `packedIsDst`: the packed side is the
/// copies' destination.
std::vector<StridedCopy> intoPackedChunks(std::vector<StridedCopy> copies,
                                          int64_t partChunk, int64_t total,
                                          int64_t prefix, bool packedIsDst) {
  for (size_t g = 0; g < copies.size(); ++g) {
    int64_t &offset = packedIsDst ? copies[g].dstOffset : copies[g].srcOffset;
    offset += int64_t(g) * (total - partChunk) + prefix;
  }
  return copies;
}

/// A combined all_gather or reduce_scatter: every part's blocks packed so
/// that member g's chunk holds block g of each part, one collective, then
/// unpacked.
void runCombinedMove(const Step &step, const std::vector<MovePart> &parts,
                     Communicator &comm, DType dtype,
                     const std::function<char *(const Operand &)> &at,
                     char *scratch, const CopyRunner &copy,
                     CollectivePart part) {
  int64_t bytes = dtypeBytes(dtype);
  int64_t n = comm.size(), rank = comm.rank();
  bool gather = step.op() == OpKind::AllGather;
  // Each part's chunk (one member's block) and its place in a chunk.
  std::vector<int64_t> chunk, prefix;
  int64_t total = 0;
  for (const MovePart &part : parts) {
    const Operand &small = gather ? part.in : part.out;
    chunk.push_back(small.shape.elements() * bytes);
    prefix.push_back(total);
    total += chunk.back();
  }
  for (size_t i = 0; i < parts.size() && part != CollectivePart::Rest; ++i) {
    if (gather) {
      copy(contiguous(rank * total + prefix[i], 0, chunk[i]), at(parts[i].in),
           scratch);
      continue;
    }
    Around view = around(parts[i].in.shape, parts[i].dim);
    copy(intoPackedChunks(
             splitCopies(view.outer, view.inner,
                         std::vector<int64_t>(size_t(n), view.size / n), bytes),
             chunk[i], total, prefix[i], true),
         at(parts[i].in), scratch);
  }
  if (part == CollectivePart::Pack)
    return;
  if (gather)
    comm.allGather(scratch, total);
  else
    comm.reduceScatter(scratch, total / bytes, dtype,
                       step.as<ReduceScatterAttrs>().reduction);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!gather) {
      copy(contiguous(0, rank * total + prefix[i], chunk[i]), scratch,
           at(parts[i].out));
      continue;
    }
    Around view = around(parts[i].out.shape, parts[i].dim);
    copy(
        intoPackedChunks(
            concatCopies(view.outer, view.inner,
                         std::vector<int64_t>(size_t(n), view.size / n), bytes),
            chunk[i], total, prefix[i], false),
        scratch, at(parts[i].out));
  }
}

} // namespace

void runMoveStep(const Step &step, Communicator &comm, DType dtype,
                 const char *in, char *out, char *scratch,
                 const CopyRunner &copy,
                 const std::function<char *(const Operand &)> &at,
                 CollectivePart part) {
  int64_t bytes = dtypeBytes(dtype);
  int64_t n = comm.size(), rank = comm.rank();
  const NamedShape &inShape = step.in[0].shape;
  if (part != CollectivePart::Whole && !readsInputsAtStart(step.op()))
    throw RuntimeError("step " + std::to_string(step.index) + " (" +
                       opName(step.op()) +
                       ") does not read its inputs at its start: it runs "
                       "whole");
  // The copies out of the inputs (Pack), then the rest (Rest).
  bool pack = part != CollectivePart::Rest, rest = part != CollectivePart::Pack;
  if (const auto *gather = std::get_if<AllGatherAttrs>(&step.attrs);
      gather && !gather->parts.empty())
    return runCombinedMove(step, gather->parts, comm, dtype, at, scratch, copy,
                           part);
  if (const auto *scatter = std::get_if<ReduceScatterAttrs>(&step.attrs);
      scatter && !scatter->parts.empty())
    return runCombinedMove(step, scatter->parts, comm, dtype, at, scratch, copy,
                           part);
  switch (step.op()) {
  case OpKind::AllGather: {
    const AllGatherAttrs &gather = step.as<AllGatherAttrs>();
    Around view = around(inShape, gather.dim);
    std::vector<int64_t> blocks = groupBlocks(gather.blocks, n, n * view.size);
    std::vector<int64_t> chunkBytes =
        chunkSizes(view.outer, view.inner, blocks, bytes);
    // With the dim outermost the chunks are the output itself.
    char *chunks = view.outer == 1 ? out : scratch;
    if (pack)
      copy(contiguous(blockStarts(chunkBytes)[rank], 0, chunkBytes[rank]), in,
           chunks);
    if (!rest)
      return;
    if (gather.blocks.empty())
      comm.allGather(chunks, chunkBytes[0]);
    else
      comm.allGatherV(chunks, chunkBytes);
    if (view.outer != 1)
      copy(concatCopies(view.outer, view.inner, blocks, bytes), chunks, out);
    return;
  }
  case OpKind::ReduceScatter: {
    const ReduceScatterAttrs &scatter = step.as<ReduceScatterAttrs>();
    Around view = around(inShape, scatter.dim);
    std::vector<int64_t> blocks = groupBlocks(scatter.blocks, n, view.size);
    if (pack)
      copy(splitCopies(view.outer, view.inner, blocks, bytes), in, scratch);
    if (!rest)
      return;
    std::vector<int64_t> counts = chunkSizes(view.outer, view.inner, blocks, 1);
    if (scatter.blocks.empty())
      comm.reduceScatter(scratch, counts[0], dtype, scatter.reduction);
    else
      comm.reduceScatterV(scratch, counts, dtype, scatter.reduction);
    copy(contiguous(0, blockStarts(counts)[rank] * bytes, counts[rank] * bytes),
         scratch, out);
    return;
  }
  case OpKind::AllToAll: {
    const AllToAllAttrs &allToAll = step.as<AllToAllAttrs>();
    Around view = around(inShape, allToAll.splitDim);
    std::vector<int64_t> splitBlocks =
        groupBlocks(allToAll.splitBlocks, n, view.size);
    // Member i's chunk for this one is `in` with the split dim cut to this
    // member's block and the concat dim member i's: `out` around its
    // concat dim.
    Around joined = around(step.out.shape, allToAll.concatDim);
    std::vector<int64_t> concatBlocks = groupBlocks(
        allToAll.concatBlocks, n, n * around(inShape, allToAll.concatDim).size);
    int64_t inBytes = inShape.elements() * bytes;
    if (pack)
      copy(splitCopies(view.outer, view.inner, splitBlocks, bytes), in,
           scratch);
    if (!rest)
      return;
    std::vector<int64_t> sendBytes =
        chunkSizes(view.outer, view.inner, splitBlocks, bytes);
    std::vector<int64_t> receiveBytes =
        chunkSizes(joined.outer, joined.inner, concatBlocks, bytes);
    if (allToAll.splitBlocks.empty() && allToAll.concatBlocks.empty())
      comm.allToAll(scratch, scratch + inBytes, sendBytes[0]);
    else
      comm.allToAllV(scratch, sendBytes, scratch + inBytes, receiveBytes);
    copy(concatCopies(joined.outer, joined.inner, concatBlocks, bytes),
         scratch + inBytes, out);
    return;
  }
  case OpKind::Slice: {
    const SliceAttrs &slice = step.as<SliceAttrs>();
    Around view = around(inShape, slice.dim);
    StridedCopy own = splitCopies(view.outer, view.inner,
                                  groupBlocks(slice.blocks, n, view.size),
                                  bytes)[size_t(rank)];
    own.dstOffset = 0;
    copy({own}, in, out);
    return;
  }
  case OpKind::CollectivePermute: {
    // A variable-count all-to-all in which each member sends one chunk (its
    // whole in, to its target) and receives at most one (from its source):
    // every backend's allToAllV moves only the chunks that are not empty.
    int64_t total = inShape.elements() * bytes;
    std::vector<int64_t> sendBytes(size_t(n), 0), receiveBytes(size_t(n), 0);
    for (auto [source, target] : step.as<CollectivePermuteAttrs>().pairs) {
      if (source == rank)
        sendBytes[size_t(target)] = total;
      if (target == rank)
        receiveBytes[size_t(source)] = total;
    }
    comm.allToAllV(in, sendBytes, out, receiveBytes);
    return;
  }
  default:
    throw RuntimeError("step " + std::to_string(step.index) + " (" +
                       opName(step.op()) +
                       ") is not a collective that moves "
                       "blocks");
  }
}

} // namespace meshc::runtime
