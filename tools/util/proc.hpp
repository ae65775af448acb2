// Reading process facts from /proc: resident set size now and at its peak,
// the executable, the mapped files and the environment. The runner samples a
// child's RSS through these, the child reports its own final RSS, and
// `mallard which` reads another process's maps and environment.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mallard::tool {

// Resident bytes from /proc/<pid>/statm (pid 0 = this process). Does not
// allocate.
std::optional<std::uint64_t> resident_bytes(pid_t pid = 0);
// VmHWM (peak resident bytes) from /proc/<pid>/status. Does not allocate.
std::optional<std::uint64_t> peak_resident_bytes(pid_t pid = 0);
// Files mapped into the process, in the order /proc/<pid>/maps lists them, without duplicates.
std::vector<std::string> mapped_files(pid_t pid = 0);
struct MappedObject {
  std::string path;
  std::uint64_t lowest_address;
};
// The same, with each file's lowest mapped address.
std::vector<MappedObject> mapped_objects(pid_t pid = 0);
std::optional<std::string> executable_of(pid_t pid = 0);
// One "NAME=value" string per variable from /proc/<pid>/environ.
std::vector<std::string> environment_of(pid_t pid);
// The whole content of a small text file, or nullopt.
std::optional<std::string> read_text_file(const std::string& path);
// realpath(3), or the path itself when it cannot be resolved.
std::string canonical_path(const std::string& path);

}  // namespace mallard::tool
