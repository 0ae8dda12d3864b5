//===- MpiTestMain.cpp - gtest under mpirun -------------------------------===//
//
// Every rank runs every test (the tests are collective: each one calls the
// same MPI operations on every rank, and checks with EXPECT_* so that a
// failure never skips a collective). Rank 0 prints gtest's report; the other
// ranks print only their failures, prefixed with their rank. The exit code is
// non-zero on every rank when any rank failed.
//
//===----------------------------------------------------------------------===//

#include "MpiTestMain.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace meshc::runtime::mpitest {

namespace {

MpiProcessGroup *theWorld = nullptr;

/// Prints a failed assertion of this (non-zero) rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
public:
  explicit RankFailurePrinter(int64_t rank) : rank(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult &result) override {
    if (result.failed())
      std::fprintf(stderr, "rank %lld: %s:%d: failure\n%s\n",
                   static_cast<long long>(rank),
                   result.file_name() ? result.file_name() : "?",
                   result.line_number(), result.message());
  }

private:
  int64_t rank;
};

} // namespace

MpiProcessGroup &world() { return *theWorld; }

} // namespace meshc::runtime::mpitest

int main(int argc, char **argv) {
  using namespace meshc::runtime;
  MpiProcessGroup world;
  mpitest::theWorld = &world;
  ::testing::InitGoogleTest(&argc, argv);
  if (world.rank() != 0) {
    ::testing::TestEventListeners &listeners =
        ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new mpitest::RankFailurePrinter(world.rank()));
  }
  int failed = RUN_ALL_TESTS() != 0;
  int anyFailed = 0;
  MESHC_MPI_CHECK(
      MPI_Allreduce(&failed, &anyFailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  if (world.rank() == 0)
    std::printf("%s on %lld ranks\n", anyFailed ? "FAILED" : "PASSED",
                static_cast<long long>(world.size()));
  return anyFailed;
}
