// The two Hoard false-sharing tests share their inner loop: allocate a small
// object, write each of its bytes many times, free it.
#pragma once

#include <cstdint>
#include <cstdlib>

#include "workloads/common.hpp"

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

}  // namespace mallard::tool
