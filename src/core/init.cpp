#include "core/init.hpp"

#include <pthread.h>
#include <sched.h>

#include "core/heap.hpp"
#include "core/extent.hpp"
#include "core/large.hpp"
#include "core/options.hpp"
#include "core/orphan.hpp"
#include "core/segment.hpp"
#include "core/stats.hpp"
#include "core/types.hpp"
#include "os/os.hpp"

namespace mallard {

std::atomic<int> g_init_state{0};

namespace {

bool g_options_loaded = false;

// Fork: the child has only the forking thread, so a lock held by another
// thread at the moment of fork would stay locked forever. Take every global
// lock before fork (fixed order) and release them on both sides.
MALLARD_RARE void fork_prepare() {
  extents_fork_prepare();
  g_orphan_lock.lock();
  g_large_lock.lock();
  g_segment_cache_lock.lock();
  g_segments_lock.lock();
  g_heaps_lock.lock();
}

MALLARD_RARE void fork_parent() {
  g_heaps_lock.unlock();
  g_segments_lock.unlock();
  g_segment_cache_lock.unlock();
  g_large_lock.unlock();
  g_orphan_lock.unlock();
  extents_fork_parent();
}

MALLARD_RARE void fork_child() {
  g_heaps_lock.reset();
  g_segments_lock.reset();
  g_segment_cache_lock.reset();
  g_large_lock.reset();
  g_orphan_lock.reset();
  extents_fork_child();
  segment_cache_after_fork_in_child();
  orphans_after_fork_in_child();
}

}  // namespace

void process_init_slow() {
  int expected = 0;
  if (!g_init_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    // Another thread is initializing (nothing here allocates, so it is not
    // this thread recursing); wait for it.
    while (g_init_state.load(std::memory_order_acquire) != 2) sched_yield();
    return;
  }
  os::page_size();
  if (os::environment_ready()) {
    options_load_from_env();
    g_options_loaded = true;
  }
  heap_process_init();
  g_init_state.store(2, std::memory_order_release);
}

// Runs when libmallard is loaded (or at program start when linked): by now
// libc is fully up, so registering fork handlers (which may allocate) is safe.
__attribute__((constructor(101))) static void mallard_library_init() {
  process_init();
  if (!g_options_loaded) {
    options_load_from_env();
    g_options_loaded = true;
  }
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

// At exit (or dlclose, which -z nodelete prevents). Nothing is torn down:
// other libraries' destructors and atexit handlers may still allocate.
__attribute__((destructor(101))) static void mallard_library_fini() {
  if (option(kOptStatsPrint) != 0) stats_write_fd(2, "");
}

}  // namespace mallard
