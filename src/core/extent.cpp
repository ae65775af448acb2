#include "core/extent.hpp"

#include <errno.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <iterator>

#include "core/alloc.hpp"
#include "core/extent_layout.hpp"
#include "core/init.hpp"
#include "core/lock.hpp"
#include "core/options.hpp"
#include "core/report.hpp"
#include "core/segment.hpp"
#include "core/stats.hpp"
#include "os/os.hpp"

namespace mallard {

namespace {

constexpr size_t kOsPage = 4096;
// Bins 1..kExactBins hold the free extents of exactly that many granules
// (every block size an extent is asked for), kLargerBin the longer ones:
// the first non-empty bin at or above a request is its best fit.
constexpr uint32_t kExactBins = kMediumSizeMax >> kGranuleShift;
constexpr uint32_t kLargerBin = kExactBins + 1;
constexpr uint32_t kBins = kLargerBin + 1;
// Threads take shards round robin: as many as threads up to here, each with
// its own segments, and uncontended locks.
constexpr unsigned kShards = 8;
// What an empty segment keeps resident through the purge delay.
constexpr uint32_t kKeptDirtyGranules = (1u << 20) >> kGranuleShift;

// A free extent's first bytes: its links in its bin, and the sweep during
// which memory in it was freed (kClean: none was since it was purged, or it
// was never written).
struct FreeExtent {
  FreeExtent* next;
  FreeExtent* prev;
  uint64_t freed_in_sweep;
};
constexpr uint64_t kClean = 0;

// Sweeps of the free extents so far (extents_purge, run by the global purge
// tick at most once a purge delay). A free records the sweep count rather
// than the time, so that it reads no clock; the second sweep after a free
// purges what it left free, a purge delay or more later.
std::atomic<uint64_t> g_sweeps{1};
constexpr uint64_t kSweepsKeptDirty = 2;

}  // namespace

// (Outside the anonymous namespace: ExtentArea, in extent_layout.hpp, points
// to its shard.)
struct alignas(kCacheLine) ExtentShard {
  Lock lock;
  Segment* segments;
  uint32_t segment_count;
  uint64_t nonempty[(kBins + 63) / 64];  // bit b: bins[b] is not empty
  FreeExtent* bins[kBins];
  // At most the oldest freed_in_sweep of the free extents not clean (kClean:
  // all are): a sweep passes the shard by until it is old enough.
  uint64_t oldest_dirty_sweep;
};

namespace {

// Constant-initialized (all zero: unlocked, empty, kClean): default-
// initialized, a load-time constructor wrote every shard's lock, and so its
// 9 KiB of pages, in every process (DESIGN.md "Small globals on one page").
constinit ExtentShard g_shards[kShards]{};
// Counts the shards handed to threads from kShards (the same shard sequence
// as from 0): initialized data, it sits on the pages .data keeps resident
// anyway, not alone on one after the 288 MiB address maps, which .bss puts
// before the shards (src/CMakeLists.txt).
std::atomic<uint32_t> g_next_shard{kShards};
constinit thread_local ExtentShard* tls_shard = nullptr;

Segment* segment_base(const void* p) {
  return reinterpret_cast<Segment*>(reinterpret_cast<uintptr_t>(p) & ~kSegmentMask);
}
uint8_t* granule_address(Segment* s, uint32_t g) { return reinterpret_cast<uint8_t*>(s) + (size_t{g} << kGranuleShift); }
uint32_t granule_of(const Segment* s, const void* p) {
  return static_cast<uint32_t>((reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(s)) >> kGranuleShift);
}
uint32_t granules_for(size_t size) { return static_cast<uint32_t>((size + kGranule - 1) >> kGranuleShift); }
uint32_t bin_of(uint32_t granules) { return granules <= kExactBins ? granules : kLargerBin; }

// The pages a purge gives back of the free extent [g, end_granule): the
// whole OS pages after the one that holds its links.
struct PageRange {
  uintptr_t from, to;
  size_t bytes() const { return to > from ? to - from : 0; }
};
PageRange purgeable_pages(Segment* s, uint32_t g, uint32_t end_granule) {
  uintptr_t from = (reinterpret_cast<uintptr_t>(granule_address(s, g)) + sizeof(FreeExtent) + kOsPage - 1) & ~(kOsPage - 1);
  uintptr_t to = reinterpret_cast<uintptr_t>(granule_address(s, end_granule)) & ~(kOsPage - 1);
  return {from, to};
}

// The clean free extent [g, g + granules) enters (+1) or leaves (-1) the
// bins: its purged pages count out of the segment's resident bytes.
void count_clean_extent(Segment* s, uint32_t g, uint32_t granules, int sign) {
  ExtentArea* a = area_of(s);
  size_t bytes = purgeable_pages(s, g, g + granules).bytes();
  a->purged_bytes = sign > 0 ? a->purged_bytes + bytes : a->purged_bytes - bytes;
}

ExtentShard* this_thread_shard() {
  ExtentShard* shard = tls_shard;
  if (MALLARD_UNLIKELY(shard == nullptr)) {
    shard = &g_shards[g_next_shard.fetch_add(1, std::memory_order_relaxed) % kShards];
    tls_shard = shard;
  }
  return shard;
}

void bin_push(ExtentShard* shard, FreeExtent* e, uint32_t granules) {
  uint32_t b = bin_of(granules);
  e->prev = nullptr;
  e->next = shard->bins[b];
  if (e->next != nullptr) e->next->prev = e;
  shard->bins[b] = e;
  shard->nonempty[b / 64] |= uint64_t{1} << (b % 64);
}

void bin_remove(ExtentShard* shard, FreeExtent* e, uint32_t granules) {
  uint32_t b = bin_of(granules);
  if (e->prev != nullptr) e->prev->next = e->next; else shard->bins[b] = e->next;
  if (e->next != nullptr) e->next->prev = e->prev;
  if (shard->bins[b] == nullptr) shard->nonempty[b / 64] &= ~(uint64_t{1} << (b % 64));
}

// The first non-empty bin whose extents hold `granules`; 0 when none does.
uint32_t bin_find(const ExtentShard* shard, uint32_t granules) {
  for (uint32_t w = granules / 64; w < std::size(shard->nonempty); ++w) {
    uint64_t bits = shard->nonempty[w];
    if (w == granules / 64) bits &= ~uint64_t{0} << (granules % 64);
    if (bits != 0) return w * 64 + static_cast<uint32_t>(std::countr_zero(bits));
  }
  return 0;
}

// Makes [g, g + granules) of s one free extent, with memory freed in it
// during sweep `freed_in_sweep` (kClean: none): filed in its bin, or, when it
// reaches the segment's end, the segment's tail. The tail is kept out of the
// bins so that memory freed anywhere is reused before the tail's, most of
// which was never touched (regrow:exact with the tails in the bins: 28 MiB
// of extents resident for 18 MiB in use, and mapped from every segment's
// tail at once).
MALLARD_RARE void extent_file(ExtentShard* shard, Segment* s, uint32_t g, uint32_t granules, uint64_t freed_in_sweep) {
  ExtentArea* a = area_of(s);
  a->head[g] = static_cast<uint16_t>(granules | kFreeBit);
  a->tail[g + granules - 1] = static_cast<uint16_t>(granules);
  if (g + granules == kGranules) {
    a->tail_start = g;
    if (g >= a->touched_end) freed_in_sweep = kClean;
    a->tail_freed_in_sweep = freed_in_sweep;
  } else {
    if (g + 1 > a->touched_end) a->touched_end = g + 1;  // its links are written
    auto* e = reinterpret_cast<FreeExtent*>(granule_address(s, g));
    e->freed_in_sweep = freed_in_sweep;
    bin_push(shard, e, granules);
    if (freed_in_sweep == kClean) count_clean_extent(s, g, granules, +1);
  }
  if (freed_in_sweep != kClean && (shard->oldest_dirty_sweep == kClean || freed_in_sweep < shard->oldest_dirty_sweep)) {
    shard->oldest_dirty_sweep = freed_in_sweep;
  }
}

// Takes the free extent [g, g + granules) out of its bin (or out of being the
// tail) and clears its tags; returns its freed_in_sweep.
MALLARD_RARE uint64_t extent_unfile(ExtentShard* shard, Segment* s, uint32_t g, uint32_t granules) {
  ExtentArea* a = area_of(s);
  a->head[g] = 0;
  a->tail[g + granules - 1] = 0;
  if (g + granules == kGranules) {
    a->tail_start = kGranules;
    return a->tail_freed_in_sweep;
  }
  auto* e = reinterpret_cast<FreeExtent*>(granule_address(s, g));
  bin_remove(shard, e, granules);
  if (e->freed_in_sweep == kClean) count_clean_extent(s, g, granules, -1);
  return e->freed_in_sweep;
}

void shard_link(ExtentShard* shard, Segment* s) {
  ExtentArea* a = area_of(s);
  a->prev = nullptr;
  a->next = shard->segments;
  if (a->next != nullptr) area_of(a->next)->prev = s;
  shard->segments = s;
  ++shard->segment_count;
}

void shard_unlink(ExtentShard* shard, Segment* s) {
  ExtentArea* a = area_of(s);
  if (a->prev != nullptr) area_of(a->prev)->next = a->next; else shard->segments = a->next;
  if (a->next != nullptr) area_of(a->next)->prev = a->prev;
  --shard->segment_count;
}

bool shard_add_segment(ExtentShard* shard) {
  Segment* s = extent_segment_map(size_t{kFirstGranule} << kGranuleShift);
  if (s == nullptr) return false;
  ExtentArea* a = area_of(s);
  a->shard = shard;
  a->touched_end = kFirstGranule;
  a->tail_start = kGranules;
  shard_link(shard, s);
  extent_file(shard, s, kFirstGranule, kDataGranules, kClean);
  return true;
}

// The first free extent of at least `granules`: the best fit in the bins,
// else the shortest segment tail that holds them (the segment most carved
// already: taking the first in the list, the newest, regrow:exact peaked at
// 40.3-43.2 MiB against 35.1-35.2), else a new segment's; sets *segment and
// *granule, false when out of memory.
bool shard_find(ExtentShard* shard, uint32_t granules, Segment** segment, uint32_t* granule) {
  if (uint32_t b = bin_find(shard, granules); b != 0) {
    FreeExtent* e = shard->bins[b];
    *segment = segment_base(e);
    *granule = granule_of(*segment, e);
    return true;
  }
  Segment* best = nullptr;
  for (Segment* s = shard->segments; s != nullptr; s = area_of(s)->next) {
    uint32_t tail_start = area_of(s)->tail_start;
    if (kGranules - tail_start >= granules && (best == nullptr || tail_start > area_of(best)->tail_start)) best = s;
  }
  if (best != nullptr) {
    *segment = best;
    *granule = area_of(best)->tail_start;
    return true;
  }
  if (!shard_add_segment(shard)) return false;
  *segment = shard->segments;
  *granule = kFirstGranule;
  return true;
}

// Carves `granules` from the first free extent that holds them (shard_find);
// nullptr when out of memory. *fresh is set to where the block's memory that
// the segment never handed out begins (0: none of it). Caller holds the lock.
MALLARD_RARE uint8_t* shard_alloc(ExtentShard* shard, uint32_t granules, uint8_t** fresh) {
  Segment* s;
  uint32_t g;
  if (!shard_find(shard, granules, &s, &g)) return nullptr;
  ExtentArea* a = area_of(s);
  uint32_t touched_end = a->touched_end;  // before the remainder's links are written
  *fresh = g + granules > touched_end ? granule_address(s, g > touched_end ? g : touched_end) : nullptr;
  uint32_t length = a->head[g] & ~kFreeBit;
  uint64_t freed_in_sweep = extent_unfile(shard, s, g, length);
  if (length > granules) extent_file(shard, s, g + granules, length - granules, freed_in_sweep);
  a->head[g] = static_cast<uint16_t>(granules);
  a->used_granules = a->used_granules + granules;
  if (g + granules > a->touched_end) a->touched_end = g + granules;
  return granule_address(s, g);
}

// Adds to `batch` what a free extent may hold resident past its links; the
// caller holds the lock until the batch is flushed (a block carved there
// meanwhile would lose its bytes).
MALLARD_RARE size_t extent_purge(Segment* s, uint32_t g, uint32_t granules, os::PurgeBatch& batch) {
  ExtentArea* a = area_of(s);
  uint32_t touched_end = a->touched_end;
  uint32_t end_granule = g + granules < touched_end ? g + granules : touched_end;
  PageRange pages = purgeable_pages(s, g, end_granule);
  if (pages.bytes() == 0) return 0;
  batch.add(reinterpret_cast<void*>(pages.from), pages.bytes());
  if (g + granules >= touched_end) a->touched_end = granule_of(s, reinterpret_cast<void*>(pages.from));
  stats_add(g_stats.purged_total, pages.bytes());
  return pages.bytes();
}


// p is not a live extent block of s: a free one was freed already, a pointer
// inside a live one is named with the block's start, anything else was
// never a block.
[[noreturn]] MALLARD_COLD void report_not_a_block(Segment* s, const void* p, uint16_t head, const char* what) {
  if (head & kFreeBit) report_double_free(what, p);
  uint32_t g = granule_of(s, p);
  if (g >= kFirstGranule && g < kGranules) {
    const ExtentArea* a = area_of(s);
    uint32_t start = g;
    while (start > kFirstGranule && a->head[start] == 0) --start;
    uint16_t found = a->head[start];
    if (found != 0 && (found & kFreeBit) == 0 && g < start + found) {
      report_interior_pointer(what, p, granule_address(s, start));
    }
  }
  report_invalid_pointer(what, p);
}

// What extent_malloc and extent_realloc do with the block carved for them
// (nullptr: out of memory): the bytes realloc copies in fault in with one
// system call rather than one fault per 4 KiB page (as page_extend does for
// class pages).
void* take_block(uint8_t* block, uint8_t* fresh, size_t copy) {
  if (block == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  uintptr_t from = reinterpret_cast<uintptr_t>(fresh) & ~(kOsPage - 1);
  uintptr_t to = (reinterpret_cast<uintptr_t>(block) + copy + kOsPage - 1) & ~(kOsPage - 1);
  if (fresh != nullptr && to > from) os::populate(reinterpret_cast<void*>(from), to - from);
  return block;
}

}  // namespace

MALLARD_RARE void* extent_malloc(size_t size, size_t copy) {
  process_init();  // realloc(NULL, n) may be a process's first call
  ExtentShard* shard = this_thread_shard();
  uint8_t* block;
  uint8_t* fresh;
  {
    LockGuard guard(shard->lock);
    block = shard_alloc(shard, granules_for(size), &fresh);
  }
  return take_block(block, fresh, copy);
}

MALLARD_RARE void extent_free(Segment* s, void* p, const char* what) {
  ExtentArea* a = area_of(s);
  ExtentShard* shard = a->shard;
  shard->lock.lock();
  uint32_t g;
  uint32_t granules = head_at(s, p, &g);
  if (MALLARD_UNLIKELY(!is_live_block(static_cast<uint16_t>(granules)))) {
    shard->lock.unlock();
    report_not_a_block(s, p, static_cast<uint16_t>(granules), what);
  }
  a->used_granules = a->used_granules - granules;
  a->head[g] = 0;
  uint64_t sweep = g_sweeps.load(std::memory_order_relaxed);
  uint32_t right = g + granules;
  if (right < kGranules && (a->head[right] & kFreeBit) != 0) {
    uint32_t length = a->head[right] & ~kFreeBit;
    extent_unfile(shard, s, right, length);  // dirty now, with the freed block
    granules += length;
  }
  if (uint32_t length = a->tail[g - 1]; length != 0) {  // granule kFirstGranule - 1 is the header's: 0
    extent_unfile(shard, s, g - length, length);
    g -= length;
    granules += length;
  }
  // An empty segment goes back to the OS while the shard has another. The
  // last one stays for the next blocks: its first MiB until the purge delay
  // has passed (extents_purge), what it held beyond at once, so that a
  // shard that held many MiB does not keep four of them.
  bool release = granules == kDataGranules && shard->segment_count > 1;
  if (release) {
    shard_unlink(shard, s);
  } else {
    extent_file(shard, s, g, granules, sweep);
    if (granules == kDataGranules) {
      os::PurgeBatch batch;
      extent_purge(s, kFirstGranule + kKeptDirtyGranules, kDataGranules - kKeptDirtyGranules, batch);
      batch.flush();
    }
  }
  shard->lock.unlock();
  if (release) extent_segment_unmap(s);
}

// Without the lock: a block's own tag changes only when it is freed or
// grown, which the caller, who holds it, is not doing at the same time.
MALLARD_RARE size_t extent_usable_size(Segment* s, const void* p, const char* what) {
  size_t size = extent_block_size(s, p);
  if (MALLARD_UNLIKELY(size == 0)) {
    uint32_t g;
    report_not_a_block(s, p, head_at(s, p, &g), what);
  }
  return size;
}

namespace {

// Grows the extent block at granule g of s to `wanted` granules into the
// free extent after it; false if that is not free or too short. Caller holds
// the lock.
MALLARD_RARE bool grow_in_place(ExtentShard* shard, Segment* s, uint32_t g, uint32_t wanted) {
  ExtentArea* a = area_of(s);
  uint32_t granules = a->head[g];
  uint32_t right = g + granules;
  if (right >= kGranules || (a->head[right] & kFreeBit) == 0) return false;
  uint32_t length = a->head[right] & ~kFreeBit;
  if (granules + length < wanted) return false;
  uint64_t freed_in_sweep = extent_unfile(shard, s, right, length);
  if (granules + length > wanted) extent_file(shard, s, g + wanted, granules + length - wanted, freed_in_sweep);
  a->head[g] = static_cast<uint16_t>(wanted);
  a->used_granules = a->used_granules + (wanted - granules);
  if (g + wanted > a->touched_end) a->touched_end = g + wanted;
  return true;
}

// Purges the free extents of the shard that were freed in sweep - 2 or
// before (~0: all), and lowers oldest_dirty_sweep to the rest's. Caller holds
// the lock. Returns the bytes purged.
MALLARD_RARE size_t shard_purge(ExtentShard* shard, uint64_t sweep) {
  size_t purged = 0;
  uint64_t oldest_kept = kClean;
  auto expired = [&](uint64_t freed_in_sweep) {
    if (freed_in_sweep == kClean) return false;
    if (freed_in_sweep <= sweep - kSweepsKeptDirty) return true;
    if (oldest_kept == kClean || freed_in_sweep < oldest_kept) oldest_kept = freed_in_sweep;
    return false;
  };
  os::PurgeBatch batch;
  for (FreeExtent* bin : shard->bins) {
    for (FreeExtent* e = bin; e != nullptr; e = e->next) {
      if (!expired(e->freed_in_sweep)) continue;
      Segment* s = segment_base(e);
      uint32_t g = granule_of(s, e);
      uint32_t granules = area_of(s)->head[g] & ~kFreeBit;
      purged += extent_purge(s, g, granules, batch);
      e->freed_in_sweep = kClean;
      count_clean_extent(s, g, granules, +1);
    }
  }
  for (Segment* s = shard->segments; s != nullptr; s = area_of(s)->next) {
    ExtentArea* a = area_of(s);
    if (a->tail_start == kGranules || !expired(a->tail_freed_in_sweep)) continue;
    purged += extent_purge(s, a->tail_start, kGranules - a->tail_start, batch);
    a->tail_freed_in_sweep = kClean;
  }
  batch.flush();
  shard->oldest_dirty_sweep = oldest_kept;
  return purged;
}

}  // namespace

MALLARD_RARE void* extent_realloc(void* p, size_t size, size_t target, size_t copy) {
  Segment* s = segment_of(p);
  if (s == nullptr || s->kind != SegmentKind::kExtent) return extent_malloc(target, copy);
  ExtentArea* a = area_of(s);
  ExtentShard* shard = a->shard;
  uint32_t g = granule_of(s, p);
  uint8_t* block;
  uint8_t* fresh;
  {
    // One lock for both tries: a block that moves takes its new place in the
    // shard that holds it, where it left its memory free.
    LockGuard guard(shard->lock);
    if (grow_in_place(shard, s, g, granules_for(target)) || grow_in_place(shard, s, g, granules_for(size))) return p;
    block = shard_alloc(shard, granules_for(target), &fresh);
  }
  return take_block(block, fresh, copy);
}

size_t extents_purge(bool all_free_extents) {
  uint64_t sweep = all_free_extents ? ~uint64_t{0} : g_sweeps.fetch_add(1, std::memory_order_relaxed) + 1;
  size_t purged = 0;
  // Only the shards handed to threads so far: reading the others, let alone
  // taking their locks, would make their pages resident in every process,
  // extents or not (on this machine's kernel a read of an untouched page
  // faults in a page of its own; DESIGN.md "Small globals on one page").
  uint32_t handed_out = g_next_shard.load(std::memory_order_relaxed) - kShards;
  for (uint32_t i = 0; i < kShards && i < handed_out; ++i) {
    ExtentShard& shard = g_shards[i];
    LockGuard guard(shard.lock);
    if (shard.oldest_dirty_sweep == kClean || shard.oldest_dirty_sweep > sweep - kSweepsKeptDirty) continue;
    purged += shard_purge(&shard, sweep);
  }
  return purged;
}

MALLARD_RARE void extent_segment_stats(Segment* s, size_t* allocated, size_t* resident) {
  ExtentArea* a = area_of(s);
  *allocated = size_t{a->used_granules} << kGranuleShift;
  // Read without the lock: the two may be a moment apart.
  size_t touched = os::round_to_page(size_t{a->touched_end} << kGranuleShift);
  size_t purged = a->purged_bytes;
  *resident = purged < touched ? touched - purged : 0;
}

MALLARD_RARE void extents_fork_prepare() {
  for (ExtentShard& shard : g_shards) shard.lock.lock();
}

MALLARD_RARE void extents_fork_parent() {
  for (ExtentShard& shard : g_shards) shard.lock.unlock();
}

MALLARD_RARE void extents_fork_child() {
  for (ExtentShard& shard : g_shards) shard.lock.reset();
}

}  // namespace mallard
