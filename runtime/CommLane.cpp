//===- CommLane.cpp - A device's collectives on a thread of their own -----===//

#include "runtime/CommLane.h"

#include <stdexcept>
#include <string>

namespace meshc::runtime {

CommLane::~CommLane() {
  {
    std::unique_lock<std::mutex> lock(mutex);
    finished.wait(lock, [&] { return queue.empty() && !running; });
    stopping = true;
  }
  wake.notify_all();
  if (thread.joinable())
    thread.join();
}

void CommLane::submit(int64_t ticket, std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (done.count(ticket))
      throw std::logic_error("ticket " + std::to_string(ticket) +
                             " is submitted twice");
    done[ticket] = false;
    errors[ticket] = nullptr;
    queue.emplace_back(ticket, std::move(work));
    if (!thread.joinable())
      thread = std::thread([this] { loop(); });
  }
  wake.notify_one();
}

void CommLane::wait(int64_t ticket) {
  std::unique_lock<std::mutex> lock(mutex);
  auto entry = done.find(ticket);
  if (entry == done.end())
    throw std::logic_error("ticket " + std::to_string(ticket) +
                           " is waited for but not submitted");
  finished.wait(lock, [&] { return entry->second; });
  std::exception_ptr error = errors[ticket];
  done.erase(entry);
  errors.erase(ticket);
  lock.unlock();
  if (error)
    std::rethrow_exception(error);
}

void CommLane::run(std::function<void()> work) {
  int64_t ticket;
  {
    std::lock_guard<std::mutex> lock(mutex);
    ticket = nextPrivate--;
  }
  submit(ticket, std::move(work));
  wait(ticket);
}

void CommLane::drain() {
  std::unique_lock<std::mutex> lock(mutex);
  finished.wait(lock, [&] { return queue.empty() && !running; });
  done.clear();
  errors.clear();
}

void CommLane::loop() {
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    wake.wait(lock, [&] { return stopping || !queue.empty(); });
    if (queue.empty())
      return; // stopping
    auto [ticket, work] = std::move(queue.front());
    queue.pop_front();
    running = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      work();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    running = false;
    if (auto entry = done.find(ticket); entry != done.end()) {
      entry->second = true;
      errors[ticket] = error;
    }
    finished.notify_all();
  }
}

} // namespace meshc::runtime
