// Command-line parsing for `mallard bench` and `mallard run`. Parsing only
// builds option structs and reports bad input with std::invalid_argument;
// what the options mean is up to the commands.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mallard::tool {

struct WorkloadSelection {
  std::string workload;
  std::string case_name;  // empty: every case
};

// --env NAME:VAR=VALUE: an environment variable for one allocator's runs
// (MALLARD_CONF for a tuned mallard, MALLOC_CONF for jemalloc, ...).
struct AllocatorVariable {
  std::string allocator;
  std::string variable;
  std::string value;
  bool operator==(const AllocatorVariable&) const = default;
};

struct BenchOptions {
  bool list = false;
  bool quick = false;
  bool detail = false;
  bool verbose = false;
  bool progress = true;
  int repetitions = 3;
  double timeout_seconds = 600;
  std::vector<std::string> allocators;  // empty: every available one
  std::vector<WorkloadSelection> workloads;  // empty: every available one
  std::vector<std::pair<std::string, std::string>> extra_allocators;  // --alloc NAME=/path
  std::vector<AllocatorVariable> allocator_environment;  // --env NAME:VAR=VALUE
  std::map<std::string, std::map<std::string, std::string>> params;  // --set WORKLOAD.PARAM=VALUE
  std::string out_directory;  // empty: bench-results/<timestamp>
  std::string markdown_path;  // --markdown FILE: also write BENCHMARKS.md-style report there
};

BenchOptions parse_bench_options(const std::vector<std::string>& args);

struct RunOptions {
  std::string allocator;  // NAME, NAME=/path or /path/lib.so
  std::vector<std::string> command;
};

RunOptions parse_run_options(const std::vector<std::string>& args);

// "NAME=VALUE" -> {NAME, VALUE}; throws when there is no '=' or no name.
std::pair<std::string, std::string> parse_assignment(std::string_view text, std::string_view what);

std::string usage_text();

}  // namespace mallard::tool
