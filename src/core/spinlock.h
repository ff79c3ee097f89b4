// A test-and-test-and-set lock for short critical sections between polling threads,
// where a sleeping mutex would hand the waiter to the scheduler for milliseconds.
#pragma once

#include <atomic>
#include <thread>

namespace rdmx {

class SpinLock {
 public:
  void lock() {
    for (int spins = 0;; ++spins) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 64) {
          std::this_thread::yield();
          spins = 0;
        }
      }
    }
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace rdmx
