// rss-return: does memory come back after a peak? (issue #4: "after a peak of
// 1 GiB of small blocks is freed, RSS falls below 10% of the peak within the
// configured purge delay".) The threads (the main thread is one of them)
// allocate random small blocks until `peak` bytes are requested, touch them,
// and free them all in allocation order; then the process watches its own RSS
// every sample_ms for watch_ms. Two cases, because some allocators (mallard
// among them) purge only when the allocator is called again:
//   idle    after the last free no thread calls the allocator at all (no
//           malloc_trim, no stdio, nothing): a program that freed its peak and
//           went quiet;
//   active  every thread keeps a light trickle of small malloc/free pairs
//           (`trickle` pairs per thread every sample_ms).
// RSS is read with resident_bytes() (util/proc.hpp), which does not allocate,
// and the pointer array is an mmap populated before the baseline, so neither
// the measurement nor the bookkeeping calls the allocator or moves the RSS.
//
// Metrics (bytes are above the baseline taken just before the first malloc):
//   ms_to_10pct        ms after the last free until RSS first falls below 10%
//                      of the peak increase; watched_ms + sample_ms when it
//                      never does (shown as "never (>watched)")
//   watched_ms         ms after the last free of the last sample
//   peak_rss_increase  RSS at the peak
//   rss_after_free     RSS right after the last free
//   rss_after_watch    RSS at the end of the watch
// Throughput is blocks freed per second of the free phase.
#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "util/proc.hpp"
#include "util/text.hpp"
#include "workloads/common.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

namespace {

// Each thread's share: a deterministic size sequence (seeded by the thread
// index) whose requests add up to at least `target` bytes.
struct Share {
  std::uint64_t seed;
  std::uint64_t blocks;
  void** pointers;
};

std::uint64_t blocks_for(std::uint64_t seed, std::uint64_t target, std::uint64_t min_size, std::uint64_t max_size) {
  FastRandom random(seed);
  std::uint64_t bytes = 0, blocks = 0;
  while (bytes < target) {
    bytes += random.between(min_size, max_size);
    ++blocks;
  }
  return blocks;
}

// One sample of the watch: ms since the last free, resident bytes.
struct WatchSample {
  double ms;
  std::uint64_t rss;
};

void run_rss_return(const Params& params, const std::string& case_name, const RunContext&, MetricSink& sink) {
  auto peak = params.size("peak");
  auto min_size = params.size("min_size"), max_size = params.size("max_size");
  auto threads = params.count("threads");
  auto watch_ms = params.count("watch_ms");
  auto sample_ms = params.count("sample_ms");
  auto trickle = params.count("trickle");
  if (case_name != "idle" && case_name != "active") throw std::invalid_argument("rss-return: case is idle or active, not " + case_name);
  if (peak == 0 || threads == 0 || min_size == 0 || min_size > max_size || sample_ms == 0) {
    throw std::invalid_argument("rss-return: peak > 0, threads > 0, 0 < min_size <= max_size, sample_ms > 0");
  }
  const bool active = case_name == "active";

  // The pointer arrays: one mapping, populated now so it is part of the baseline.
  std::vector<Share> shares(threads);
  std::uint64_t total_blocks = 0;
  for (std::uint64_t t = 0; t < threads; ++t) {
    shares[t].seed = t + 1;
    shares[t].blocks = blocks_for(shares[t].seed, peak / threads + (t < peak % threads ? 1 : 0), min_size, max_size);
    total_blocks += shares[t].blocks;
  }
  std::size_t map_bytes = std::max<std::size_t>(total_blocks * sizeof(void*), 1);
  void* map = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (map == MAP_FAILED) throw std::runtime_error("rss-return: cannot map the pointer array");
  auto* pointers = static_cast<void**>(map);
  for (std::uint64_t t = 0, offset = 0; t < threads; offset += shares[t].blocks, ++t) shares[t].pointers = pointers + offset;

  std::vector<WatchSample> samples;
  samples.reserve(watch_ms / sample_ms + 2);
  std::barrier sync(static_cast<std::ptrdiff_t>(threads));
  std::atomic<std::int64_t> last_free_ticks{0};  // steady clock, latest end of any thread's free phase
  std::atomic<bool> stop{false};
  SteadyClock::time_point watch_start{};  // written by thread 0 before the barrier the others pass to read it

  auto allocate_share = [&](const Share& share) {
    FastRandom random(share.seed);
    for (std::uint64_t i = 0; i < share.blocks; ++i) {
      std::uint64_t bytes = random.between(min_size, max_size);
      void* block = std::malloc(bytes);
      if (block == nullptr) std::abort();
      touch_pages(block, bytes);
      share.pointers[i] = block;
    }
  };
  auto free_share = [&](const Share& share) {
    for (std::uint64_t i = 0; i < share.blocks; ++i) std::free(share.pointers[i]);
    std::int64_t end = SteadyClock::now().time_since_epoch().count();
    std::int64_t seen = last_free_ticks.load();
    while (seen < end && !last_free_ticks.compare_exchange_weak(seen, end)) {
    }
  };
  // The light activity of the active case: `trickle` small malloc/free pairs.
  auto trickle_once = [&](FastRandom& random) {
    for (std::uint64_t i = 0; i < trickle; ++i) {
      std::uint64_t bytes = random.between(min_size, max_size);
      void* block = std::malloc(bytes);
      if (block == nullptr) std::abort();
      static_cast<unsigned char*>(block)[0] = 1;
      keep_alive(block);
      std::free(block);
    }
  };

  // Threads 1..T-1; the main thread is thread 0 and also takes the samples.
  std::vector<std::jthread> workers;
  for (std::uint64_t t = 1; t < threads; ++t) {
    workers.emplace_back([&, t] {
      sync.arrive_and_wait();  // 1: baseline taken
      allocate_share(shares[t]);
      sync.arrive_and_wait();  // 2: everything allocated
      sync.arrive_and_wait();  // 3: peak taken
      free_share(shares[t]);
      sync.arrive_and_wait();  // 4: everything freed
      sync.arrive_and_wait();  // 5: watch_start set
      if (!active) {
        stop.wait(false);  // a futex wait: no allocator call
        return;
      }
      FastRandom random(1000 + t);
      for (std::uint64_t tick = 1; !stop.load(std::memory_order_relaxed); ++tick) {
        std::this_thread::sleep_until(watch_start + std::chrono::milliseconds(tick * sample_ms));
        if (!stop.load(std::memory_order_relaxed)) trickle_once(random);
      }
    });
  }

  std::uint64_t baseline = resident_bytes().value_or(0);
  sync.arrive_and_wait();  // 1
  auto allocation_start = SteadyClock::now();
  allocate_share(shares[0]);
  sync.arrive_and_wait();  // 2
  double allocation_seconds = seconds_between(allocation_start, SteadyClock::now());
  std::uint64_t peak_rss = resident_bytes().value_or(0);
  sync.arrive_and_wait();  // 3
  auto free_start = SteadyClock::now();
  free_share(shares[0]);
  sync.arrive_and_wait();  // 4
  watch_start = SteadyClock::time_point(SteadyClock::duration(last_free_ticks.load()));
  sync.arrive_and_wait();  // 5
  double free_seconds = seconds_between(free_start, watch_start);

  // The watch: a sample right after the last free, then one every sample_ms.
  FastRandom random(1000);
  for (std::uint64_t tick = 0; tick * sample_ms <= watch_ms; ++tick) {
    if (tick > 0) std::this_thread::sleep_until(watch_start + std::chrono::milliseconds(tick * sample_ms));
    std::uint64_t rss = resident_bytes().value_or(0);
    samples.push_back({seconds_between(watch_start, SteadyClock::now()) * 1e3, rss});  // reserved: no allocation
    if (active) trickle_once(random);
  }
  stop.store(true);
  stop.notify_all();
  workers.clear();  // joins
  munmap(map, map_bytes);

  auto above = [&](std::uint64_t rss) { return static_cast<double>(rss) - static_cast<double>(baseline); };
  double increase = above(peak_rss);
  double watched_ms = samples.back().ms;
  double ms_to_10pct = watched_ms + static_cast<double>(sample_ms);  // never, unless a sample says otherwise
  for (const auto& sample : samples) {
    if (above(sample.rss) < 0.1 * increase) {
      ms_to_10pct = sample.ms;
      break;
    }
  }

  sink.throughput(static_cast<double>(total_blocks), free_seconds);
  sink.metric("ms_to_10pct", ms_to_10pct);
  sink.metric("watched_ms", watched_ms);
  sink.metric("peak_rss_increase", increase);
  sink.metric("rss_after_free", above(samples.front().rss));
  sink.metric("rss_after_watch", above(samples.back().rss));
  sink.metric("baseline_rss", static_cast<double>(baseline));
  sink.metric("blocks", static_cast<double>(total_blocks));
  sink.metric("allocations_per_s", static_cast<double>(total_blocks) / allocation_seconds);
  // The delay the target is held to: mallard's configured purge delay, asked
  // of the library itself (other allocators have no such option).
  using OptionGet = const char* (*)(const char*);
  if (auto get = reinterpret_cast<OptionGet>(dlsym(RTLD_DEFAULT, "mallard_option_get"))) {
    if (const char* delay = get("purge_delay_ms")) sink.metric("purge_delay_ms", std::atof(delay));
  }

  sink.log(strprintf("rss-return %s: %llu blocks, baseline %s, peak +%s; RSS above baseline after the last free:", case_name.c_str(),
                     static_cast<unsigned long long>(total_blocks), format_bytes(static_cast<double>(baseline)).c_str(),
                     format_bytes(increase).c_str()));
  std::size_t step = std::max<std::size_t>(samples.size() / 40, 1);
  for (std::size_t i = 0; i < samples.size(); i += step) {
    sink.log(strprintf("  %8.1f ms  %s", samples[i].ms, format_bytes(above(samples[i].rss)).c_str()));
  }
}

}  // namespace

Workload make_rss_return_workload() {
  Workload workload;
  workload.name = "rss-return";
  workload.description =
      "memory comes back: T threads allocate random small blocks up to a peak, touch and free them all, then RSS is "
      "watched every sample_ms; case idle makes no allocator call after the last free, case active keeps a trickle of "
      "malloc/free pairs; ms to <10% is the time from the last free until RSS above the baseline falls below 10% of the "
      "peak increase; throughput is blocks freed per second of the free phase";
  workload.ops_unit = "frees";
  workload.params = {
      {"peak", "1G", "256M", "bytes of blocks requested at the peak, over all threads"},
      {"min_size", "16", "16", "smallest block"},
      {"max_size", "256", "256", "largest block"},
      {"threads", "1", "1", "threads that allocate and free (the main thread is one)"},
      {"watch_ms", "2000", "1000", "how long RSS is watched after the last free"},
      {"sample_ms", "10", "10", "RSS sampling period (and trickle period in case active)"},
      {"trickle", "1000", "1000", "malloc/free pairs per thread per sample_ms in case active"},
  };
  workload.cases = [](const Params&) { return std::vector<std::string>{"idle", "active"}; };
  workload.run = run_rss_return;
  workload.chart_rss_over_time = true;
  workload.ranked = false;
  workload.metric_columns = {
      {"peak_rss_increase", "peak +RSS", "bytes", ""},
      {"rss_after_free", "+RSS after free", "bytes", ""},
      {"ms_to_10pct", "ms to <10%", "%.0f", "watched_ms"},
      {"rss_after_watch", "+RSS after watch", "bytes", ""},
  };
  return workload;
}

}  // namespace mallard::tool
