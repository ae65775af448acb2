#include "core/stats.hpp"

#include <errno.h>

#include <cstring>

#include "core/heap.hpp"
#include "core/options.hpp"
#include "core/report.hpp"
#include "core/segment.hpp"
#include "os/os.hpp"

namespace mallard {

GlobalStats g_stats;

// Per-block figures are summed over the pages of every segment rather than
// counted on each malloc and free, so the fast paths carry no counters. Pages
// are read with relaxed loads while their owners run: the result is a
// consistent-enough snapshot, exact when the process is quiescent. A block
// freed by another thread counts as allocated until its owner drains it.
void stats_collect(mallard_stats* out) {
  memset(out, 0, sizeof *out);
  size_t resident_pages = 0;
  size_t retained_pages = 0;
  {
    LockGuard guard(g_segments_lock);
    for (Segment* s = g_segments; s != nullptr; s = s->next) {
      for (uint32_t i = 0; i < s->page_count; ++i) {
        Page* page = &s->pages[i];
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
          resident_pages += dirty;
          retained_pages += area - dirty;
        } else if ((flags & kPageUnused) == 0) {
          // Racy by design: a snapshot of another thread's counter.
          uint32_t used = __atomic_load_n(&page->used, __ATOMIC_RELAXED);
          out->allocated += size_t{used} * page->block_size;
          out->active += area;
          // Only the carved part of a page has been touched.
          size_t carved = size_t{page->capacity} * page->block_size;
          resident_pages += carved;
          retained_pages += area - carved;
        } else if (page->is_dirty) {
          resident_pages += area;
        } else {
          retained_pages += area;
        }
      }
    }
  }
  out->metadata = g_stats.metadata.load(std::memory_order_relaxed);
  out->mapped = g_stats.mapped.load(std::memory_order_relaxed);
  out->resident = resident_pages + out->metadata;
  out->retained = retained_pages + g_stats.retained.load(std::memory_order_relaxed);
  out->purged_total = g_stats.purged_total.load(std::memory_order_relaxed);
  out->segments = g_stats.segments.load(std::memory_order_relaxed);
  size_t heaps = g_stats.heaps.load(std::memory_order_relaxed);
  out->abandoned = g_stats.orphaned_heaps.load(std::memory_order_relaxed);
  out->threads = heaps - out->abandoned;
}

namespace {

// A growing text without malloc: a fixed buffer flushed to an fd when full.
class Writer {
 public:
  explicit Writer(int fd) : fd_(fd) {}
  ~Writer() { flush(); }
  Writer& add(const char* s) {
    for (; *s != '\0'; ++s) put(*s);
    return *this;
  }
  Writer& add_u64(uint64_t v) {
    char tmp[24];
    size_t n = 0;
    do {
      tmp[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0) put(tmp[--n]);
    return *this;
  }
  void flush() {
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

}  // namespace

void stats_write_fd(int fd, const char* opts) {
  mallard_stats st;
  stats_collect(&st);
  const Field fields[] = {
      {"allocated", st.allocated}, {"active", st.active},       {"resident", st.resident},
      {"mapped", st.mapped},       {"metadata", st.metadata},   {"retained", st.retained},
      {"purged_total", st.purged_total}, {"segments", st.segments}, {"threads", st.threads},
      {"abandoned", st.abandoned},
  };
  bool json = opts != nullptr && strchr(opts, 'J') != nullptr;
  Writer w(fd);
  char buf[24];
  if (json) {
    w.add("{\"version\": \"").add(mallard_version()).add("\", \"stats\": {");
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; ++i) {
      w.add(i == 0 ? "" : ", ").add("\"").add(fields[i].name).add("\": ").add_u64(fields[i].value);
    }
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
  w.add("options:");
  for (unsigned i = 0; i < kOptCount; ++i) w.add(" ").add(option_name(i)).add(":").add(option_get_text(option_name(i), buf));
  w.add("\n");
}

}  // namespace mallard
