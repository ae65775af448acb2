// libmallard-glibc-shim.so: a preload that makes a program linked against
// another allocator (Debian's redis-server links jemalloc) use glibc's
// malloc. Preloading nothing would leave jemalloc in charge, so the glibc row
// of the redis comparison preloads this instead: every entry point forwards
// to glibc's own implementation (__libc_malloc and friends, which glibc
// exports for exactly this kind of wrapper).
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include <new>

extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void* __libc_valloc(size_t);
void* __libc_pvalloc(size_t);

#define SHIM_EXPORT __attribute__((visibility("default")))

SHIM_EXPORT void* malloc(size_t size) { return __libc_malloc(size); }
SHIM_EXPORT void free(void* block) { __libc_free(block); }
SHIM_EXPORT void* calloc(size_t count, size_t size) { return __libc_calloc(count, size); }
SHIM_EXPORT void* realloc(void* block, size_t size) { return __libc_realloc(block, size); }
SHIM_EXPORT void* memalign(size_t alignment, size_t size) { return __libc_memalign(alignment, size); }
SHIM_EXPORT void* valloc(size_t size) { return __libc_valloc(size); }
SHIM_EXPORT void* pvalloc(size_t size) { return __libc_pvalloc(size); }

SHIM_EXPORT void* aligned_alloc(size_t alignment, size_t size) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    errno = EINVAL;
    return nullptr;
  }
  return __libc_memalign(alignment, size);
}

SHIM_EXPORT int posix_memalign(void** result, size_t alignment, size_t size) {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* block = __libc_memalign(alignment, size);
  if (block == nullptr) return ENOMEM;
  *result = block;
  return 0;
}

SHIM_EXPORT void* reallocarray(void* block, size_t count, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return __libc_realloc(block, bytes);
}

// glibc has no __libc_ alias for this one: look up libc's own definition.
SHIM_EXPORT size_t malloc_usable_size(void* block) {
  using UsableSize = size_t (*)(void*);
  static UsableSize glibc_usable_size = [] {
    void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    return libc ? reinterpret_cast<UsableSize>(dlsym(libc, "malloc_usable_size")) : nullptr;
  }();
  return glibc_usable_size ? glibc_usable_size(block) : 0;
}
}

// C++ allocation goes to glibc too; otherwise a linked jemalloc's operator
// new would still serve it.
namespace {
void* allocate_or_throw(size_t size) {
  void* block = __libc_malloc(size == 0 ? 1 : size);
  if (block == nullptr) throw std::bad_alloc();
  return block;
}
void* allocate_aligned_or_throw(size_t size, std::align_val_t alignment) {
  void* block = __libc_memalign(static_cast<size_t>(alignment), size == 0 ? 1 : size);
  if (block == nullptr) throw std::bad_alloc();
  return block;
}
}  // namespace

SHIM_EXPORT void* operator new(size_t size) { return allocate_or_throw(size); }
SHIM_EXPORT void* operator new[](size_t size) { return allocate_or_throw(size); }
SHIM_EXPORT void* operator new(size_t size, const std::nothrow_t&) noexcept { return __libc_malloc(size == 0 ? 1 : size); }
SHIM_EXPORT void* operator new[](size_t size, const std::nothrow_t&) noexcept { return __libc_malloc(size == 0 ? 1 : size); }
SHIM_EXPORT void* operator new(size_t size, std::align_val_t alignment) { return allocate_aligned_or_throw(size, alignment); }
SHIM_EXPORT void* operator new[](size_t size, std::align_val_t alignment) { return allocate_aligned_or_throw(size, alignment); }
SHIM_EXPORT void operator delete(void* block) noexcept { __libc_free(block); }
SHIM_EXPORT void operator delete[](void* block) noexcept { __libc_free(block); }
SHIM_EXPORT void operator delete(void* block, size_t) noexcept { __libc_free(block); }
SHIM_EXPORT void operator delete[](void* block, size_t) noexcept { __libc_free(block); }
SHIM_EXPORT void operator delete(void* block, std::align_val_t) noexcept { __libc_free(block); }
SHIM_EXPORT void operator delete[](void* block, std::align_val_t) noexcept { __libc_free(block); }
SHIM_EXPORT void operator delete(void* block, size_t, std::align_val_t) noexcept { __libc_free(block); }
SHIM_EXPORT void operator delete[](void* block, size_t, std::align_val_t) noexcept { __libc_free(block); }
