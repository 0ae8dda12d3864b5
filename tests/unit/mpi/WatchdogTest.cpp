//===- WatchdogTest.cpp - Deadlines on MPI collectives --------------------===//
//
// MpiWatchdog under mpirun: a rank that arrives late (asleep outside MPI) is
// named by the ranks that wait for it; ranks waiting in different
// collectives name each other's positions; collectives that complete in time
// pass. After each timeout the test completes the pending collectives so
// the next test starts clean. Also MESHC_COLLECTIVE_TIMEOUT's parsing.
//
//===----------------------------------------------------------------------===//

#include "MpiTestMain.h"

#include "runtime/mpi/MpiWatchdog.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

using namespace meshc::runtime;

namespace {

/// A watchdog that lives until the process ends. A timed-out rank leaves
/// queries that the late rank never received on the watchdog's private
/// communicator; freeing it would let a later communicator reuse its
/// context with those messages still in flight. (meshrun never frees one
/// after a timeout either: it ends the job.)
MpiWatchdog &watchdogFor(double timeout, double grace) {
  return *new MpiWatchdog(MPI_COMM_WORLD, timeout, grace);
}

/// The message of the CollectiveTimeout `wait` throws, or "".
std::string timeoutOf(MpiWatchdog &watchdog, MPI_Request &request,
                      const char *op, const std::vector<int> &members) {
  try {
    watchdog.wait(request, op, members);
  } catch (const CollectiveTimeout &timeout) {
    return timeout.what();
  }
  return "";
}

TEST(Watchdog, CollectivesInTimePass) {
  MpiWatchdog &watchdog = watchdogFor(5.0, 0.5);
  int64_t rank = mpitest::world().rank();
  int value = static_cast<int>(rank) + 1, sum = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  MESHC_MPI_CHECK(MPI_Iallreduce(&value, &sum, 1, MPI_INT, MPI_SUM,
                                 MPI_COMM_WORLD, &request));
  EXPECT_EQ(timeoutOf(watchdog, request, "all_reduce", {}), "");
  int64_t n = mpitest::world().size();
  EXPECT_EQ(sum, n * (n + 1) / 2);
  EXPECT_EQ(watchdog.collectives(), 1u);
  EXPECT_FALSE(watchdog.timedOut());
}

TEST(Watchdog, NamesTheRankThatDidNotArrive) {
  MpiWatchdog &watchdog = watchdogFor(0.5, 0.5);
  int64_t rank = mpitest::world().rank();
  int64_t last = mpitest::world().size() - 1;
  // The last rank sleeps outside MPI (cannot answer) past the deadline and
  // the grace period of the others.
  if (rank == last)
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  MPI_Request request = MPI_REQUEST_NULL;
  MESHC_MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &request));
  std::string error = timeoutOf(watchdog, request, "barrier", {});
  if (rank == last) {
    EXPECT_EQ(error, "");
    EXPECT_FALSE(watchdog.timedOut());
    return;
  }
  EXPECT_EQ(error.rfind("barrier #1 over all ranks did not complete within "
                        "0.5 s (MESHC_COLLECTIVE_TIMEOUT): rank " +
                            std::to_string(last) +
                            " did not reach it (no answer within 0.5 s: "
                            "stopped, hung, dead, or busy outside MPI for "
                            "longer than the timeout)",
                        0),
            0u)
      << error;
  EXPECT_TRUE(watchdog.timedOut());
  // The late rank arrives: the barrier completes.
  MESHC_MPI_CHECK(MPI_Wait(&request, MPI_STATUS_IGNORE));
}

TEST(Watchdog, RanksInDifferentCollectivesNameEachOther) {
  int64_t rank = mpitest::world().rank();
  if (mpitest::world().size() != 2)
    GTEST_SKIP() << "needs exactly 2 ranks";
  MpiWatchdog &watchdog = watchdogFor(0.5, 2.0);
  // Each rank waits for a message the other sends only after the test:
  // neither completes, and both answer the other's query.
  int payload = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  MESHC_MPI_CHECK(MPI_Irecv(&payload, 1, MPI_INT, static_cast<int>(1 - rank),
                            99, MPI_COMM_WORLD, &request));
  std::string mine = rank == 0 ? "barrier" : "all_gather";
  std::string theirs = rank == 0 ? "all_gather" : "barrier";
  std::string error = timeoutOf(watchdog, request, mine.c_str(), {0, 1});
  std::string prefix = mine +
                       " #1 over ranks {0,1} did not complete within 0.5 s "
                       "(MESHC_COLLECTIVE_TIMEOUT): every rank answers, "
                       "but not from this collective; rank " +
                       std::to_string(1 - rank) + " waits in ";
  ASSERT_EQ(error.rfind(prefix, 0), 0u) << error;
  // The other rank answers from where it is when the query reaches it: its
  // own timed-out collective, or, when it finished its diagnosis first, the
  // watched barrier below (#2), which keeps answering.
  std::string where = error.substr(prefix.size());
  EXPECT_TRUE(where == theirs + " #1 over ranks {0,1}" ||
              where == "barrier #2 over ranks {0,1}")
      << error;
  // Complete both receives so that the next test starts clean, once both
  // ranks have timed out (else the first one's send would end the other's
  // wait before its deadline). A rank that finished its diagnosis first
  // keeps answering queries while it waits for the other (a plain barrier
  // would not: on a loaded machine the other rank's query may come after
  // this rank got its own answer); each wait that times out diagnoses again
  // and is retried until the barrier completes.
  MPI_Request barrier = MPI_REQUEST_NULL;
  MESHC_MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &barrier));
  while (!timeoutOf(watchdog, barrier, "barrier", {0, 1}).empty()) {
  }
  int one = 1;
  MESHC_MPI_CHECK(MPI_Send(&one, 1, MPI_INT, static_cast<int>(1 - rank), 99,
                           MPI_COMM_WORLD));
  MESHC_MPI_CHECK(MPI_Wait(&request, MPI_STATUS_IGNORE));
  EXPECT_EQ(payload, 1);
}

TEST(Watchdog, TimeoutComesFromTheEnvironment) {
  unsetenv("MESHC_COLLECTIVE_TIMEOUT");
  EXPECT_EQ(collectiveTimeoutFromEnvironment(), kDefaultCollectiveTimeout);
  setenv("MESHC_COLLECTIVE_TIMEOUT", "2.5", 1);
  EXPECT_EQ(collectiveTimeoutFromEnvironment(), 2.5);
  setenv("MESHC_COLLECTIVE_TIMEOUT", "0", 1);
  EXPECT_EQ(collectiveTimeoutFromEnvironment(), 0.0);
  for (const char *bad : {"", "ten", "-1", "3s", "inf"}) {
    setenv("MESHC_COLLECTIVE_TIMEOUT", bad, 1);
    try {
      collectiveTimeoutFromEnvironment();
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const RuntimeError &error) {
      EXPECT_EQ(std::string(error.what()),
                "MESHC_COLLECTIVE_TIMEOUT: expected a number of seconds >= 0 "
                "(0: no timeout), got '" +
                    std::string(bad) + "'");
    }
  }
  unsetenv("MESHC_COLLECTIVE_TIMEOUT");
}

} // namespace
