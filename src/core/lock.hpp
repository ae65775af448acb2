// The lock for the few global structures (segment list, caches, orphan
// list, metadata) and for orphan heaps. It never allocates, works before
// libc's pthread is ready, and a fork handler can reset it in the child
// (init.cpp).
//
// It spins briefly, then sleeps on a futex: with more threads than cores a
// holder can be preempted, and spinners that only yield keep it waiting for
// the CPU (thread churn with a yield-only spin lock: 5,589 sched_yield calls
// in a 0.6 s run; see docs/DESIGN.md).
#pragma once

#include <atomic>
#include <cstdint>

#include "os/os.hpp"

namespace mallard {

class Lock {
 public:
  void lock() {
    uint32_t expected = kUnlocked;
    if (state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire)) return;
    lock_contended();
  }
  bool try_lock() {
    uint32_t expected = kUnlocked;
    return state_.load(std::memory_order_relaxed) == kUnlocked &&
           state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire);
  }
  void unlock() {
    if (state_.exchange(kUnlocked, std::memory_order_release) == kContended) {
      os::futex_wake_one(reinterpret_cast<uint32_t*>(&state_));
    }
  }
  // Only for the fork child, where the holder no longer exists.
  void reset() { state_.store(kUnlocked, std::memory_order_relaxed); }

 private:
  static constexpr uint32_t kUnlocked = 0, kLocked = 1, kContended = 2;

  // Drepper's three-state futex mutex ("Futexes Are Tricky"), after a short spin.
  __attribute__((noinline)) void lock_contended() {
    for (int i = 0; i < 100; ++i) {
      __builtin_ia32_pause();
      if (try_lock()) return;
    }
    while (state_.exchange(kContended, std::memory_order_acquire) != kUnlocked) {
      os::futex_wait(reinterpret_cast<uint32_t*>(&state_), kContended);
    }
  }

  std::atomic<uint32_t> state_{kUnlocked};
};
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));

class LockGuard {
 public:
  explicit LockGuard(Lock& lock) : lock_(lock) { lock_.lock(); }
  ~LockGuard() { lock_.unlock(); }
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  Lock& lock_;
};

}  // namespace mallard
