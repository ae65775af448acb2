// regrow: buffers built by appending, as string builders, serializers, log
// lines and growable arrays are. Each thread keeps `buffers` buffers under
// construction; each step appends a random number of bytes to a random one
// (realloc, then write the new bytes) and a buffer that reaches its final
// length, drawn log-uniformly between min_final and max_final, is checked and
// freed, and a new one begun in its slot (the first ones start part-built).
// The other buffers' blocks sit between a growing block and its neighbours,
// as they do in a real program, so an allocator cannot always extend a block
// where it lies.
//
// Cases: `exact` reallocs to the exact new length on every append (naive C,
// and what realloc's in-place growth exists for); `doubling` keeps a capacity
// and reallocs to twice it when an append does not fit (std::vector, Redis's
// sds strings below 1 MiB), so most appends do not call the allocator at all.
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "util/text.hpp"
#include "workloads/common.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

namespace {

struct RegrowConfig {
  bool doubling;
  std::uint64_t buffers;
  std::uint64_t appends;  // per thread
  std::uint64_t max_append;
  double log_min_final, log_max_final;
};

struct Buffer {
  unsigned char* data = nullptr;
  std::uint64_t length = 0;
  std::uint64_t capacity = 0;
  std::uint64_t final_length = 0;
  unsigned char tag = 0;  // every byte of the buffer holds it
};

struct ThreadTally {
  std::uint64_t reallocs = 0;
  std::uint64_t moves = 0;  // reallocs that returned another address
};

// A realloc that lost or mixed up the bytes shows as a wrong first, middle or
// last byte; the workload aborts rather than report a time for it.
void check_and_free(const Buffer& buffer) {
  if (buffer.length > 0) {
    const unsigned char* bytes = buffer.data;
    if (bytes[0] != buffer.tag || bytes[buffer.length / 2] != buffer.tag || bytes[buffer.length - 1] != buffer.tag) std::abort();
  }
  std::free(buffer.data);
}

void begin(Buffer& buffer, const RegrowConfig& config, FastRandom& random) {
  double log_length = config.log_min_final + random.unit() * (config.log_max_final - config.log_min_final);
  buffer = Buffer{};
  buffer.final_length = static_cast<std::uint64_t>(std::exp(log_length));
  buffer.tag = static_cast<unsigned char>(random.next() | 1);
}

void append(Buffer& buffer, std::uint64_t bytes, const RegrowConfig& config, ThreadTally& tally) {
  if (bytes == 0) return;
  std::uint64_t length = buffer.length + bytes;
  if (length > buffer.capacity) {
    std::uint64_t capacity = config.doubling ? std::max(length, buffer.capacity * 2) : length;
    auto* data = static_cast<unsigned char*>(std::realloc(buffer.data, capacity));
    if (data == nullptr) std::abort();
    if (buffer.data != nullptr) {
      ++tally.reallocs;
      if (data != buffer.data) ++tally.moves;
    }
    buffer.data = data;
    buffer.capacity = capacity;
  }
  std::memset(buffer.data + buffer.length, buffer.tag, bytes);
  buffer.length = length;
}

void run_thread(const RegrowConfig& config, unsigned seed, ThreadTally& tally) {
  FastRandom random(seed);
  std::vector<Buffer> buffers(config.buffers);
  // The first buffers start part-built, at a random point of their growth, so
  // that the run measures buffers at every stage from the start rather than
  // all of them growing through the same sizes in step.
  for (auto& buffer : buffers) {
    begin(buffer, config, random);
    append(buffer, random.below(buffer.final_length), config, tally);
  }
  for (std::uint64_t i = 0; i < config.appends; ++i) {
    Buffer& buffer = buffers[random.below(buffers.size())];
    std::uint64_t bytes = std::min(random.between(1, config.max_append), buffer.final_length - buffer.length);
    append(buffer, bytes, config, tally);
    if (buffer.length >= buffer.final_length) {
      check_and_free(buffer);
      begin(buffer, config, random);
    }
  }
  for (const auto& buffer : buffers) check_and_free(buffer);
}

void run_regrow(const Params& params, const std::string& case_name, const RunContext&, MetricSink& sink) {
  if (case_name != "exact" && case_name != "doubling") throw std::invalid_argument("regrow: unknown case " + case_name);
  auto threads = static_cast<unsigned>(params.count("threads"));
  auto min_final = params.size("min_final"), max_final = params.size("max_final");
  RegrowConfig config{case_name == "doubling", params.count("buffers"), params.count("appends"), params.size("max_append"),
                      std::log(static_cast<double>(min_final)), std::log(static_cast<double>(max_final))};
  if (threads == 0 || config.buffers == 0 || config.max_append == 0 || min_final == 0 || min_final > max_final) {
    throw std::invalid_argument("regrow: threads, buffers and max_append must be positive and 0 < min_final <= max_final");
  }
  std::vector<ThreadTally> tallies(threads);
  std::barrier start_line(threads + 1);
  std::vector<std::jthread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      start_line.arrive_and_wait();
      run_thread(config, t + 1, tallies[t]);
    });
  }
  // Clock first, then release the workers (see sizes.cpp).
  auto start = SteadyClock::now();
  start_line.arrive_and_wait();
  for (auto& worker : workers) worker.join();
  double seconds = seconds_between(start, SteadyClock::now());
  ThreadTally total;
  for (const auto& tally : tallies) {
    total.reallocs += tally.reallocs;
    total.moves += tally.moves;
  }
  sink.throughput(static_cast<double>(config.appends * threads), seconds);
  sink.metric("reallocs", static_cast<double>(total.reallocs));
  sink.metric("moved_percent", total.reallocs == 0 ? 0.0 : 100.0 * static_cast<double>(total.moves) / static_cast<double>(total.reallocs));
}

}  // namespace

Workload make_regrow_workload() {
  Workload workload;
  workload.name = "regrow";
  workload.description =
      "string builders: threads append 1..256 B at a time to random ones of their 256 buffers (realloc + write) until "
      "each reaches its length (log-uniform 16 B..64 KiB), then check and free it; exact-size or doubling growth";
  workload.ops_unit = "appends";
  workload.params = {
      {"threads", "4", "4", "appending threads"},
      {"buffers", "256", "256", "buffers each thread keeps under construction"},
      {"appends", "4M", "400k", "appends per thread"},
      {"max_append", "256", "256", "largest append (bytes; uniform from 1)"},
      {"min_final", "16", "16", "shortest finished buffer"},
      {"max_final", "64k", "64k", "longest finished buffer (log-uniform in between)"},
      {"growth", "exact,doubling", "exact,doubling", "cases: exact (realloc on every append) and/or doubling"},
  };
  workload.cases = [](const Params& params) { return split(params.text("growth"), ','); };
  workload.metric_columns = {{"moved_percent", "moved %", "%.1f"}};
  workload.run = run_regrow;
  return workload;
}

}  // namespace mallard::tool
