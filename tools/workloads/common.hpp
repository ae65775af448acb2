// Small pieces every workload uses: a fast deterministic random generator, a
// stopwatch, page touching, and an optimization barrier so the compiler cannot
// delete an allocation whose result is never read.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace mallard::tool {

using SteadyClock = std::chrono::steady_clock;

inline double seconds_between(SteadyClock::time_point start, SteadyClock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

inline std::uint64_t nanoseconds_between(SteadyClock::time_point start, SteadyClock::time_point end) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
}

// xorshift64*: cheap enough not to show up next to malloc, and seeded per
// thread so every allocator sees the same sequence of requests.
class FastRandom {
 public:
  explicit FastRandom(std::uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  std::uint64_t next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545F4914F6CDD1Dull;
  }
  // Uniform in [0, bound).
  std::uint64_t below(std::uint64_t bound) { return bound == 0 ? 0 : next() % bound; }
  // Uniform in [low, high].
  std::uint64_t between(std::uint64_t low, std::uint64_t high) { return low + below(high - low + 1); }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  std::uint64_t state_;
};

// Tells the compiler the pointer escapes, so malloc/free pairs stay in the binary.
inline void keep_alive(void* pointer) { asm volatile("" : : "g"(pointer) : "memory"); }

// Writes one byte in every page and the last byte: makes the kernel back the
// block with memory, which is where allocators that return memory eagerly pay.
inline void touch_pages(void* block, std::size_t bytes) {
  auto* bytes_of = static_cast<volatile unsigned char*>(block);
  for (std::size_t offset = 0; offset < bytes; offset += 4096) bytes_of[offset] = static_cast<unsigned char>(offset);
  if (bytes > 0) bytes_of[bytes - 1] = 1;
}

}  // namespace mallard::tool
