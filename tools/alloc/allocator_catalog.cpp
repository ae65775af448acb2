#include "alloc/allocator_catalog.hpp"

#include <gnu/libc-version.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "util/proc.hpp"
#include "util/text.hpp"

#ifndef MALLARD_LIB_PATH
#define MALLARD_LIB_PATH ""
#endif
#ifndef MALLARD_GLIBC_SHIM_PATH
#define MALLARD_GLIBC_SHIM_PATH ""
#endif
#ifndef MALLARD_VERSION
#define MALLARD_VERSION "unknown"
#endif

namespace mallard::tool {

namespace {

constexpr std::array kLibraryDirectories = {
    "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib", "/lib/x86_64-linux-gnu",
};

struct KnownLibrary {
  const char* name;
  std::vector<const char*> files;  // first found wins
  const char* package_hint;        // apt package to suggest when missing
};

std::optional<std::string> find_library(const std::vector<const char*>& files) {
  for (const char* file : files) {
    for (const char* directory : kLibraryDirectories) {
      std::string candidate = std::string(directory) + "/" + file;
      if (access(candidate.c_str(), R_OK) == 0) return candidate;
    }
  }
  return std::nullopt;
}

std::string run_and_read(const std::string& command) {
  std::string output;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
    pclose(pipe);
  }
  return std::string(trim(output));
}

// The Debian package version of the file's owner, else the version in its real file name.
std::string library_version(const std::string& path) {
  std::string real = canonical_path(path);
  std::string owner = run_and_read("dpkg-query -S '" + real + "' 2>/dev/null | head -n1");
  if (auto colon = owner.find(": "); colon != std::string::npos) {
    std::string package = owner.substr(0, colon);
    std::string version = run_and_read("dpkg-query -W -f='${Version}' '" + package + "' 2>/dev/null");
    if (!version.empty()) return version;
  }
  std::string file = std::filesystem::path(real).filename();
  if (auto so = file.find(".so."); so != std::string::npos) return file.substr(so + 4);
  return "unknown";
}

}  // namespace

std::string built_mallard_library() { return MALLARD_LIB_PATH; }
std::string glibc_shim_library() { return MALLARD_GLIBC_SHIM_PATH; }

std::vector<AllocatorSpec> known_allocators() {
  std::vector<AllocatorSpec> catalog;
  catalog.push_back({"glibc", "", gnu_get_libc_version(), "system", true, ""});
  const std::vector<KnownLibrary> libraries = {
      {"jemalloc", {"libjemalloc.so.2", "libjemalloc.so"}, "libjemalloc2"},
      {"tcmalloc", {"libtcmalloc_minimal.so.4", "libtcmalloc_minimal.so"}, "libgoogle-perftools4 (libtcmalloc-minimal4)"},
      {"mimalloc", {"libmimalloc.so.2", "libmimalloc.so"}, "libmimalloc2.0"},
      {"tbbmalloc", {"libtbbmalloc_proxy.so.2", "libtbbmalloc_proxy.so"}, "libtbbmalloc2"},
  };
  for (const auto& library : libraries) {
    if (auto path = find_library(library.files)) {
      catalog.push_back({library.name, *path, library_version(*path), "package", true, ""});
    } else {
      catalog.push_back({library.name, "", "", "package", false, std::string("not installed (apt-get install ") + library.package_hint + ")"});
    }
  }
  std::string mallard = built_mallard_library();
  if (!mallard.empty() && access(mallard.c_str(), R_OK) == 0) {
    catalog.push_back({"mallard", mallard, MALLARD_VERSION, "this build", true, ""});
  } else {
    catalog.push_back({"mallard", mallard, MALLARD_VERSION, "this build", false,
                       mallard.empty() ? "this build has no libmallard target" : "not built yet: " + mallard});
  }
  return catalog;
}

std::vector<AllocatorSpec> catalog_with_overrides(const std::vector<std::pair<std::string, std::string>>& overrides) {
  auto catalog = known_allocators();
  for (const auto& [name, path] : overrides) {
    AllocatorSpec spec{name, path, "", "user", access(path.c_str(), R_OK) == 0, ""};
    if (!spec.available) spec.missing_reason = "cannot read " + path;
    if (spec.available) spec.version = name == "mallard" ? MALLARD_VERSION : library_version(path);
    bool replaced = false;
    for (auto& known : catalog) {
      if (known.name == name) {
        known = spec;
        replaced = true;
      }
    }
    if (!replaced) catalog.push_back(spec);
  }
  return catalog;
}

std::vector<AllocatorSpec> select_allocators(const std::vector<AllocatorSpec>& catalog, const std::vector<std::string>& names) {
  std::vector<AllocatorSpec> selected;
  for (const auto& name : names) {
    const AllocatorSpec* spec = find_allocator(catalog, name);
    if (spec == nullptr) throw std::invalid_argument("unknown allocator '" + name + "' (use --alloc " + name + "=/path/lib.so)");
    selected.push_back(*spec);
  }
  return selected;
}

const AllocatorSpec* find_allocator(const std::vector<AllocatorSpec>& catalog, std::string_view name) {
  for (const auto& spec : catalog) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

std::optional<std::string> allocator_name_for_library(const std::string& path) {
  std::string file = std::filesystem::path(path).filename();
  static const std::vector<std::pair<const char*, const char*>> prefixes = {
      {"libjemalloc", "jemalloc"}, {"libtcmalloc", "tcmalloc"},       {"libmimalloc", "mimalloc"},
      {"libtbbmalloc", "tbbmalloc"}, {"libmallard-glibc-shim", "glibc"}, {"libmallard", "mallard"},
      {"libc.so", "glibc"},          {"libc-2.", "glibc"},
  };
  for (const auto& [prefix, name] : prefixes) {
    if (starts_with(file, prefix)) return std::string(name);
  }
  return std::nullopt;
}

}  // namespace mallard::tool
