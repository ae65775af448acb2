// The churn workload outside the harness, timing each thread's parts: 4
// threads each free a random one of their SLOTS live blocks and allocate one
// of a log-uniform size up to LARGEST, writing a byte per 4 KiB page and its
// last byte, a million times, swapping every 16th new block with one of 4,096
// shared places (tools/workloads/churn.cpp; its own generator, not the
// workload's). For each thread it prints when its steps ended, their user and
// system time and minor faults (which count pages populated by madvise too),
// then the CPU time of all threads' final frees (purges included), when the
// first thread finished its steps, and the whole run's time, which is what
// the workload reports (DESIGN.md "Where churn's time goes"). Not part of the
// build:
//   g++ -O2 -std=c++20 -pthread bench/churn_phases.cpp -o /tmp/churn_phases
//   LD_PRELOAD=<allocator> /tmp/churn_phases [LARGEST [SLOTS]]
// (churn:64K is 65536 10000, the default; 8192 40000 keeps to small classes.)
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "tool_common.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

double seconds_of(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; }

double thread_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct ThreadReport {
  double steps_end = 0, user = 0, system = 0, final_frees_cpu = 0;
  long minor_faults = 0;
};

}  // namespace

int main(int argc, char** argv) {
  constexpr unsigned kThreads = 4;
  constexpr uint64_t kSteps = 1000000, kSwapEvery = 16;
  constexpr size_t kShared = 4096;
  size_t largest = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 65536;
  size_t slot_count = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 10000;
  if (largest < 8 || slot_count == 0) {
    std::fprintf(stderr, "usage: %s [LARGEST >= 8 [SLOTS > 0]]\n", argv[0]);
    return 2;
  }
  double log2_span = std::log2(static_cast<double>(largest) / 8);
  std::vector<std::atomic<void*>> shared(kShared);
  std::vector<ThreadReport> reports(kThreads);
  std::barrier start_line(kThreads + 1);
  Clock::time_point start;
  std::vector<std::jthread> workers;
  for (unsigned t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      uint64_t random = t * 7919 + 17 + 88172645463325252ull;
      std::vector<void*> slots(slot_count, nullptr);
      start_line.arrive_and_wait();
      for (uint64_t i = 0; i < kSteps; ++i) {
        size_t k = next_random(&random) % slots.size();
        std::free(slots[k]);
        size_t bytes = log_uniform_size(&random, log2_span);
        void* block = std::malloc(bytes);
        if (block == nullptr) std::abort();
        touch_pages(block, bytes);
        slots[k] = block;
        if (i % kSwapEvery == 0) slots[k] = shared[next_random(&random) % kShared].exchange(slots[k]);
      }
      ThreadReport& report = reports[t];
      report.steps_end = seconds_between(start, Clock::now());
      rusage usage;
      getrusage(RUSAGE_THREAD, &usage);
      report.user = seconds_of(usage.ru_utime);
      report.system = seconds_of(usage.ru_stime);
      report.minor_faults = usage.ru_minflt;
      double before = thread_cpu_seconds();
      for (void* block : slots) std::free(block);
      report.final_frees_cpu = thread_cpu_seconds() - before;
    });
  }
  start = Clock::now();
  start_line.arrive_and_wait();
  workers.clear();
  double total = seconds_between(start, Clock::now());
  double final_frees_cpu = 0, first_done = total;
  for (const ThreadReport& report : reports) {
    std::printf("[steps end %.3f s, user %.3f, system %.3f, minor faults %ld] ", report.steps_end, report.user,
                report.system, report.minor_faults);
    final_frees_cpu += report.final_frees_cpu;
    first_done = std::min(first_done, report.steps_end);
  }
  std::printf("\nfinal frees %.3f s of CPU; first thread's steps done %.3f s; total %.3f s\n", final_frees_cpu, first_done,
              total);
  for (auto& place : shared) std::free(place.load());
  return 0;
}
