// A spin lock for the few global structures (segment list, caches, orphan
// heaps, metadata). It never allocates, works before libc's pthread is ready,
// and a fork handler can reset it in the child (see init.cpp).
#pragma once

#include <sched.h>

#include <atomic>

namespace mallard {

class SpinLock {
 public:
  void lock() {
    for (;;) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      // Spin on a plain load (no cache-line ping-pong), then yield: with more
      // threads than cores the holder may be descheduled.
      for (int i = 0; locked_.load(std::memory_order_relaxed); ++i) {
        if (i < 64) {
          __builtin_ia32_pause();
        } else {
          sched_yield();
        }
      }
    }
  }
  bool try_lock() {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() { locked_.store(false, std::memory_order_release); }
  // Only for the fork child, where the holder no longer exists.
  void reset() { locked_.store(false, std::memory_order_relaxed); }

 private:
  std::atomic<bool> locked_{false};
};

class LockGuard {
 public:
  explicit LockGuard(SpinLock& lock) : lock_(lock) { lock_.lock(); }
  ~LockGuard() { lock_.unlock(); }
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  SpinLock& lock_;
};

}  // namespace mallard
