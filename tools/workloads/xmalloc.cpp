// xmalloc: Lever and Boreham's producer/consumer test ("malloc() Performance
// in a Multithreaded Linux Environment", USENIX 2000), written from its
// description: one thread allocates blocks and passes them in batches to
// several consumer threads, which free them. Every free is remote, which is
// where allocators with per-thread caches either shine or leak memory.
#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "workloads/common.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

namespace {

struct Batch {
  std::size_t count;
  void* blocks[1];  // count entries; the batch itself is malloc'd by the producer
};

// A bounded queue of batches, so the producer cannot run arbitrarily ahead.
class BatchQueue {
 public:
  explicit BatchQueue(std::size_t capacity) : capacity_(capacity) {}
  void push(Batch* batch) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return queue_.size() < capacity_; });
    queue_.push_back(batch);
    deepest_ = std::max(deepest_, queue_.size());
    not_empty_.notify_one();
  }
  // nullptr once closed and drained.
  Batch* pop() {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return !queue_.empty() || closed_; });
    if (queue_.empty()) return nullptr;
    Batch* batch = queue_.front();
    queue_.pop_front();
    not_full_.notify_one();
    return batch;
  }
  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    not_empty_.notify_all();
  }
  // The most batches the queue held at once: their blocks were all live
  // then, so a run's peak RSS follows it (the faster the producer runs
  // against the consumers, the fuller the queue gets while they wait to be
  // scheduled).
  std::size_t deepest() {
    std::lock_guard lock(mutex_);
    return deepest_;
  }

 private:
  std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable not_full_, not_empty_;
  std::deque<Batch*> queue_;
  bool closed_ = false;
  std::size_t deepest_ = 0;
};

void run_xmalloc(const Params& params, const std::string&, const RunContext&, MetricSink& sink) {
  auto consumers = params.count("consumers");
  auto objects = params.count("objects");
  auto batch_size = params.count("batch");
  auto min_size = params.size("min_size"), max_size = params.size("max_size");
  if (consumers == 0 || batch_size == 0 || min_size == 0 || min_size > max_size) {
    throw std::invalid_argument("xmalloc: consumers and batch must be positive and 0 < min_size <= max_size");
  }
  BatchQueue queue(params.count("queued_batches"));
  auto start = SteadyClock::now();
  std::vector<std::jthread> threads;
  for (std::uint64_t c = 0; c < consumers; ++c) {
    threads.emplace_back([&] {
      while (Batch* batch = queue.pop()) {
        for (std::size_t i = 0; i < batch->count; ++i) std::free(batch->blocks[i]);
        std::free(batch);
      }
    });
  }
  FastRandom random(3);
  for (std::uint64_t produced = 0; produced < objects;) {
    std::size_t count = static_cast<std::size_t>(std::min(batch_size, objects - produced));
    auto* batch = static_cast<Batch*>(std::malloc(sizeof(Batch) + (count - 1) * sizeof(void*)));
    batch->count = count;
    for (std::size_t i = 0; i < count; ++i) {
      std::uint64_t bytes = random.between(min_size, max_size);
      auto* block = static_cast<unsigned char*>(std::malloc(bytes));
      if (block == nullptr) std::abort();
      block[0] = block[bytes - 1] = 1;
      batch->blocks[i] = block;
    }
    queue.push(batch);
    produced += count;
  }
  queue.close();
  threads.clear();
  double seconds = seconds_between(start, SteadyClock::now());
  sink.throughput(static_cast<double>(objects), seconds);
  sink.metric("deepest_queue", static_cast<double>(queue.deepest()));
}

}  // namespace

Workload make_xmalloc_workload() {
  Workload workload;
  workload.name = "xmalloc";
  workload.description = "Lever-Boreham producer/consumer: one thread allocates (8..512 B), consumer threads free (all frees remote)";
  workload.ops_unit = "blocks";
  workload.params = {
      {"consumers", "3", "3", "freeing threads"},
      {"objects", "20M", "6M", "blocks produced in total"},
      {"batch", "256", "256", "blocks handed over at once"},
      {"queued_batches", "64", "64", "batches in the queue at most"},
      {"min_size", "8", "8", "smallest block"},
      {"max_size", "512", "512", "largest block"},
  };
  workload.metric_columns = {{"deepest_queue", "deepest queue", "%.0f", "", /*explains_peak_rss=*/true}};
  workload.run = run_xmalloc;
  return workload;
}

}  // namespace mallard::tool
