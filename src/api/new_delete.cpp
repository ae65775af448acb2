// Every C++ operator new/delete form, exported so that LD_PRELOAD covers C++
// programs too. Throwing forms follow the standard: call the new-handler and
// retry while one is installed, else throw std::bad_alloc.
#include <cstddef>
#include <new>

#include "core/alloc.hpp"
#include "mallard/mallard.h"

#if MALLARD_OVERRIDE

#define MALLARD_NEW_API __attribute__((visibility("default")))

using mallard::free_fast;

namespace {

[[gnu::noinline]] void* new_failed(size_t size, size_t alignment, bool nothrow) {
  for (;;) {
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) {
      if (nothrow) return nullptr;
      throw std::bad_alloc();
    }
    if (nothrow) {
      try {
        handler();
      } catch (...) {
        return nullptr;
      }
    } else {
      handler();
    }
    void* p = alignment == 0 ? mallard_malloc(size) : mallard_aligned_alloc(alignment, size);
    if (p != nullptr) return p;
  }
}

inline void* new_impl(size_t size) {
  void* p = mallard_malloc(size);
  return p != nullptr ? p : new_failed(size, 0, false);
}

inline void* new_nothrow(size_t size) noexcept {
  void* p = mallard_malloc(size);
  if (p != nullptr) return p;
  try {
    return new_failed(size, 0, true);
  } catch (...) {
    return nullptr;
  }
}

inline void* new_aligned(size_t size, std::align_val_t al) {
  void* p = mallard_aligned_alloc(static_cast<size_t>(al), size);
  return p != nullptr ? p : new_failed(size, static_cast<size_t>(al), false);
}

inline void* new_aligned_nothrow(size_t size, std::align_val_t al) noexcept {
  void* p = mallard_aligned_alloc(static_cast<size_t>(al), size);
  if (p != nullptr) return p;
  try {
    return new_failed(size, static_cast<size_t>(al), true);
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

MALLARD_NEW_API void* operator new(size_t n) { return new_impl(n); }
MALLARD_NEW_API void* operator new[](size_t n) { return new_impl(n); }
MALLARD_NEW_API void* operator new(size_t n, const std::nothrow_t&) noexcept { return new_nothrow(n); }
MALLARD_NEW_API void* operator new[](size_t n, const std::nothrow_t&) noexcept { return new_nothrow(n); }
MALLARD_NEW_API void* operator new(size_t n, std::align_val_t al) { return new_aligned(n, al); }
MALLARD_NEW_API void* operator new[](size_t n, std::align_val_t al) { return new_aligned(n, al); }
MALLARD_NEW_API void* operator new(size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  return new_aligned_nothrow(n, al);
}
MALLARD_NEW_API void* operator new[](size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  return new_aligned_nothrow(n, al);
}

MALLARD_NEW_API void operator delete(void* p) noexcept { free_fast(p, "operator delete"); }
MALLARD_NEW_API void operator delete[](void* p) noexcept { free_fast(p, "operator delete[]"); }
MALLARD_NEW_API void operator delete(void* p, const std::nothrow_t&) noexcept { free_fast(p, "operator delete"); }
MALLARD_NEW_API void operator delete[](void* p, const std::nothrow_t&) noexcept { free_fast(p, "operator delete[]"); }
MALLARD_NEW_API void operator delete(void* p, size_t) noexcept { free_fast(p, "operator delete"); }
MALLARD_NEW_API void operator delete[](void* p, size_t) noexcept { free_fast(p, "operator delete[]"); }
MALLARD_NEW_API void operator delete(void* p, std::align_val_t) noexcept { free_fast(p, "operator delete"); }
MALLARD_NEW_API void operator delete[](void* p, std::align_val_t) noexcept { free_fast(p, "operator delete[]"); }
MALLARD_NEW_API void operator delete(void* p, size_t, std::align_val_t) noexcept { free_fast(p, "operator delete"); }
MALLARD_NEW_API void operator delete[](void* p, size_t, std::align_val_t) noexcept { free_fast(p, "operator delete[]"); }
MALLARD_NEW_API void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  free_fast(p, "operator delete");
}
MALLARD_NEW_API void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  free_fast(p, "operator delete[]");
}

#endif  // MALLARD_OVERRIDE
