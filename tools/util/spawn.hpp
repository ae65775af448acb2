// Starting programs with a chosen environment and file descriptors: the
// runner starts benchmark children this way, `mallard run` execs through
// environment_with_preload, and the redis workload starts the server and
// redis-benchmark.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

extern "C" char** environ;

namespace mallard::tool {

// This process's environment as "NAME=value" strings.
std::vector<std::string> current_environment();
// The environment with LD_PRELOAD replaced by `library` (removed when empty).
std::vector<std::string> environment_with_preload(std::vector<std::string> environment, const std::string& library);
// `environment` with the "NAME=value" entry (an earlier NAME removed), or
// without NAME.
std::vector<std::string> environment_with(std::vector<std::string> environment, const std::string& entry);
std::vector<std::string> environment_without(std::vector<std::string> environment, const std::string& variable);

struct FdMapping {
  int from;  // descriptor in the parent
  int to;    // number it gets in the child
};

// fork + execve (PATH is searched when argv[0] has no slash). The mapped
// descriptors are dup2'ed into place; every other descriptor the parent
// marked close-on-exec stays out of the child. Returns the pid, or -1 with errno set.
pid_t spawn_process(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                    const std::vector<FdMapping>& descriptors);

// Finds an executable in PATH and the usual system directories; empty when absent.
std::string find_program(const std::string& name);

}  // namespace mallard::tool
