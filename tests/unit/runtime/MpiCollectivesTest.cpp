//===- MpiCollectivesTest.cpp - MPI collectives against plain loops -------===//
//
// Run under mpirun with 2, 4 or 8 ranks (ctest does, see CMakeLists.txt):
// every rank is one mesh device. For each mesh of that many devices and each
// list of axes, every collective of the MPI communicator is compared with a
// plain loop over the group computed locally: sizes 0, 1, 7 (odd), 1001 and
// 1<<20, and the variable-count forms with unequal chunks (some empty). Values
// are small integers so sums are exact; one extra all-reduce of non-integers
// checks that all members of a group end bit-identical. Prints one line per
// failure and "PASS"/"FAIL" on rank 0; exits non-zero when any rank failed. No
// gtest: a failing rank must not leave the others waiting.
//
//===----------------------------------------------------------------------===//

#include "runtime/mpi/MpiCollectives.h"
#include "runtime/Error.h"
#include "runtime/core/HalfFloat.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace meshc;
using namespace meshc::runtime;

namespace {

int failures = 0;
int worldRank = 0;

void fail(const std::string &what) {
  if (++failures <= 20)
    std::fprintf(stderr, "rank %d: FAIL %s\n", worldRank, what.c_str());
}

float value(int64_t d, int64_t i) {
  return static_cast<float>((d * 7 + i * 3) % 11) - 5.0f;
}

struct Case {
  std::string mesh;
  std::vector<std::string> axes;
};

std::string name(const Case &c, const char *op, int64_t count) {
  std::string axes;
  for (const std::string &axis : c.axes)
    axes += (axes.empty() ? "" : ",") + axis;
  return std::string(op) + " mesh " + c.mesh + " axes [" + axes + "] count " +
         std::to_string(count);
}

/// Unequal blocks (device weights): member `r`'s chunk in the
/// variable-count forms, some of them 0, and what member `from` sends
/// member `to` in allToAllV.
int64_t varied(int64_t count, int64_t r) {
  return (count + r * 5) % (count + 4);
}
int64_t sent(int64_t count, int64_t from, int64_t to) {
  return (count + 3 * from + 5 * to) % (count + 4);
}

/// The variable-count collectives against loops.
void runVariable(const Case &c, Communicator &comm,
                 const std::vector<int64_t> &group, int64_t rank,
                 int64_t count) {
  int64_t n = static_cast<int64_t>(group.size());
  int64_t me = group[rank];
  std::vector<int64_t> counts, bytes;
  for (int64_t r = 0; r < n; ++r) {
    counts.push_back(varied(count, r));
    bytes.push_back(counts.back() * 4);
  }
  std::vector<int64_t> starts = blockStarts(counts);
  int64_t total = starts.back() + counts.back();
  {
    std::vector<float> data(total);
    for (int64_t i = 0; i < total; ++i)
      data[i] = value(me, i);
    comm.reduceScatterV(data.data(), counts, DType::F32, Reduction::Sum);
    for (int64_t i = starts[rank]; i < starts[rank] + counts[rank]; ++i) {
      float expected = 0;
      for (int64_t m : group)
        expected += value(m, i);
      if (data[i] != expected) {
        fail(name(c, "reduceScatterV", count) + " at " + std::to_string(i));
        break;
      }
    }
  }
  {
    std::vector<float> data(total, -99.0f);
    for (int64_t i = 0; i < counts[rank]; ++i)
      data[starts[rank] + i] = value(me, i);
    comm.allGatherV(data.data(), bytes);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < counts[j]; ++i)
        if (data[starts[j] + i] != value(group[j], i)) {
          fail(name(c, "allGatherV", count) + " chunk " + std::to_string(j));
          j = n;
          break;
        }
  }
  {
    std::vector<int64_t> sendBytes, receiveBytes;
    int64_t sendTotal = 0, receiveTotal = 0;
    for (int64_t peer = 0; peer < n; ++peer) {
      sendBytes.push_back(sent(count, rank, peer) * 4);
      receiveBytes.push_back(sent(count, peer, rank) * 4);
      sendTotal += sent(count, rank, peer);
      receiveTotal += sent(count, peer, rank);
    }
    std::vector<float> in(sendTotal), out(receiveTotal, -99.0f);
    for (int64_t i = 0; i < sendTotal; ++i)
      in[i] = value(me, i);
    comm.allToAllV(in.data(), sendBytes, out.data(), receiveBytes);
    int64_t at = 0;
    for (int64_t j = 0; j < n; ++j) {
      // Where member j's chunk for this one starts in its `in`.
      int64_t from = 0;
      for (int64_t peer = 0; peer < rank; ++peer)
        from += sent(count, j, peer);
      for (int64_t i = 0; i < sent(count, j, rank); ++i)
        if (out[at + i] != value(group[j], from + i)) {
          fail(name(c, "allToAllV", count) + " chunk " + std::to_string(j));
          break;
        }
      at += sent(count, j, rank);
    }
  }
}

void runCase(const Case &c, MpiCollectives &collectives, int64_t me) {
  layout::Mesh mesh = *layout::Mesh::parse(c.mesh);
  GroupPartition partition = partitionMesh(mesh, c.axes);
  std::vector<std::unique_ptr<Communicator>> comms =
      collectives.split(partition);
  for (size_t d = 0; d < comms.size(); ++d)
    if ((comms[d] != nullptr) != (static_cast<int64_t>(d) == me))
      fail(name(c, "split", 0) + ": communicator of device " +
           std::to_string(d));
  Communicator &comm = *comms[me];
  const std::vector<int64_t> &group = partition.groups[partition.groupOf[me]];
  int64_t n = static_cast<int64_t>(group.size());
  int64_t rank = partition.rankOf[me];
  if (comm.rank() != rank || comm.size() != n)
    fail(name(c, "split", 0) + ": rank/size");

  for (int64_t count : {0, 1, 7, 1001, 1 << 20}) {
    // all-reduce, f32 sum and max, i32 sum.
    for (Reduction reduction : {Reduction::Sum, Reduction::Max}) {
      std::vector<float> data(count);
      for (int64_t i = 0; i < count; ++i)
        data[i] = value(me, i);
      comm.allReduce(data.data(), count, DType::F32, reduction);
      for (int64_t i = 0; i < count; ++i) {
        float expected = reduction == Reduction::Sum ? 0.0f : -1e30f;
        for (int64_t m : group)
          expected = reduction == Reduction::Sum
                         ? expected + value(m, i)
                         : std::max(expected, value(m, i));
        if (data[i] != expected) {
          fail(name(c,
                    reduction == Reduction::Sum ? "allReduce sum f32"
                                                : "allReduce max f32",
                    count) +
               " at " + std::to_string(i));
          break;
        }
      }
    }
    {
      std::vector<int32_t> data(count);
      for (int64_t i = 0; i < count; ++i)
        data[i] = static_cast<int32_t>(value(me, i)) * 1000;
      comm.allReduce(data.data(), count, DType::I32, Reduction::Sum);
      for (int64_t i = 0; i < count; ++i) {
        int32_t expected = 0;
        for (int64_t m : group)
          expected += static_cast<int32_t>(value(m, i)) * 1000;
        if (data[i] != expected) {
          fail(name(c, "allReduce sum i32", count) + " at " +
               std::to_string(i));
          break;
        }
      }
    }
    // all-reduce of bf16 (MPI's user op): small integers, exact in bf16.
    {
      std::vector<uint16_t> data(count);
      for (int64_t i = 0; i < count; ++i)
        data[i] = meshc::half::bf16FromF32(value(me, i));
      comm.allReduce(data.data(), count, DType::BF16, Reduction::Sum);
      for (int64_t i = 0; i < count; ++i) {
        float expected = 0;
        for (int64_t m : group)
          expected += value(m, i);
        if (meshc::half::f32FromBf16(data[i]) != expected) {
          fail(name(c, "allReduce sum bf16", count) + " at " +
               std::to_string(i));
          break;
        }
      }
    }
    // reduce-scatter: chunk rank ends reduced.
    {
      std::vector<float> data(n * count);
      for (int64_t i = 0; i < n * count; ++i)
        data[i] = value(me, i);
      comm.reduceScatter(data.data(), count, DType::F32, Reduction::Sum);
      for (int64_t i = 0; i < count; ++i) {
        float expected = 0;
        for (int64_t m : group)
          expected += value(m, rank * count + i);
        if (data[rank * count + i] != expected) {
          fail(name(c, "reduceScatter", count) + " at " + std::to_string(i));
          break;
        }
      }
    }
    // all-gather: chunk j comes from member j.
    {
      std::vector<float> data(n * count, -99.0f);
      for (int64_t i = 0; i < count; ++i)
        data[rank * count + i] = value(me, i);
      comm.allGather(data.data(), count * 4);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < count; ++i)
          if (data[j * count + i] != value(group[j], i)) {
            fail(name(c, "allGather", count) + " chunk " + std::to_string(j));
            j = n;
            break;
          }
    }
    // all-to-all: out chunk i is member i's in chunk rank.
    {
      std::vector<float> in(n * count), out(n * count, -99.0f);
      for (int64_t i = 0; i < n * count; ++i)
        in[i] = value(me, i);
      comm.allToAll(in.data(), out.data(), count * 4);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < count; ++i)
          if (out[j * count + i] != value(group[j], rank * count + i)) {
            fail(name(c, "allToAll", count) + " chunk " + std::to_string(j));
            j = n;
            break;
          }
    }
    runVariable(c, comm, group, rank, count);
  }

  // Non-integer sums: every member of a group ends bit-identical.
  {
    int64_t count = 1001;
    std::vector<float> data(count);
    for (int64_t i = 0; i < count; ++i)
      data[i] =
          0.1f * value(me, i) + 1e-3f * static_cast<float>(me) + 1e-7f * i;
    comm.allReduce(data.data(), count, DType::F32, Reduction::Sum);
    int worldSize = 0;
    MESHC_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &worldSize));
    std::vector<float> all(static_cast<size_t>(count) * worldSize);
    MESHC_MPI_CHECK(MPI_Allgather(
        data.data(), static_cast<int>(count), MPI_FLOAT, all.data(),
        static_cast<int>(count), MPI_FLOAT, MPI_COMM_WORLD));
    for (int64_t m : group)
      if (std::memcmp(all.data() + m * count, data.data(), count * 4) != 0)
        fail(name(c, "allReduce bit-identical", count) + " vs device " +
             std::to_string(m));
  }
}

} // namespace

int main() {
  MpiProcessGroup world;
  worldRank = static_cast<int>(world.rank());
  int64_t size = world.size();
  std::vector<Case> cases = {
      {"a:2", {}},
      {"a:2", {"a"}},
      {"a:4", {"a"}},
      {"a:2;b:2", {"a"}},
      {"a:2;b:2", {"b"}},
      {"a:2;b:2", {"a", "b"}},
      {"a:2;b:2", {"b", "a"}},
      {"a:8", {"a"}},
      {"a:2;b:4", {"a"}},
      {"a:2;b:4", {"b"}},
      {"a:2;b:4", {"a", "b"}},
      {"a:2;b:4", {"b", "a"}},
      {"a:2;b:4", {}},
      {"a:2;b:2;c:2", {"a"}},
      {"a:2;b:2;c:2", {"c"}},
      {"a:2;b:2;c:2", {"a", "c"}},
      {"a:2;b:2;c:2", {"c", "a", "b"}},
  };
  int ran = 0;
  for (const Case &c : cases) {
    if (layout::Mesh::parse(c.mesh)->numDevices() != size)
      continue;
    ++ran;
    try {
      runCase(c, static_cast<MpiCollectives &>(world.collectives()),
              world.rank());
    } catch (const std::exception &error) {
      fail(name(c, "threw", 0) + ": " + error.what());
    }
  }
  int total = 0;
  MESHC_MPI_CHECK(
      MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  if (worldRank == 0)
    std::printf("%s: %d cases on %lld ranks, %d failures\n",
                total ? "FAIL" : "PASS", ran, static_cast<long long>(size),
                total);
  return total || ran == 0 ? 1 : 0;
}
