#include "alloc/allocator_identity.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>

#include "alloc/allocator_catalog.hpp"
#include "alloc/elf_symbols.hpp"
#include "util/proc.hpp"
#include "util/text.hpp"

namespace mallard::tool {

namespace {

std::string object_defining(const char* symbol) {
  void* address = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  return canonical_path(info.dli_fname);
}

bool is_dynamic_linker(const std::string& path) {
  std::string file = std::filesystem::path(path).filename();
  return starts_with(file, "ld-linux") || starts_with(file, "ld64.so") || starts_with(file, "ld-musl");
}

bool is_libc(const std::string& path) {
  std::string file = std::filesystem::path(path).filename();
  return starts_with(file, "libc.so") || starts_with(file, "libc-2.");
}

std::vector<std::string> preload_entries(const std::vector<std::string>& environment) {
  std::vector<std::string> entries;
  for (const auto& variable : environment) {
    if (!starts_with(variable, "LD_PRELOAD=")) continue;
    std::string list = variable.substr(11);
    std::replace(list.begin(), list.end(), ' ', ':');
    for (const auto& entry : split(list, ':')) {
      if (!entry.empty()) entries.push_back(canonical_path(entry));
    }
  }
  return entries;
}

std::string name_of(const std::string& path) { return allocator_name_for_library(path).value_or("unknown"); }

}  // namespace

AllocatorIdentity identify_own_allocator() {
  AllocatorIdentity identity;
  identity.provider_path = object_defining("malloc");
  identity.name = name_of(identity.provider_path);
  identity.how = is_libc(identity.provider_path) ? "glibc default" : "dynamic linker";
  return identity;
}

std::optional<AllocatorIdentity> identify_process_allocator(pid_t pid, std::string* error) {
  auto executable = executable_of(pid);
  auto objects = mapped_objects(pid);
  if (!executable || objects.empty()) {
    if (error) *error = "cannot read /proc/" + std::to_string(pid) + "/exe and maps (no such process, or no permission)";
    return std::nullopt;
  }
  std::string main_object = canonical_path(*executable);
  std::vector<std::string> libraries;
  for (const auto& object : objects) {
    if (object.path == main_object || is_dynamic_linker(object.path) || object.path.find(".so") == std::string::npos) continue;
    libraries.push_back(object.path);
  }

  // Symbol lookup order is: the executable, the LD_PRELOAD entries, then the
  // executable's DT_NEEDED tree breadth-first. The tree is rebuilt from the
  // ELF files (a soname matches the mapped file it names, or its versioned
  // real file). Mapping addresses are no guide: large aligned libraries leave
  // gaps that later small ones fill.
  auto mapped_for = [&](const std::string& soname) -> std::string {
    for (const auto& library : libraries) {
      std::string file = std::filesystem::path(library).filename();
      if (file == soname || starts_with(file, soname + ".")) return library;
    }
    return "";
  };
  auto direct_needs = elf_needed_libraries(main_object);
  std::vector<std::string> dependency_tree, queue(direct_needs.begin(), direct_needs.end());
  for (std::size_t next = 0; next < queue.size(); ++next) {
    std::string library = mapped_for(queue[next]);
    if (library.empty() || std::find(dependency_tree.begin(), dependency_tree.end(), library) != dependency_tree.end()) continue;
    dependency_tree.push_back(library);
    for (auto& soname : elf_needed_libraries(library)) queue.push_back(std::move(soname));
  }

  // LD_PRELOAD from the environment, when the process still shows it: some
  // programs (redis-server) overwrite their environment block with their title.
  auto environment = environment_of(pid);
  bool environment_readable = std::any_of(environment.begin(), environment.end(), [](const std::string& v) { return v.find('=') != std::string::npos; });
  auto preloads = preload_entries(environment);
  auto contains = [](const std::vector<std::string>& list, const std::string& item) { return std::find(list.begin(), list.end(), item) != list.end(); };

  struct Candidate {
    std::string path;
    std::string how;
  };
  std::vector<Candidate> order{{main_object, "the executable itself"}};
  for (const auto& preload : preloads) {
    if (contains(libraries, preload)) order.push_back({preload, "LD_PRELOAD"});
  }
  // Objects outside the tree were preloaded or dlopen'ed. With LD_PRELOAD
  // visible and not naming them, they were dlopen'ed and come after the tree;
  // with the environment hidden, they can only have been preloaded.
  std::vector<Candidate> outside_tree;
  for (const auto& library : libraries) {
    if (contains(preloads, library) || contains(dependency_tree, library)) continue;
    outside_tree.push_back({library, environment_readable ? "dlopen (outside the dependency tree)"
                                                          : "preload (outside the dependency tree; the environment is hidden)"});
  }
  if (!environment_readable) order.insert(order.end(), outside_tree.begin(), outside_tree.end());
  for (const auto& library : dependency_tree) {
    std::string file = std::filesystem::path(library).filename();
    bool direct = std::any_of(direct_needs.begin(), direct_needs.end(), [&](const std::string& soname) { return file == soname || starts_with(file, soname + "."); });
    order.push_back({library, is_libc(library) ? "glibc default" : direct ? "linked by the executable" : "dependency of a linked library"});
  }
  if (environment_readable) order.insert(order.end(), outside_tree.begin(), outside_tree.end());

  AllocatorIdentity identity;
  for (const auto& candidate : order) {
    if (!elf_exports_function(candidate.path, "malloc")) continue;
    if (identity.provider_path.empty()) {
      identity.provider_path = candidate.path;
      identity.how = candidate.how;
      identity.name = name_of(candidate.path);
    } else if (!is_libc(candidate.path) && allocator_name_for_library(candidate.path)) {
      identity.unused_allocator_libraries.push_back(candidate.path);
    }
  }
  if (identity.provider_path.empty()) {
    if (error) *error = "no mapped object of process " + std::to_string(pid) + " exports malloc";
    return std::nullopt;
  }
  return identity;
}

bool own_allocator_matches(const std::string& expected_library, std::string* explanation) {
  std::string malloc_from = object_defining("malloc");
  std::string free_from = object_defining("free");
  // Every allocator's check does the same work, glibc's included: the first
  // read of /proc/self/maps faults in about 360 KiB of libstdc++'s stream and
  // locale code, and a check that skipped it for glibc alone would hand glibc
  // that much of a head start in every peak RSS the bench compares.
  auto files = mapped_files();
  std::string expected = expected_library.empty() ? malloc_from : canonical_path(expected_library);
  bool matches = (expected_library.empty() ? is_libc(malloc_from) : malloc_from == expected) && free_from == malloc_from &&
                 std::find(files.begin(), files.end(), expected) != files.end();
  if (!matches && explanation) {
    *explanation = "malloc comes from " + (malloc_from.empty() ? std::string("nowhere") : malloc_from) + ", free from " +
                   (free_from.empty() ? std::string("nowhere") : free_from) + "; expected " +
                   (expected_library.empty() ? std::string("glibc's libc.so") : canonical_path(expected_library));
  }
  return matches;
}

}  // namespace mallard::tool
