//===- CollectivesTest.cpp - CPU collectives against plain loops ----------===//
//
// Every CPU collective runs on real threads, one per device, and is compared
// with a single-threaded loop over the same group: empty, one-element, odd
// and large buffers, on groups of 1, 2, 4 and 8 devices and on the sub-groups
// of 2x4 and 2x2x2 meshes; the barrier in its sleeping and spinning modes.
// Values are small integers, so sums are exact whatever order the ring adds
// them in.
//
//===----------------------------------------------------------------------===//

#include "runtime/Error.h"
#include "runtime/core/HalfFloat.h"
#include "runtime/cpu/CpuCollectives.h"

#include <gtest/gtest.h>

#include <atomic>

#include <cstring>
#include <functional>
#include <thread>

using namespace meshc;
using namespace meshc::runtime;

namespace {

layout::Mesh mesh(const std::string &text) {
  return *layout::Mesh::parse(text);
}

/// Runs body(device, communicator) on one thread per device of `m`.
void onDevices(const layout::Mesh &m, const std::vector<std::string> &axes,
               const std::function<void(int64_t, Communicator &)> &body) {
  CpuCollectives collectives;
  std::vector<std::unique_ptr<Communicator>> comms =
      collectives.split(partitionMesh(m, axes));
  std::vector<std::thread> threads;
  for (int64_t d = 0; d < m.numDevices(); ++d)
    threads.emplace_back([&, d] { body(d, *comms[d]); });
  for (std::thread &thread : threads)
    thread.join();
}

/// The test value of element `i` on device `d`.
float value(int64_t d, int64_t i) {
  return static_cast<float>((d * 7 + i * 3) % 11) - 5.0f;
}

struct CollectiveCase {
  std::string mesh;
  std::vector<std::string> axes;
  int64_t count;
};

/// How gtest prints a case (in test listings and failures).
void PrintTo(const CollectiveCase &c, std::ostream *os) {
  *os << "mesh " << c.mesh << ", " << c.axes.size() << " axes, count "
      << c.count;
}

std::string caseName(const testing::TestParamInfo<CollectiveCase> &info) {
  std::string name = "mesh_";
  for (char c : info.param.mesh)
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  name += "_axes_";
  for (const std::string &axis : info.param.axes)
    name += axis;
  return name + "_count_" + std::to_string(info.param.count);
}

std::vector<CollectiveCase> allCases() {
  std::vector<CollectiveCase> cases;
  for (int64_t devices : {1, 2, 4, 8})
    for (int64_t count : {0, 1, 7, 1001, 1 << 20})
      cases.push_back({"d:" + std::to_string(devices), {"d"}, count});
  for (std::vector<std::string> axes :
       {std::vector<std::string>{"b"}, {"m"}, {"b", "m"}, {"m", "b"}, {}})
    for (int64_t count : {0, 1, 7, 1001})
      cases.push_back({"b:2;m:4", axes, count});
  for (std::vector<std::string> axes : {std::vector<std::string>{"x"},
                                        {"y"},
                                        {"z"},
                                        {"x", "z"},
                                        {"z", "x"},
                                        {"x", "y", "z"}})
    for (int64_t count : {1, 7, 1001})
      cases.push_back({"x:2;y:2;z:2", axes, count});
  return cases;
}

class CollectivesTest : public testing::TestWithParam<CollectiveCase> {
protected:
  layout::Mesh m = mesh(GetParam().mesh);
  GroupPartition partition = partitionMesh(m, GetParam().axes);
  int64_t count = GetParam().count;
  int64_t groupSize = static_cast<int64_t>(partition.groups[0].size());
  /// The chunk size of the chunked collectives: `count`, except that the
  /// large case keeps the whole buffer at `count` elements.
  int64_t chunk = count >= (1 << 20) ? count / groupSize : count;
  const std::vector<int64_t> &groupOf(int64_t d) const {
    return partition.groups[partition.groupOf[d]];
  }
};

TEST_P(CollectivesTest, AllReduceSumMatchesLoop) {
  std::vector<std::vector<float>> data(m.numDevices());
  onDevices(m, GetParam().axes, [&](int64_t d, Communicator &comm) {
    data[d].resize(count);
    for (int64_t i = 0; i < count; ++i)
      data[d][i] = value(d, i);
    comm.allReduce(data[d].data(), count, DType::F32, Reduction::Sum);
  });
  for (int64_t d = 0; d < m.numDevices(); ++d)
    for (int64_t i = 0; i < count; ++i) {
      float expected = 0;
      for (int64_t peer : groupOf(d))
        expected += value(peer, i);
      ASSERT_EQ(data[d][i], expected) << "device " << d << " element " << i;
    }
}

TEST_P(CollectivesTest, AllReduceBf16AndF16MatchLoop) {
  // Small integers: exact in both 16-bit formats, and so are their sums, so
  // any member order gives the loop's result.
  for (DType dtype : {DType::BF16, DType::F16})
    for (Reduction reduction : {Reduction::Sum, Reduction::Max}) {
      std::vector<std::vector<uint16_t>> data(m.numDevices());
      onDevices(m, GetParam().axes, [&](int64_t d, Communicator &comm) {
        data[d].resize(count);
        for (int64_t i = 0; i < count; ++i)
          data[d][i] = dtype == DType::BF16
                           ? meshc::half::bf16FromF32(value(d, i))
                           : meshc::half::f16FromF32(value(d, i));
        comm.allReduce(data[d].data(), count, dtype, reduction);
      });
      for (int64_t d = 0; d < m.numDevices(); ++d)
        for (int64_t i = 0; i < count; ++i) {
          float expected = reduction == Reduction::Sum ? 0.0f : -1e30f;
          for (int64_t peer : groupOf(d))
            expected = reduction == Reduction::Sum
                           ? expected + value(peer, i)
                           : std::max(expected, value(peer, i));
          float got = dtype == DType::BF16
                          ? meshc::half::f32FromBf16(data[d][i])
                          : meshc::half::f32FromF16(data[d][i]);
          ASSERT_EQ(got, expected)
              << dtypeName(dtype) << " device " << d << " element " << i;
        }
    }
}

TEST_P(CollectivesTest, AllReduceMaxI32MatchesLoop) {
  std::vector<std::vector<int32_t>> data(m.numDevices());
  onDevices(m, GetParam().axes, [&](int64_t d, Communicator &comm) {
    data[d].resize(count);
    for (int64_t i = 0; i < count; ++i)
      data[d][i] = static_cast<int32_t>(value(d, i));
    comm.allReduce(data[d].data(), count, DType::I32, Reduction::Max);
  });
  for (int64_t d = 0; d < m.numDevices(); ++d)
    for (int64_t i = 0; i < count; ++i) {
      int32_t expected = INT32_MIN;
      for (int64_t peer : groupOf(d))
        expected = std::max(expected, static_cast<int32_t>(value(peer, i)));
      ASSERT_EQ(data[d][i], expected) << "device " << d << " element " << i;
    }
}

TEST_P(CollectivesTest, ReduceScatterMatchesLoop) {
  std::vector<std::vector<float>> data(m.numDevices());
  onDevices(m, GetParam().axes, [&](int64_t d, Communicator &comm) {
    data[d].resize(chunk * comm.size());
    for (int64_t i = 0; i < chunk * comm.size(); ++i)
      data[d][i] = value(d, i);
    comm.reduceScatter(data[d].data(), chunk, DType::F32, Reduction::Sum);
  });
  for (int64_t d = 0; d < m.numDevices(); ++d) {
    int64_t rank = partition.rankOf[d];
    for (int64_t i = 0; i < chunk; ++i) {
      float expected = 0;
      for (int64_t peer : groupOf(d))
        expected += value(peer, rank * chunk + i);
      ASSERT_EQ(data[d][rank * chunk + i], expected)
          << "device " << d << " element " << i;
    }
  }
}

TEST_P(CollectivesTest, AllGatherMatchesLoop) {
  std::vector<std::vector<float>> data(m.numDevices());
  onDevices(m, GetParam().axes, [&](int64_t d, Communicator &comm) {
    data[d].assign(chunk * comm.size(), -100.0f);
    for (int64_t i = 0; i < chunk; ++i)
      data[d][comm.rank() * chunk + i] = value(d, i);
    comm.allGather(data[d].data(), chunk * 4);
  });
  for (int64_t d = 0; d < m.numDevices(); ++d)
    for (int64_t r = 0; r < groupSize; ++r)
      for (int64_t i = 0; i < chunk; ++i)
        ASSERT_EQ(data[d][r * chunk + i], value(groupOf(d)[r], i))
            << "device " << d << " chunk " << r << " element " << i;
}

TEST_P(CollectivesTest, AllToAllMatchesLoop) {
  std::vector<std::vector<float>> in(m.numDevices()), out(m.numDevices());
  onDevices(m, GetParam().axes, [&](int64_t d, Communicator &comm) {
    in[d].resize(chunk * comm.size());
    out[d].assign(chunk * comm.size(), -100.0f);
    for (int64_t i = 0; i < chunk * comm.size(); ++i)
      in[d][i] = value(d, i);
    comm.allToAll(in[d].data(), out[d].data(), chunk * 4);
  });
  for (int64_t d = 0; d < m.numDevices(); ++d) {
    int64_t rank = partition.rankOf[d];
    for (int64_t r = 0; r < groupSize; ++r)
      for (int64_t i = 0; i < chunk; ++i)
        ASSERT_EQ(out[d][r * chunk + i], value(groupOf(d)[r], rank * chunk + i))
            << "device " << d << " chunk " << r << " element " << i;
  }
}

/// Unequal blocks (device weights): member `rank`'s chunk size in the
/// variable-count forms, some of them 0.
int64_t varied(int64_t chunk, int64_t rank) {
  return (chunk + rank * 5) % (chunk + 4);
}
/// What member `from` sends member `to` in allToAllV.
int64_t sent(int64_t chunk, int64_t from, int64_t to) {
  return (chunk + 3 * from + 5 * to) % (chunk + 4);
}

TEST_P(CollectivesTest, ReduceScatterVMatchesLoop) {
  std::vector<int64_t> counts;
  for (int64_t r = 0; r < groupSize; ++r)
    counts.push_back(varied(chunk, r));
  std::vector<int64_t> starts = blockStarts(counts);
  int64_t total = starts.back() + counts.back();
  std::vector<std::vector<float>> data(m.numDevices());
  onDevices(m, GetParam().axes, [&](int64_t d, Communicator &comm) {
    data[d].resize(total);
    for (int64_t i = 0; i < total; ++i)
      data[d][i] = value(d, i);
    comm.reduceScatterV(data[d].data(), counts, DType::F32, Reduction::Sum);
  });
  for (int64_t d = 0; d < m.numDevices(); ++d) {
    int64_t rank = partition.rankOf[d];
    for (int64_t i = starts[rank]; i < starts[rank] + counts[rank]; ++i) {
      float expected = 0;
      for (int64_t peer : groupOf(d))
        expected += value(peer, i);
      ASSERT_EQ(data[d][i], expected) << "device " << d << " element " << i;
    }
  }
}

TEST_P(CollectivesTest, AllGatherVMatchesLoop) {
  std::vector<int64_t> counts, bytes;
  for (int64_t r = 0; r < groupSize; ++r) {
    counts.push_back(varied(chunk, r));
    bytes.push_back(counts.back() * 4);
  }
  std::vector<int64_t> starts = blockStarts(counts);
  int64_t total = starts.back() + counts.back();
  std::vector<std::vector<float>> data(m.numDevices());
  onDevices(m, GetParam().axes, [&](int64_t d, Communicator &comm) {
    data[d].assign(total, -100.0f);
    for (int64_t i = 0; i < counts[comm.rank()]; ++i)
      data[d][starts[comm.rank()] + i] = value(d, i);
    comm.allGatherV(data[d].data(), bytes);
  });
  for (int64_t d = 0; d < m.numDevices(); ++d)
    for (int64_t r = 0; r < groupSize; ++r)
      for (int64_t i = 0; i < counts[r]; ++i)
        ASSERT_EQ(data[d][starts[r] + i], value(groupOf(d)[r], i))
            << "device " << d << " chunk " << r << " element " << i;
}

TEST_P(CollectivesTest, AllToAllVMatchesLoop) {
  // Member `from`'s chunks, in elements, and where each starts.
  auto sends = [&](int64_t from) {
    std::vector<int64_t> counts;
    for (int64_t to = 0; to < groupSize; ++to)
      counts.push_back(sent(chunk, from, to));
    return counts;
  };
  std::vector<std::vector<float>> in(m.numDevices()), out(m.numDevices());
  onDevices(m, GetParam().axes, [&](int64_t d, Communicator &comm) {
    std::vector<int64_t> sendBytes, receiveBytes;
    int64_t sendTotal = 0, receiveTotal = 0;
    for (int64_t peer = 0; peer < groupSize; ++peer) {
      sendBytes.push_back(sent(chunk, comm.rank(), peer) * 4);
      receiveBytes.push_back(sent(chunk, peer, comm.rank()) * 4);
      sendTotal += sendBytes.back() / 4;
      receiveTotal += receiveBytes.back() / 4;
    }
    in[d].resize(sendTotal);
    out[d].assign(receiveTotal, -100.0f);
    for (int64_t i = 0; i < sendTotal; ++i)
      in[d][i] = value(d, i);
    comm.allToAllV(in[d].data(), sendBytes, out[d].data(), receiveBytes);
  });
  for (int64_t d = 0; d < m.numDevices(); ++d) {
    int64_t rank = partition.rankOf[d], at = 0;
    for (int64_t r = 0; r < groupSize; ++r) {
      int64_t from = blockStarts(sends(r))[rank];
      for (int64_t i = 0; i < sent(chunk, r, rank); ++i)
        ASSERT_EQ(out[d][at + i], value(groupOf(d)[r], from + i))
            << "device " << d << " chunk " << r << " element " << i;
      at += sent(chunk, r, rank);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Groups, CollectivesTest, testing::ValuesIn(allCases()),
                         caseName);

/// Runs `copies` from `src` to `dst` (byte buffers).
void runCopies(const std::vector<StridedCopy> &copies, const char *src,
               char *dst) {
  for (const StridedCopy &copy : copies)
    for (int64_t row = 0; row < copy.rows; ++row)
      std::memcpy(dst + copy.dstOffset + row * copy.dstPitch,
                  src + copy.srcOffset + row * copy.srcPitch, copy.width);
}

TEST(ChunkCopiesTest, SplitCutsUnequalBlocksAndConcatJoinsThem) {
  // A [2, 10, 3] tensor of i32 cut along its middle dim into 3, 0 and 7.
  const int64_t outer = 2, inner = 3;
  std::vector<int64_t> blocks = {3, 0, 7};
  std::vector<int32_t> tensor(outer * 10 * inner);
  for (size_t i = 0; i < tensor.size(); ++i)
    tensor[i] = static_cast<int32_t>(i);
  std::vector<int32_t> chunks(tensor.size(), -1);
  runCopies(splitCopies(outer, inner, blocks, 4),
            reinterpret_cast<const char *>(tensor.data()),
            reinterpret_cast<char *>(chunks.data()));
  // Chunk g is [outer, blocks[g], inner], contiguous, chunk 0 first.
  int64_t at = 0;
  std::vector<int64_t> starts = blockStarts(blocks);
  EXPECT_EQ(starts, (std::vector<int64_t>{0, 3, 3}));
  for (size_t g = 0; g < blocks.size(); ++g)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < blocks[g]; ++j)
        for (int64_t k = 0; k < inner; ++k)
          ASSERT_EQ(chunks[at++], tensor[(o * 10 + starts[g] + j) * inner + k])
              << "chunk " << g << " row " << o << " index " << j;
  EXPECT_EQ(at, static_cast<int64_t>(tensor.size()));
  std::vector<int32_t> joined(tensor.size(), -1);
  runCopies(concatCopies(outer, inner, blocks, 4),
            reinterpret_cast<const char *>(chunks.data()),
            reinterpret_cast<char *>(joined.data()));
  EXPECT_EQ(joined, tensor);
}

TEST(ChunkCopiesTest, GroupBlocksAreListedOrEqual) {
  EXPECT_EQ(groupBlocks({}, 4, 12), (std::vector<int64_t>{3, 3, 3, 3}));
  EXPECT_EQ(groupBlocks({5, 0, 7}, 3, 12), (std::vector<int64_t>{5, 0, 7}));
}

TEST(PartitionMeshTest, GroupsShareTheOtherCoordinates) {
  layout::Mesh m = mesh("b:2;m:4");
  GroupPartition overM = partitionMesh(m, {"m"});
  EXPECT_EQ(overM.groups,
            (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  GroupPartition overB = partitionMesh(m, {"b"});
  EXPECT_EQ(overB.groups, (std::vector<std::vector<int64_t>>{
                              {0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(overB.rankOf, (std::vector<int64_t>{0, 0, 0, 0, 1, 1, 1, 1}));
  GroupPartition none = partitionMesh(m, {});
  EXPECT_EQ(none.groups.size(), 8u);
}

TEST(PartitionMeshTest, FirstListedAxisIsMostSignificant) {
  layout::Mesh m = mesh("b:2;m:4");
  EXPECT_EQ(partitionMesh(m, {"b", "m"}).groups,
            (std::vector<std::vector<int64_t>>{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(partitionMesh(m, {"m", "b"}).groups,
            (std::vector<std::vector<int64_t>>{{0, 4, 1, 5, 2, 6, 3, 7}}));
  layout::Mesh cube = mesh("x:2;y:2;z:2");
  EXPECT_EQ(partitionMesh(cube, {"z", "x"}).groups,
            (std::vector<std::vector<int64_t>>{{0, 4, 1, 5}, {2, 6, 3, 7}}));
}

/// The barrier in both modes: sleeping at once, and spinning first.
class BarrierTest : public testing::TestWithParam<bool> {};

TEST_P(BarrierTest, NoMemberLeavesAPhaseBeforeAllArrived) {
  // Each member writes its slot for phase p, waits, checks every slot holds
  // p, waits again (nobody writes phase p + 1 before all checked).
  const int members = 4, phases = 2000;
  Barrier barrier(members, GetParam());
  std::vector<std::atomic<int>> slots(members);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < members; ++t)
    threads.emplace_back([&, t] {
      for (int p = 1; p <= phases; ++p) {
        slots[t].store(p, std::memory_order_relaxed);
        barrier.wait();
        for (int other = 0; other < members; ++other)
          if (slots[other].load(std::memory_order_relaxed) != p)
            ++wrong;
        barrier.wait();
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_P(BarrierTest, AbortReleasesWaitingMembers) {
  layout::Mesh m = mesh("d:4");
  CpuCollectives collectives;
  collectives.setSpinning(GetParam());
  std::vector<std::unique_ptr<Communicator>> comms =
      collectives.split(partitionMesh(m, {"d"}));
  std::vector<int> aborted(4, 0);
  std::vector<std::thread> threads;
  // Device 3 never joins; the others block until abort().
  for (int64_t d = 0; d < 3; ++d)
    threads.emplace_back([&, d] {
      float x = 1;
      try {
        comms[d]->allReduce(&x, 1, DType::F32, Reduction::Sum);
      } catch (const CollectiveAborted &) {
        aborted[d] = 1;
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  collectives.abort();
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(aborted, (std::vector<int>{1, 1, 1, 0}));
  float x = 1;
  EXPECT_THROW(comms[3]->allReduce(&x, 1, DType::F32, Reduction::Sum),
               CollectiveAborted);
}

INSTANTIATE_TEST_SUITE_P(Modes, BarrierTest, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool> &info) {
                           return info.param ? "spinning" : "sleeping";
                         });

} // namespace
