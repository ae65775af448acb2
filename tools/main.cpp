// The `mallard` command: bench, which, run, and the internal __child that
// every benchmark repetition runs in.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "commands/commands.hpp"
#include "run/child_main.hpp"

namespace {

// The invocation as a shell would read it back, for the reports.
std::string quoted_command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    bool plain = !arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,+@%") == std::string::npos;
    if (!line.empty()) line += ' ';
    if (plain) {
      line += arg;
    } else {
      line += '\'';
      for (char c : arg) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
      line += '\'';
    }
  }
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mallard::tool;
  std::string command = argc > 1 ? argv[1] : "";
  std::vector<std::string> args(argv + (argc > 1 ? 2 : 1), argv + argc);
  if (command == "bench") return bench_command(args, quoted_command_line(argc, argv));
  if (command == "which") return which_command(args);
  if (command == "run") return run_command(args);
  if (command == "__child") return child_main(args);
  if (command == "help" || command == "--help" || command == "-h") {
    std::printf("%s", usage_text().c_str());
    return 0;
  }
  std::fprintf(stderr, "%s", usage_text().c_str());
  return 2;
}
