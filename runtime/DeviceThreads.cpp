//===- DeviceThreads.cpp - One thread per device, kept for a session ------===//

#include "runtime/DeviceThreads.h"

#include "runtime/Error.h"

#include <string>
#include <system_error>

namespace meshc::runtime {

DeviceThreads::DeviceThreads(size_t count) : errors(count) {
  try {
    for (size_t d = 0; d < count; ++d)
      threads.emplace_back(&DeviceThreads::loop, this, d);
  } catch (const std::system_error &error) {
    size_t started = threads.size();
    stop();
    throw RuntimeError("cannot start the thread of device " +
                       std::to_string(started) + ": " + error.what());
  }
}

DeviceThreads::~DeviceThreads() { stop(); }

void DeviceThreads::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  start.notify_all();
  for (std::thread &thread : threads)
    thread.join();
  threads.clear();
}

void DeviceThreads::run(const std::function<void(size_t)> &work) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    task = &work;
    running = threads.size();
    for (std::exception_ptr &error : errors)
      error = nullptr;
    ++generation;
  }
  start.notify_all();
  std::unique_lock<std::mutex> lock(mutex);
  done.wait(lock, [&] { return running == 0; });
  task = nullptr;
  for (const std::exception_ptr &error : errors)
    if (error)
      std::rethrow_exception(error);
}

void DeviceThreads::loop(size_t index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(size_t)> *work;
    {
      std::unique_lock<std::mutex> lock(mutex);
      start.wait(lock, [&] { return stopping || generation != seen; });
      if (stopping)
        return;
      seen = generation;
      work = task;
    }
    std::exception_ptr error;
    try {
      (*work)(index);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex);
    errors[index] = error;
    if (--running == 0)
      done.notify_one();
  }
}

} // namespace meshc::runtime
