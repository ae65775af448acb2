// xmalloc outside the harness, watching its queue: one producer allocates
// batches of 256 blocks of 8-520 bytes (writing the first and last byte) and
// queues them (at most CAP batches); three consumers free them. Prints the
// blocks per second, the mean queue length at a push, how often the
// producer found the queue full and a consumer found it empty, and the
// process's peak RSS (VmHWM). With OBJECTS=256 it shows the process's base.
// Not part of the build:
//   g++ -O2 -std=c++20 -pthread bench/xmalloc_queue.cpp -o /tmp/xmalloc_queue
//   LD_PRELOAD=<allocator> /tmp/xmalloc_queue [OBJECTS [CAP]]
// (docs/target-gaps.md, xmalloc).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace {

struct Batch {
  size_t count;
  void* blocks[1];
};

std::mutex mutex;
std::condition_variable not_full, not_empty;
std::deque<Batch*> queue;
bool closed = false;
size_t capacity = 64;
uint64_t fill_sum = 0, pushes = 0, full_waits = 0, empty_waits = 0;

void consume() {
  for (;;) {
    Batch* batch;
    {
      std::unique_lock lock(mutex);
      if (queue.empty() && !closed) empty_waits++;
      not_empty.wait(lock, [] { return !queue.empty() || closed; });
      if (queue.empty()) return;
      batch = queue.front();
      queue.pop_front();
      not_full.notify_one();
    }
    for (size_t i = 0; i < batch->count; i++) free(batch->blocks[i]);
    free(batch);
  }
}

long peak_rss_kib() {
  FILE* status = fopen("/proc/self/status", "r");
  char line[256];
  long kib = 0;
  while (status != nullptr && fgets(line, sizeof line, status) != nullptr) {
    if (sscanf(line, "VmHWM: %ld", &kib) == 1) break;
  }
  if (status != nullptr) fclose(status);
  return kib;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t objects = argc > 1 ? strtoull(argv[1], nullptr, 10) : 20000000;
  if (argc > 2) capacity = strtoull(argv[2], nullptr, 10);
  std::vector<std::thread> consumers;
  for (int c = 0; c < 3; c++) consumers.emplace_back(consume);
  uint64_t x = 3;
  auto next_random = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  auto start = std::chrono::steady_clock::now();
  for (uint64_t produced = 0; produced < objects; produced += 256) {
    auto* batch = static_cast<Batch*>(malloc(sizeof(Batch) + 255 * sizeof(void*)));
    batch->count = 256;
    for (int i = 0; i < 256; i++) {
      size_t n = 8 + next_random() % 505;
      auto* block = static_cast<unsigned char*>(malloc(n));
      block[0] = block[n - 1] = 1;
      batch->blocks[i] = block;
    }
    std::unique_lock lock(mutex);
    if (queue.size() >= capacity) full_waits++;
    not_full.wait(lock, [] { return queue.size() < capacity; });
    fill_sum += queue.size();
    pushes++;
    queue.push_back(batch);
    not_empty.notify_one();
  }
  {
    std::lock_guard lock(mutex);
    closed = true;
    not_empty.notify_all();
  }
  for (auto& consumer : consumers) consumer.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fprintf(stderr, "%.1fM blocks/s, mean queue %.1f, producer waits %lu, consumer waits %lu, peak %ld KiB\n",
          static_cast<double>(objects) / seconds / 1e6, static_cast<double>(fill_sum) / static_cast<double>(pushes),
          static_cast<unsigned long>(full_waits), static_cast<unsigned long>(empty_waits), peak_rss_kib());
  return 0;
}
