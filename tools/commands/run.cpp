// `mallard run --alloc NAME -- CMD...`: replaces itself with CMD, with the
// allocator preloaded (glibc: LD_PRELOAD removed).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "alloc/allocator_catalog.hpp"
#include "cli/options.hpp"
#include "commands/commands.hpp"
#include "util/spawn.hpp"

namespace mallard::tool {

int run_command(const std::vector<std::string>& args) {
  RunOptions options;
  try {
    options = parse_run_options(args);
  } catch (const std::invalid_argument& error) {
    std::fprintf(stderr, "mallard run: %s\n\n%s", error.what(), usage_text().c_str());
    return 2;
  }
  std::string library;
  if (auto equals = options.allocator.find('='); equals != std::string::npos) {
    library = options.allocator.substr(equals + 1);
  } else if (options.allocator.find('/') != std::string::npos) {
    library = options.allocator;
  } else {
    auto catalog = known_allocators();
    const AllocatorSpec* spec = find_allocator(catalog, options.allocator);
    if (spec == nullptr || !spec->available) {
      std::fprintf(stderr, "mallard run: allocator '%s' is %s\n", options.allocator.c_str(),
                   spec == nullptr ? "unknown (give NAME=/path/lib.so)" : spec->missing_reason.c_str());
      return 2;
    }
    library = spec->path;
  }
  if (!library.empty() && access(library.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "mallard run: cannot read %s\n", library.c_str());
    return 2;
  }

  std::vector<std::string> environment = environment_with_preload(current_environment(), library);
  std::vector<char*> argv, envp;
  for (auto& arg : options.command) argv.push_back(arg.data());
  argv.push_back(nullptr);
  for (auto& variable : environment) envp.push_back(variable.data());
  envp.push_back(nullptr);
  std::string program = options.command[0].find('/') == std::string::npos ? find_program(options.command[0]) : options.command[0];
  if (program.empty()) {
    std::fprintf(stderr, "mallard run: %s: command not found\n", options.command[0].c_str());
    return 127;
  }
  execve(program.c_str(), argv.data(), envp.data());
  std::fprintf(stderr, "mallard run: %s: %s\n", program.c_str(), std::strerror(errno));
  return 126;
}

}  // namespace mallard::tool
