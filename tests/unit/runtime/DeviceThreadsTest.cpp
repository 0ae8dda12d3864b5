//===- DeviceThreadsTest.cpp - One thread per device, kept ----------------===//
//
// The session's device threads (runtime/DeviceThreads.h): every task of a
// run runs at once (the tasks meet at a barrier, as devices meet in a
// collective), thread d runs device d in every run, and an exception comes
// back to the caller after all tasks ended.
//
//===----------------------------------------------------------------------===//

#include "runtime/DeviceThreads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

using meshc::runtime::DeviceThreads;

TEST(DeviceThreads, TasksRunTogetherOnTheSameThreadEveryRun) {
  constexpr size_t kDevices = 8;
  DeviceThreads threads(kDevices);
  std::vector<std::thread::id> first(kDevices);
  for (int run = 0; run < 50; ++run) {
    // A barrier: no task returns before all have started, which deadlocks
    // unless all eight run at once.
    std::mutex mutex;
    std::condition_variable all;
    size_t arrived = 0;
    std::vector<std::thread::id> ids(kDevices);
    threads.run([&](size_t d) {
      ids[d] = std::this_thread::get_id();
      std::unique_lock<std::mutex> lock(mutex);
      if (++arrived == kDevices)
        all.notify_all();
      all.wait(lock, [&] { return arrived == kDevices; });
    });
    EXPECT_EQ(arrived, kDevices);
    if (run == 0)
      first = ids;
    EXPECT_EQ(ids, first) << "run " << run;
    for (size_t d = 0; d < kDevices; ++d)
      EXPECT_NE(ids[d], std::this_thread::get_id());
  }
}

TEST(DeviceThreads, AnExceptionComesBackAfterEveryTaskEnded) {
  DeviceThreads threads(4);
  std::atomic<int> finished{0};
  try {
    threads.run([&](size_t d) {
      if (d == 2)
        throw std::runtime_error("device 2 failed");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ++finished;
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error &error) {
    EXPECT_STREQ(error.what(), "device 2 failed");
  }
  EXPECT_EQ(finished.load(), 3);
  // The threads go on serving runs.
  std::atomic<int> ran{0};
  threads.run([&](size_t) { ++ran; });
  EXPECT_EQ(ran.load(), 4);
}

TEST(DeviceThreads, OneDeviceAndNone) {
  DeviceThreads one(1);
  int ran = 0;
  one.run([&](size_t d) { ran += static_cast<int>(d) + 1; });
  EXPECT_EQ(ran, 1);
  DeviceThreads none(0);
  none.run([&](size_t) { ADD_FAILURE(); });
}

} // namespace
