// Runtime options: read once from MALLARD_CONF ("key:value,key:value"), and
// readable/settable later through mallard_option_get/set. docs/TUNING.md
// explains each one with the trade-off it makes.
#pragma once

#include <atomic>
#include <cstdint>

namespace mallard {

enum OptionId : unsigned {
  kOptPurgeDelayMs,    // free pages go back to the OS after this many ms
  kOptDirtyMaxKb,      // per-heap cap on free-but-resident pages; beyond it purge at once
  kOptSegmentCache,    // empty 4 MiB segments kept (purged) for reuse
  kOptLargeCacheMb,    // freed large blocks kept for reuse, in MiB
  kOptAlign16,         // round every request above 16 bytes up to a multiple of 16
  kOptStatsPrint,      // print statistics to stderr at exit
  kOptVerbose,         // report option values and notable events on stderr
  kOptThpHeapMb,       // a heap holding this many MiB of segments maps more with huge pages (0: never)
  kOptPrefaultHeapMb,  // a heap holding this many MiB of segments populates fresh small pages 1 MiB at a time and fresh medium blocks whole (0: never)
  kOptExtentHeapMb,    // a heap holding this many MiB of segments takes its medium blocks from the coalescing extents (0: never)
  kOptCount
};

// Each option's current value, starting at its default (options.cpp).
struct OptionValues {
  std::atomic<int64_t> value[kOptCount];
};
extern OptionValues g_options;

inline int64_t option(OptionId id) { return g_options.value[id].load(std::memory_order_relaxed); }
inline int64_t option_purge_delay_ms() { return option(kOptPurgeDelayMs); }
inline int64_t option_segment_cache() { return option(kOptSegmentCache); }
inline bool option_verbose() { return option(kOptVerbose) != 0; }

// Parses MALLARD_CONF; reports unknown keys and bad values on stderr.
void options_load_from_env();

// Sets one option from text; returns false (after a warning naming it) on an
// unknown name or a bad value. `source` prefixes the warning.
bool option_set_text(const char* name, size_t name_len, const char* value, size_t value_len,
                     const char* source);

// The option's value as text in `buf` (size >= 24); nullptr if unknown.
const char* option_get_text(const char* name, char* buf);

// Name and value of option i, for the statistics printer.
const char* option_name(unsigned i);

}  // namespace mallard
