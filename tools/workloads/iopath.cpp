// iopath: a mock block-device stack in the spirit of the mocked librbd
// `rbd bench` (seed 004), where glibc malloc cost QEMU+librbd 20-25% of its
// IOPS against tcmalloc. Submitter threads issue I/Os at a queue depth; each
// I/O allocates what a real stack does on its way down (an image request, a
// buffer list with a header fragment and a data buffer, the object request
// with its object name and extent vector, a completion with a heap-allocated
// callback, a temporary encoded message); completion threads take finished
// I/Os off the mock device and free them, so most frees are cross-thread.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "stats/latency_histogram.hpp"
#include "util/text.hpp"
#include "workloads/common.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

namespace {

constexpr std::uint64_t kObjectSize = 4u << 20;  // RBD's default object size

// buffer::raw: the reference-counted owner of a data area.
struct BufferRaw {
  char* data = nullptr;
  std::size_t length = 0;
  std::atomic<int> references{1};
  std::uint32_t crc = 0;
  char bookkeeping[56] = {};
};

// bufferlist's ptr_node: one fragment of a buffer list.
struct BufferFragment {
  BufferFragment* next = nullptr;
  BufferRaw* raw = nullptr;
  std::uint32_t offset = 0;
  std::uint32_t length = 0;
};

struct ObjectRequest {
  std::string object_name;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> extents;
  std::uint64_t object_number = 0;
  char state[240] = {};
};

struct Completion {
  std::function<void(int)> callback;
  std::atomic<int> pending{1};
  char state[160] = {};
};

struct Submitter;

struct IoRequest {
  IoRequest* next = nullptr;  // link in the device queue
  Submitter* owner = nullptr;
  SteadyClock::time_point submitted;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  bool is_write = true;
  BufferFragment* fragments = nullptr;
  ObjectRequest* object_request = nullptr;
  Completion* completion = nullptr;
  char dispatch_state[96] = {};
};

struct alignas(64) Submitter {
  std::atomic<std::uint32_t> in_flight{0};
};

// The mock device: a lock-free stack that completion threads empty in one
// exchange, plus a generation counter to sleep on when it is empty.
class DeviceQueue {
 public:
  void push(IoRequest* request) {
    request->next = head_.load(std::memory_order_relaxed);
    while (!head_.compare_exchange_weak(request->next, request, std::memory_order_release, std::memory_order_relaxed)) {
    }
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_one();
  }
  // Oldest first.
  IoRequest* take_all() {
    IoRequest* lifo = head_.exchange(nullptr, std::memory_order_acquire);
    IoRequest* fifo = nullptr;
    while (lifo != nullptr) {
      IoRequest* next = lifo->next;
      lifo->next = fifo;
      fifo = lifo;
      lifo = next;
    }
    return fifo;
  }
  std::uint32_t generation() const { return generation_.load(std::memory_order_acquire); }
  void wait_for_change(std::uint32_t seen) { generation_.wait(seen, std::memory_order_acquire); }
  void wake_all() {
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
  }

 private:
  std::atomic<IoRequest*> head_{nullptr};
  std::atomic<std::uint32_t> generation_{0};
};

struct IoPathConfig {
  std::uint64_t io_size;
  std::uint64_t total_ios;
  unsigned submitters;
  unsigned completers;
  std::uint32_t queue_depth;
  double read_fraction;
  bool random_offsets;
  std::uint64_t image_size;
  std::uint64_t data_alignment;
  std::string placement;
};

class IoPathBench {
 public:
  explicit IoPathBench(const IoPathConfig& config) : config_(config), submitters_(config.submitters), histograms_(config.completers) {}

  void run(MetricSink& sink);

 private:
  void submit_loop(unsigned index);
  void complete_loop(unsigned index);
  IoRequest* build_request(Submitter& owner, std::uint64_t offset, bool is_write);
  void finish_request(IoRequest* request, LatencyHistogram& histogram);
  void report_loop(MetricSink& sink);
  void pin(unsigned index, bool completer) const;

  IoPathConfig config_;
  std::vector<Submitter> submitters_;
  std::vector<LatencyHistogram> histograms_;
  DeviceQueue device_;
  std::atomic<std::uint64_t> completed_{0};
  std::atomic<bool> all_done_{false};
  std::mutex report_mutex_;
  std::condition_variable report_wakeup_;
};

IoRequest* IoPathBench::build_request(Submitter& owner, std::uint64_t offset, bool is_write) {
  auto* request = new IoRequest;
  request->owner = &owner;
  request->submitted = SteadyClock::now();
  request->offset = offset;
  request->length = config_.io_size;
  request->is_write = is_write;

  // The data buffer, and a small header buffer: two fragments in the list.
  auto* data = new BufferRaw;
  if (config_.data_alignment > 0) {
    void* aligned = nullptr;
    if (posix_memalign(&aligned, config_.data_alignment, config_.io_size) != 0) std::abort();
    data->data = static_cast<char*>(aligned);
  } else {
    data->data = static_cast<char*>(std::malloc(config_.io_size));
  }
  data->length = config_.io_size;
  if (is_write) std::memset(data->data, static_cast<int>(offset >> 12), config_.io_size);  // the caller's data copied in
  auto* header = new BufferRaw;
  header->data = static_cast<char*>(std::malloc(64));
  header->length = 64;
  std::memset(header->data, 0, 64);
  auto* data_fragment = new BufferFragment{nullptr, data, 0, static_cast<std::uint32_t>(config_.io_size)};
  request->fragments = new BufferFragment{data_fragment, header, 0, 64};

  // The object request: RBD names objects rbd_data.<image id>.<object number>.
  auto* object = new ObjectRequest;
  object->object_number = offset / kObjectSize;
  char name[64];
  std::snprintf(name, sizeof name, "rbd_data.%s.%016llx", "1f2e3d4c5b6a", static_cast<unsigned long long>(object->object_number));
  object->object_name = name;
  object->extents.emplace_back(offset % kObjectSize, config_.io_size);
  request->object_request = object;

  // The completion's callback captures more than std::function stores inline,
  // as librbd's context chains do, so it costs an allocation too.
  auto* completion = new Completion;
  std::uint64_t cookie = offset ^ 0x5bd1e995;
  completion->callback = [request, cookie, &owner](int result) {
    if (result != 0 || cookie == 0) std::abort();
    request->owner = &owner;
  };
  request->completion = completion;

  // Encoding the operation into a message is a short-lived allocation freed
  // on the submitting thread.
  std::vector<char> message(128 + object->object_name.size());
  std::memcpy(message.data(), object->object_name.data(), object->object_name.size());
  keep_alive(message.data());
  return request;
}

void IoPathBench::finish_request(IoRequest* request, LatencyHistogram& histogram) {
  BufferFragment* data_fragment = request->fragments->next;
  if (!request->is_write) std::memset(data_fragment->raw->data, 0x5a, data_fragment->raw->length);  // the device's data
  std::uint32_t crc = 0;
  for (std::uint64_t i = 0; i < request->length; i += 512) crc = crc * 31 + static_cast<unsigned char>(data_fragment->raw->data[i]);
  data_fragment->raw->crc = crc;
  request->completion->callback(0);

  Submitter& owner = *request->owner;
  histogram.record(nanoseconds_between(request->submitted, SteadyClock::now()));
  for (BufferFragment* fragment = request->fragments; fragment != nullptr;) {
    BufferFragment* next = fragment->next;
    std::free(fragment->raw->data);
    delete fragment->raw;
    delete fragment;
    fragment = next;
  }
  delete request->object_request;
  delete request->completion;
  delete request;

  owner.in_flight.fetch_sub(1, std::memory_order_release);
  owner.in_flight.notify_one();
  if (completed_.fetch_add(1, std::memory_order_acq_rel) + 1 == config_.total_ios) {
    all_done_.store(true, std::memory_order_release);
    device_.wake_all();
    std::lock_guard lock(report_mutex_);
    report_wakeup_.notify_all();
  }
}

void IoPathBench::submit_loop(unsigned index) {
  Submitter& self = submitters_[index];
  std::uint64_t my_ios = config_.total_ios / config_.submitters + (index < config_.total_ios % config_.submitters ? 1 : 0);
  FastRandom random(index + 1);
  std::uint64_t blocks = std::max<std::uint64_t>(config_.image_size / config_.io_size, 1);
  std::uint64_t sequential_block = blocks / config_.submitters * index;
  for (std::uint64_t issued = 0; issued < my_ios; ++issued) {
    std::uint32_t in_flight;
    while ((in_flight = self.in_flight.load(std::memory_order_acquire)) >= config_.queue_depth) {
      self.in_flight.wait(in_flight, std::memory_order_acquire);
    }
    self.in_flight.fetch_add(1, std::memory_order_acq_rel);
    std::uint64_t block = config_.random_offsets ? random.below(blocks) : (sequential_block++ % blocks);
    bool is_write = random.unit() >= config_.read_fraction;
    device_.push(build_request(self, block * config_.io_size, is_write));
  }
}

void IoPathBench::complete_loop(unsigned index) {
  LatencyHistogram& histogram = histograms_[index];
  while (true) {
    std::uint32_t seen = device_.generation();
    IoRequest* batch = device_.take_all();
    if (batch == nullptr) {
      if (all_done_.load(std::memory_order_acquire)) return;
      device_.wait_for_change(seen);
      continue;
    }
    while (batch != nullptr) {
      IoRequest* next = batch->next;
      finish_request(batch, histogram);
      batch = next;
    }
  }
}

// Prints `rbd bench`'s per-second lines.
void IoPathBench::report_loop(MetricSink& sink) {
  auto start = SteadyClock::now();
  std::uint64_t last_ops = 0;
  auto last_time = start;
  for (int second = 1;; ++second) {
    std::unique_lock lock(report_mutex_);
    if (report_wakeup_.wait_until(lock, start + std::chrono::seconds(second), [&] { return all_done_.load(); })) return;
    lock.unlock();
    auto now = SteadyClock::now();
    std::uint64_t ops = completed_.load();
    double rate = static_cast<double>(ops - last_ops) / seconds_between(last_time, now);
    sink.log(strprintf("%5d %9llu %9.0f %11s/s", second, static_cast<unsigned long long>(ops), rate,
                       format_bytes(rate * static_cast<double>(config_.io_size)).c_str()));
    last_ops = ops;
    last_time = now;
  }
}

// Placement "paired": submitter i and completer i share allowed CPU i (mod
// the count); "split": submitters on the first half of the CPUs, completers
// on the rest; "os": wherever the scheduler puts them (as with one CPU).
void IoPathBench::pin(unsigned index, bool completer) const {
  if (config_.placement == "os") return;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  if (cpus.size() < 2) return;
  std::size_t slot = index;
  if (config_.placement == "split") {
    std::size_t half = cpus.size() / 2;
    slot = completer ? half + index % (cpus.size() - half) : index % half;
  }
  int cpu = cpus[slot % cpus.size()];
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) {
    // A run whose placement did not take must not pass for one that did.
    std::fprintf(stderr, "iopath: cannot pin a thread to CPU %d\n", cpu);
    std::abort();
  }
}

void IoPathBench::run(MetricSink& sink) {
  sink.log(strprintf("bench  type %s io_size %llu io_threads %u bytes %llu pattern %s",
                     config_.read_fraction >= 1 ? "read" : (config_.read_fraction <= 0 ? "write" : "readwrite"),
                     static_cast<unsigned long long>(config_.io_size), config_.queue_depth * config_.submitters,
                     static_cast<unsigned long long>(config_.total_ios * config_.io_size), config_.random_offsets ? "random" : "sequential"));
  sink.log("  SEC       OPS   OPS/SEC   BYTES/SEC");
  auto start = SteadyClock::now();
  {
    std::vector<std::jthread> threads;
    for (unsigned i = 0; i < config_.completers; ++i) threads.emplace_back([this, i] { pin(i, true); complete_loop(i); });
    for (unsigned i = 0; i < config_.submitters; ++i) threads.emplace_back([this, i] { pin(i, false); submit_loop(i); });
    std::jthread reporter([this, &sink] { report_loop(sink); });
  }
  double seconds = seconds_between(start, SteadyClock::now());
  double ops = static_cast<double>(completed_.load());
  sink.log(strprintf("elapsed: %.0f   ops: %.0f   ops/sec: %.0f   bytes/sec: %s/s", seconds, ops, ops / seconds,
                     format_bytes(ops / seconds * static_cast<double>(config_.io_size)).c_str()));

  LatencyHistogram all;
  for (const auto& histogram : histograms_) all.merge(histogram);
  sink.throughput(ops, seconds);
  sink.metric("bytes_per_s", ops / seconds * static_cast<double>(config_.io_size));
  sink.metric("lat_p50_us", all.percentile(50) / 1e3);
  sink.metric("lat_p99_us", all.percentile(99) / 1e3);
  sink.metric("lat_p999_us", all.percentile(99.9) / 1e3);
  sink.metric("lat_max_us", static_cast<double>(all.max()) / 1e3);
  sink.log(strprintf("completion latency: p50 %.1f us  p99 %.1f us  p99.9 %.1f us", all.percentile(50) / 1e3,
                     all.percentile(99) / 1e3, all.percentile(99.9) / 1e3));
}

void run_iopath(const Params& params, const std::string&, const RunContext&, MetricSink& sink) {
  IoPathConfig config{};
  config.io_size = params.size("io_size");
  config.total_ios = params.size("total") / std::max<std::uint64_t>(config.io_size, 1);
  config.submitters = static_cast<unsigned>(params.count("submitters"));
  config.completers = static_cast<unsigned>(params.count("completers"));
  config.queue_depth = static_cast<std::uint32_t>(params.count("queue_depth"));
  config.read_fraction = params.number("read_percent") / 100.0;
  config.image_size = params.size("image_size");
  config.data_alignment = params.size("data_alignment");
  config.placement = params.text("placement");
  if (config.placement != "os" && config.placement != "paired" && config.placement != "split") {
    throw std::invalid_argument("iopath: placement must be os, paired or split");
  }
  const std::string& pattern = params.text("pattern");
  if (pattern != "rand" && pattern != "seq") throw std::invalid_argument("iopath: pattern must be rand or seq");
  config.random_offsets = pattern == "rand";
  if (config.io_size == 0 || config.total_ios == 0 || config.submitters == 0 || config.completers == 0 || config.queue_depth == 0) {
    throw std::invalid_argument("iopath: io_size, total, submitters, completers and queue_depth must be positive");
  }
  IoPathBench bench(config);
  bench.run(sink);
}

}  // namespace

Workload make_iopath_workload() {
  Workload workload;
  workload.name = "iopath";
  workload.description =
      "mock librbd I/O stack (rbd bench): submitters allocate request, buffer-list fragments, object request, "
      "completion and data buffer per I/O; completion threads free them (cross-thread); ops/s and latency percentiles";
  workload.ops_unit = "I/Os";
  workload.params = {
      {"io_size", "4k", "4k", "bytes per I/O"},
      {"total", "5G", "1G", "bytes to transfer (io_size x I/Os)"},
      {"pattern", "rand", "rand", "rand or seq offsets"},
      {"read_percent", "0", "0", "share of reads; the seed's bench was 100% writes"},
      {"submitters", "2", "2", "submitting threads"},
      {"completers", "2", "2", "completion threads (they free the I/O)"},
      {"queue_depth", "16", "16", "I/Os in flight per submitter"},
      {"image_size", "10G", "10G", "image size the offsets fall in"},
      {"data_alignment", "0", "0", "0: malloc the data buffer; else posix_memalign to this"},
      {"placement", "os", "os", "os, paired (submitter i and completer i on CPU i) or split (submitters and completers on separate CPUs)"},
  };
  workload.run = run_iopath;
  return workload;
}

}  // namespace mallard::tool
