// The allocators `mallard bench` compares: glibc (no preload), the Debian
// packages it finds (jemalloc, tcmalloc minimal, mimalloc, tbbmalloc proxy),
// libmallard.so from this build, and whatever the user adds with
// --alloc NAME=/path/lib.so.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mallard::tool {

struct AllocatorSpec {
  std::string name;
  std::string path;     // the library to preload; empty for glibc
  std::string version;  // best effort: package version, soname version, or the build's
  std::string origin;   // "system", "package", "this build" or "user"
  bool available = true;
  std::string missing_reason;  // when not available
  // VAR=VALUE entries set in this allocator's runs (--env), besides LD_PRELOAD.
  std::vector<std::string> environment;
  bool is_glibc() const { return path.empty(); }
};

// Every allocator mallard knows, in report order, available or not.
std::vector<AllocatorSpec> known_allocators();
// The known ones with user additions (--alloc NAME=/path) applied: a user
// entry replaces a known one of the same name or is appended.
std::vector<AllocatorSpec> catalog_with_overrides(const std::vector<std::pair<std::string, std::string>>& overrides);
// Picks by name, in the given order; throws std::invalid_argument for an unknown name.
std::vector<AllocatorSpec> select_allocators(const std::vector<AllocatorSpec>& catalog, const std::vector<std::string>& names);
const AllocatorSpec* find_allocator(const std::vector<AllocatorSpec>& catalog, std::string_view name);
// Names an allocator from a library path (".../libjemalloc.so.2" -> "jemalloc"); nullopt if not recognized.
std::optional<std::string> allocator_name_for_library(const std::string& path);
// The libmallard.so this tool was built with (may not exist yet).
std::string built_mallard_library();
// The preload that routes a program linked against another allocator to glibc's malloc.
std::string glibc_shim_library();

}  // namespace mallard::tool
