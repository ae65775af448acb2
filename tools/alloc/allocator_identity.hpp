// Which allocator serves a process's malloc, and from which file. For this
// process (the benchmark child proving its preload took) the dynamic linker
// answers directly through dlsym/dladdr. For another process (`mallard which
// PID`, the redis server) it is reconstructed from /proc and the ELF files:
// the mapped objects in symbol-lookup order (executable, LD_PRELOAD entries,
// the DT_NEEDED tree breadth-first), the first that exports malloc being the
// one its calls bind to.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace mallard::tool {

struct AllocatorIdentity {
  std::string name;           // jemalloc, glibc, ... or "unknown"
  std::string provider_path;  // the object whose malloc is bound
  std::string how;            // "LD_PRELOAD", "linked library", "the executable itself", "glibc default"
  std::vector<std::string> unused_allocator_libraries;  // known allocators mapped but not serving malloc
};

// This process.
AllocatorIdentity identify_own_allocator();
// Another process (needs permission to read its /proc entries); nullopt with a reason in *error.
std::optional<AllocatorIdentity> identify_process_allocator(pid_t pid, std::string* error);

// The child's proof: does this process's malloc (and free) come from the
// expected library ("" = glibc), and is that library mapped? On failure,
// *explanation says what was found instead.
bool own_allocator_matches(const std::string& expected_library, std::string* explanation);

}  // namespace mallard::tool
