// The exported C API: mallard_* names always, and the standard names (malloc,
// free, posix_memalign, ...) as aliases when built with MALLARD_OVERRIDE, so
// that LD_PRELOAD or linking replaces the system allocator.
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.hpp"
#include "core/extent.hpp"
#include "core/extent_layout.hpp"
#include "core/heap.hpp"
#include "core/init.hpp"
#include "core/large.hpp"
#include "core/options.hpp"
#include "core/orphan.hpp"
#include "core/purge.hpp"
#include "core/segment.hpp"
#include "core/stats.hpp"
#include "mallard/mallard.h"
#include "os/os.hpp"

#define MALLARD_API extern "C" __attribute__((visibility("default")))

using namespace mallard;

namespace {

bool mul_overflows(size_t a, size_t b, size_t* out) { return __builtin_mul_overflow(a, b, out); }

bool is_power_of_two(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

void* fail_nomem() {
  errno = ENOMEM;
  return nullptr;
}

// malloc_generic rejects impossible sizes, so the fast path needs no check.
MALLARD_INLINE void* malloc_checked(size_t size) { return malloc_fast(size); }

// Every aligned allocation's way in, not inlined: inlined into
// aligned_alloc and the four aligned operator new forms, it pushed the hot
// text past its page. Not in the rare text either: C++ programs make
// aligned allocations from their runtime's start-up on (the harness's
// children did), and their first call mapped 16 KiB of the rare text.
// (aligned_slow: what follows the fast take, for posix_memalign, which
// tries that take itself before it saves errno.)
MALLARD_INLINE void* aligned_slow(size_t alignment, size_t size) {
  if (MALLARD_UNLIKELY(size > kMaxRequest || alignment > kMaxAlignment)) return fail_nomem();
  return malloc_aligned(size, alignment);
}
MALLARD_NOINLINE void* aligned_checked(size_t alignment, size_t size) {
  if (void* p = aligned_take_fast(size, alignment)) return p;
  return aligned_slow(alignment, size);
}

// Large blocks from fresh or purged mappings are already zero; everything
// else is cleared over the requested size.
void* calloc_impl(size_t count, size_t size) {
  size_t total;
  if (mul_overflows(count, size, &total) || total > kMaxRequest) return fail_nomem();
  if (total > kMediumSizeMax) return large_malloc(total, 0, true);
  return calloc_fast(total);
}

// A small or medium block that must move to grow by less than a quarter
// grows by a quarter (tcmalloc does the same): a buffer growing a little at
// a time, like CPython's lists growing by an eighth, was copied at every
// class step (python3's allocator instructions 4.56M -> 2.83M, DESIGN.md
// "realloc grows small blocks by a quarter"). Bigger steps get what they ask.
MALLARD_INLINE size_t realloc_target(size_t usable, size_t size) {
  if (size <= usable || usable > kMediumSizeMax) return size;
  size_t grown = usable + usable / 4;
  if (grown > kMediumSizeMax) grown = kMediumSizeMax;
  return size < grown ? grown : size;
}

// The usable size of p for realloc's common call, inline in realloc: that of
// a class block of a live page, found as free finds its page, or of an
// extent block, whose segment's descriptor found the same way says so
// (kPageExtent), from its own boundary tag (extent_layout.hpp); 0 for
// anything else (nullptr, a large block, a freed extent block, a pointer
// never handed out), which realloc_impl tells apart. regrow's buffers
// reallocate in place most of the time, most of them in extents, and there
// this took 34 instructions a call out of line (usable_size_slow, then
// extent_usable_size) behind realloc_impl's saving of six registers
// (DESIGN.md "realloc keeps a block inline").
MALLARD_INLINE size_t realloc_kept_block_size(const void* p) {
  const Page* page = pointer_page(p);
  if (MALLARD_LIKELY(is_class_page(page))) return page->block_size;
  return (page->flags & kPageExtent) != 0 ? extent_block_size(extent_segment_at(p), p) : 0;
}

// realloc keeps a block that still holds `size` and would not waste more
// than half of it (size 0 frees, and is never kept: size - 1 wraps).
MALLARD_INLINE bool realloc_keeps(size_t size, size_t usable) { return size - 1 < usable && size >= usable / 2; }

// realloc, with p's usable size when the caller found it (0: not found).
MALLARD_RARE void* realloc_impl(void* p, size_t size, size_t usable) {
  if (p == nullptr) {
    // A block realloc makes is a buffer that will likely grow: an extent
    // from the start, so that the class it would have taken does not keep
    // it when it grows (extent.hpp).
    if (size > kExtentMinSize && size <= kMediumSizeMax) return extent_malloc(size, 0);
    return malloc_checked(size);
  }
  if (size == 0) {  // glibc: frees and returns NULL
    free_fast(p, "realloc");
    return nullptr;
  }
  if (usable == 0) usable = usable_size(p, "realloc");  // a large block; reports a bad pointer
  if (realloc_keeps(size, usable)) return p;
  // A large block grows or shrinks inside its mapping when it can.
  if (usable > kMediumSizeMax && large_resize_in_place(p, size)) return p;
  if (size > usable && size > kMediumSizeMax) {
    // Growing to a large size: a cached mapping whose pages are still
    // resident takes the block's bytes (a copy costs less than faulting in
    // fresh pages, and cached memory is used rather than kept idle beside
    // new memory: a buffer regrown from 1 KiB to 8 MiB over and over faulted
    // in every page each time; DESIGN.md "Large blocks grow into warm cached
    // mappings").
    if (void* q = large_malloc_warm(size)) {
      memcpy(q, p, usable);
      free_fast(p, "realloc");
      return q;
    }
    // Else a large block's mapping grows (mremap) instead of its bytes being
    // copied: in place whatever its size, and from kRemapMinBytes on by
    // moving its pages when the address space after it is taken. A buffer
    // growing by a quarter at a time (CPython's string builder) was copied
    // about four times over (DESIGN.md "Large blocks grow by moving pages").
    if (usable > kMediumSizeMax) {
      if (void* q = large_grow(p, size, usable >= kRemapMinBytes)) return q;
    }
  }
  size_t copy = size < usable ? size : usable;
  size_t target = realloc_target(usable, size);
  void* q;
  if (size > usable && target > kExtentMinSize && target <= kMediumSizeMax) {
    // A block grown past kExtentMinSize: from the extents, where what it
    // leaves behind serves any size (extent.hpp), and where it may grow in
    // place.
    q = extent_realloc(p, size, target, copy);
    if (q == p) return p;
  } else {
    q = malloc_to_copy_into(target, copy);
  }
  if (q == nullptr) return nullptr;  // the old block is left intact
  memcpy(q, p, copy);
  free_fast(p, "realloc");
  return q;
}

}  // namespace

MALLARD_API const char* mallard_version(void) { return "0.1.0"; }

MALLARD_API MALLARD_PINNED_ENTRY(malloc) void* mallard_malloc(size_t size) { return malloc_checked(size); }
MALLARD_API MALLARD_PINNED_ENTRY(free) void mallard_free(void* p) { free_fast(p, "free"); }
MALLARD_API void* mallard_calloc(size_t count, size_t size) { return calloc_impl(count, size); }
// The common call, a block that still holds the size, inline; the rest in
// realloc_impl.
MALLARD_API void* mallard_realloc(void* p, size_t size) {
  size_t usable = realloc_kept_block_size(p);
  if (MALLARD_LIKELY(realloc_keeps(size, usable))) return p;
  return realloc_impl(p, size, usable);
}

MALLARD_API MALLARD_RARE void* mallard_reallocarray(void* p, size_t count, size_t size) {
  size_t total;
  if (mul_overflows(count, size, &total)) return fail_nomem();
  return realloc_impl(p, total, 0);
}

MALLARD_API MALLARD_RARE int mallard_posix_memalign(void** out, size_t alignment, size_t size) {
  if (alignment % sizeof(void*) != 0 || !is_power_of_two(alignment)) return EINVAL;
  if (void* p = aligned_take_fast(size, alignment)) {  // errno untouched
    *out = p;
    return 0;
  }
  int saved = errno;
  void* p = aligned_slow(alignment, size);
  errno = saved;  // posix_memalign reports through its result, not errno
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

// C17: alignment must be a supported power of two; glibc accepts any size.
MALLARD_API void* mallard_aligned_alloc(size_t alignment, size_t size) {
  if (!is_power_of_two(alignment)) {
    errno = EINVAL;
    return nullptr;
  }
  return aligned_checked(alignment, size);
}

// glibc's memalign rounds a non-power-of-two alignment up to the next one.
MALLARD_API MALLARD_RARE void* mallard_memalign(size_t alignment, size_t size) {
  if (alignment <= kWordSize) return malloc_checked(size);
  if (!is_power_of_two(alignment)) {
    if (alignment > kMaxAlignment) return fail_nomem();
    alignment = size_t{1} << (64 - __builtin_clzll(alignment));
  }
  return aligned_checked(alignment, size);
}

MALLARD_API MALLARD_RARE void* mallard_valloc(size_t size) { return aligned_checked(os::page_size(), size); }

MALLARD_API MALLARD_RARE void* mallard_pvalloc(size_t size) {
  size_t page = os::page_size();
  size_t rounded = os::round_to_page(size);
  if (rounded < size) return fail_nomem();
  return aligned_checked(page, rounded == 0 ? page : rounded);
}

// (nullptr, 0, is the slow path's: its chunk has no small pages.)
MALLARD_API size_t mallard_malloc_usable_size(const void* p) { return usable_size(p); }

MALLARD_API void mallard_free_sized(void* p, size_t) { free_fast(p, "free_sized"); }
// C23's free for aligned_alloc's blocks, which hardly any program calls yet:
// in the rare text, where its copy of the free path leaves room in the hot
// text's page for aligned_checked.
MALLARD_API MALLARD_RARE void mallard_free_aligned_sized(void* p, size_t, size_t) { free_fast(p, "free_aligned_sized"); }

MALLARD_API MALLARD_RARE int mallard_trim(size_t) {
  process_init();
  size_t released = 0;
  if (Heap* heap = heap_get(); heap != nullptr) released += heap_collect(heap, true);
  released += orphans_collect(true, true);
  released += large_cache_purge(0, true);
  released += extents_purge(true);
  released += segment_cache_flush();
  return released > 0 ? 1 : 0;
}

MALLARD_API MALLARD_RARE int mallard_stats_get(mallard_stats* out) {
  if (out == nullptr) return EINVAL;
  process_init();
  stats_collect(out);
  return 0;
}

MALLARD_API MALLARD_RARE void mallard_stats_print(FILE* out, const char* opts) {
  if (out == nullptr) out = stderr;
  fflush(out);
  stats_write_fd(fileno(out), opts);
}

MALLARD_API MALLARD_RARE const char* mallard_option_get(const char* name) {
  // Returned text lives in a per-thread buffer until the next call.
  static thread_local char buf[24];
  if (name == nullptr) return nullptr;
  process_init();
  return option_get_text(name, buf);
}

MALLARD_API MALLARD_RARE int mallard_option_set(const char* name, const char* value) {
  if (name == nullptr || value == nullptr) return EINVAL;
  process_init();
  return option_set_text(name, strlen(name), value, strlen(value), "mallard_option_set") ? 0 : EINVAL;
}

#if MALLARD_OVERRIDE
// The standard names are aliases of the mallard_* functions: one definition,
// no extra call.
extern "C" {
void* malloc(size_t) noexcept MALLARD_ALIAS(mallard_malloc);
void free(void*) noexcept MALLARD_ALIAS(mallard_free);
void* calloc(size_t, size_t) noexcept MALLARD_ALIAS(mallard_calloc);
void* realloc(void*, size_t) noexcept MALLARD_ALIAS(mallard_realloc);
void* reallocarray(void*, size_t, size_t) noexcept MALLARD_ALIAS(mallard_reallocarray);
int posix_memalign(void**, size_t, size_t) noexcept MALLARD_ALIAS(mallard_posix_memalign);
void* aligned_alloc(size_t, size_t) noexcept MALLARD_ALIAS(mallard_aligned_alloc);
void* memalign(size_t, size_t) noexcept MALLARD_ALIAS(mallard_memalign);
void* valloc(size_t) noexcept MALLARD_ALIAS(mallard_valloc);
void* pvalloc(size_t) noexcept MALLARD_ALIAS(mallard_pvalloc);
size_t malloc_usable_size(void*) noexcept MALLARD_ALIAS(mallard_malloc_usable_size);
void free_sized(void*, size_t) noexcept MALLARD_ALIAS(mallard_free_sized);
void free_aligned_sized(void*, size_t, size_t) noexcept MALLARD_ALIAS(mallard_free_aligned_sized);
int malloc_trim(size_t) noexcept MALLARD_ALIAS(mallard_trim);
// glibc-internal entry points some programs and libraries call directly.
void* __libc_malloc(size_t) MALLARD_ALIAS(mallard_malloc);
void __libc_free(void*) MALLARD_ALIAS(mallard_free);
void* __libc_calloc(size_t, size_t) MALLARD_ALIAS(mallard_calloc);
void* __libc_realloc(void*, size_t) MALLARD_ALIAS(mallard_realloc);
void* __libc_memalign(size_t, size_t) MALLARD_ALIAS(mallard_memalign);
void* __libc_valloc(size_t) MALLARD_ALIAS(mallard_valloc);
void* __libc_pvalloc(size_t) MALLARD_ALIAS(mallard_pvalloc);
int __posix_memalign(void**, size_t, size_t) MALLARD_ALIAS(mallard_posix_memalign);
}

// mallinfo2, malloc_stats and malloc_info report mallard's own statistics.
MALLARD_API MALLARD_RARE struct mallinfo2 mallinfo2(void) noexcept {
  mallard_stats st;
  mallard_stats_get(&st);
  struct mallinfo2 mi;
  memset(&mi, 0, sizeof mi);
  mi.arena = st.mapped;                  // address space held
  mi.ordblks = st.segments;
  mi.hblkhd = st.retained;               // mapped but not resident
  mi.uordblks = st.allocated;            // bytes in live blocks
  mi.fordblks = st.active - st.allocated;  // free bytes inside active pages
  mi.keepcost = st.resident > st.active ? st.resident - st.active : 0;
  return mi;
}

MALLARD_API MALLARD_RARE void malloc_stats(void) noexcept { stats_write_fd(2, ""); }

MALLARD_API MALLARD_RARE int malloc_info(int options, FILE* out) noexcept {
  if (options != 0 || out == nullptr) {
    errno = EINVAL;
    return -1;
  }
  mallard_stats st;
  mallard_stats_get(&st);
  fprintf(out,
          "<malloc version=\"mallard-%s\">\n"
          "<total type=\"allocated\" size=\"%zu\"/>\n<total type=\"active\" size=\"%zu\"/>\n"
          "<total type=\"resident\" size=\"%zu\"/>\n<total type=\"mapped\" size=\"%zu\"/>\n"
          "<total type=\"metadata\" size=\"%zu\"/>\n<total type=\"retained\" size=\"%zu\"/>\n"
          "<system type=\"current\" size=\"%zu\"/>\n</malloc>\n",
          mallard_version(), st.allocated, st.active, st.resident, st.mapped, st.metadata,
          st.retained, st.mapped);
  return 0;
}
#endif  // MALLARD_OVERRIDE
