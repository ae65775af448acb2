// Runs one benchmark child to completion: starts it with its environment,
// collects the protocol lines it writes on descriptor 3, samples its RSS from
// /proc while it runs, enforces a timeout, and reaps it with wait4 for its
// CPU time and peak RSS.
#pragma once

#include <sys/resource.h>

#include <string>
#include <vector>

#include "report/results.hpp"

namespace mallard::tool {

struct ChildOutcome {
  bool started = false;
  std::string start_error;
  bool timed_out = false;
  int exit_code = -1;   // when it exited
  int signal = 0;       // when a signal ended it
  rusage usage{};       // the child and its reaped descendants
  double wall_seconds = 0;
  std::vector<std::string> lines;
  std::vector<RssSample> rss_samples;
  // The highest of the samples taken once the child had written its first
  // line, i.e. had exec'd: before exec it is a copy of the runner, whose
  // pages its RSS counts.
  std::uint64_t peak_sampled_rss = 0;
};

ChildOutcome run_child(const std::vector<std::string>& argv, const std::vector<std::string>& environment, const std::string& log_path,
                       double timeout_seconds);

}  // namespace mallard::tool
