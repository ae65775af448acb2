// Summary and every report format, from fixture data (no benchmark runs).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "report/summary.hpp"
#include "report/targets.hpp"
#include "run/child_protocol.hpp"
#include "report/writers.hpp"

namespace mallard::tool {
namespace {

RunRecord make_run(const std::string& workload, const std::string& case_name, const std::string& allocator, int repetition, double ops_per_s,
                   std::uint64_t peak_rss) {
  RunRecord run;
  run.workload = workload;
  run.case_name = case_name;
  run.allocator = allocator;
  run.repetition = repetition;
  run.ok = true;
  run.seconds = 2.0;
  run.operations = ops_per_s * run.seconds;
  run.ops_per_s = ops_per_s;
  run.wall_seconds = 2.1;
  run.user_seconds = 1.5;
  run.sys_seconds = 0.25;
  run.peak_rss_bytes = peak_rss;
  run.final_rss_bytes = peak_rss / 2;
  run.malloc_provider = "/usr/lib/lib" + allocator + ".so";
  return run;
}

// Two workloads: sizes (two cases) and kv (one case, RSS timeline), under
// glibc, jemalloc and mallard, two repetitions; mallard fails one kv run.
BenchResults fixture() {
  BenchResults results;
  results.started_at = "2024-05-01T12:00:00+0000";
  results.command_line = "mallard bench --reps 2";
  results.duration_seconds = 42;
  results.repetitions = 2;
  results.machine.cpu_model = "Test CPU";
  results.machine.cpus = 2;
  results.machine.os = "Debian";
  results.allocators = {{"glibc", "", "2.36", "system"}, {"jemalloc", "/usr/lib/libjemalloc.so.2", "5.3.0", "package"},
                        {"mallard", "/build/libmallard.so", "0.1.0", "this build"}};
  results.workloads = {{"sizes", "blocks of one size", "alloc+touch+free", {{"threads", "32"}}, {"32B", "4K"}, false},
                       {"kv", "a redis-like store", "commands", {{"keys", "1M"}}, {""}, true}};
  // sizes:32B medians: glibc 100, jemalloc 200, mallard 400 (ops/s).
  for (int rep = 1; rep <= 2; ++rep) {
    results.runs.push_back(make_run("sizes", "32B", "glibc", rep, rep == 1 ? 90 : 110, 4 << 20));
    results.runs.push_back(make_run("sizes", "32B", "jemalloc", rep, 200, 6 << 20));
    results.runs.push_back(make_run("sizes", "32B", "mallard", rep, 400, 8 << 20));
    // sizes:4K medians: glibc 100, jemalloc 100, mallard 50.
    results.runs.push_back(make_run("sizes", "4K", "glibc", rep, 100, 4 << 20));
    results.runs.push_back(make_run("sizes", "4K", "jemalloc", rep, 100, 4 << 20));
    results.runs.push_back(make_run("sizes", "4K", "mallard", rep, 50, 2 << 20));
    // kv medians: glibc 1000, jemalloc 2000, mallard 1000 (one failed run).
    results.runs.push_back(make_run("kv", "", "glibc", rep, 1000, 64 << 20));
    results.runs.push_back(make_run("kv", "", "jemalloc", rep, 2000, 48 << 20));
    RunRecord mallard_kv = make_run("kv", "", "mallard", rep, 1000, 40 << 20);
    if (rep == 2) {
      mallard_kv.ok = false;
      mallard_kv.error = "preload did not take: malloc comes from libc.so.6";
    }
    mallard_kv.rss_series = {{0.0, 1 << 20}, {0.5, 30 << 20}, {1.0, 40 << 20}};
    mallard_kv.metrics["frag_ratio"] = 1.25;
    results.runs.push_back(mallard_kv);
  }
  results.notes.push_back("tcmalloc skipped: not installed");
  return results;
}

// iopath and kv, one repetition, under jemalloc, tcmalloc, mimalloc and
// mallard. Mallard meets every target of issue #4 here; tests change one
// number at a time to see a verdict turn.
BenchResults peers_fixture() {
  BenchResults results;
  results.repetitions = 1;
  results.allocators = {{"jemalloc", "/usr/lib/libjemalloc.so.2", "5.3.0", "package"},
                        {"tcmalloc", "/usr/lib/libtcmalloc.so.4", "2.10", "package"},
                        {"mimalloc", "/usr/lib/libmimalloc.so.2", "2.0.9", "package"},
                        {"mallard", "/build/libmallard.so", "0.1.0", "this build"}};
  results.workloads = {{"iopath", "buffers per request", "requests", {}, {""}, false}, {"kv", "a redis-like store", "commands", {}, {""}, true}};
  // iopath: the best peer is mimalloc (300), mallard's time 300/400 = 0.75 of it.
  // kv: the best peer is jemalloc (1000), a tie with mallard: 1.00, which meets "at most 1.00".
  const double iopath_ops[] = {100, 200, 300, 400};
  const double kv_ops[] = {1000, 900, 800, 1000};
  for (std::size_t a = 0; a < results.allocators.size(); ++a) {
    const std::string& name = results.allocators[a].name;
    std::uint64_t peak = name == "mallard" ? 4 << 20 : 8 << 20;  // mallard's peak RSS: 0.5 of the lowest peer's
    results.runs.push_back(make_run("iopath", "", name, 1, iopath_ops[a], peak));
    RunRecord kv = make_run("kv", "", name, 1, kv_ops[a], peak);
    kv.metrics["frag_ratio"] = name == "mallard" ? 1.2 : 1.5;
    results.runs.push_back(kv);
  }
  return results;
}

RunRecord& run_of(BenchResults& results, const std::string& workload, const std::string& allocator) {
  for (auto& run : results.runs) {
    if (run.workload == workload && run.allocator == allocator) return run;
  }
  throw std::invalid_argument("no run of " + workload + " under " + allocator);
}

const TargetCheck* find_check(const std::vector<TargetCheck>& checks, const std::string& target) {
  for (const auto& check : checks) {
    if (check.target == target) return &check;
  }
  return nullptr;
}

Verdict verdict_of(const std::vector<TargetCheck>& checks, const std::string& target) {
  const TargetCheck* check = find_check(checks, target);
  EXPECT_NE(check, nullptr) << target;
  return check != nullptr ? check->verdict : Verdict::not_measured;
}

const char* const kTimeEvery = "time ≤ 1.00× the best peer on every benchmark";
const char* const kTimeGeomean = "time geomean ≤ 0.95× the best peer";
const char* const kRssGeomean = "peak RSS geomean ≤ 1.00× the lowest peer";
const char* const kRssEvery = "peak RSS ≤ 1.25× the lowest peer on every benchmark";
const char* const kKvFragmentation = "kv fragmentation (RSS / requested bytes) below jemalloc's";
const char* const kRedisFragmentation = "redis fragmentation (RSS / used_memory, the server's usable bytes) below jemalloc's";
const char* const kIopathTcmalloc = "iopath ops/s above tcmalloc's";
const char* const kIopathMimalloc = "iopath ops/s above mimalloc's";
const char* const kRedisRss = "redis: server RSS after the RPUSHes ≤ 0.95× the lowest of jemalloc, tcmalloc, mimalloc, tbbmalloc";
const char* const kMemoryReturn = "rss-return: RSS below 10% of the peak within the purge delay";

// A strict JSON syntax check, enough to prove the writer's output parses.
class JsonChecker {
 public:
  explicit JsonChecker(const std::string& text) : text_(text) {}
  bool valid() {
    skip_space();
    if (!value()) return false;
    skip_space();
    return at_ == text_.size();
  }

 private:
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool literal(const char* word) {
    std::string expected(word);
    if (text_.compare(at_, expected.size(), expected) != 0) return false;
    at_ += expected.size();
    return true;
  }
  bool string() {
    if (text_[at_] != '"') return false;
    for (++at_; at_ < text_.size(); ++at_) {
      char c = text_[at_];
      if (c == '"') {
        ++at_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c == '\\') ++at_;
    }
    return false;
  }
  bool number() {
    std::size_t start = at_;
    if (text_[at_] == '-') ++at_;
    while (at_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[at_])) || std::strchr(".eE+-", text_[at_]))) ++at_;
    return at_ > start;
  }
  bool value() {
    if (at_ >= text_.size()) return false;
    char c = text_[at_];
    if (c == '{' || c == '[') {
      char close = c == '{' ? '}' : ']';
      ++at_;
      skip_space();
      if (text_[at_] == close) return ++at_, true;
      while (true) {
        skip_space();
        if (c == '{') {
          if (!string()) return false;
          skip_space();
          if (text_[at_++] != ':') return false;
          skip_space();
        }
        if (!value()) return false;
        skip_space();
        if (text_[at_] == ',') {
          ++at_;
          continue;
        }
        return text_[at_++] == close;
      }
    }
    if (c == '"') return string();
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    return number();
  }

  const std::string& text_;
  std::size_t at_ = 0;
};

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

TEST(Summary, RatiosAndBest) {
  Summary summary = summarize(fixture());
  ASSERT_EQ(summary.rows.size(), 3u);
  const RowSummary& small = summary.rows[0];
  EXPECT_EQ(small.benchmark, "sizes:32B");
  EXPECT_EQ(small.best, 2);
  EXPECT_DOUBLE_EQ(small.cells[0].ops_per_s.median, 100);
  EXPECT_DOUBLE_EQ(small.cells[0].ops_per_s.min, 90);
  EXPECT_DOUBLE_EQ(small.cells[0].ops_per_s.max, 110);
  EXPECT_DOUBLE_EQ(small.cells[0].ratio_to_best, 0.25);
  EXPECT_DOUBLE_EQ(small.cells[1].ratio_to_best, 0.5);
  EXPECT_DOUBLE_EQ(small.cells[2].ratio_to_glibc, 4);
  EXPECT_EQ(small.least_rss, 0);
  EXPECT_DOUBLE_EQ(small.cells[2].rss_ratio_to_least, 2);
  const RowSummary& kv = summary.rows[2];
  EXPECT_EQ(kv.benchmark, "kv");
  EXPECT_EQ(kv.cells[2].ok_runs, 1u);
  EXPECT_EQ(kv.cells[2].failed_runs, 1u);
  EXPECT_DOUBLE_EQ(kv.cells[2].metric_medians.at("frag_ratio"), 1.25);
  ASSERT_EQ(summary.failures.size(), 1u);
  EXPECT_NE(summary.failures[0].find("kv mallard #2"), std::string::npos);
}

TEST(Summary, GeometricMeanWeighsWorkloadsEqually) {
  Summary summary = summarize(fixture());
  // mallard: sizes = geomean(1, 0.5), kv = 0.5; overall = geomean of those two.
  double sizes = std::sqrt(1.0 * 0.5), kv = 0.5;
  EXPECT_NEAR(summary.geomean_to_best[2], std::sqrt(sizes * kv), 1e-12);
  // glibc: sizes = geomean(0.25, 1), kv = 0.5.
  EXPECT_NEAR(summary.geomean_to_best[0], std::sqrt(std::sqrt(0.25) * 0.5), 1e-12);
  EXPECT_NEAR(summary.geomean_to_glibc[0], 1, 1e-12);
  // jemalloc vs glibc: sizes = geomean(2, 1), kv = 2.
  EXPECT_NEAR(summary.geomean_to_glibc[1], std::sqrt(std::sqrt(2.0) * 2), 1e-12);
  EXPECT_EQ(summary.rows_in_geomean, 3u);
}

TEST(Summary, MallardAgainstTheBestPeer) {
  Summary summary = summarize(fixture());
  ASSERT_TRUE(summary.compares_mallard());
  EXPECT_EQ(summary.mallard, 2);
  // sizes:32B: jemalloc (200) is the fastest peer, mallard does 400: half the time.
  EXPECT_EQ(summary.rows[0].best_peer, 1);
  EXPECT_DOUBLE_EQ(summary.rows[0].time_to_best_peer, 0.5);
  EXPECT_EQ(summary.rows[0].least_rss_peer, 0);
  EXPECT_DOUBLE_EQ(summary.rows[0].rss_to_least_peer, 2);
  // sizes:4K: glibc and jemalloc tie at 100 (the first wins), mallard does 50.
  EXPECT_EQ(summary.rows[1].best_peer, 0);
  EXPECT_DOUBLE_EQ(summary.rows[1].time_to_best_peer, 2);
  EXPECT_DOUBLE_EQ(summary.rows[1].rss_to_least_peer, 0.5);
  // kv: the best peer (jemalloc) is also the leanest peer; mallard is the leanest overall.
  EXPECT_EQ(summary.rows[2].best_peer, 1);
  EXPECT_EQ(summary.rows[2].least_rss_peer, 1);
  EXPECT_EQ(summary.rows[2].least_rss, 2);
  EXPECT_DOUBLE_EQ(summary.rows[2].time_to_best_peer, 2);
  EXPECT_DOUBLE_EQ(summary.rows[2].rss_to_least_peer, 40.0 / 48);
  // Per workload first: time sizes = geomean(0.5, 2) = 1, kv = 2; RSS sizes = geomean(2, 0.5) = 1, kv = 40/48.
  EXPECT_NEAR(summary.geomean_time_to_best_peer, std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(summary.geomean_rss_to_least_peer, std::sqrt(40.0 / 48), 1e-12);
}

TEST(Summary, RepetitionsPairMallardWithTheBestPeerRunByRun) {
  Summary summary = summarize(fixture());
  // sizes:32B: 400 against jemalloc's 200 in both repetitions.
  EXPECT_EQ(summary.rows[0].reps_ahead_of_best_peer, 2);
  EXPECT_EQ(summary.rows[0].reps_paired_with_best_peer, 2);
  // kv: mallard's second run failed, so only the first pairs (1000 against 2000).
  EXPECT_EQ(summary.rows[2].reps_ahead_of_best_peer, 0);
  EXPECT_EQ(summary.rows[2].reps_paired_with_best_peer, 1);
  // Peak RSS against the leanest peer: sizes:32B 8 MiB against glibc's 4 in
  // both; kv 40 MiB against jemalloc's 48 in the one run mallard completed.
  EXPECT_EQ(summary.rows[0].reps_leaner_than_least_rss_peer, 0);
  EXPECT_EQ(summary.rows[0].reps_paired_with_least_rss_peer, 2);
  EXPECT_EQ(summary.rows[2].reps_leaner_than_least_rss_peer, 1);
  EXPECT_EQ(summary.rows[2].reps_paired_with_least_rss_peer, 1);

  // A machine that slows down part way: mallard's median (105) is far below
  // the peer's (290), yet mallard won two of the three repetitions.
  BenchResults phases;
  phases.repetitions = 3;
  phases.allocators = {{"tcmalloc", "/usr/lib/libtcmalloc.so.4", "2.10", "package"}, {"mallard", "/build/libmallard.so", "0.1.0", "this build"}};
  phases.workloads = {{"sizes", "blocks of one size", "blocks", {}, {"32K"}, true}};
  // Peak RSS the same way: mallard's median (6 MiB) above the peer's (5),
  // yet below it in two of the three repetitions.
  const double peer[] = {90, 300, 290}, mine[] = {100, 310, 105};
  const std::uint64_t peer_rss[] = {5 << 20, 7 << 20, 2 << 20}, mine_rss[] = {4 << 20, 6 << 20, 8 << 20};
  for (int rep = 1; rep <= 3; ++rep) {
    phases.runs.push_back(make_run("sizes", "32K", "tcmalloc", rep, peer[rep - 1], peer_rss[rep - 1]));
    phases.runs.push_back(make_run("sizes", "32K", "mallard", rep, mine[rep - 1], mine_rss[rep - 1]));
  }
  Summary split = summarize(phases);
  EXPECT_NEAR(split.rows[0].time_to_best_peer, 290.0 / 105, 1e-12);
  EXPECT_EQ(split.rows[0].reps_ahead_of_best_peer, 2);
  EXPECT_EQ(split.rows[0].reps_paired_with_best_peer, 3);
  EXPECT_NEAR(split.rows[0].rss_to_least_peer, 6.0 / 5, 1e-12);
  EXPECT_EQ(split.rows[0].reps_leaner_than_least_rss_peer, 2);
  EXPECT_EQ(split.rows[0].reps_paired_with_least_rss_peer, 3);
  EXPECT_NE(render_markdown(phases, split).find("| 2.76 (tcmalloc) | 2 of 3 | 1.20 (tcmalloc) | 2 of 3 |"), std::string::npos);
  EXPECT_NE(render_json(phases, split).find("\"reps_ahead_of_best_peer\":2,\"reps_paired_with_best_peer\":3,"
                                            "\"reps_leaner_than_least_rss_peer\":2,\"reps_paired_with_least_rss_peer\":3"),
            std::string::npos);
}

TEST(Summary, AnUnrankedWorkloadIsShownButNotCounted) {
  BenchResults results = fixture();
  results.workloads[0].ranked = false;  // sizes: only kv counts now
  Summary summary = summarize(results);
  EXPECT_FALSE(summary.rows[0].ranked);
  EXPECT_EQ(summary.rows_in_geomean, 1u);
  EXPECT_NEAR(summary.geomean_to_best[2], 0.5, 1e-12);               // kv alone
  EXPECT_NEAR(summary.geomean_time_to_best_peer, 2.0, 1e-12);        // kv alone
  EXPECT_DOUBLE_EQ(summary.rows[1].time_to_best_peer, 2);            // still computed and shown
  std::string markdown = render_markdown(results, summary);
  EXPECT_NE(markdown.find("| sizes:4K (unranked) |"), std::string::npos);
  // The per-benchmark time target sees only kv (2.0×, jemalloc), not sizes:4K.
  EXPECT_NE(markdown.find("worst 2.000× (kv, jemalloc)"), std::string::npos);
}

TEST(Summary, NoPeerComparisonWithoutMallard) {
  BenchResults results = fixture();
  results.allocators.pop_back();
  Summary summary = summarize(results);
  EXPECT_FALSE(summary.compares_mallard());
  EXPECT_EQ(summary.rows[0].best_peer, -1);
  EXPECT_TRUE(std::isnan(summary.rows[0].time_to_best_peer));
  EXPECT_TRUE(std::isnan(summary.geomean_time_to_best_peer));
  EXPECT_TRUE(check_targets(summary).empty());
  std::string markdown = render_markdown(results, summary);
  EXPECT_EQ(markdown.find("## Targets"), std::string::npos);
  EXPECT_EQ(render_json(results, summary).find("\"targets\""), std::string::npos);
  EXPECT_EQ(render_overview_text(results, summary).find("issue #4"), std::string::npos);
}

TEST(Targets, AllMetWhenMallardLeads) {
  std::vector<TargetCheck> checks = check_targets(summarize(peers_fixture()));
  ASSERT_EQ(checks.size(), 10u);
  for (const char* target : {kTimeEvery, kTimeGeomean, kRssGeomean, kRssEvery, kKvFragmentation, kIopathTcmalloc, kIopathMimalloc}) {
    EXPECT_EQ(verdict_of(checks, target), Verdict::met) << target;
  }
  EXPECT_EQ(verdict_of(checks, kRedisFragmentation), Verdict::not_measured);  // no redis in the run
  EXPECT_EQ(verdict_of(checks, kRedisRss), Verdict::not_measured);
  EXPECT_EQ(verdict_of(checks, kMemoryReturn), Verdict::not_measured);
  const TargetCheck* time = find_check(checks, kTimeEvery);
  EXPECT_DOUBLE_EQ(time->value, 1);  // kv's tie with jemalloc is the worst
  EXPECT_EQ(time->measured, "worst 1.000× (kv, jemalloc)");
  EXPECT_NEAR(find_check(checks, kTimeGeomean)->value, std::sqrt(0.75), 1e-12);
  EXPECT_DOUBLE_EQ(find_check(checks, kRssEvery)->value, 0.5);
  EXPECT_EQ(find_check(checks, kKvFragmentation)->measured, "mallard 1.20, jemalloc 1.50");
  EXPECT_DOUBLE_EQ(find_check(checks, kIopathMimalloc)->bound, 300);
}

TEST(Targets, AFasterPeerIsNotMet) {
  BenchResults results = peers_fixture();
  run_of(results, "iopath", "mimalloc").ops_per_s = 500;  // now 1.25× mallard's 400
  run_of(results, "kv", "mallard").metrics["frag_ratio"] = 1.5;  // a tie is not "lower"
  run_of(results, "iopath", "mallard").peak_rss_bytes = 11 << 20;  // 1.375× the peers' 8 MiB
  std::vector<TargetCheck> checks = check_targets(summarize(results));
  const TargetCheck* time = find_check(checks, kTimeEvery);
  ASSERT_NE(time, nullptr);
  EXPECT_EQ(time->verdict, Verdict::not_met);
  EXPECT_EQ(time->measured, "worst 1.250× (iopath, mimalloc)");
  EXPECT_EQ(verdict_of(checks, kTimeGeomean), Verdict::not_met);  // sqrt(1.25 * 1) = 1.118
  EXPECT_EQ(verdict_of(checks, kRssEvery), Verdict::not_met);
  EXPECT_EQ(verdict_of(checks, kRssGeomean), Verdict::met);  // sqrt(1.375 * 0.5) = 0.83
  EXPECT_EQ(verdict_of(checks, kKvFragmentation), Verdict::not_met);
  EXPECT_EQ(verdict_of(checks, kIopathTcmalloc), Verdict::met);
  EXPECT_EQ(verdict_of(checks, kIopathMimalloc), Verdict::not_met);
}

TEST(Targets, RedisRssAgainstTheLowestPeerAndMemoryBackWithinTheDelay) {
  BenchResults results = peers_fixture();
  results.workloads.push_back({"redis", "redis-server", "requests", {}, {""}, false});
  results.workloads.push_back({"rss-return", "memory comes back", "frees", {}, {"idle", "active"}, false, {}, false});
  const double rpush_rss[] = {100e6, 80e6, 90e6, 72e6};  // mallard 72 / tcmalloc 80 = 0.90
  for (std::size_t a = 0; a < results.allocators.size(); ++a) {
    const std::string& name = results.allocators[a].name;
    RunRecord redis = make_run("redis", "", name, 1, 1000, name == "mallard" ? 100 << 20 : 200 << 20);
    redis.metrics["rss_bytes_rpush"] = rpush_rss[a];
    results.runs.push_back(redis);
    for (const char* case_name : {"idle", "active"}) {
      RunRecord back = make_run("rss-return", case_name, name, 1, 1000, 1 << 30);
      back.metrics["ms_to_10pct"] = name == "mallard" ? (case_name == std::string("idle") ? 0 : 300) : 2010;
      if (name == "mallard") back.metrics["purge_delay_ms"] = 250;
      results.runs.push_back(back);
    }
  }
  std::vector<TargetCheck> checks = check_targets(summarize(results));
  const TargetCheck* redis = find_check(checks, kRedisRss);
  ASSERT_NE(redis, nullptr);
  EXPECT_EQ(redis->verdict, Verdict::met);
  EXPECT_DOUBLE_EQ(redis->value, 0.9);
  EXPECT_NE(redis->measured.find("tcmalloc"), std::string::npos);
  EXPECT_EQ(verdict_of(checks, "rss-return:idle: RSS below 10% of the peak within the purge delay"), Verdict::met);
  EXPECT_EQ(verdict_of(checks, "rss-return:active: RSS below 10% of the peak within the purge delay"), Verdict::not_met);
  // rss-return is unranked: its 1 GiB peaks do not enter the per-benchmark RSS target.
  EXPECT_EQ(find_check(checks, kRssEvery)->measured, "worst 0.500× (iopath, jemalloc)");
  run_of(results, "redis", "mallard").metrics["rss_bytes_rpush"] = 77e6;  // 0.9625 of tcmalloc's
  EXPECT_EQ(verdict_of(check_targets(summarize(results)), kRedisRss), Verdict::not_met);
}

TEST(Targets, AMallardFailureIsNotMetAndAnAbsentPeerIsNotMeasured) {
  BenchResults results = peers_fixture();
  run_of(results, "kv", "mallard").ok = false;
  std::erase_if(results.allocators, [](const AllocatorInfo& allocator) { return allocator.name == "tcmalloc"; });
  std::vector<TargetCheck> checks = check_targets(summarize(results));
  const TargetCheck* time = find_check(checks, kTimeEvery);
  ASSERT_NE(time, nullptr);
  EXPECT_EQ(time->verdict, Verdict::not_met);
  EXPECT_EQ(time->measured, "worst 0.750× (iopath, mimalloc); mallard has no result on 1 benchmark(s)");
  EXPECT_EQ(verdict_of(checks, kTimeGeomean), Verdict::met);  // over iopath alone: kv is incomplete
  EXPECT_EQ(find_check(checks, kKvFragmentation)->measured, "mallard has no result");
  EXPECT_EQ(verdict_of(checks, kKvFragmentation), Verdict::not_met);
  EXPECT_EQ(verdict_of(checks, kIopathTcmalloc), Verdict::not_measured);
}

TEST(Reports, CsvHasOneRowPerRun) {
  BenchResults results = fixture();
  std::string csv = render_csv(results);
  EXPECT_EQ(count_of(csv, "\n"), results.runs.size() + 1);
  EXPECT_EQ(csv.rfind("workload,case,benchmark,allocator,repetition,ok,error,", 0), 0u);
  EXPECT_NE(csv.find(",frag_ratio"), std::string::npos);
  EXPECT_NE(csv.find("kv,,kv,mallard,2,0,preload did not take"), std::string::npos);
  EXPECT_NE(csv.find("sizes,32B,sizes:32B,glibc,1,1,,180,"), std::string::npos);
}

TEST(Reports, JsonParsesAndCarriesTheContext) {
  BenchResults results = fixture();
  std::string json = render_json(results, summarize(results));
  EXPECT_TRUE(JsonChecker(json).valid()) << json.substr(0, 400);
  EXPECT_NE(json.find("\"schema\":\"mallard-bench/1\""), std::string::npos);
  EXPECT_NE(json.find("\"cpu_model\":\"Test CPU\""), std::string::npos);
  EXPECT_NE(json.find("\"version\":\"5.3.0\""), std::string::npos);
  EXPECT_NE(json.find("\"params\":{\"threads\":\"32\"}"), std::string::npos);
  EXPECT_NE(json.find("\"rss_series\":[[0,1048576],[0.5,31457280],[1,41943040]]"), std::string::npos);
  EXPECT_EQ(count_of(json, "\"repetition\":"), results.runs.size());
}

TEST(Reports, ChartsDrawABarPerAllocatorAndCase) {
  BenchResults results = fixture();
  Summary summary = summarize(results);
  std::string throughput = render_throughput_chart(results.workloads[0], summary);
  EXPECT_EQ(throughput.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(throughput.find("</svg>"), std::string::npos);
  EXPECT_EQ(count_of(throughput, "<title>"), 6u);  // 2 cases x 3 allocators
  EXPECT_NE(throughput.find(">32B<"), std::string::npos);
  EXPECT_NE(throughput.find(">mallard<"), std::string::npos);
  std::string rss = render_peak_rss_chart(results.workloads[1], summary);
  EXPECT_EQ(count_of(rss, "<title>"), 3u);
  std::string timeline = render_rss_timeline_chart(results.workloads[1], results);
  EXPECT_EQ(count_of(timeline, "<polyline"), 1u);  // only mallard's fixture runs have a series
}

TEST(Reports, HtmlIsSelfContained) {
  BenchResults results = fixture();
  std::string html = render_html(results, summarize(results));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count_of(html, "<svg"), 5u);  // sizes: 2 charts; kv: 2 charts + timeline
  EXPECT_EQ(count_of(html, "src=\"http"), 0u);
  EXPECT_EQ(count_of(html, "href=\"http"), 0u);
  EXPECT_EQ(count_of(html, "<script"), 0u);
  EXPECT_NE(html.find("preload did not take"), std::string::npos);
}

TEST(Reports, TextAndMarkdownShowTheMatrix) {
  BenchResults results = fixture();
  Summary summary = summarize(results);
  std::string text = render_overview_text(results, summary);
  EXPECT_NE(text.find("sizes:32B"), std::string::npos);
  EXPECT_NE(text.find("100 0.25"), std::string::npos);  // glibc: 100 ops/s, 0.25 of the best
  EXPECT_NE(text.find("geomean ×best"), std::string::npos);
  EXPECT_NE(text.find("1 FAILED runs"), std::string::npos);
  EXPECT_NE(text.find("note: tcmalloc skipped"), std::string::npos);
  std::string detail = render_detail_text(results, summary);
  EXPECT_NE(detail.find("100 (90.0–110)"), std::string::npos);
  std::string markdown = render_markdown(results, summary);
  EXPECT_NE(markdown.find("`mallard bench --reps 2`"), std::string::npos);
  EXPECT_NE(markdown.find("| sizes:32B |"), std::string::npos);
  EXPECT_NE(markdown.find("Test CPU"), std::string::npos);
}

TEST(Reports, TargetsSectionFollowsHowToRead) {
  BenchResults results = fixture();
  Summary summary = summarize(results);
  std::string markdown = render_markdown(results, summary);
  std::size_t how = markdown.find("## How to read it"), targets = markdown.find("## Targets (issue #4): mallard against the best peer");
  ASSERT_NE(targets, std::string::npos);
  EXPECT_LT(how, targets);
  EXPECT_LT(targets, markdown.find("## Throughput"));
  EXPECT_NE(markdown.find("| benchmark | time ×best peer | faster in reps | peak RSS ×lowest peer | leaner in reps |"), std::string::npos);
  EXPECT_NE(markdown.find("| sizes:32B | 0.50 (jemalloc) | 2 of 2 | 2.00 (glibc) | 0 of 2 |"), std::string::npos);
  EXPECT_NE(markdown.find("| geomean | 1.41 |  | 0.91 |  |"), std::string::npos);
  EXPECT_NE(markdown.find("- time ≤ 1.00× the best peer on every benchmark: worst 2.000× (sizes:4K, glibc) — **not met**"), std::string::npos);
  EXPECT_NE(markdown.find("- peak RSS geomean ≤ 1.00× the lowest peer: 0.913× — **met**"), std::string::npos);
  EXPECT_NE(markdown.find("- kv fragmentation (RSS / requested bytes) below jemalloc's — **not measured in this run**"), std::string::npos);
  EXPECT_NE(markdown.find("- iopath ops/s above mimalloc's — **not measured in this run**"), std::string::npos);
  std::string text = render_overview_text(results, summary);
  EXPECT_NE(text.find("time geomean ≤ 0.95× the best peer: 1.414× — not met"), std::string::npos);
  std::string json = render_json(results, summary);
  EXPECT_TRUE(JsonChecker(json).valid());
  EXPECT_NE(json.find("\"targets\":{\"benchmarks\":[{\"benchmark\":\"sizes:32B\",\"time_to_best_peer\":0.5,\"best_peer\":\"jemalloc\""), std::string::npos);
  EXPECT_NE(json.find("\"target\":\"peak RSS geomean ≤ 1.00× the lowest peer\""), std::string::npos);
  EXPECT_EQ(count_of(json, "\"verdict\":\"not met\""), 3u);
}

TEST(Reports, AWorkloadsMetricColumnsShowInTheDetailTables) {
  BenchResults results = fixture();
  WorkloadInfo watch{"watch", "a peak, then RSS watched", "frees", {}, {"idle"}, false,
                     {{"gone_ms", "ms to gone", "%.0f", "watched_ms"}, {"left_bytes", "left", "bytes", ""}}};
  results.workloads.push_back(watch);
  for (const std::string allocator : {"glibc", "jemalloc", "mallard"}) {
    for (int rep = 1; rep <= 2; ++rep) {
      RunRecord run = make_run("watch", "idle", allocator, rep, 100, 8 << 20);
      run.metrics["watched_ms"] = 2000;
      // glibc: gone at 40/60 ms (median 50); jemalloc: never; mallard: left_bytes missing.
      run.metrics["gone_ms"] = allocator == "glibc" ? (rep == 1 ? 40 : 60) : (allocator == "jemalloc" ? 2010 : 250);
      if (allocator != "mallard") run.metrics["left_bytes"] = 3 << 20;
      results.runs.push_back(run);
    }
  }
  Summary summary = summarize(results);
  std::string markdown = render_markdown(results, summary);
  auto section = markdown.find("### watch:idle");
  ASSERT_NE(section, std::string::npos);
  std::string table = markdown.substr(section, markdown.find("###", section + 1) - section);
  EXPECT_NE(table.find("| ms to gone | left |"), std::string::npos) << table;
  EXPECT_NE(table.find("| 50 | 3.00 MiB |"), std::string::npos) << table;
  EXPECT_NE(table.find("| never (>2000) | 3.00 MiB |"), std::string::npos) << table;
  EXPECT_NE(table.find("| 250 | - |"), std::string::npos) << table;
  // Workloads without columns keep their table as it was.
  EXPECT_EQ(markdown.substr(0, section).find("ms to gone"), std::string::npos);
  EXPECT_NE(render_detail_text(results, summary).find("never (>2000)"), std::string::npos);
}

// xmalloc's peak follows how many batches its queue held: the Targets table
// shows that beside the ratio, mallard's median and then the leanest peer's.
TEST(Reports, APeakThatFollowsAMetricShowsItBesideThePeakRatio) {
  BenchResults results = peers_fixture();
  results.workloads.push_back({"queue", "producer and consumers", "blocks", {}, {""}, false,
                               {{"deepest_queue", "deepest queue", "%.0f", "", /*explains_peak_rss=*/true}}});
  for (const auto& allocator : results.allocators) {
    // mallard: 8 MiB with 60 batches queued; jemalloc, the leanest peer: 4 MiB with 3.
    bool mallard = allocator.name == "mallard", leanest = allocator.name == "jemalloc";
    RunRecord run = make_run("queue", "", allocator.name, 1, 100, mallard ? 8 << 20 : (leanest ? 4 << 20 : 10 << 20));
    run.metrics["deepest_queue"] = mallard ? 60 : (leanest ? 3 : 64);
    results.runs.push_back(run);
  }
  Summary summary = summarize(results);
  std::string markdown = render_markdown(results, summary);
  EXPECT_NE(markdown.find("| queue | 1.00 (jemalloc) | 0 of 1 | 2.00 (jemalloc; deepest queue 60 against 3) |"), std::string::npos) << markdown;
  // Rows without such a metric keep the plain peer name.
  EXPECT_NE(markdown.find("| iopath | 0.75 (mimalloc) | 1 of 1 | 0.50 (jemalloc) |"), std::string::npos) << markdown;
  EXPECT_NE(render_overview_text(results, summary).find("2.00 (jemalloc; deepest queue 60 against 3)"), std::string::npos);
}

TEST(Reports, DirectoryGetsEveryFile) {
  BenchResults results = fixture();
  std::filesystem::path directory = std::filesystem::temp_directory_path() / ("mallard-report-test-" + std::to_string(getpid()));
  auto written = write_report_directory(directory.string(), results, summarize(results));
  for (const char* file : {"results.csv", "results.json", "report.txt", "report.md", "index.html", "charts/sizes-throughput.svg",
                           "charts/sizes-peak-rss.svg", "charts/kv-rss-over-time.svg"}) {
    EXPECT_TRUE(std::filesystem::exists(directory / file)) << file;
  }
  EXPECT_EQ(written.size(), 10u);
  std::filesystem::remove_all(directory);
}

}  // namespace
}  // namespace mallard::tool

namespace mallard::tool {
namespace {

TEST(ChildProtocol, LinesFoldIntoTheRecord) {
  RunRecord record;
  bool done = false;
  for (const char* line :
       {"provider /usr/lib/libjemalloc.so.2", "throughput 1000 0.5", "metric lat_p99_us 12.5", "peak_rss 8192", "final_rss 4096", "done"}) {
    EXPECT_TRUE(apply_child_line(line, record, done)) << line;
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(record.malloc_provider, "/usr/lib/libjemalloc.so.2");
  EXPECT_DOUBLE_EQ(record.ops_per_s, 2000);
  EXPECT_DOUBLE_EQ(record.metrics.at("lat_p99_us"), 12.5);
  EXPECT_EQ(record.final_rss_bytes, 4096u);
  EXPECT_EQ(record.peak_rss_bytes, 8192u);
  EXPECT_FALSE(apply_child_line("nonsense 1", record, done));
}

TEST(ChildProtocol, MeasurementsOfAnotherProcessWin) {
  RunRecord record;
  bool done = false;
  apply_child_line("override final_rss_bytes 1048576", record, done);
  apply_child_line("override peak_rss_bytes 2097152", record, done);
  apply_child_line("peak_rss 8192", record, done);  // the child's own, written last
  apply_child_line("final_rss 4096", record, done);
  EXPECT_EQ(record.final_rss_bytes, 1048576u);
  EXPECT_EQ(record.peak_rss_bytes, 2097152u);
  apply_child_line("error preload did not take: malloc comes from libc", record, done);
  EXPECT_NE(record.error.find("preload did not take"), std::string::npos);
}

}  // namespace
}  // namespace mallard::tool
