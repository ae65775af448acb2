#include "util/proc.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_set>

namespace mallard::tool {

namespace {

std::string proc_path(pid_t pid, const char* leaf) {
  return (pid == 0 ? std::string("/proc/self/") : "/proc/" + std::to_string(pid) + "/") + leaf;
}

// Reads /proc/<pid>/<leaf> (pid 0 = this process) into `text`, NUL-terminated,
// with open/read and no allocation, so that a workload can sample its own
// memory while it watches what the allocator gives back (rss-return), and a
// child can report its peak at the end of a run. False if unreadable.
bool read_proc_into(pid_t pid, const char* leaf, char* text, std::size_t capacity) {
  char path[64];
  if (pid == 0) {
    std::snprintf(path, sizeof path, "/proc/self/%s", leaf);
  } else {
    std::snprintf(path, sizeof path, "/proc/%d/%s", static_cast<int>(pid), leaf);
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t length = read(fd, text, capacity - 1);
  close(fd);
  if (length <= 0) return false;
  text[length] = '\0';
  return true;
}

}  // namespace

std::optional<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

std::optional<std::uint64_t> resident_bytes(pid_t pid) {
  char text[128];
  if (!read_proc_into(pid, "statm", text, sizeof text)) return std::nullopt;
  // "size resident shared ...", in pages.
  unsigned long long size_pages = 0, resident_pages = 0;
  if (std::sscanf(text, "%llu %llu", &size_pages, &resident_pages) != 2) return std::nullopt;
  return resident_pages * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

std::optional<std::uint64_t> peak_resident_bytes(pid_t pid) {
  char text[8192];
  if (!read_proc_into(pid, "status", text, sizeof text)) return std::nullopt;
  const char* field = std::strstr(text, "\nVmHWM:");
  if (field == nullptr) return std::nullopt;
  return std::strtoull(field + 7, nullptr, 10) * 1024;
}

std::vector<MappedObject> mapped_objects(pid_t pid) {
  std::vector<MappedObject> objects;
  std::unordered_set<std::string> seen;
  std::ifstream in(proc_path(pid, "maps"));
  std::string line;
  while (std::getline(in, line)) {
    // address perms offset dev inode pathname: the path starts at the first '/'.
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.ends_with(" (deleted)")) path.resize(path.size() - 10);
    // maps is sorted by address, so the first line of a file has its lowest address.
    if (seen.insert(path).second) objects.push_back({path, std::strtoull(line.c_str(), nullptr, 16)});
  }
  return objects;
}

std::vector<std::string> mapped_files(pid_t pid) {
  std::vector<std::string> files;
  for (auto& object : mapped_objects(pid)) files.push_back(std::move(object.path));
  return files;
}

std::optional<std::string> executable_of(pid_t pid) {
  char buffer[PATH_MAX];
  ssize_t length = readlink(proc_path(pid, "exe").c_str(), buffer, sizeof buffer - 1);
  if (length <= 0) return std::nullopt;
  return std::string(buffer, static_cast<std::size_t>(length));
}

std::vector<std::string> environment_of(pid_t pid) {
  std::vector<std::string> variables;
  auto content = read_text_file(proc_path(pid, "environ"));
  if (!content) return variables;
  std::size_t start = 0;
  while (start < content->size()) {
    std::size_t end = content->find('\0', start);
    if (end == std::string::npos) end = content->size();
    if (end > start) variables.push_back(content->substr(start, end - start));
    start = end + 1;
  }
  return variables;
}

std::string canonical_path(const std::string& path) {
  char buffer[PATH_MAX];
  if (realpath(path.c_str(), buffer) == nullptr) return path;
  return buffer;
}

}  // namespace mallard::tool
