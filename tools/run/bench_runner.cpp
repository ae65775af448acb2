#include "run/bench_runner.hpp"

#include <algorithm>
#include <csignal>
#include <cstring>

#include "run/child_main.hpp"
#include "run/child_process.hpp"
#include "run/child_protocol.hpp"
#include "util/proc.hpp"
#include "util/spawn.hpp"
#include "util/text.hpp"

namespace mallard::tool {

std::string self_executable_path() { return executable_of(0).value_or("/proc/self/exe"); }

RunRecord run_benchmark_once(const BenchRow& row, const AllocatorSpec& allocator, int repetition, const RunSettings& settings) {
  RunRecord record;
  record.workload = row.workload->name;
  record.case_name = row.case_name;
  record.allocator = allocator.name;
  record.repetition = repetition;
  if (!settings.log_directory.empty()) {
    std::string file = row.benchmark() + "." + allocator.name + "." + std::to_string(repetition) + ".log";
    for (char& c : file) {
      if (c == '/' || c == ':') c = '_';
    }
    record.log_file = settings.log_directory + "/" + file;
  }

  std::vector<std::string> argv = {settings.self_executable, "__child"};
  for (auto& argument : child_arguments(row.workload->name, row.case_name, allocator.name, allocator.path, glibc_shim_library(), row.params)) {
    argv.push_back(std::move(argument));
  }
  auto environment = environment_with_preload(current_environment(), allocator.path);
  for (const auto& entry : allocator.environment) environment = environment_with(std::move(environment), entry);
  ChildOutcome outcome = run_child(argv, environment, record.log_file, settings.timeout_seconds);

  bool saw_done = false;
  for (const auto& line : outcome.lines) apply_child_line(line, record, saw_done);
  record.wall_seconds = outcome.wall_seconds;
  record.rss_series = std::move(outcome.rss_samples);
  // A workload that measured another process (redis) has already set these.
  if (!record.metrics.contains("measured_user_s")) {
    record.user_seconds = static_cast<double>(outcome.usage.ru_utime.tv_sec) + static_cast<double>(outcome.usage.ru_utime.tv_usec) / 1e6;
  }
  if (!record.metrics.contains("measured_sys_s")) {
    record.sys_seconds = static_cast<double>(outcome.usage.ru_stime.tv_sec) + static_cast<double>(outcome.usage.ru_stime.tv_usec) / 1e6;
  }
  // The child's own VmHWM ("peak_rss"), else wait4's ru_maxrss (a child that
  // stopped before reporting it), which also counts the runner's pages the
  // child held between fork and exec. VmHWM can read a peak low: the kernel
  // records it, before an unmap or a purge, from its shared RSS count, which
  // leaves out what each CPU has not folded in yet (fewer than 32 pages a
  // CPU; bench/vmhwm_lag.c read it 24-220 KiB below VmRSS on two CPUs, the
  // size of the small rows' gaps). The runner's own samples of the child's
  // RSS, exact but 10 ms apart (further apart past 20 s), catch a peak that
  // lasts: the run's peak is the higher of the two, and VmHWM is kept as a
  // metric.
  if (!record.metrics.contains("measured_peak_rss_bytes")) {
    if (record.peak_rss_bytes == 0) {
      record.peak_rss_bytes = static_cast<std::uint64_t>(outcome.usage.ru_maxrss) * 1024;
    } else {
      record.metrics["vmhwm_bytes"] = static_cast<double>(record.peak_rss_bytes);
    }
    record.peak_rss_bytes = std::max(record.peak_rss_bytes, outcome.peak_sampled_rss);
  }

  if (!outcome.started) {
    record.error = outcome.start_error;
  } else if (outcome.timed_out) {
    record.error = strprintf("timed out after %.0f s", settings.timeout_seconds);
  } else if (outcome.signal != 0) {
    record.error = strprintf("child killed by signal %d (%s)", outcome.signal, strsignal(outcome.signal));
  } else if (record.error.empty() && (outcome.exit_code != 0 || !saw_done)) {
    record.error = strprintf("child exited with status %d without finishing", outcome.exit_code);
  }
  if (record.error.empty() && record.malloc_provider.empty()) record.error = "child did not report its allocator";
  if (record.error.empty() && record.seconds <= 0) record.error = "child reported no throughput";
  record.ok = record.error.empty();
  return record;
}

std::vector<std::size_t> allocator_order(std::size_t allocators, std::size_t row, int repetition) {
  std::vector<std::size_t> order;
  if (allocators == 0) return order;
  std::size_t shift = (row + static_cast<std::size_t>(repetition - 1)) % allocators;
  for (std::size_t i = 0; i < allocators; ++i) order.push_back((shift + i) % allocators);
  return order;
}

std::vector<RunRecord> run_plan(const BenchPlan& plan, const RunSettings& settings, const RunObserver& observer) {
  std::vector<RunRecord> records;
  std::size_t jobs = static_cast<std::size_t>(plan.repetitions) * plan.rows.size() * plan.allocators.size();
  std::size_t job = 0;
  for (int repetition = 1; repetition <= plan.repetitions; ++repetition) {
    for (std::size_t r = 0; r < plan.rows.size(); ++r) {
      const BenchRow& row = plan.rows[r];
      for (std::size_t a : allocator_order(plan.allocators.size(), r, repetition)) {
        const AllocatorSpec& allocator = plan.allocators[a];
        if (observer.before) observer.before(job, jobs, row, allocator, repetition);
        records.push_back(run_benchmark_once(row, allocator, repetition, settings));
        if (observer.after) observer.after(job, records.back());
        ++job;
      }
    }
  }
  return records;
}

}  // namespace mallard::tool
