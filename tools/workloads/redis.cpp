// redis: the real server (seed 002), when redis-server is installed. Each run
// starts Debian's redis-server on 127.0.0.1 with the allocator preloaded,
// proves from /proc which object its malloc binds to, then: the seed's
// `RPUSH dummy x` a million times, a SET/DEL churn (set keys, delete a random
// half, refill with larger values), and redis-benchmark. RSS comes from /proc,
// not from INFO: Debian links redis-server against jemalloc, so INFO's
// mem_allocator and allocator_* fields describe jemalloc whatever serves
// malloc. A preload cannot select glibc either (jemalloc would still win), so
// the glibc row preloads mallard's shim, which forwards malloc and friends to
// glibc's __libc_* entry points; the /proc check proves that too.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cctype>
#include <chrono>
#include <functional>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "alloc/allocator_identity.hpp"
#include "util/proc.hpp"
#include "util/spawn.hpp"
#include "util/text.hpp"
#include "workloads/common.hpp"
#include "workloads/resp_client.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

namespace {

int free_local_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw std::runtime_error("redis: cannot find a free local port");
  }
  close(fd);
  return ntohs(address.sin_port);
}

// Runs a program to completion and returns its standard output.
std::string capture_output(const std::vector<std::string>& argv, const std::vector<std::string>& environment) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("redis: pipe failed");
  pid_t pid = spawn_process(argv, environment, {{pipe_fds[1], 1}});
  close(pipe_fds[1]);
  std::string output;
  char buffer[4096];
  ssize_t got;
  while ((got = read(pipe_fds[0], buffer, sizeof buffer)) > 0) output.append(buffer, static_cast<std::size_t>(got));
  close(pipe_fds[0]);
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("redis: " + argv[0] + " failed");
  return output;
}

int redis_major_version(const std::string& server) {
  std::string version = capture_output({server, "--version"}, environment_with_preload(current_environment(), ""));
  auto at = version.find("v=");
  return at == std::string::npos ? 0 : std::atoi(version.c_str() + at + 2);
}

// A started server, shut down and reaped on every path out of the workload.
class RedisServer {
 public:
  RedisServer(const std::string& server, int port, const std::string& preload) : port_(port) {
    std::string list_setting = redis_major_version(server) >= 7 ? "--list-max-listpack-size" : "--list-max-ziplist-size";
    std::vector<std::string> argv = {server, "--port", std::to_string(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                     "--protected-mode", "no", "--daemonize", "no", "--loglevel", "warning", "--dir", "/tmp",
                                     list_setting, "1"};
    pid_ = spawn_process(argv, environment_with_preload(current_environment(), preload), {});
    if (pid_ < 0) throw std::runtime_error("redis: cannot start " + server);
  }
  ~RedisServer() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  int port() const { return port_; }

  void connect(RespClient& client) {
    auto deadline = SteadyClock::now() + std::chrono::seconds(15);
    while (!client.connect_local(port_)) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("redis: server exited at startup (see the run log)");
      }
      if (SteadyClock::now() > deadline) throw std::runtime_error("redis: server did not accept connections in 15 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // SHUTDOWN NOSAVE, then the server's own CPU time and peak RSS from wait4.
  rusage shut_down(RespClient& client) {
    try {
      client.call({"SHUTDOWN", "NOSAVE"});
    } catch (const std::runtime_error&) {
      // The server closes the connection instead of replying: that is success.
    }
    rusage usage{};
    int status = 0;
    auto deadline = SteadyClock::now() + std::chrono::seconds(10);
    while (wait4(pid_, &status, WNOHANG, &usage) == 0) {
      if (SteadyClock::now() > deadline) {
        kill(pid_, SIGKILL);
        wait4(pid_, &status, 0, &usage);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    pid_ = -1;
    return usage;
  }

 private:
  int port_;
  pid_t pid_ = -1;
};

struct MemoryPoint {
  double used_memory;
  double rss;
};

MemoryPoint memory_point(RespClient& client, pid_t server, const char* phase, MetricSink& sink) {
  auto fields = client.info("memory");
  double used = std::atof(fields["used_memory"].c_str());
  double rss = static_cast<double>(resident_bytes(server).value_or(0));
  sink.metric(std::string("used_memory_") + phase, used);
  sink.metric(std::string("rss_bytes_") + phase, rss);
  sink.metric(std::string("frag_ratio_") + phase, used > 0 ? rss / used : 0);
  sink.log(strprintf("after %-7s used_memory %12.0f  rss(/proc) %12.0f  ratio %.2f  (INFO mem_allocator:%s, rss:%s)", phase, used, rss,
                     used > 0 ? rss / used : 0, fields["mem_allocator"].c_str(), fields["used_memory_rss"].c_str()));
  return {used, rss};
}

void pipelined(RespClient& client, std::uint64_t count, const std::function<void(std::uint64_t)>& queue_one) {
  constexpr std::uint64_t kBatch = 1000;
  for (std::uint64_t i = 0; i < count; ++i) {
    queue_one(i);
    if ((i + 1) % kBatch == 0 || i + 1 == count) client.flush_and_read_replies();
  }
}

struct BenchmarkTotals {
  double requests;
  double seconds;  // sum over tests of requests / (requests/s)
};

// redis-benchmark --csv prints "SET","98039.22",... per test.
BenchmarkTotals run_redis_benchmark(const Params& params, int port, MetricSink& sink) {
  std::string benchmark = find_program("redis-benchmark");
  if (benchmark.empty()) throw std::runtime_error("redis: redis-benchmark not found (apt-get install redis-tools)");
  std::uint64_t requests = params.count("bench_requests");
  std::vector<std::string> argv = {benchmark, "-h", "127.0.0.1", "-p", std::to_string(port), "-n", std::to_string(requests), "-c",
                                   params.text("bench_clients"), "-P", params.text("bench_pipeline"), "-r", "100000", "-t",
                                   params.text("bench_tests"), "--csv"};
  // The client runs under glibc in every row: only the server is compared.
  std::string output = capture_output(argv, environment_with_preload(current_environment(), ""));
  double total_seconds = 0, total_requests = 0;
  for (const auto& line : split(output, '\n')) {
    auto fields = split(trim(line), ',');
    if (fields.size() < 2) continue;
    auto unquote = [](std::string text) {
      if (text.size() >= 2 && text.front() == '"') text = text.substr(1, text.size() - 2);
      return text;
    };
    std::string test = unquote(fields[0]);
    if (test == "test") continue;
    std::string rps_text = unquote(fields[1]);
    // redis-benchmark divides by whole milliseconds: a test that ran in under
    // one prints "inf", and its time is unknown.
    if (rps_text == "inf") {
      throw std::runtime_error("redis: redis-benchmark ran " + test + " in under a millisecond (rps inf): raise bench_requests");
    }
    auto rps = parse_number(rps_text);
    if (!rps || *rps <= 0) continue;
    std::string name;
    for (char c : test) name += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '_';
    sink.metric("rps_" + name, *rps);
    sink.log("redis-benchmark " + test + ": " + format_si(*rps) + " requests/s");
    total_seconds += static_cast<double>(requests) / *rps;
    total_requests += static_cast<double>(requests);
  }
  if (total_requests == 0) throw std::runtime_error("redis: no results from redis-benchmark: " + output);
  return {total_requests, total_seconds};
}

void run_redis(const Params& params, const std::string&, const RunContext& context, MetricSink& sink) {
  std::string server_path = find_program("redis-server");
  if (server_path.empty()) throw std::runtime_error("redis: redis-server not found (apt-get install redis-server)");
  std::string preload = context.preload_path.empty() ? context.glibc_shim_path : context.preload_path;
  if (preload.empty()) throw std::runtime_error("redis: the glibc shim library was not built, so glibc cannot be measured");

  auto start = SteadyClock::now();
  RedisServer server(server_path, free_local_port(), preload);
  RespClient client;
  server.connect(client);

  std::string error;
  auto identity = identify_process_allocator(server.pid(), &error);
  if (!identity) throw std::runtime_error("redis: " + error);
  if (identity->provider_path != canonical_path(preload)) {
    throw std::runtime_error("redis: preload did not take: the server's malloc comes from " + identity->provider_path + ", expected " +
                             canonical_path(preload));
  }
  sink.log("redis-server pid " + std::to_string(server.pid()) + ": malloc from " + identity->provider_path + " (" + identity->how + ")");
  sink.metric("server_allocator_verified", 1);

  std::uint64_t rpush = params.count("rpush");
  auto rpush_start = SteadyClock::now();
  pipelined(client, rpush, [&](std::uint64_t) { client.queue({"RPUSH", "dummy", "x"}); });
  sink.metric("rpush_per_s", static_cast<double>(rpush) / seconds_between(rpush_start, SteadyClock::now()));
  memory_point(client, server.pid(), "rpush", sink);

  std::uint64_t keys = params.count("churn_keys");
  FastRandom random(11);
  std::string value(1024, 'v');
  char key[32];
  pipelined(client, keys, [&](std::uint64_t i) {
    std::snprintf(key, sizeof key, "churn:%llu", static_cast<unsigned long long>(i));
    client.queue({"SET", key, std::string_view(value).substr(0, random.between(16, 128))});
  });
  std::vector<std::uint64_t> deleted;
  for (std::uint64_t i = 0; i < keys; ++i) {
    if (random.unit() < 0.5) deleted.push_back(i);
  }
  pipelined(client, deleted.size(), [&](std::uint64_t i) {
    std::snprintf(key, sizeof key, "churn:%llu", static_cast<unsigned long long>(deleted[i]));
    client.queue({"DEL", key});
  });
  pipelined(client, deleted.size(), [&](std::uint64_t i) {
    std::snprintf(key, sizeof key, "refill:%llu", static_cast<unsigned long long>(i));
    client.queue({"SET", key, std::string_view(value).substr(0, random.between(200, 400))});
  });
  MemoryPoint churned = memory_point(client, server.pid(), "churn", sink);

  BenchmarkTotals benchmark = run_redis_benchmark(params, server.port(), sink);
  double seconds = seconds_between(start, SteadyClock::now());

  double peak = static_cast<double>(peak_resident_bytes(server.pid()).value_or(0));
  double final_rss = static_cast<double>(resident_bytes(server.pid()).value_or(0));
  rusage usage = server.shut_down(client);
  // The headline is redis-benchmark's requests/s; the loading phases are in the log and metrics.
  sink.throughput(benchmark.requests, benchmark.seconds);
  sink.metric("workload_seconds", seconds);
  sink.metric("used_memory", churned.used_memory);
  sink.metric("frag_ratio", churned.used_memory > 0 ? churned.rss / churned.used_memory : 0);
  sink.override_process_metric("peak_rss_bytes", peak);
  sink.override_process_metric("final_rss_bytes", final_rss);
  sink.override_process_metric("user_s", static_cast<double>(usage.ru_utime.tv_sec) + static_cast<double>(usage.ru_utime.tv_usec) / 1e6);
  sink.override_process_metric("sys_s", static_cast<double>(usage.ru_stime.tv_sec) + static_cast<double>(usage.ru_stime.tv_usec) / 1e6);
}

}  // namespace

Workload make_redis_workload() {
  Workload workload;
  workload.name = "redis";
  workload.description =
      "Debian's redis-server under each allocator (glibc via mallard's shim; allocator proven from /proc): 1M RPUSH "
      "dummy x with list-max-listpack-size 1, SET/DEL churn, redis-benchmark; server RSS from /proc";
  workload.ops_unit = "requests";
  workload.params = {
      {"rpush", "1M", "200k", "RPUSH dummy x count"},
      {"churn_keys", "500k", "50k", "keys SET before deleting a random half and refilling"},
      {"bench_requests", "300k", "50k", "redis-benchmark -n (per test)"},
      {"bench_clients", "50", "20", "redis-benchmark -c"},
      {"bench_pipeline", "16", "16", "redis-benchmark -P"},
      {"bench_tests", "set,get,lpush,lpop", "set,get", "redis-benchmark -t"},
  };
  // Redis's own ratio (INFO's mem_fragmentation_ratio): its used_memory adds
  // up malloc_usable_size of what it holds, so each allocator is measured
  // against its own rounded-up blocks, not against the bytes requested.
  workload.metric_columns = {{"frag_ratio", "RSS/used_memory", "%.2f", ""}};
  workload.run = run_redis;
  workload.unavailable_reason = [] {
    if (find_program("redis-server").empty()) return std::string("redis-server not installed (apt-get install redis-server)");
    if (find_program("redis-benchmark").empty()) return std::string("redis-benchmark not installed (apt-get install redis-tools)");
    return std::string();
  };
  return workload;
}

}  // namespace mallard::tool
