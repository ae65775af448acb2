// Every C++ operator new/delete form, exported so that LD_PRELOAD covers C++
// programs too. Throwing forms follow the standard: call the new-handler and
// retry while one is installed, else throw std::bad_alloc.
//
// The shared library links no C++ runtime (MALLARD_CXX_RUNTIME_LOOKUP): a C
// program that preloads it would otherwise load libstdc++, libm and libgcc_s
// (1.3 MB more RSS than glibc's malloc, most of it their text; DESIGN.md). A
// program that calls operator new has a C++ runtime (libstdc++ or libc++)
// loaded, and the failure path finds what it needs there by name when it
// runs: the new-handler, the Itanium C++ ABI functions that throw
// std::bad_alloc, and the runtime's own nothrow operator new, whose try/catch
// turns a handler's exception into nullptr (the path itself has nothing to
// clean up, so it needs no personality routine). The static library lands in
// programs that link their C++ runtime anyway, perhaps statically where
// looking it up by name would fail: it uses the language directly.
#include <dlfcn.h>

#include <cstddef>
#include <new>

#include "core/alloc.hpp"
#include "core/report.hpp"
#include "mallard/mallard.h"
#include "os/os.hpp"

#if MALLARD_OVERRIDE

#define MALLARD_NEW_API __attribute__((visibility("default")))

using mallard::free_fast;

namespace {

#if MALLARD_CXX_RUNTIME_LOOKUP

template <typename T>
T runtime_symbol(const char* name, void* scope = RTLD_DEFAULT) {
  return reinterpret_cast<T>(dlsym(scope, name));
}

std::new_handler installed_new_handler() {
  auto get = runtime_symbol<std::new_handler (*)()>("_ZSt15get_new_handlerv");
  return get != nullptr ? get() : nullptr;
}

[[noreturn]] MALLARD_RARE void no_cxx_runtime(const char* missing) {
  mallard::Message m;
  m.add("mallard: error: operator new failed and the program has no C++ runtime to throw std::bad_alloc (")
      .add(missing)
      .add(" not found)\n")
      .write();
  mallard::os::abort_process();
}

// throw std::bad_alloc() as the compiler would emit it: the exception object
// is one vtable pointer (at the vtable's address point, two words in).
[[noreturn]] MALLARD_RARE void throw_bad_alloc() {
  auto allocate = runtime_symbol<void* (*)(size_t)>("__cxa_allocate_exception");
  auto cxa_throw = runtime_symbol<void (*)(void*, void*, void (*)(void*))>("__cxa_throw");
  auto* type_info = runtime_symbol<void*>("_ZTISt9bad_alloc");
  auto* vtable = runtime_symbol<void**>("_ZTVSt9bad_alloc");
  auto destructor = runtime_symbol<void (*)(void*)>("_ZNSt9bad_allocD1Ev");
  if (allocate == nullptr || cxa_throw == nullptr) no_cxx_runtime("__cxa_throw");
  if (type_info == nullptr || vtable == nullptr || destructor == nullptr) no_cxx_runtime("std::bad_alloc");
  void* exception = allocate(sizeof(void*));
  *static_cast<void**>(exception) = vtable + 2;
  cxa_throw(exception, type_info, destructor);
  __builtin_unreachable();
}

#else

std::new_handler installed_new_handler() { return std::get_new_handler(); }

[[noreturn]] MALLARD_RARE void throw_bad_alloc() { throw std::bad_alloc(); }

#endif

[[gnu::noinline]] MALLARD_RARE void* new_failed(size_t size, size_t alignment) {
  for (;;) {
    std::new_handler handler = installed_new_handler();
    if (handler == nullptr) throw_bad_alloc();
    handler();
    void* p = alignment == 0 ? mallard_malloc(size) : mallard_aligned_alloc(alignment, size);
    if (p != nullptr) return p;
  }
}

#if MALLARD_CXX_RUNTIME_LOOKUP

// A nothrow form that failed: nullptr, unless a new-handler is installed; the
// handler may throw, so the C++ runtime's own nothrow form (`name`, the next
// definition after this library's) runs it: it calls back into the throwing
// form here inside its try block.
[[gnu::noinline]] MALLARD_RARE void* new_nothrow_failed(const char* name, size_t size, std::align_val_t alignment) {
  if (installed_new_handler() == nullptr) return nullptr;
  if (alignment == std::align_val_t{0}) {
    auto runtime_new = runtime_symbol<void* (*)(size_t, const std::nothrow_t&) noexcept>(name, RTLD_NEXT);
    return runtime_new != nullptr ? runtime_new(size, std::nothrow_t{}) : nullptr;
  }
  auto runtime_new =
      runtime_symbol<void* (*)(size_t, std::align_val_t, const std::nothrow_t&) noexcept>(name, RTLD_NEXT);
  return runtime_new != nullptr ? runtime_new(size, alignment, std::nothrow_t{}) : nullptr;
}

#else

// A nothrow form that failed: nullptr, unless a new-handler is installed,
// which runs as for the throwing form; whatever it throws becomes nullptr.
[[gnu::noinline]] MALLARD_RARE void* new_nothrow_failed(const char*, size_t size, std::align_val_t alignment) {
  if (installed_new_handler() == nullptr) return nullptr;
  try {
    return new_failed(size, static_cast<size_t>(alignment));
  } catch (...) {
    return nullptr;
  }
}

#endif

inline void* new_impl(size_t size) {
  void* p = mallard_malloc(size);
  return p != nullptr ? p : new_failed(size, 0);
}

inline void* new_nothrow(const char* runtime_name, size_t size) noexcept {
  void* p = mallard_malloc(size);
  return p != nullptr ? p : new_nothrow_failed(runtime_name, size, std::align_val_t{0});
}

inline void* new_aligned(size_t size, std::align_val_t al) {
  void* p = mallard_aligned_alloc(static_cast<size_t>(al), size);
  return p != nullptr ? p : new_failed(size, static_cast<size_t>(al));
}

inline void* new_aligned_nothrow(const char* runtime_name, size_t size, std::align_val_t al) noexcept {
  void* p = mallard_aligned_alloc(static_cast<size_t>(al), size);
  return p != nullptr ? p : new_nothrow_failed(runtime_name, size, al);
}

}  // namespace

MALLARD_NEW_API MALLARD_FAST_ENTRY void* operator new(size_t n) { return new_impl(n); }
MALLARD_NEW_API void* operator new[](size_t n) { return new_impl(n); }
MALLARD_NEW_API void* operator new(size_t n, const std::nothrow_t&) noexcept {
  return new_nothrow("_ZnwmRKSt9nothrow_t", n);
}
MALLARD_NEW_API void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  return new_nothrow("_ZnamRKSt9nothrow_t", n);
}
MALLARD_NEW_API void* operator new(size_t n, std::align_val_t al) { return new_aligned(n, al); }
MALLARD_NEW_API void* operator new[](size_t n, std::align_val_t al) { return new_aligned(n, al); }
MALLARD_NEW_API void* operator new(size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  return new_aligned_nothrow("_ZnwmSt11align_val_tRKSt9nothrow_t", n, al);
}
MALLARD_NEW_API void* operator new[](size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  return new_aligned_nothrow("_ZnamSt11align_val_tRKSt9nothrow_t", n, al);
}

MALLARD_NEW_API MALLARD_FAST_ENTRY void operator delete(void* p) noexcept { free_fast(p, "operator delete"); }
MALLARD_NEW_API void operator delete[](void* p) noexcept { free_fast(p, "operator delete[]"); }

// The other forms are the same function under other names: what a size, an
// alignment or nothrow_t tells is not needed to free a block (free() finds
// its page from the address), and the arguments after the pointer go in
// registers the callee ignores. One copy of free's inlined fast path for
// each of the two names an error report uses, instead of one for each of the
// twelve forms (3 KiB of text, a page of every process's RSS; DESIGN.md
// "One operator delete a name").
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wattribute-alias"
void operator delete(void*, const std::nothrow_t&) noexcept MALLARD_ALIAS(_ZdlPv);
void operator delete[](void*, const std::nothrow_t&) noexcept MALLARD_ALIAS(_ZdaPv);
void operator delete(void*, size_t) noexcept MALLARD_ALIAS(_ZdlPv);
void operator delete[](void*, size_t) noexcept MALLARD_ALIAS(_ZdaPv);
void operator delete(void*, std::align_val_t) noexcept MALLARD_ALIAS(_ZdlPv);
void operator delete[](void*, std::align_val_t) noexcept MALLARD_ALIAS(_ZdaPv);
void operator delete(void*, size_t, std::align_val_t) noexcept MALLARD_ALIAS(_ZdlPv);
void operator delete[](void*, size_t, std::align_val_t) noexcept MALLARD_ALIAS(_ZdaPv);
void operator delete(void*, std::align_val_t, const std::nothrow_t&) noexcept MALLARD_ALIAS(_ZdlPv);
void operator delete[](void*, std::align_val_t, const std::nothrow_t&) noexcept MALLARD_ALIAS(_ZdaPv);
#pragma GCC diagnostic pop

#endif  // MALLARD_OVERRIDE
