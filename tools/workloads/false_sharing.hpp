// The two Hoard false-sharing tests share their inner loop: allocate a small
// object, write each of its bytes many times, free it.
#pragma once

#include <barrier>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "workloads/common.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

// The object is written through a volatile pointer so the writes cannot be elided.
inline void write_objects(std::uint64_t iterations, std::uint64_t object_size, std::uint64_t repetitions) {
  for (std::uint64_t i = 0; i < iterations; ++i) {
    auto* object = static_cast<volatile unsigned char*>(std::malloc(object_size));
    if (object == nullptr) std::abort();
    for (std::uint64_t r = 0; r < repetitions; ++r) {
      for (std::uint64_t b = 0; b < object_size; ++b) object[b] = static_cast<unsigned char>(object[b] + 1);
    }
    std::free(const_cast<unsigned char*>(object));
  }
}

// Both tests take the same parameters.
inline std::vector<ParamSpec> false_sharing_params() {
  return {
      {"threads", "4", "4", "threads"},
      {"iterations", "80k", "20k", "objects per thread"},
      {"object_size", "8", "8", "object bytes"},
      {"repetitions", "5000", "5000", "writes of each byte per object"},
  };
}

// Both tests: `threads` workers each run write_objects. With `hand_over`
// (cache-scratch, passive false sharing), the main thread first allocates one
// object per worker, side by side, and each worker starts by freeing its
// object, so an allocator that recycles it locally hands neighbouring cache
// lines to different threads.
inline void run_false_sharing(const Params& params, const char* name, bool hand_over, MetricSink& sink) {
  auto threads = params.count("threads");
  auto iterations = params.count("iterations");
  auto object_size = params.size("object_size");
  auto repetitions = params.count("repetitions");
  if (threads == 0 || object_size == 0) {
    throw std::invalid_argument(std::string(name) + ": threads and object_size must be positive");
  }
  std::vector<void*> handed_out(hand_over ? threads : 0);
  for (auto& object : handed_out) object = std::malloc(object_size);
  std::barrier start_line(static_cast<std::ptrdiff_t>(threads + 1));
  std::vector<std::jthread> workers;
  for (std::uint64_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      start_line.arrive_and_wait();
      if (hand_over) std::free(handed_out[t]);
      write_objects(iterations, object_size, repetitions);
    });
  }
  // Clock first, then release the workers (see sizes.cpp).
  auto start = SteadyClock::now();
  start_line.arrive_and_wait();
  workers.clear();
  double seconds = seconds_between(start, SteadyClock::now());
  sink.throughput(static_cast<double>(threads * iterations), seconds);
}

}  // namespace mallard::tool
