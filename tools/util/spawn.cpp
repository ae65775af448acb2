#include "util/spawn.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "util/text.hpp"

namespace mallard::tool {

std::vector<std::string> current_environment() {
  std::vector<std::string> variables;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) variables.emplace_back(*entry);
  return variables;
}

std::vector<std::string> environment_without(std::vector<std::string> environment, const std::string& variable) {
  std::string prefix = variable + "=";
  std::erase_if(environment, [&](const std::string& entry) { return starts_with(entry, prefix); });
  return environment;
}

std::vector<std::string> environment_with(std::vector<std::string> environment, const std::string& entry) {
  environment = environment_without(std::move(environment), entry.substr(0, entry.find('=')));
  environment.push_back(entry);
  return environment;
}

std::vector<std::string> environment_with_preload(std::vector<std::string> environment, const std::string& library) {
  if (library.empty()) return environment_without(std::move(environment), "LD_PRELOAD");
  return environment_with(std::move(environment), "LD_PRELOAD=" + library);
}

pid_t spawn_process(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                    const std::vector<FdMapping>& descriptors) {
  if (argv.empty()) {
    errno = EINVAL;
    return -1;
  }
  // Everything execve needs is built before fork: after fork only
  // async-signal-safe calls are allowed, and malloc is not one of them.
  std::vector<char*> argument_pointers, environment_pointers;
  for (const auto& argument : argv) argument_pointers.push_back(const_cast<char*>(argument.c_str()));
  argument_pointers.push_back(nullptr);
  for (const auto& variable : environment) environment_pointers.push_back(const_cast<char*>(variable.c_str()));
  environment_pointers.push_back(nullptr);
  std::string program = argv[0].find('/') == std::string::npos ? find_program(argv[0]) : argv[0];
  if (program.empty()) {
    errno = ENOENT;
    return -1;
  }

  std::vector<int> staged(descriptors.size(), -1);

  pid_t pid = fork();
  if (pid != 0) return pid;
  // Descriptors are first moved above every target number, so a mapping
  // cannot clobber a source that a later mapping still needs.
  for (std::size_t i = 0; i < descriptors.size(); ++i) staged[i] = fcntl(descriptors[i].from, F_DUPFD, 64);
  for (std::size_t i = 0; i < descriptors.size(); ++i) {
    if (staged[i] < 0 || dup2(staged[i], descriptors[i].to) < 0) _exit(126);
    close(staged[i]);
  }
  execve(program.c_str(), argument_pointers.data(), environment_pointers.data());
  _exit(127);
}

std::string find_program(const std::string& name) {
  std::string directories = std::getenv("PATH") ? std::getenv("PATH") : "";
  directories += ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
  for (const auto& directory : split(directories, ':')) {
    if (directory.empty()) continue;
    std::string candidate = directory + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace mallard::tool
