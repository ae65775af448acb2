#include "cli/options.hpp"

#include <optional>
#include <stdexcept>
#include <utility>

#include "util/text.hpp"

namespace mallard::tool {

namespace {

// Walks "--flag value" and "--flag=value" forms alike.
class ArgumentCursor {
 public:
  explicit ArgumentCursor(const std::vector<std::string>& args) : args_(args) {}
  bool done() const { return index_ >= args_.size(); }
  // The next flag, with any "=value" split off into pending_value_.
  std::string next_flag() {
    std::string arg = args_[index_++];
    pending_value_.reset();
    if (starts_with(arg, "--")) {
      if (auto equals = arg.find('='); equals != std::string::npos) {
        pending_value_ = arg.substr(equals + 1);
        arg.resize(equals);
      }
    }
    return arg;
  }
  std::string value_for(const std::string& flag) {
    if (pending_value_) return *std::exchange(pending_value_, std::nullopt);
    if (index_ >= args_.size()) throw std::invalid_argument(flag + " needs a value");
    return args_[index_++];
  }
  void reject_value(const std::string& flag) const {
    if (pending_value_) throw std::invalid_argument(flag + " takes no value");
  }
  std::vector<std::string> rest() {
    std::vector<std::string> remaining(args_.begin() + static_cast<std::ptrdiff_t>(index_), args_.end());
    index_ = args_.size();
    return remaining;
  }

 private:
  const std::vector<std::string>& args_;
  std::size_t index_ = 0;
  std::optional<std::string> pending_value_;
};

std::vector<std::string> comma_list(const std::string& text, const std::string& flag) {
  std::vector<std::string> items;
  for (const auto& item : split(text, ',')) {
    std::string trimmed(trim(item));
    if (trimmed.empty()) throw std::invalid_argument(flag + ": empty name in '" + text + "'");
    items.push_back(trimmed);
  }
  if (items.empty()) throw std::invalid_argument(flag + " needs at least one name");
  return items;
}

}  // namespace

std::pair<std::string, std::string> parse_assignment(std::string_view text, std::string_view what) {
  auto equals = text.find('=');
  if (equals == std::string_view::npos || equals == 0) {
    throw std::invalid_argument(std::string(what) + ": expected NAME=VALUE, got '" + std::string(text) + "'");
  }
  return {std::string(text.substr(0, equals)), std::string(text.substr(equals + 1))};
}

BenchOptions parse_bench_options(const std::vector<std::string>& args) {
  BenchOptions options;
  ArgumentCursor cursor(args);
  while (!cursor.done()) {
    std::string flag = cursor.next_flag();
    if (flag == "--list") {
      cursor.reject_value(flag);
      options.list = true;
    } else if (flag == "--quick") {
      cursor.reject_value(flag);
      options.quick = true;
    } else if (flag == "--detail") {
      cursor.reject_value(flag);
      options.detail = true;
    } else if (flag == "--verbose" || flag == "-v") {
      cursor.reject_value(flag);
      options.verbose = true;
    } else if (flag == "--no-progress") {
      cursor.reject_value(flag);
      options.progress = false;
    } else if (flag == "--reps") {
      auto value = parse_count(cursor.value_for(flag));
      if (!value || *value < 1 || *value > 1000) throw std::invalid_argument("--reps wants a number from 1 to 1000");
      options.repetitions = static_cast<int>(*value);
    } else if (flag == "--timeout") {
      auto value = parse_number(cursor.value_for(flag));
      if (!value || *value <= 0) throw std::invalid_argument("--timeout wants seconds > 0");
      options.timeout_seconds = *value;
    } else if (flag == "--allocators") {
      for (auto& name : comma_list(cursor.value_for(flag), flag)) options.allocators.push_back(name);
    } else if (flag == "--workloads") {
      for (const auto& item : comma_list(cursor.value_for(flag), flag)) {
        auto colon = item.find(':');
        options.workloads.push_back({item.substr(0, colon), colon == std::string::npos ? "" : item.substr(colon + 1)});
      }
    } else if (flag == "--alloc") {
      auto [name, path] = parse_assignment(cursor.value_for(flag), flag);
      if (path.empty()) throw std::invalid_argument("--alloc " + name + "= needs a library path");
      options.extra_allocators.emplace_back(name, path);
    } else if (flag == "--env") {
      std::string text = cursor.value_for(flag);
      auto colon = text.find(':');
      if (colon == std::string::npos || colon == 0) throw std::invalid_argument("--env wants NAME:VAR=VALUE, got '" + text + "'");
      auto [variable, value] = parse_assignment(std::string_view(text).substr(colon + 1), flag);
      if (variable.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos ||
          (variable[0] >= '0' && variable[0] <= '9')) {
        throw std::invalid_argument("--env: '" + variable + "' is not an environment variable name");
      }
      if (variable == "LD_PRELOAD") throw std::invalid_argument("--env: LD_PRELOAD is the allocator's own (use --alloc NAME=/path)");
      options.allocator_environment.push_back({text.substr(0, colon), variable, value});
    } else if (flag == "--set") {
      auto [target, value] = parse_assignment(cursor.value_for(flag), flag);
      auto dot = target.find('.');
      if (dot == std::string::npos || dot == 0 || dot + 1 == target.size()) {
        throw std::invalid_argument("--set wants WORKLOAD.PARAM=VALUE, got '" + target + "'");
      }
      options.params[target.substr(0, dot)][target.substr(dot + 1)] = value;
    } else if (flag == "--out") {
      options.out_directory = cursor.value_for(flag);
    } else if (flag == "--markdown") {
      options.markdown_path = cursor.value_for(flag);
    } else {
      throw std::invalid_argument("unknown option '" + flag + "'");
    }
  }
  return options;
}

RunOptions parse_run_options(const std::vector<std::string>& args) {
  RunOptions options;
  ArgumentCursor cursor(args);
  while (!cursor.done()) {
    std::string flag = cursor.next_flag();
    if (flag == "--alloc") {
      options.allocator = cursor.value_for(flag);
    } else if (flag == "--") {
      options.command = cursor.rest();
    } else if (starts_with(flag, "-")) {
      throw std::invalid_argument("unknown option '" + flag + "'");
    } else {
      options.command.push_back(flag);
      for (auto& arg : cursor.rest()) options.command.push_back(std::move(arg));
    }
  }
  if (options.allocator.empty()) throw std::invalid_argument("run: --alloc NAME is required");
  if (options.command.empty()) throw std::invalid_argument("run: no command given (mallard run --alloc NAME -- CMD ...)");
  return options;
}

std::string usage_text() {
  return R"(usage:
  mallard bench [options]            compare allocators on the workloads
  mallard which PID...               which allocator serves a running process's malloc
  mallard run --alloc NAME -- CMD... run a command under an allocator (NAME, NAME=/path or /path/lib.so)

bench options:
  --list                     describe workloads, their parameters and cases, and the allocators found
  --quick                    shrink every workload to about a second (smoke runs, CI)
  --reps N                   repetitions per allocator and benchmark (default 3)
  --allocators a,b,c         allocators to compare, in column order (default: all found)
  --workloads w1,w2:case     workloads, or single cases of them (default: all)
  --alloc NAME=/path/lib.so  add an allocator, or point a known name at another library
  --env NAME:VAR=VALUE       set VAR in allocator NAME's runs only (e.g. a tuned copy:
                             --alloc tuned=build/src/libmallard.so --env tuned:MALLARD_CONF=...)
  --set WORKLOAD.PARAM=VAL   change a workload parameter (see --list)
  --out DIR                  report directory (default bench-results/<timestamp>)
  --markdown FILE            also write the Markdown report there (make bench: BENCHMARKS.md)
  --timeout SECONDS          per-run limit (default 600)
  --detail                   print every benchmark's detail table, not only the overview
  --no-progress              no progress bar even on a terminal
  -v, --verbose              print each run's result line as it finishes
)";
}

}  // namespace mallard::tool
