// results.json: the whole run, machine-readable. Schema "mallard-bench/1":
// context (machine, command, allocators with versions, workloads with
// parameters), one entry per run, the summary the tables print and, when
// mallard ran with peers, issue #4's targets.
#include "report/targets.hpp"
#include "report/writers.hpp"
#include "util/json_writer.hpp"

namespace mallard::tool {

namespace {

void write_spread(JsonWriter& json, const char* name, const Spread& spread) {
  json.key(name).begin_object();
  json.key("median").value(spread.median).key("min").value(spread.min).key("max").value(spread.max);
  json.key("n").value(static_cast<std::uint64_t>(spread.count));
  json.end_object();
}

std::string allocator_name(const Summary& summary, int allocator) {
  return allocator >= 0 ? summary.allocators[static_cast<std::size_t>(allocator)] : std::string();
}

// Mallard against the best peer per benchmark, the geometric means, and every
// target with its verdict (the same checks BENCHMARKS.md lists).
void write_targets(JsonWriter& json, const Summary& summary) {
  json.key("targets").begin_object();
  json.key("benchmarks").begin_array();
  for (const auto& row : summary.rows) {
    json.begin_object().key("benchmark").value(row.benchmark);
    json.key("time_to_best_peer").value(row.time_to_best_peer).key("best_peer").value(allocator_name(summary, row.best_peer));
    json.key("peak_rss_to_least_peer").value(row.rss_to_least_peer).key("least_rss_peer").value(allocator_name(summary, row.least_rss_peer));
    json.key("reps_ahead_of_best_peer").value(row.reps_ahead_of_best_peer).key("reps_paired_with_best_peer").value(row.reps_paired_with_best_peer);
    json.key("reps_leaner_than_least_rss_peer").value(row.reps_leaner_than_least_rss_peer);
    json.key("reps_paired_with_least_rss_peer").value(row.reps_paired_with_least_rss_peer);
    json.end_object();
  }
  json.end_array();
  json.key("geomean").begin_object();
  json.key("time_to_best_peer").value(summary.geomean_time_to_best_peer).key("peak_rss_to_least_peer").value(summary.geomean_rss_to_least_peer);
  json.end_object();
  json.key("checks").begin_array();
  for (const auto& check : check_targets(summary)) {
    json.begin_object().key("target").value(check.target).key("measured").value(check.measured);
    json.key("value").value(check.value).key("bound").value(check.bound).key("verdict").value(verdict_text(check.verdict)).end_object();
  }
  json.end_array().end_object();
}

}  // namespace

std::string render_json(const BenchResults& results, const Summary& summary) {
  JsonWriter json;
  json.begin_object();
  json.key("schema").value("mallard-bench/1");
  json.key("started_at").value(results.started_at);
  json.key("command").value(results.command_line);
  json.key("duration_seconds").value(results.duration_seconds);
  json.key("repetitions").value(results.repetitions);
  json.key("quick").value(results.quick);

  const MachineInfo& machine = results.machine;
  json.key("machine").begin_object();
  json.key("hostname").value(machine.hostname).key("cpu_model").value(machine.cpu_model);
  json.key("cpus").value(static_cast<std::uint64_t>(machine.cpus)).key("memory_bytes").value(machine.memory_bytes);
  json.key("kernel").value(machine.kernel).key("os").value(machine.os).key("glibc").value(machine.glibc_version);
  json.key("compiler").value(machine.compiler).key("mallard_version").value(machine.mallard_version);
  json.end_object();

  json.key("allocators").begin_array();
  for (const auto& allocator : results.allocators) {
    json.begin_object().key("name").value(allocator.name).key("library").value(allocator.path);
    json.key("version").value(allocator.version).key("origin").value(allocator.origin);
    json.key("environment").begin_array();
    for (const auto& variable : allocator.environment) json.value(variable);
    json.end_array().end_object();
  }
  json.end_array();

  json.key("workloads").begin_array();
  for (const auto& workload : results.workloads) {
    json.begin_object().key("name").value(workload.name).key("description").value(workload.description);
    json.key("ops_unit").value(workload.ops_unit);
    json.key("params").begin_object();
    for (const auto& [name, value] : workload.params) json.key(name).value(value);
    json.end_object();
    json.key("cases").begin_array();
    for (const auto& case_name : workload.cases) json.value(case_name);
    json.end_array().end_object();
  }
  json.end_array();

  json.key("notes").begin_array();
  for (const auto& note : results.notes) json.value(note);
  json.end_array();

  json.key("runs").begin_array();
  for (const auto& run : results.runs) {
    json.begin_object();
    json.key("workload").value(run.workload).key("case").value(run.case_name).key("benchmark").value(run.benchmark());
    json.key("allocator").value(run.allocator).key("repetition").value(run.repetition).key("ok").value(run.ok);
    if (!run.ok) json.key("error").value(run.error);
    json.key("operations").value(run.operations).key("seconds").value(run.seconds).key("ops_per_s").value(run.ops_per_s);
    json.key("wall_seconds").value(run.wall_seconds).key("user_seconds").value(run.user_seconds).key("sys_seconds").value(run.sys_seconds);
    json.key("peak_rss_bytes").value(run.peak_rss_bytes).key("final_rss_bytes").value(run.final_rss_bytes);
    json.key("malloc_provider").value(run.malloc_provider).key("log").value(run.log_file);
    json.key("metrics").begin_object();
    for (const auto& [name, value] : run.metrics) json.key(name).value(value);
    json.end_object();
    bool keep_series = false;
    for (const auto& workload : results.workloads) keep_series = keep_series || (workload.name == run.workload && workload.chart_rss_over_time);
    if (keep_series) {
      json.key("rss_series").begin_array();
      for (const auto& sample : run.rss_series) json.begin_array().value(sample.seconds).value(sample.bytes).end_array();
      json.end_array();
    }
    json.end_object();
  }
  json.end_array();

  json.key("summary").begin_object();
  json.key("rows_in_geomean").value(static_cast<std::uint64_t>(summary.rows_in_geomean));
  json.key("geomean").begin_object();
  for (std::size_t a = 0; a < summary.allocators.size(); ++a) {
    json.key(summary.allocators[a]).begin_object();
    json.key("throughput_to_best").value(summary.geomean_to_best[a]).key("throughput_to_glibc").value(summary.geomean_to_glibc[a]);
    json.key("peak_rss_to_least").value(summary.geomean_rss_to_least[a]).end_object();
  }
  json.end_object();
  json.key("benchmarks").begin_array();
  for (const auto& row : summary.rows) {
    json.begin_object().key("benchmark").value(row.benchmark).key("ops_unit").value(row.ops_unit);
    json.key("best").value(allocator_name(summary, row.best));
    json.key("allocators").begin_object();
    for (std::size_t a = 0; a < row.cells.size(); ++a) {
      const auto& cell = row.cells[a];
      json.key(summary.allocators[a]).begin_object();
      json.key("ok_runs").value(static_cast<std::uint64_t>(cell.ok_runs)).key("failed_runs").value(static_cast<std::uint64_t>(cell.failed_runs));
      write_spread(json, "ops_per_s", cell.ops_per_s);
      write_spread(json, "seconds", cell.seconds);
      write_spread(json, "peak_rss_bytes", cell.peak_rss);
      write_spread(json, "final_rss_bytes", cell.final_rss);
      write_spread(json, "user_seconds", cell.user_seconds);
      write_spread(json, "sys_seconds", cell.sys_seconds);
      json.key("ratio_to_best").value(cell.ratio_to_best).key("ratio_to_glibc").value(cell.ratio_to_glibc);
      json.key("peak_rss_to_least").value(cell.rss_ratio_to_least);
      json.key("metric_medians").begin_object();
      for (const auto& [name, value] : cell.metric_medians) json.key(name).value(value);
      json.end_object().end_object();
    }
    json.end_object().end_object();
  }
  json.end_array().end_object();
  if (summary.compares_mallard()) write_targets(json, summary);
  json.end_object();
  return json.text() + "\n";
}

}  // namespace mallard::tool
