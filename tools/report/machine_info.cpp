#include "report/machine_info.hpp"

#include <gnu/libc-version.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <ctime>

#include "util/proc.hpp"
#include "util/text.hpp"

#ifndef MALLARD_VERSION
#define MALLARD_VERSION "unknown"
#endif

namespace mallard::tool {

namespace {

std::string field_of(const std::string& text, const std::string& key, char separator) {
  for (const auto& line : split(text, '\n')) {
    auto at = line.find(separator);
    if (at != std::string::npos && trim(std::string_view(line).substr(0, at)) == key) {
      std::string value(trim(std::string_view(line).substr(at + 1)));
      if (value.size() >= 2 && value.front() == '"') value = value.substr(1, value.size() - 2);
      return value;
    }
  }
  return "";
}

std::string formatted_now(const char* format) {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buffer[64];
  std::strftime(buffer, sizeof buffer, format, &local);
  return buffer;
}

}  // namespace

MachineInfo describe_machine() {
  MachineInfo machine;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  machine.hostname = host;
  machine.cpu_model = field_of(read_text_file("/proc/cpuinfo").value_or(""), "model name", ':');
  machine.cpus = static_cast<unsigned>(sysconf(_SC_NPROCESSORS_ONLN));
  machine.memory_bytes = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  utsname names{};
  if (uname(&names) == 0) machine.kernel = std::string(names.sysname) + " " + names.release + " " + names.machine;
  machine.os = field_of(read_text_file("/etc/os-release").value_or(""), "PRETTY_NAME", '=');
  machine.glibc_version = gnu_get_libc_version();
  machine.compiler = __VERSION__;
  machine.mallard_version = MALLARD_VERSION;
  return machine;
}

std::string iso_timestamp_now() { return formatted_now("%Y-%m-%dT%H:%M:%S%z"); }
std::string compact_timestamp_now() { return formatted_now("%Y%m%d-%H%M%S"); }

}  // namespace mallard::tool
