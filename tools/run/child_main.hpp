// `mallard __child`: the process a benchmark repetition runs in. It starts
// with the allocator preloaded, proves the preload took, runs one workload
// case, and writes the results to descriptor 3 (child_protocol.hpp).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace mallard::tool {

int child_main(const std::vector<std::string>& args);

// The argument list the runner passes to child_main.
std::vector<std::string> child_arguments(const std::string& workload, const std::string& case_name, const std::string& allocator,
                                         const std::string& preload, const std::string& glibc_shim,
                                         const std::map<std::string, std::string>& params);

}  // namespace mallard::tool
