// Command-line, size/count and bssplit parsing, markup escaping, and
// parameter resolution.
#include <gtest/gtest.h>

#include "cli/options.hpp"
#include "util/text.hpp"
#include "workloads/bssplit.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {
namespace {

TEST(BenchOptions, DefaultsWhenNoArguments) {
  BenchOptions options = parse_bench_options({});
  EXPECT_FALSE(options.quick);
  EXPECT_FALSE(options.list);
  EXPECT_EQ(options.repetitions, 3);
  EXPECT_TRUE(options.allocators.empty());
  EXPECT_TRUE(options.workloads.empty());
  EXPECT_TRUE(options.out_directory.empty());
}

TEST(BenchOptions, EveryOptionInBothSpellings) {
  BenchOptions options = parse_bench_options({"--quick", "--reps", "5", "--allocators", "glibc,jemalloc", "--workloads=sizes:4K,kv",
                                              "--alloc", "custom=/tmp/libcustom.so", "--set", "sizes.threads=4", "--set=kv.keys=10k",
                                              "--out=/tmp/out", "--markdown", "BENCHMARKS.md", "--timeout", "30", "--detail", "-v",
                                              "--no-progress", "--list"});
  EXPECT_TRUE(options.quick);
  EXPECT_TRUE(options.list);
  EXPECT_TRUE(options.detail);
  EXPECT_TRUE(options.verbose);
  EXPECT_FALSE(options.progress);
  EXPECT_EQ(options.repetitions, 5);
  EXPECT_EQ(options.allocators, (std::vector<std::string>{"glibc", "jemalloc"}));
  ASSERT_EQ(options.workloads.size(), 2u);
  EXPECT_EQ(options.workloads[0].workload, "sizes");
  EXPECT_EQ(options.workloads[0].case_name, "4K");
  EXPECT_EQ(options.workloads[1].workload, "kv");
  EXPECT_EQ(options.workloads[1].case_name, "");
  ASSERT_EQ(options.extra_allocators.size(), 1u);
  EXPECT_EQ(options.extra_allocators[0], (std::pair<std::string, std::string>{"custom", "/tmp/libcustom.so"}));
  EXPECT_EQ(options.params["sizes"]["threads"], "4");
  EXPECT_EQ(options.params["kv"]["keys"], "10k");
  EXPECT_EQ(options.out_directory, "/tmp/out");
  EXPECT_EQ(options.markdown_path, "BENCHMARKS.md");
  EXPECT_DOUBLE_EQ(options.timeout_seconds, 30);
}

TEST(BenchOptions, RejectsBadInput) {
  EXPECT_THROW(parse_bench_options({"--reps", "0"}), std::invalid_argument);
  EXPECT_THROW(parse_bench_options({"--reps", "many"}), std::invalid_argument);
  EXPECT_THROW(parse_bench_options({"--reps"}), std::invalid_argument);
  EXPECT_THROW(parse_bench_options({"--bogus"}), std::invalid_argument);
  EXPECT_THROW(parse_bench_options({"--alloc", "noequals"}), std::invalid_argument);
  EXPECT_THROW(parse_bench_options({"--alloc", "name="}), std::invalid_argument);
  EXPECT_THROW(parse_bench_options({"--set", "nodot=1"}), std::invalid_argument);
  EXPECT_THROW(parse_bench_options({"--set", "sizes.=1"}), std::invalid_argument);
  EXPECT_THROW(parse_bench_options({"--allocators", "glibc,,jemalloc"}), std::invalid_argument);
  EXPECT_THROW(parse_bench_options({"--quick=yes"}), std::invalid_argument);
  EXPECT_THROW(parse_bench_options({"--timeout", "-1"}), std::invalid_argument);
}

TEST(BenchOptions, EnvironmentForOneAllocator) {
  BenchOptions options = parse_bench_options({"--env", "tuned:MALLARD_CONF=extent_heap_mb:0,purge_delay_ms:100",
                                              "--env=jemalloc:MALLOC_CONF=narenas:1"});
  ASSERT_EQ(options.allocator_environment.size(), 2u);
  EXPECT_EQ(options.allocator_environment[0], (AllocatorVariable{"tuned", "MALLARD_CONF", "extent_heap_mb:0,purge_delay_ms:100"}));
  EXPECT_EQ(options.allocator_environment[1], (AllocatorVariable{"jemalloc", "MALLOC_CONF", "narenas:1"}));
  EXPECT_THROW(parse_bench_options({"--env", "MALLARD_CONF=x"}), std::invalid_argument);    // no allocator
  EXPECT_THROW(parse_bench_options({"--env", ":MALLARD_CONF=x"}), std::invalid_argument);   // empty allocator
  EXPECT_THROW(parse_bench_options({"--env", "tuned:=x"}), std::invalid_argument);          // no variable
  EXPECT_THROW(parse_bench_options({"--env", "tuned:MALLARD_CONF"}), std::invalid_argument);  // no value
  EXPECT_THROW(parse_bench_options({"--env", "tuned:1X=2"}), std::invalid_argument);
  EXPECT_THROW(parse_bench_options({"--env", "tuned:A-B=2"}), std::invalid_argument);
  EXPECT_THROW(parse_bench_options({"--env", "tuned:LD_PRELOAD=/x.so"}), std::invalid_argument);
}

TEST(RunOptions, AllocatorAndCommand) {
  RunOptions options = parse_run_options({"--alloc", "jemalloc", "--", "ls", "-l", "--color"});
  EXPECT_EQ(options.allocator, "jemalloc");
  EXPECT_EQ(options.command, (std::vector<std::string>{"ls", "-l", "--color"}));
  RunOptions without_dashes = parse_run_options({"--alloc=x=/lib/x.so", "sleep", "1"});
  EXPECT_EQ(without_dashes.allocator, "x=/lib/x.so");
  EXPECT_EQ(without_dashes.command, (std::vector<std::string>{"sleep", "1"}));
  EXPECT_THROW(parse_run_options({"--alloc", "jemalloc"}), std::invalid_argument);
  EXPECT_THROW(parse_run_options({"--", "ls"}), std::invalid_argument);
}

TEST(Units, SizesAreBinaryCountsAreDecimal) {
  EXPECT_EQ(parse_size("512"), 512u);
  EXPECT_EQ(parse_size("4k"), 4096u);
  EXPECT_EQ(parse_size("32K"), 32768u);
  EXPECT_EQ(parse_size("1m"), 1048576u);
  EXPECT_EQ(parse_size("1MiB"), 1048576u);
  EXPECT_EQ(parse_size("32B"), 32u);
  EXPECT_EQ(parse_size("2g"), 2147483648u);
  EXPECT_EQ(parse_size("0.5k"), 512u);
  EXPECT_FALSE(parse_size("x"));
  EXPECT_FALSE(parse_size("4q"));
  EXPECT_FALSE(parse_size(""));
  EXPECT_EQ(parse_count("100k"), 100000u);
  EXPECT_EQ(parse_count("1.5M"), 1500000u);
  EXPECT_EQ(parse_count("20"), 20u);
  EXPECT_FALSE(parse_count("1.5"));
  EXPECT_EQ(size_label(32), "32B");
  EXPECT_EQ(size_label(4096), "4K");
  EXPECT_EQ(size_label(1048576), "1M");
  EXPECT_EQ(size_label(1536), "1536B");
}

TEST(Units, MarkupEscapesTheFourSpecialCharacters) {
  EXPECT_EQ(escape_markup("a<b & \"c\"> d"), "a&lt;b &amp; &quot;c&quot;&gt; d");
  EXPECT_EQ(escape_markup("plain text, 'single' quotes"), "plain text, 'single' quotes");
  EXPECT_EQ(escape_markup(""), "");
}

TEST(BsSplit, TheSeedsRealWorldMix) {
  DirectionalSplit split = parse_bssplit("4k/85:32k/11:512/3:1m/1,4k/89:32k/10:512k/1");
  ASSERT_EQ(split.read.size(), 4u);
  EXPECT_EQ(split.read[0].bytes, 4096u);
  EXPECT_DOUBLE_EQ(split.read[0].percent, 85);
  EXPECT_EQ(split.read[2].bytes, 512u);
  EXPECT_DOUBLE_EQ(split.read[2].percent, 3);
  EXPECT_EQ(split.read[3].bytes, 1048576u);
  ASSERT_EQ(split.write.size(), 3u);
  EXPECT_EQ(split.write[2].bytes, 524288u);
  EXPECT_DOUBLE_EQ(split.write[1].percent, 10);
  EXPECT_NEAR(mean_block_size(split.read), 0.85 * 4096 + 0.11 * 32768 + 0.03 * 512 + 0.01 * 1048576, 1e-6);
}

TEST(BsSplit, OneListServesBothDirectionsAndBlanksShareTheRest) {
  DirectionalSplit same = parse_bssplit("4k/50:8k/50");
  EXPECT_EQ(same.write.size(), 2u);
  EXPECT_EQ(same.write[1].bytes, 8192u);
  BlockSizeSplit rest = parse_block_size_split("4k/40:8k:16k/");
  EXPECT_DOUBLE_EQ(rest[1].percent, 30);
  EXPECT_DOUBLE_EQ(rest[2].percent, 30);
  BlockSizeSplit even = parse_block_size_split("4k:8k");
  EXPECT_DOUBLE_EQ(even[0].percent, 50);
}

TEST(BsSplit, RejectsMalformedLists) {
  EXPECT_THROW(parse_block_size_split("4k/60:8k/60"), std::invalid_argument);
  EXPECT_THROW(parse_block_size_split("4k/50:8k/40"), std::invalid_argument);
  EXPECT_THROW(parse_block_size_split("abc/10"), std::invalid_argument);
  EXPECT_THROW(parse_block_size_split("4k/x"), std::invalid_argument);
  EXPECT_THROW(parse_block_size_split("0/100"), std::invalid_argument);
  EXPECT_THROW(parse_bssplit(""), std::invalid_argument);
}

TEST(BsSplit, PickerFollowsTheShares) {
  BlockSizePicker picker(parse_block_size_split("4k/85:32k/11:512/3:1m/1"));
  EXPECT_EQ(picker.pick(0.0), 4096u);
  EXPECT_EQ(picker.pick(0.849), 4096u);
  EXPECT_EQ(picker.pick(0.851), 32768u);
  EXPECT_EQ(picker.pick(0.97), 512u);
  EXPECT_EQ(picker.pick(0.995), 1048576u);
}

TEST(WorkloadParams, QuickValuesAndOverrides) {
  const Workload* sizes = find_workload("sizes");
  ASSERT_NE(sizes, nullptr);
  ParamValues defaults = resolve_params(*sizes, false, {});
  ParamValues quick = resolve_params(*sizes, true, {{"threads", "4"}});
  EXPECT_EQ(quick.at("threads"), "4");
  EXPECT_NE(defaults.at("blocks"), quick.at("blocks"));
  EXPECT_THROW(resolve_params(*sizes, false, {{"no_such_param", "1"}}), std::invalid_argument);
  EXPECT_EQ(cases_of(*sizes, defaults), (std::vector<std::string>{"32B", "4K", "32K", "64K", "1M"}));
}

TEST(WorkloadParams, EveryWorkloadDescribesItself) {
  for (const auto& workload : all_workloads()) {
    EXPECT_FALSE(workload.description.empty()) << workload.name;
    EXPECT_FALSE(workload.ops_unit.empty()) << workload.name;
    EXPECT_TRUE(workload.run) << workload.name;
    for (const auto& param : workload.params) EXPECT_FALSE(param.help.empty()) << workload.name << "." << param.name;
    EXPECT_FALSE(cases_of(workload, resolve_params(workload, true, {})).empty()) << workload.name;
  }
}

}  // namespace
}  // namespace mallard::tool
