#include "run/child_main.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <map>

#include "alloc/allocator_identity.hpp"
#include "run/child_protocol.hpp"
#include "util/proc.hpp"
#include "util/text.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

namespace {

// Writes protocol lines with write(2) on an unbuffered descriptor, so a
// child that crashes still leaves every line it reported.
class ProtocolSink final : public MetricSink {
 public:
  explicit ProtocolSink(int fd) : fd_(fd) {}
  void line(const std::string& text) {
    std::string with_newline = text + "\n";
    std::size_t sent = 0;
    while (sent < with_newline.size()) {
      ssize_t written = write(fd_, with_newline.data() + sent, with_newline.size() - sent);
      if (written <= 0) return;
      sent += static_cast<std::size_t>(written);
    }
  }
  void throughput(double operations, double seconds) override { line(strprintf("throughput %.17g %.17g", operations, seconds)); }
  void metric(std::string_view name, double value) override { line(strprintf("metric %.*s %.17g", static_cast<int>(name.size()), name.data(), value)); }
  void override_process_metric(std::string_view name, double value) override {
    line(strprintf("override %.*s %.17g", static_cast<int>(name.size()), name.data(), value));
  }
  void log(std::string_view text) override {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }

 private:
  int fd_;
};

}  // namespace

std::vector<std::string> child_arguments(const std::string& workload, const std::string& case_name, const std::string& allocator,
                                         const std::string& preload, const std::string& glibc_shim,
                                         const std::map<std::string, std::string>& params) {
  std::vector<std::string> args = {"--workload", workload, "--case", case_name, "--allocator", allocator,
                                   "--preload", preload,   "--shim", glibc_shim};
  for (const auto& [name, value] : params) {
    args.push_back("--param");
    args.push_back(name + "=" + value);
  }
  return args;
}

int child_main(const std::vector<std::string>& args) {
  // Results go to descriptor 3 when the runner opened it, else to stdout (a
  // person running `mallard __child` by hand). Nothing this child starts inherits it.
  int fd = fcntl(kResultDescriptor, F_GETFD) >= 0 ? kResultDescriptor : STDOUT_FILENO;
  if (fd == kResultDescriptor) fcntl(fd, F_SETFD, FD_CLOEXEC);
  ProtocolSink sink(fd);

  std::string workload_name, case_name;
  RunContext context;
  ParamValues params;
  for (std::size_t i = 0; i + 1 < args.size(); i += 2) {
    const std::string& flag = args[i];
    const std::string& value = args[i + 1];
    if (flag == "--workload") workload_name = value;
    else if (flag == "--case") case_name = value;
    else if (flag == "--allocator") context.allocator_name = value;
    else if (flag == "--preload") context.preload_path = value;
    else if (flag == "--shim") context.glibc_shim_path = value;
    else if (flag == "--param") {
      auto equals = value.find('=');
      params[value.substr(0, equals)] = equals == std::string::npos ? "" : value.substr(equals + 1);
    }
  }
  const Workload* workload = find_workload(workload_name);
  if (workload == nullptr) {
    sink.line("error unknown workload '" + workload_name + "'");
    return 2;
  }

  std::string explanation;
  if (!own_allocator_matches(context.preload_path, &explanation)) {
    sink.line("error preload did not take: " + explanation);
    return 3;
  }
  sink.line("provider " + identify_own_allocator().provider_path);

  try {
    workload->run(Params(params), case_name, context, sink);
  } catch (const std::exception& failure) {
    sink.line(std::string("error ") + failure.what());
    return 4;
  }
  // The peak of this process's own memory since exec. The runner's wait4
  // ru_maxrss would also count the runner's pages that the child shared
  // between fork and exec: a floor of the runner's RSS under every small run.
  if (auto peak = peak_resident_bytes()) sink.line("peak_rss " + std::to_string(*peak));
  sink.line("final_rss " + std::to_string(resident_bytes().value_or(0)));
  sink.line("done");
  return 0;
}

}  // namespace mallard::tool
