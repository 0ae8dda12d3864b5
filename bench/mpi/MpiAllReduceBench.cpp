//===- MpiAllReduceBench.cpp - meshc's MPI all-reduce vs MPI_Allreduce ----===//
//
// Run under mpirun (bench/mpi/run.sh runs 2, 4 and 8 ranks). For buffers of
// 4 KiB to 64 MiB of f32, times three all-reduces over all ranks:
//
//   meshc     MpiCommunicator::allReduce as meshrun uses it: a communicator
//             from MpiCollectives::split, MPI_Ireduce_scatter then
//             MPI_Iallgatherv, each waited for by the watchdog
//   blocking  the same two steps as blocking MPI_Reduce_scatter and
//             MPI_Allgatherv (the transport before the watchdog)
//   MPI       one plain MPI_Allreduce(MPI_IN_PLACE, ..., MPI_SUM)
//
// Each figure is the median over repetitions of the slowest rank's time
// (a barrier before each repetition). Prints a table with meshc / MPI.
//
//   mpirun -np N meshc-bench-mpi [--max-mib M]
//
//===----------------------------------------------------------------------===//

#include "runtime/mpi/MpiCollectives.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace meshc;
using namespace meshc::runtime;

namespace {

/// Median over `runs` of the slowest rank's time of `fn`, in milliseconds.
template <typename Fn> double medianMs(int runs, Fn fn) {
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    MESHC_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    auto start = std::chrono::steady_clock::now();
    fn();
    double mine = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();
    double slowest = 0;
    MESHC_MPI_CHECK(
        MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    times.push_back(slowest);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// The blocking form of MpiCommunicator::allReduce (same chunks).
void blockingAllReduce(float *data, int64_t count, int rank, int size,
                       MPI_Comm comm) {
  std::vector<int> counts(size), displs(size);
  for (int r = 0; r < size; ++r) {
    displs[r] = static_cast<int>(r * count / size);
    counts[r] = static_cast<int>((r + 1) * count / size - r * count / size);
  }
  MESHC_MPI_CHECK(MPI_Reduce_scatter(MPI_IN_PLACE, data, counts.data(),
                                     MPI_FLOAT, MPI_SUM, comm));
  std::memmove(data + displs[rank], data, counts[rank] * sizeof(float));
  MESHC_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data,
                                 counts.data(), displs.data(), MPI_FLOAT,
                                 comm));
}

} // namespace

int main(int argc, char **argv) {
  int64_t maxMib = 64;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--max-mib") == 0)
      maxMib = std::atoll(argv[++i]);
  MpiProcessGroup world;
  int rank = static_cast<int>(world.rank());
  int size = static_cast<int>(world.size());
  layout::Mesh mesh = *layout::Mesh::parse("a:" + std::to_string(size));
  std::vector<std::unique_ptr<Communicator>> communicators =
      world.collectives().split(partitionMesh(mesh, {"a"}));
  Communicator &meshc = *communicators[rank];
  MPI_Comm comm = static_cast<MpiCommunicator &>(meshc).comm();

  if (rank == 0) {
    std::printf("all-reduce of f32 over %d MPI ranks (median of the slowest "
                "rank's time)\n",
                size);
    std::printf("%10s %12s %12s %12s %14s\n", "bytes", "meshc ms",
                "blocking ms", "MPI ms", "meshc / MPI");
  }
  for (int64_t bytes = 4 << 10; bytes <= (maxMib << 20); bytes *= 4) {
    int64_t count = bytes / 4;
    std::vector<float> data(count, 1.0f);
    // Fewer repetitions for large buffers; at least 5.
    int runs = static_cast<int>(std::max<int64_t>(5, (64 << 20) / bytes));
    runs = std::min(runs, 200);
    double ours = medianMs(runs, [&] {
      meshc.allReduce(data.data(), count, DType::F32, Reduction::Sum);
    });
    double blocking = medianMs(
        runs, [&] { blockingAllReduce(data.data(), count, rank, size, comm); });
    double plain = medianMs(runs, [&] {
      MESHC_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data.data(),
                                    static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                                    comm));
    });
    if (rank == 0) {
      std::string label = bytes >= (1 << 20)
                              ? std::to_string(bytes >> 20) + " MiB"
                              : std::to_string(bytes >> 10) + " KiB";
      std::printf("%10s %12.3f %12.3f %12.3f %14.2f\n", label.c_str(), ours,
                  blocking, plain, ours / plain);
    }
  }
  return 0;
}
