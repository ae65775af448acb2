// Every workload, with tiny parameters, in a real child process under glibc
// and (when this build has it) libmallard.so, asserting the preload took; and
// a preload that cannot take must be reported as an error, not a result.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "alloc/allocator_catalog.hpp"
#include "run/bench_runner.hpp"
#include "util/proc.hpp"

namespace mallard::tool {
namespace {

// Parameters small enough for a test; a workload missing here fails the test,
// so a new workload cannot go untested.
const std::map<std::string, ParamValues>& tiny_params() {
  static const std::map<std::string, ParamValues> params = {
      {"sizes", {{"threads", "2"}, {"blocks", "32:2000,4k:2000,1m:20"}}},
      {"iopath", {{"total", "4M"}, {"submitters", "1"}, {"completers", "1"}, {"queue_depth", "4"}}},
      {"mixed", {{"jobs", "2"}, {"iodepth", "2"}, {"ios", "2000"}, {"bytes", "16M"}, {"sweep_sizes", "64k"}, {"sweep_modes", "rw"}}},
      {"kv", {{"list_items", "2000"}, {"keys", "2000"}}},
      {"redis", {{"rpush", "1000"}, {"churn_keys", "500"}, {"bench_requests", "20000"}, {"bench_clients", "2"}, {"bench_tests", "set"}}},
      {"larson", {{"threads", "2"}, {"slots", "100"}, {"ops_per_round", "1000"}, {"rounds", "3"}}},
      {"xmalloc", {{"consumers", "2"}, {"objects", "10000"}}},
      {"churn", {{"threads", "2"}, {"steps", "2000"}, {"cases", "64k:100,256k:50"}, {"shared", "16"}}},
      {"cache-scratch", {{"threads", "2"}, {"iterations", "100"}, {"repetitions", "10"}}},
      {"cache-thrash", {{"threads", "2"}, {"iterations", "100"}, {"repetitions", "10"}}},
      {"threadchurn", {{"rounds", "3"}, {"threads", "2"}, {"allocations", "100"}, {"kept", "10"}}},
      {"regrow", {{"threads", "2"}, {"buffers", "8"}, {"appends", "20000"}, {"max_final", "300k"}}},
      {"rss-return", {{"peak", "8M"}, {"threads", "2"}, {"watch_ms", "300"}, {"sample_ms", "10"}, {"trickle", "100"}}},
  };
  return params;
}

RunSettings test_settings() { return {MALLARD_TOOL_PATH, "", 120}; }

std::vector<AllocatorSpec> allocators_under_test() {
  std::vector<AllocatorSpec> chosen;
  for (const auto& spec : known_allocators()) {
    if ((spec.name == "glibc" || spec.name == "mallard") && spec.available) chosen.push_back(spec);
  }
  return chosen;
}

void expect_runs_everywhere(const Workload& workload) {
  ASSERT_TRUE(tiny_params().contains(workload.name)) << "add tiny parameters for " << workload.name;
  if (workload.unavailable_reason && !workload.unavailable_reason().empty()) GTEST_SKIP() << workload.unavailable_reason();
  ParamValues params = resolve_params(workload, true, tiny_params().at(workload.name));
  for (const auto& allocator : allocators_under_test()) {
    for (const auto& case_name : cases_of(workload, params)) {
      BenchRow row{&workload, case_name, params};
      RunRecord record = run_benchmark_once(row, allocator, 1, test_settings());
      SCOPED_TRACE(row.benchmark() + " under " + allocator.name);
      EXPECT_TRUE(record.ok) << record.error;
      EXPECT_GT(record.operations, 0);
      EXPECT_GT(record.ops_per_s, 0);
      EXPECT_GT(record.peak_rss_bytes, 0u);
      EXPECT_GT(record.final_rss_bytes, 0u);
      // Every column the workload's tables show has its metric.
      for (const auto& column : workload.metric_columns) EXPECT_TRUE(record.metrics.contains(column.metric)) << column.metric;
      if (allocator.is_glibc()) {
        EXPECT_NE(record.malloc_provider.find("libc.so"), std::string::npos) << record.malloc_provider;
      } else {
        EXPECT_EQ(record.malloc_provider, canonical_path(allocator.path));
      }
    }
  }
}

class EachWorkload : public ::testing::TestWithParam<std::string> {};

TEST_P(EachWorkload, RunsUnderEveryAllocatorWithThePreloadProven) {
  const Workload* workload = find_workload(GetParam());
  ASSERT_NE(workload, nullptr);
  expect_runs_everywhere(*workload);
}

std::vector<std::string> workload_names() {
  std::vector<std::string> names;
  for (const auto& workload : all_workloads()) names.push_back(workload.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Tools, EachWorkload, ::testing::ValuesIn(workload_names()), [](const auto& test_info) {
  std::string name = test_info.param;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
});

// rss-return's metrics, whatever the allocator does with the freed memory:
// the peak is there, ms_to_10pct is a sample time or "never" (just past the
// watch), and nothing is above the peak.
TEST(Workloads, RssReturnReportsTheWatch) {
  const Workload* workload = find_workload("rss-return");
  ASSERT_NE(workload, nullptr);
  ParamValues params = resolve_params(*workload, true, {{"peak", "16M"}, {"watch_ms", "200"}, {"sample_ms", "20"}, {"trickle", "100"}});
  EXPECT_EQ(cases_of(*workload, params), (std::vector<std::string>{"idle", "active"}));
  for (const auto& allocator : allocators_under_test()) {
    for (const auto& case_name : cases_of(*workload, params)) {
      BenchRow row{workload, case_name, params};
      RunRecord record = run_benchmark_once(row, allocator, 1, test_settings());
      SCOPED_TRACE(row.benchmark() + " under " + allocator.name);
      ASSERT_TRUE(record.ok) << record.error;
      for (const char* name : {"ms_to_10pct", "watched_ms", "peak_rss_increase", "rss_after_free", "rss_after_watch", "blocks"}) {
        EXPECT_TRUE(record.metrics.contains(name)) << name;
      }
      double increase = record.metrics["peak_rss_increase"];
      EXPECT_GE(increase, 16.0 * 1024 * 1024);  // every requested byte was touched
      EXPECT_LT(increase, 64.0 * 1024 * 1024);  // and the pointer array is not in it
      EXPECT_LE(record.metrics["rss_after_free"], increase * 1.05);
      EXPECT_LE(record.metrics["rss_after_watch"], increase * 1.05);
      double watched = record.metrics["watched_ms"], ms = record.metrics["ms_to_10pct"];
      EXPECT_GE(watched, 200.0);
      EXPECT_LT(watched, 2000.0);
      EXPECT_GE(ms, 0.0);
      if (ms <= watched) {
        EXPECT_LT(record.metrics["rss_after_watch"], increase);  // it fell below 10% at some sample
      } else {
        EXPECT_EQ(ms, watched + 20.0);  // never: one sample period past the watch
      }
      // 16 MiB of 16..256 B blocks: about 123k of them, all freed in the measured phase.
      EXPECT_GT(record.metrics["blocks"], 100000.0);
      EXPECT_EQ(record.operations, record.metrics["blocks"]);
    }
  }
}

// A child's peak RSS is its own: wait4's ru_maxrss, or a sample of the
// child's RSS taken before it exec'd, would also count the runner's resident
// pages, which the child shares between fork and exec.
TEST(Runner, PeakRssIsTheChildsOwnNotTheRunners) {
  constexpr std::size_t kRunnerBytes = 96u << 20;
  std::vector<char> runner_memory(kRunnerBytes, 1);  // resident in the runner at fork
  const Workload* sizes = find_workload("sizes");
  ASSERT_NE(sizes, nullptr);
  ParamValues params = resolve_params(*sizes, true, tiny_params().at("sizes"));
  for (const auto& allocator : allocators_under_test()) {
    RunRecord record = run_benchmark_once(BenchRow{sizes, "32B", params}, allocator, 1, test_settings());
    ASSERT_TRUE(record.ok) << allocator.name << ": " << record.error;
    EXPECT_GT(record.peak_rss_bytes, 0u) << allocator.name;
    EXPECT_LT(record.peak_rss_bytes, kRunnerBytes / 2) << allocator.name;
    // The kernel's VmHWM is kept beside it; the peak is never below it.
    ASSERT_TRUE(record.metrics.contains("vmhwm_bytes")) << allocator.name;
    EXPECT_GE(static_cast<double>(record.peak_rss_bytes), record.metrics.at("vmhwm_bytes")) << allocator.name;
  }
  EXPECT_EQ(runner_memory[kRunnerBytes - 1], 1);
}

TEST(Runner, AllocatorOrderRotatesOverRowsAndRepetitions) {
  // Each order is a permutation; over n repetitions of one row, every
  // allocator runs in every position exactly once; neighbouring rows differ.
  constexpr std::size_t n = 4;
  std::vector<std::vector<int>> seen(n, std::vector<int>(n, 0));  // [allocator][position]
  for (int repetition = 1; repetition <= static_cast<int>(n); ++repetition) {
    std::vector<std::size_t> order = allocator_order(n, 2, repetition);
    ASSERT_EQ(order.size(), n);
    for (std::size_t position = 0; position < n; ++position) ++seen[order[position]][position];
  }
  for (const auto& positions : seen) {
    for (int count : positions) EXPECT_EQ(count, 1);
  }
  EXPECT_NE(allocator_order(n, 0, 1), allocator_order(n, 1, 1));
  EXPECT_EQ(allocator_order(n, 0, 1), (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_TRUE(allocator_order(0, 5, 3).empty());
}

// An allocator's own environment (--env) reaches its runs, and only its:
// libmallard warns in the child's log about a MALLARD_CONF key it does not
// know.
TEST(Runner, AnAllocatorsEnvironmentReachesOnlyItsRuns) {
  auto catalog = known_allocators();
  const AllocatorSpec* mallard = find_allocator(catalog, "mallard");
  if (mallard == nullptr || !mallard->available) GTEST_SKIP() << "no libmallard.so in this build";
  AllocatorSpec tuned = *mallard;
  tuned.name = "tuned";
  tuned.environment = {"MALLARD_CONF=no_such_option:1"};
  char directory[] = "/tmp/mallard-env-test-XXXXXX";
  ASSERT_NE(mkdtemp(directory), nullptr);
  RunSettings settings{MALLARD_TOOL_PATH, directory, 120};
  const Workload* workload = find_workload("kv");
  ParamValues params = resolve_params(*workload, true, tiny_params().at("kv"));
  for (const AllocatorSpec* spec : {mallard, static_cast<const AllocatorSpec*>(&tuned)}) {
    RunRecord record = run_benchmark_once({workload, "", params}, *spec, 1, settings);
    ASSERT_TRUE(record.ok) << spec->name << ": " << record.error;
    std::ifstream log(record.log_file);
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.find("unknown option 'no_such_option'") != std::string::npos, spec == &tuned) << spec->name << ": " << text;
  }
  std::filesystem::remove_all(directory);
}

TEST(Workloads, EveryRegisteredWorkloadHasTinyParameters) {
  for (const auto& workload : all_workloads()) EXPECT_TRUE(tiny_params().contains(workload.name)) << workload.name;
}

TEST(Preload, ALibraryThatDoesNotServeMallocIsAnError) {
  // libm loads fine as a preload but exports no malloc: the child must say so.
  AllocatorSpec not_an_allocator{"libm", canonical_path("/lib/x86_64-linux-gnu/libm.so.6"), "", "user", true, ""};
  if (access(not_an_allocator.path.c_str(), R_OK) != 0) GTEST_SKIP() << "no libm.so.6 at the Debian path";
  const Workload* workload = find_workload("kv");
  ParamValues params = resolve_params(*workload, true, tiny_params().at("kv"));
  RunRecord record = run_benchmark_once({workload, "", params}, not_an_allocator, 1, test_settings());
  EXPECT_FALSE(record.ok);
  EXPECT_NE(record.error.find("preload did not take"), std::string::npos) << record.error;
}

TEST(Preload, AKnownAllocatorTakes) {
  auto catalog = known_allocators();
  const AllocatorSpec* jemalloc = find_allocator(catalog, "jemalloc");
  if (jemalloc == nullptr || !jemalloc->available) GTEST_SKIP() << "jemalloc not installed";
  const Workload* workload = find_workload("larson");
  ParamValues params = resolve_params(*workload, true, tiny_params().at("larson"));
  RunRecord record = run_benchmark_once({workload, "", params}, *jemalloc, 1, test_settings());
  EXPECT_TRUE(record.ok) << record.error;
  EXPECT_EQ(record.malloc_provider, canonical_path(jemalloc->path));
}

}  // namespace
}  // namespace mallard::tool
