// Process-wide set-up, done once on the first allocation (which may come
// before main, from the dynamic loader or another library's constructor), and
// the fork and exit hooks.
#pragma once

#include <atomic>

namespace mallard {

extern std::atomic<int> g_init_state;  // 0 = not yet, 1 = in progress, 2 = done
void process_init_slow();

inline void process_init() {
  if (g_init_state.load(std::memory_order_acquire) != 2) process_init_slow();
}

}  // namespace mallard
