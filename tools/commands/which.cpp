// `mallard which PID...`: which allocator serves a running process's malloc,
// from which file, and how it got there (LD_PRELOAD, linked, default glibc).
#include <cstdio>
#include <cstdlib>

#include "alloc/allocator_identity.hpp"
#include "cli/options.hpp"
#include "commands/commands.hpp"
#include "util/text.hpp"

namespace mallard::tool {

int which_command(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::fprintf(stderr, "%s", usage_text().c_str());
    return 2;
  }
  int status = 0;
  for (const auto& arg : args) {
    auto pid = parse_count(arg);
    if (!pid || *pid == 0) {
      std::fprintf(stderr, "mallard which: '%s' is not a process id\n", arg.c_str());
      status = 2;
      continue;
    }
    std::string error;
    auto identity = identify_process_allocator(static_cast<pid_t>(*pid), &error);
    if (!identity) {
      std::fprintf(stderr, "mallard which: %s\n", error.c_str());
      status = 1;
      continue;
    }
    std::printf("%s: %s (%s), %s\n", arg.c_str(), identity->name.c_str(), identity->provider_path.c_str(), identity->how.c_str());
    for (const auto& unused : identity->unused_allocator_libraries) {
      std::printf("%s: also mapped, not serving malloc: %s\n", arg.c_str(), unused.c_str());
    }
  }
  return status;
}

}  // namespace mallard::tool
