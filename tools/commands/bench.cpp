// `mallard bench`: picks allocators and workloads from the options, runs the
// matrix (run/bench_runner), and writes the reports.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "alloc/allocator_catalog.hpp"
#include "cli/options.hpp"
#include "commands/commands.hpp"
#include "report/machine_info.hpp"
#include "report/summary.hpp"
#include "report/writers.hpp"
#include "run/bench_runner.hpp"
#include "run/progress.hpp"
#include "util/spawn.hpp"
#include "util/text.hpp"
#include "workloads/common.hpp"

namespace mallard::tool {

namespace {

void print_list(const std::vector<AllocatorSpec>& catalog) {
  std::printf("Workloads (--workloads NAME or NAME:CASE; --set NAME.PARAM=VALUE):\n\n");
  for (const auto& workload : all_workloads()) {
    std::string reason = workload.unavailable_reason ? workload.unavailable_reason() : "";
    std::printf("%s%s\n  %s\n  throughput unit: %s/s\n", workload.name.c_str(), reason.empty() ? "" : ("  [unavailable: " + reason + "]").c_str(),
                workload.description.c_str(), workload.ops_unit.c_str());
    for (const auto& param : workload.params) {
      std::printf("    %-16s %-44s %s%s\n", param.name.c_str(), param.default_value.c_str(), param.help.c_str(),
                  param.quick_value == param.default_value ? "" : (" (--quick: " + param.quick_value + ")").c_str());
    }
    auto cases = cases_of(workload, resolve_params(workload, false, {}));
    if (cases.size() > 1 || !cases[0].empty()) {
      std::string joined;
      for (const auto& case_name : cases) joined += (joined.empty() ? "" : " ") + case_name;
      std::printf("  cases: %s\n", joined.c_str());
    }
    std::printf("\n");
  }
  std::printf("Allocators (--allocators a,b; --alloc NAME=/path/lib.so):\n");
  for (const auto& spec : catalog) {
    std::printf("  %-10s %-10s %s\n", spec.name.c_str(), spec.available ? spec.version.c_str() : "-",
                spec.available ? (spec.path.empty() ? "libc (no preload)" : spec.path.c_str()) : spec.missing_reason.c_str());
  }
}

std::vector<AllocatorSpec> choose_allocators(const BenchOptions& options, const std::vector<AllocatorSpec>& catalog, std::vector<std::string>& notes) {
  if (!options.allocators.empty()) {
    auto chosen = select_allocators(catalog, options.allocators);
    for (const auto& spec : chosen) {
      if (!spec.available) throw std::invalid_argument("allocator " + spec.name + " is not available: " + spec.missing_reason);
    }
    return chosen;
  }
  std::vector<AllocatorSpec> chosen;
  for (const auto& spec : catalog) {
    if (spec.available) chosen.push_back(spec);
    else notes.push_back(spec.name + " skipped: " + spec.missing_reason);
  }
  return chosen;
}

// --env entries go to the allocators they name, which must be in the run.
void apply_allocator_environment(const std::vector<AllocatorVariable>& entries, std::vector<AllocatorSpec>& allocators) {
  for (const auto& entry : entries) {
    auto spec = std::find_if(allocators.begin(), allocators.end(), [&](const AllocatorSpec& s) { return s.name == entry.allocator; });
    if (spec == allocators.end()) throw std::invalid_argument("--env: allocator '" + entry.allocator + "' is not in this run");
    spec->environment = environment_with(std::move(spec->environment), entry.variable + "=" + entry.value);
  }
}

std::vector<BenchRow> choose_rows(const BenchOptions& options, std::vector<WorkloadInfo>& infos, std::vector<std::string>& notes) {
  for (const auto& [workload, params] : options.params) {
    if (find_workload(workload) == nullptr) throw std::invalid_argument("--set: unknown workload '" + workload + "'");
  }
  std::vector<WorkloadSelection> selection = options.workloads;
  if (selection.empty()) {
    for (const auto& workload : all_workloads()) selection.push_back({workload.name, ""});
  }
  std::vector<BenchRow> rows;
  for (const auto& selected : selection) {
    const Workload* workload = find_workload(selected.workload);
    if (workload == nullptr) throw std::invalid_argument("unknown workload '" + selected.workload + "' (see mallard bench --list)");
    std::string reason = workload->unavailable_reason ? workload->unavailable_reason() : "";
    if (!reason.empty()) {
      if (!options.workloads.empty()) throw std::invalid_argument("workload " + workload->name + " cannot run: " + reason);
      notes.push_back(workload->name + " skipped: " + reason);
      continue;
    }
    auto overrides = options.params.contains(workload->name) ? options.params.at(workload->name) : ParamValues{};
    ParamValues params = resolve_params(*workload, options.quick, overrides);
    std::vector<std::string> cases = cases_of(*workload, params);
    if (!selected.case_name.empty()) {
      if (std::find(cases.begin(), cases.end(), selected.case_name) == cases.end()) {
        throw std::invalid_argument("workload " + workload->name + " has no case '" + selected.case_name + "'");
      }
      cases = {selected.case_name};
    }
    WorkloadInfo* info = nullptr;
    for (auto& existing : infos) {
      if (existing.name == workload->name) info = &existing;
    }
    if (info == nullptr) {
      infos.push_back({workload->name, workload->description, workload->ops_unit, params, {}, workload->chart_rss_over_time,
                       workload->metric_columns, workload->ranked});
      info = &infos.back();
    }
    for (const auto& case_name : cases) {
      if (std::find(info->cases.begin(), info->cases.end(), case_name) != info->cases.end()) continue;
      info->cases.push_back(case_name);
      rows.push_back({workload, case_name, params});
    }
  }
  if (rows.empty()) throw std::invalid_argument("no workload can run here");
  return rows;
}

}  // namespace

int bench_command(const std::vector<std::string>& args, const std::string& command_line) {
  BenchOptions options;
  BenchResults results;
  BenchPlan plan;
  std::vector<AllocatorSpec> catalog;
  try {
    options = parse_bench_options(args);
    catalog = catalog_with_overrides(options.extra_allocators);
    if (options.list) {
      print_list(catalog);
      return 0;
    }
    plan.allocators = choose_allocators(options, catalog, results.notes);
    apply_allocator_environment(options.allocator_environment, plan.allocators);
    plan.rows = choose_rows(options, results.workloads, results.notes);
    plan.repetitions = options.repetitions;
  } catch (const std::invalid_argument& error) {
    std::fprintf(stderr, "mallard bench: %s\n\n%s", error.what(), usage_text().c_str());
    return 2;
  }

  std::string out = options.out_directory.empty() ? "bench-results/" + compact_timestamp_now() : options.out_directory;
  RunSettings settings{self_executable_path(), out + "/logs", options.timeout_seconds};
  std::filesystem::create_directories(settings.log_directory);

  results.started_at = iso_timestamp_now();
  results.command_line = command_line;
  results.repetitions = options.repetitions;
  results.quick = options.quick;
  results.machine = describe_machine();
  for (const auto& spec : plan.allocators) results.allocators.push_back({spec.name, spec.path, spec.version, spec.origin, spec.environment});

  std::vector<std::string> job_rows;
  for (int repetition = 0; repetition < plan.repetitions; ++repetition) {
    for (const auto& row : plan.rows) {
      for (std::size_t a = 0; a < plan.allocators.size(); ++a) job_rows.push_back(row.benchmark());
    }
  }
  ProgressDisplay progress(job_rows, options.progress && isatty(STDERR_FILENO));
  std::fprintf(stderr, "mallard bench: %zu allocators x %zu benchmarks x %d repetitions = %zu runs; reports in %s\n",
               plan.allocators.size(), plan.rows.size(), plan.repetitions, job_rows.size(), out.c_str());
  RunObserver observer;
  observer.before = [&](std::size_t job, std::size_t, const BenchRow& row, const AllocatorSpec& allocator, int repetition) {
    progress.start_job(job, row.benchmark() + " " + allocator.name + " #" + std::to_string(repetition));
  };
  observer.after = [&](std::size_t job, const RunRecord& record) {
    progress.finish_job(job, record.wall_seconds);
    if (!record.ok || options.verbose) {
      progress.close();
      if (record.ok) {
        std::fprintf(stderr, "  %-22s %-10s #%d  %10s %s/s  %s  peak %s\n", record.benchmark().c_str(), record.allocator.c_str(),
                     record.repetition, format_si(record.ops_per_s).c_str(), "ops", format_seconds(record.seconds).c_str(),
                     format_bytes(static_cast<double>(record.peak_rss_bytes)).c_str());
      } else {
        std::fprintf(stderr, "  FAILED %s %s #%d: %s (log: %s)\n", record.benchmark().c_str(), record.allocator.c_str(), record.repetition,
                     record.error.c_str(), record.log_file.c_str());
      }
    }
  };
  auto start = SteadyClock::now();
  results.runs = run_plan(plan, settings, observer);
  results.duration_seconds = seconds_between(start, SteadyClock::now());
  progress.close();

  Summary summary = summarize(results);
  try {
    auto written = write_report_directory(out, results, summary);
    if (!options.markdown_path.empty()) {
      std::ofstream markdown(options.markdown_path, std::ios::trunc);
      markdown << render_markdown(results, summary);
      if (!markdown) throw std::runtime_error("cannot write " + options.markdown_path);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "mallard bench: %s\n", error.what());
    return 1;
  }
  std::printf("%s", render_overview_text(results, summary).c_str());
  if (options.detail) std::printf("\n%s", render_detail_text(results, summary).c_str());
  std::printf("\nReport: %s/index.html (also report.txt, results.csv, results.json, charts/)%s\n", out.c_str(),
              options.markdown_path.empty() ? "" : (", " + options.markdown_path).c_str());
  return summary.failures.empty() ? 0 : 1;
}

}  // namespace mallard::tool
