// The subcommands of the `mallard` tool; each returns the process exit status.
#pragma once

#include <string>
#include <vector>

namespace mallard::tool {

// command_line is the full invocation, recorded in the reports.
int bench_command(const std::vector<std::string>& args, const std::string& command_line);
int which_command(const std::vector<std::string>& args);
int run_command(const std::vector<std::string>& args);

}  // namespace mallard::tool
