#include "run/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "run/child_protocol.hpp"
#include "util/proc.hpp"
#include "util/spawn.hpp"
#include "workloads/common.hpp"

namespace mallard::tool {

namespace {

// Keeps the series at most this long by halving its resolution, so a long
// run costs no more memory or JSON than a short one.
constexpr std::size_t kMaxRssSamples = 2000;

void keep_every_other(std::vector<RssSample>& samples) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < samples.size(); i += 2) samples[kept++] = samples[i];
  samples.resize(kept);
}

}  // namespace

ChildOutcome run_child(const std::vector<std::string>& argv, const std::vector<std::string>& environment, const std::string& log_path,
                       double timeout_seconds) {
  ChildOutcome outcome;
  int results[2];
  if (pipe2(results, O_CLOEXEC) != 0) {
    outcome.start_error = std::string("pipe: ") + std::strerror(errno);
    return outcome;
  }
  int log_fd = open(log_path.empty() ? "/dev/null" : log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log_fd < 0) log_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

  auto start = SteadyClock::now();
  pid_t pid = spawn_process(argv, environment, {{null_fd, 0}, {log_fd, 1}, {log_fd, 2}, {results[1], kResultDescriptor}});
  int spawn_errno = errno;
  close(results[1]);
  close(log_fd);
  close(null_fd);
  if (pid < 0) {
    close(results[0]);
    outcome.start_error = std::string("cannot start ") + argv[0] + ": " + std::strerror(spawn_errno);
    return outcome;
  }
  outcome.started = true;

  std::string pending;
  int sample_interval_ms = 10;
  auto next_sample = start;
  bool open_pipe = true;
  while (open_pipe) {
    auto now = SteadyClock::now();
    if (now >= next_sample) {
      if (auto rss = resident_bytes(pid)) {
        outcome.rss_samples.push_back({seconds_between(start, now), *rss});
        if (!outcome.lines.empty()) outcome.peak_sampled_rss = std::max(outcome.peak_sampled_rss, *rss);
      }
      if (outcome.rss_samples.size() >= kMaxRssSamples) {
        keep_every_other(outcome.rss_samples);
        sample_interval_ms *= 2;
      }
      next_sample = now + std::chrono::milliseconds(sample_interval_ms);
    }
    if (!outcome.timed_out && seconds_between(start, now) > timeout_seconds) {
      outcome.timed_out = true;
      kill(pid, SIGKILL);
      break;  // a grandchild may still hold the pipe open; stop reading
    }
    pollfd watch{results[0], POLLIN, 0};
    auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(next_sample - SteadyClock::now()).count();
    int ready = poll(&watch, 1, static_cast<int>(std::max<long>(wait_ms, 0)) + 1);
    if (ready <= 0) continue;
    char buffer[4096];
    ssize_t got = read(results[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      open_pipe = false;
      break;
    }
    pending.append(buffer, static_cast<std::size_t>(got));
    for (std::size_t newline; (newline = pending.find('\n')) != std::string::npos;) {
      outcome.lines.push_back(pending.substr(0, newline));
      pending.erase(0, newline + 1);
    }
  }
  close(results[0]);

  int status = 0;
  while (wait4(pid, &status, 0, &outcome.usage) < 0 && errno == EINTR) {
  }
  outcome.wall_seconds = seconds_between(start, SteadyClock::now());
  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  return outcome;
}

}  // namespace mallard::tool
