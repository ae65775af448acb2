#include "core/stats.hpp"

#include <errno.h>

#include <cstring>

#include "core/extent.hpp"
#include "core/heap.hpp"
#include "core/options.hpp"
#include "core/report.hpp"
#include "core/segment.hpp"
#include "os/os.hpp"

namespace mallard {

GlobalStats g_stats;

namespace {

// A large segment's block, live or cached, with `dirty` bytes of it that may
// be resident.
MALLARD_RARE void record_large(LargeStats& large, const Segment* s, size_t dirty, bool cached) {
  if (cached) {
    large.cached_blocks++;
    large.cached_bytes += dirty;
    return;
  }
  large.blocks++;
  large.bytes += s->large_size;
  large.past_end += dirty > s->large_size ? dirty - s->large_size : 0;
}

}  // namespace

// Per-block figures are summed over the pages of every segment rather than
// counted on each malloc and free, so the fast paths carry no counters. Pages
// are read with relaxed loads while their owners run: the result is a
// consistent-enough snapshot, exact when the process is quiescent. A block
// freed by another thread counts as allocated until its owner drains it.
MALLARD_RARE void stats_collect(mallard_stats* out, PageStats* pages) {
  memset(out, 0, sizeof *out);
  if (pages != nullptr) memset(pages, 0, sizeof *pages);
  size_t resident_pages = 0;
  size_t retained_pages = 0;
  {
    LockGuard guard(g_segments_lock);
    for (Segment* s = g_segments; s != nullptr; s = s->next) {
      if (s->kind == SegmentKind::kExtent) {
        size_t allocated, resident;
        extent_segment_stats(s, &allocated, &resident);
        out->allocated += allocated;
        out->active += allocated;
        resident_pages += resident;
        retained_pages += s->mapped_size - resident;
        if (pages != nullptr) {
          pages->extents.bytes += allocated;
          pages->extents.resident += resident;
        }
        continue;
      }
      if (s->kind != SegmentKind::kLarge) resident_pages += segment_header_touched_bytes(s);
      for (uint32_t i = 0; i < s->page_count; ++i) {
        Page* page = segment_page(s, i);
        size_t area = s->kind == SegmentKind::kLarge
                          ? s->mapped_size - static_cast<size_t>(page->start - reinterpret_cast<uint8_t*>(s))
                          : page_area_size(s, i);
        if (i >= s->pages_initialized) {  // never handed out: untouched
          retained_pages += area;
          continue;
        }
        uint8_t flags = page->flags;
        if (flags & kPageLarge) {
          // A large block: in use or cached; what may be resident is tracked.
          size_t dirty = s->large_dirty < area ? s->large_dirty : area;
          if ((flags & kPageUnused) == 0) {
            out->allocated += s->large_size;
            out->active += s->large_size;
          }
          if (pages != nullptr) record_large(pages->large, s, dirty, (flags & kPageUnused) != 0);
          resident_pages += dirty;
          retained_pages += area - dirty;
        } else if ((flags & kPageUnused) == 0) {
          // Racy by design: a snapshot of another thread's counter.
          uint32_t used = __atomic_load_n(&page->used, __ATOMIC_RELAXED);
          out->allocated += size_t{used} * page->block_size;
          out->active += area;
          // Only the carved part of a page has been touched (by this class
          // or one that held the page before, since its last purge).
          size_t touched = page_touched_bytes(s, i);
          resident_pages += touched;
          retained_pages += area - touched;
          if (pages != nullptr && page->size_class < kClassCount) {
            ClassStats& c = pages->classes[page->size_class];
            c.pages++;
            c.full_pages += (flags & kPageInFull) != 0;
            c.blocks_used += used;
            c.blocks_carved += page->capacity;
          }
        } else if (page->is_dirty) {
          size_t touched = page_touched_bytes(s, i);
          resident_pages += touched;
          retained_pages += area - touched;
          if (pages != nullptr) {
            pages->dirty_pages++;
            pages->dirty_bytes += touched;
          }
        } else {
          retained_pages += area;
        }
      }
    }
  }
  out->metadata = g_stats.metadata.load(std::memory_order_relaxed);
  out->mapped = g_stats.mapped.load(std::memory_order_relaxed);
  // Cached segments keep their headers. (Heaps live in segment headers.)
  out->resident = resident_pages + segment_cache_resident();
  out->retained = retained_pages + g_stats.retained.load(std::memory_order_relaxed);
  out->purged_total = g_stats.purged_total.load(std::memory_order_relaxed);
  out->segments = g_stats.segments.load(std::memory_order_relaxed);
  size_t heaps = g_stats.heaps.load(std::memory_order_relaxed);
  out->abandoned = g_stats.orphaned_heaps.load(std::memory_order_relaxed);
  out->threads = heaps - out->abandoned;
}

namespace {

// A growing text without malloc: a fixed buffer flushed to an fd when full.
// Its methods are cold (out of line, compiled for size), like the printer
// itself: inlined at every call site they made the printer 21.5 KiB, 38% of
// the library's code, which every process maps (DESIGN.md, "A small
// printer").
class Writer {
 public:
  explicit Writer(int fd) : fd_(fd) {}
  ~Writer() { flush(); }
  MALLARD_COLD Writer& add(const char* s) {
    for (; *s != '\0'; ++s) put(*s);
    return *this;
  }
  MALLARD_COLD Writer& add_u64(uint64_t v) {
    char tmp[24];
    size_t n = 0;
    do {
      tmp[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0) put(tmp[--n]);
    return *this;
  }
  MALLARD_COLD Writer& add_u64(uint64_t v, size_t width) {  // right-aligned in `width` columns
    size_t digits = 1;
    for (uint64_t rest = v / 10; rest != 0; rest /= 10) ++digits;
    for (; digits < width; ++digits) put(' ');
    return add_u64(v);
  }
  MALLARD_COLD void flush() {
    os::write_fd(fd_, buf_, len_);
    len_ = 0;
  }

 private:
  void put(char c) {
    if (len_ == sizeof buf_) flush();
    buf_[len_++] = c;
  }
  int fd_;
  char buf_[1024];
  size_t len_ = 0;
};

struct Field {
  const char* name;
  size_t value;
};

// Blocks in use per hundred carved: how much of a class's touched memory its
// live blocks fill.
uint64_t use_percent(const ClassStats& c) { return c.blocks_carved == 0 ? 0 : 100 * c.blocks_used / c.blocks_carved; }

MALLARD_COLD void write_classes_json(Writer& w, const PageStats& pages) {
  w.add(", \"classes\": [");
  bool first = true;
  for (unsigned k = 0; k < kClassCount; ++k) {
    const ClassStats& c = pages.classes[k];
    if (c.pages == 0) continue;
    w.add(first ? "" : ", ").add("{\"size\": ").add_u64(class_size(k));
    w.add(", \"pages\": ").add_u64(c.pages).add(", \"full_pages\": ").add_u64(c.full_pages);
    w.add(", \"blocks_used\": ").add_u64(c.blocks_used).add(", \"blocks_carved\": ").add_u64(c.blocks_carved).add("}");
    first = false;
  }
  w.add("], \"dirty_pages\": ").add_u64(pages.dirty_pages).add(", \"dirty_bytes\": ").add_u64(pages.dirty_bytes);
  const LargeStats& large = pages.large;
  w.add(", \"large\": {\"blocks\": ").add_u64(large.blocks).add(", \"bytes\": ").add_u64(large.bytes);
  w.add(", \"past_end\": ").add_u64(large.past_end).add(", \"cached_blocks\": ").add_u64(large.cached_blocks);
  w.add(", \"cached_bytes\": ").add_u64(large.cached_bytes).add("}");
  w.add(", \"extents\": {\"bytes\": ").add_u64(pages.extents.bytes);
  w.add(", \"resident\": ").add_u64(pages.extents.resident).add("}");
}

MALLARD_COLD void write_classes_text(Writer& w, const PageStats& pages) {
  w.add("classes:          size     pages      full    blocks used     carved  use%\n");
  for (unsigned k = 0; k < kClassCount; ++k) {
    const ClassStats& c = pages.classes[k];
    if (c.pages == 0) continue;
    w.add("              ").add_u64(class_size(k), 8).add_u64(c.pages, 10).add_u64(c.full_pages, 10);
    w.add_u64(c.blocks_used, 15).add_u64(c.blocks_carved, 11).add_u64(use_percent(c), 6).add("\n");
  }
  w.add("dirty pages:   ").add_u64(pages.dirty_pages).add(" (").add_u64(pages.dirty_bytes).add(" bytes)\n");
  const LargeStats& large = pages.large;
  w.add("large blocks:  ").add_u64(large.blocks).add(" (").add_u64(large.bytes).add(" bytes, ");
  w.add_u64(large.past_end).add(" more past their ends); cached: ").add_u64(large.cached_blocks);
  w.add(" (").add_u64(large.cached_bytes).add(" bytes)\n");
  w.add("extents:       ").add_u64(pages.extents.bytes).add(" bytes in blocks, ");
  w.add_u64(pages.extents.resident).add(" resident\n");
}

}  // namespace

MALLARD_COLD void stats_write_fd(int fd, const char* opts) {
  mallard_stats st;
  PageStats pages;  // 3 KiB of stack: no malloc here
  stats_collect(&st, &pages);
  const Field fields[] = {
      {"allocated", st.allocated}, {"active", st.active},       {"resident", st.resident},
      {"mapped", st.mapped},       {"metadata", st.metadata},   {"retained", st.retained},
      {"purged_total", st.purged_total}, {"segments", st.segments}, {"threads", st.threads},
      {"abandoned", st.abandoned},
      // Not in mallard_stats (its size is the ABI): jemalloc's
      // dirty_nmadvise, the system calls that purged.
      {"purge_calls", os::purge_calls()},
  };
  bool json = opts != nullptr && strchr(opts, 'J') != nullptr;
  Writer w(fd);
  char buf[24];
  if (json) {
    w.add("{\"version\": \"").add(mallard_version()).add("\", \"stats\": {");
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; ++i) {
      w.add(i == 0 ? "" : ", ").add("\"").add(fields[i].name).add("\": ").add_u64(fields[i].value);
    }
    write_classes_json(w, pages);
    w.add("}, \"options\": {");
    for (unsigned i = 0; i < kOptCount; ++i) {
      const char* v = option_get_text(option_name(i), buf);
      w.add(i == 0 ? "" : ", ").add("\"").add(option_name(i)).add("\": ");
      w.add(v);  // booleans and integers are both bare JSON values
    }
    w.add("}}\n");
    return;
  }
  w.add("___ mallard ").add(mallard_version()).add(" statistics ___\n");
  for (const Field& f : fields) {
    w.add(f.name).add(":");
    for (size_t pad = strlen(f.name); pad < 14; ++pad) w.add(" ");
    w.add_u64(f.value).add("\n");
  }
  write_classes_text(w, pages);
  w.add("options:");
  for (unsigned i = 0; i < kOptCount; ++i) w.add(" ").add(option_name(i)).add(":").add(option_get_text(option_name(i), buf));
  w.add("\n");
}

}  // namespace mallard
