//===- MpiCollectives.cpp - Collectives between MPI ranks -----------------===//
//
// Thin wrappers over nonblocking MPI collectives that keep the runtime's
// chunk conventions, each waited for by the watchdog; see MpiCollectives.h.
// Sizes are checked against MPI's int counts, and every call's return code
// is checked.
//
//===----------------------------------------------------------------------===//

#include "runtime/mpi/MpiCollectives.h"

#include "runtime/Error.h"
#include "runtime/core/HalfFloat.h"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace meshc::runtime {

void checkMpi(int code, const char *call, const char *file, int line) {
  if (code == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    std::snprintf(text, sizeof(text), "error code %d", code);
  std::string name = call;
  if (size_t paren = name.find('('); paren != std::string::npos)
    name = name.substr(0, paren);
  throw RuntimeError(name + " failed (" + file + ":" + std::to_string(line) +
                     "): " + text);
}

namespace {

/// `count` as an MPI int count; throws when it does not fit.
int mpiCount(int64_t count, const char *what) {
  if (count < 0 || count > INT_MAX)
    throw RuntimeError(std::string(what) + ": " + std::to_string(count) +
                       " elements exceed MPI's int counts");
  return static_cast<int>(count);
}

/// MPI has no 16-bit float types: they travel as MPI_UINT16_T and reduce
/// with the user ops below.
MPI_Datatype mpiType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return MPI_FLOAT;
  case DType::I32:
    return MPI_INT32_T;
  case DType::BF16:
  case DType::F16:
    return MPI_UINT16_T;
  }
  return MPI_DATATYPE_NULL;
}

/// The reduction of 16-bit floats as the CPU collectives do it
/// (half::combine), as an MPI user function.
template <float (*Load)(uint16_t), uint16_t (*Store)(float), bool Max>
void reduceHalf(void *in, void *inout, int *len, MPI_Datatype *) {
  half::combine<Load, Store>(static_cast<uint16_t *>(inout),
                             static_cast<const uint16_t *>(in), *len, Max);
}

/// An MPI op made once per process (after MPI_Init) and kept until exit.
MPI_Op userOp(MPI_User_function *function) {
  MPI_Op op;
  MESHC_MPI_CHECK(MPI_Op_create(function, /*commute=*/1, &op));
  return op;
}

MPI_Op mpiOp(Reduction reduction, DType dtype) {
  bool max = reduction == Reduction::Max;
  if (dtype == DType::BF16) {
    static MPI_Op sum =
        userOp(reduceHalf<half::f32FromBf16, half::bf16FromF32, false>);
    static MPI_Op maxOp =
        userOp(reduceHalf<half::f32FromBf16, half::bf16FromF32, true>);
    return max ? maxOp : sum;
  }
  if (dtype == DType::F16) {
    static MPI_Op sum =
        userOp(reduceHalf<half::f32FromF16, half::f16FromF32, false>);
    static MPI_Op maxOp =
        userOp(reduceHalf<half::f32FromF16, half::f16FromF32, true>);
    return max ? maxOp : sum;
  }
  return max ? MPI_MAX : MPI_SUM;
}

/// How many collective timeouts the ranks wait for each other at exit.
constexpr double kExitTimeoutFactor = 10;

} // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm, int64_t rank, int64_t size,
                                 std::vector<int> members,
                                 std::shared_ptr<MpiWatchdog> watchdog)
    : Communicator(rank, size), communicator(comm), members(std::move(members)),
      watchdog(std::move(watchdog)) {}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && communicator != MPI_COMM_NULL)
    MPI_Comm_free(&communicator);
}

void MpiCommunicator::allReduce(void *data, int64_t count, DType dtype,
                                Reduction reduction) {
  int64_t n = size();
  if (n == 1 || count == 0)
    return;
  mpiCount(count, "all_reduce");
  // The CPU ring's chunks: each is reduced once, on its owner, then copied
  // to everyone, so all members end bit-identical.
  std::vector<int> counts(n), displs(n);
  for (int64_t r = 0; r < n; ++r) {
    displs[r] = static_cast<int>(r * count / n);
    counts[r] = static_cast<int>((r + 1) * count / n - r * count / n);
  }
  char *bytes = static_cast<char *>(data);
  int64_t elementBytes = dtypeBytes(dtype);
  // In place, the reduced chunk rank() lands at the start of the buffer.
  MPI_Request request = MPI_REQUEST_NULL;
  MESHC_MPI_CHECK(MPI_Ireduce_scatter(MPI_IN_PLACE, data, counts.data(),
                                      mpiType(dtype), mpiOp(reduction, dtype),
                                      communicator, &request));
  watchdog->wait(request, "all_reduce", members);
  std::memmove(bytes + displs[rank()] * elementBytes, bytes,
               counts[rank()] * elementBytes);
  MESHC_MPI_CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data,
                                  counts.data(), displs.data(), mpiType(dtype),
                                  communicator, &request));
  watchdog->wait(request, "all_reduce", members, 1);
}

void MpiCommunicator::reduceScatter(void *data, int64_t chunkCount, DType dtype,
                                    Reduction reduction) {
  int64_t n = size();
  if (n == 1 || chunkCount == 0)
    return;
  mpiCount(chunkCount * n, "reduce_scatter");
  MPI_Request request = MPI_REQUEST_NULL;
  MESHC_MPI_CHECK(MPI_Ireduce_scatter_block(
      MPI_IN_PLACE, data, static_cast<int>(chunkCount), mpiType(dtype),
      mpiOp(reduction, dtype), communicator, &request));
  watchdog->wait(request, "reduce_scatter", members);
  int64_t chunkBytes = chunkCount * dtypeBytes(dtype);
  char *bytes = static_cast<char *>(data);
  std::memmove(bytes + rank() * chunkBytes, bytes, chunkBytes);
}

void MpiCommunicator::allGather(void *data, int64_t chunkBytes) {
  int64_t n = size();
  if (n == 1 || chunkBytes == 0)
    return;
  MPI_Request request = MPI_REQUEST_NULL;
  MESHC_MPI_CHECK(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data,
                                 mpiCount(chunkBytes, "all_gather"), MPI_BYTE,
                                 communicator, &request));
  watchdog->wait(request, "all_gather", members);
}

void MpiCommunicator::allToAll(const void *in, void *out, int64_t chunkBytes) {
  int64_t n = size();
  if (chunkBytes == 0)
    return;
  if (n == 1) {
    std::memcpy(out, in, chunkBytes);
    return;
  }
  int count = mpiCount(chunkBytes, "all_to_all");
  MPI_Request request = MPI_REQUEST_NULL;
  MESHC_MPI_CHECK(MPI_Ialltoall(in, count, MPI_BYTE, out, count, MPI_BYTE,
                                communicator, &request));
  watchdog->wait(request, "all_to_all", members);
}

/// `counts` and their running sums as MPI int counts and displacements;
/// throws when they do not fit.
static void mpiCounts(const std::vector<int64_t> &counts, const char *what,
                      std::vector<int> &mpi, std::vector<int> &displs) {
  int64_t start = 0;
  for (int64_t count : counts) {
    mpi.push_back(mpiCount(count, what));
    displs.push_back(mpiCount(start, what));
    start += count;
  }
  mpiCount(start, what);
}

void MpiCommunicator::allGatherV(void *data,
                                 const std::vector<int64_t> &chunkBytes) {
  if (size() == 1)
    return;
  std::vector<int> counts, displs;
  mpiCounts(chunkBytes, "all_gather", counts, displs);
  MPI_Request request = MPI_REQUEST_NULL;
  MESHC_MPI_CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data,
                                  counts.data(), displs.data(), MPI_BYTE,
                                  communicator, &request));
  watchdog->wait(request, "all_gather", members);
}

void MpiCommunicator::reduceScatterV(void *data,
                                     const std::vector<int64_t> &chunkCounts,
                                     DType dtype, Reduction reduction) {
  if (size() == 1)
    return;
  std::vector<int> counts, displs;
  mpiCounts(chunkCounts, "reduce_scatter", counts, displs);
  MPI_Request request = MPI_REQUEST_NULL;
  // In place, the reduced chunk rank() lands at the start of the buffer.
  MESHC_MPI_CHECK(MPI_Ireduce_scatter(MPI_IN_PLACE, data, counts.data(),
                                      mpiType(dtype), mpiOp(reduction, dtype),
                                      communicator, &request));
  watchdog->wait(request, "reduce_scatter", members);
  int64_t elementBytes = dtypeBytes(dtype);
  char *bytes = static_cast<char *>(data);
  std::memmove(bytes + int64_t(displs[size_t(rank())]) * elementBytes, bytes,
               size_t(counts[size_t(rank())] * elementBytes));
}

void MpiCommunicator::allToAllV(const void *in,
                                const std::vector<int64_t> &sendBytes,
                                void *out,
                                const std::vector<int64_t> &receiveBytes) {
  if (size() == 1) {
    if (sendBytes[0] > 0) // (null buffers may come with zero bytes)
      std::memcpy(out, in, size_t(sendBytes[0]));
    return;
  }
  std::vector<int> sendCounts, sendDispls, receiveCounts, receiveDispls;
  mpiCounts(sendBytes, "all_to_all", sendCounts, sendDispls);
  mpiCounts(receiveBytes, "all_to_all", receiveCounts, receiveDispls);
  MPI_Request request = MPI_REQUEST_NULL;
  MESHC_MPI_CHECK(MPI_Ialltoallv(in, sendCounts.data(), sendDispls.data(),
                                 MPI_BYTE, out, receiveCounts.data(),
                                 receiveDispls.data(), MPI_BYTE, communicator,
                                 &request));
  watchdog->wait(request, "all_to_all", members);
}

MpiCollectives::MpiCollectives(MPI_Comm world, double timeoutSeconds)
    : world(world),
      sharedWatchdog(std::make_shared<MpiWatchdog>(world, timeoutSeconds)) {}

std::vector<std::unique_ptr<Communicator>>
MpiCollectives::split(const GroupPartition &partition) {
  int worldRank = 0, worldSize = 0;
  MESHC_MPI_CHECK(MPI_Comm_rank(world, &worldRank));
  MESHC_MPI_CHECK(MPI_Comm_size(world, &worldSize));
  if (static_cast<size_t>(worldSize) != partition.groupOf.size())
    throw RuntimeError("MPI world of " + std::to_string(worldSize) +
                       " ranks cannot hold a partition of " +
                       std::to_string(partition.groupOf.size()) + " devices");
  int color = static_cast<int>(partition.groupOf[worldRank]);
  int key = static_cast<int>(partition.rankOf[worldRank]);
  // MPI_Comm_split has no nonblocking form: a watched barrier first, so that
  // the split only starts once every rank has come this far.
  MPI_Request request = MPI_REQUEST_NULL;
  MESHC_MPI_CHECK(MPI_Ibarrier(world, &request));
  sharedWatchdog->wait(request, "split", {});
  MPI_Comm comm = MPI_COMM_NULL;
  MESHC_MPI_CHECK(MPI_Comm_split(world, color, key, &comm));
  std::vector<int> members(partition.groups[color].begin(),
                           partition.groups[color].end());
  auto communicator = std::make_unique<MpiCommunicator>(
      comm, key, static_cast<int64_t>(members.size()), members, sharedWatchdog);
  int rank = 0, size = 0;
  MESHC_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MESHC_MPI_CHECK(MPI_Comm_size(comm, &size));
  if (rank != key ||
      static_cast<size_t>(size) != partition.groups[color].size())
    throw RuntimeError("MPI_Comm_split gave rank " + std::to_string(rank) +
                       " of " + std::to_string(size) + ", expected " +
                       std::to_string(key) + " of " +
                       std::to_string(partition.groups[color].size()));
  std::vector<std::unique_ptr<Communicator>> communicators(worldSize);
  communicators[worldRank] = std::move(communicator);
  return communicators;
}

MpiProcessGroup::MpiProcessGroup() {
  double timeout = collectiveTimeoutFromEnvironment();
  int already = 0;
  MESHC_MPI_CHECK(MPI_Initialized(&already));
  // SERIALIZED: started collectives run on the session's communication
  // lane, one MPI call at a time but not on this thread (CommLane.h).
  int level = MPI_THREAD_SINGLE;
  if (!already) {
    MESHC_MPI_CHECK(
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &level));
    initialised = true;
  } else {
    MESHC_MPI_CHECK(MPI_Query_thread(&level));
  }
  serialized = level >= MPI_THREAD_SERIALIZED;
  // Errors come back as return codes (MESHC_MPI_CHECK); communicators split
  // from the world inherit the handler.
  MESHC_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int rank = 0, size = 0;
  MESHC_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MESHC_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  worldRank = rank;
  worldSize = size;
  mpiCollectives = std::make_unique<MpiCollectives>(MPI_COMM_WORLD, timeout);
}

MpiProcessGroup::~MpiProcessGroup() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!initialised || finalized)
    return;
  // MPI_Finalize waits for every rank: not after a timeout, nor when a rank
  // does not come to the end. Rank 0 may still be writing outputs while the
  // others wait here, hence a longer deadline than a collective's.
  std::string error;
  MpiWatchdog &watchdog = mpiCollectives->watchdog();
  if (!watchdog.timedOut()) {
    watchdog.setTimeout(watchdog.timeout() * kExitTimeoutFactor);
    try {
      barrier();
    } catch (const std::exception &e) {
      error = e.what();
    }
  }
  if (watchdog.timedOut()) {
    if (!error.empty())
      std::fprintf(stderr, "meshrun: error: rank %lld: at exit: %s\n",
                   static_cast<long long>(worldRank), error.c_str());
    abortJob(1);
  }
  mpiCollectives.reset();
  MPI_Finalize();
}

void MpiProcessGroup::barrier() {
  MPI_Request request = MPI_REQUEST_NULL;
  MESHC_MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &request));
  mpiCollectives->watchdog().wait(request, "barrier", {});
}

std::vector<char> MpiProcessGroup::gatherToRoot(const void *data,
                                                int64_t bytes) {
  int count = mpiCount(bytes, "gather");
  std::vector<char> all(worldRank == 0 ? bytes * worldSize : 0);
  MPI_Request request = MPI_REQUEST_NULL;
  MESHC_MPI_CHECK(MPI_Igather(data, count, MPI_BYTE, all.data(), count,
                              MPI_BYTE, 0, MPI_COMM_WORLD, &request));
  mpiCollectives->watchdog().wait(request, "gather", {});
  return all;
}

std::vector<char> MpiProcessGroup::allGather(const void *data, int64_t bytes) {
  int count = mpiCount(bytes, "all_gather");
  std::vector<char> all(bytes * worldSize);
  MPI_Request request = MPI_REQUEST_NULL;
  MESHC_MPI_CHECK(MPI_Iallgather(data, count, MPI_BYTE, all.data(), count,
                                 MPI_BYTE, MPI_COMM_WORLD, &request));
  mpiCollectives->watchdog().wait(request, "all_gather", {});
  return all;
}

std::string MpiProcessGroup::agreeOnError(const std::string &localError) {
  MpiWatchdog &watchdog = mpiCollectives->watchdog();
  // After a timeout the missing ranks cannot agree: report this rank's view.
  if (watchdog.timedOut() && !localError.empty())
    return "rank " + std::to_string(worldRank) + ": " + localError;
  try {
    int mine = localError.empty() ? static_cast<int>(worldSize)
                                  : static_cast<int>(worldRank);
    int culprit = 0;
    MPI_Request request = MPI_REQUEST_NULL;
    MESHC_MPI_CHECK(MPI_Iallreduce(&mine, &culprit, 1, MPI_INT, MPI_MIN,
                                   MPI_COMM_WORLD, &request));
    watchdog.wait(request, "error agreement", {});
    if (culprit == worldSize)
      return "";
    int length = static_cast<int>(localError.size());
    MESHC_MPI_CHECK(
        MPI_Ibcast(&length, 1, MPI_INT, culprit, MPI_COMM_WORLD, &request));
    watchdog.wait(request, "error agreement", {});
    std::string message =
        worldRank == culprit ? localError : std::string(length, '\0');
    MESHC_MPI_CHECK(MPI_Ibcast(message.data(), length, MPI_CHAR, culprit,
                               MPI_COMM_WORLD, &request));
    watchdog.wait(request, "error agreement", {});
    return "rank " + std::to_string(culprit) + ": " + message;
  } catch (const CollectiveTimeout &timeout) {
    // No agreement without the missing ranks: this rank reports its own
    // view, and the destructor ends the job.
    return "rank " + std::to_string(worldRank) + ": " + timeout.what();
  }
}

void MpiProcessGroup::abortJob(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

} // namespace meshc::runtime
