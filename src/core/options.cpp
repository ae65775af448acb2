#include "core/options.hpp"

#include <cstring>
#include <iterator>
#include <utility>

#include "core/config.hpp"
#include "core/report.hpp"
#include "os/os.hpp"

namespace mallard {

namespace {

struct OptionSpec {
  const char* name;
  bool is_bool;
  int64_t default_value;
  int64_t min;
  int64_t max;
};

constexpr OptionSpec kSpecs[] = {
    {"purge_delay_ms", false, 250, 0, 3600 * 1000},
    {"dirty_max_kb", false, 2 * 1024, 0, int64_t{1} << 30},  // DESIGN.md "A 2 MiB dirty cap"
    {"segment_cache", false, 8, 0, 4096},
    {"large_cache_mb", false, 64, 0, int64_t{1} << 20},
    {"align16", true, 0, 0, 1},
    {"stats_print", true, 0, 0, 1},
    {"verbose", true, 0, 0, 1},
    {"thp_heap_mb", false, 0, 0, int64_t{1} << 30},
    {"prefault_heap_mb", false, 32, 0, int64_t{1} << 30},
    {"extent_heap_mb", false, 32, 0, int64_t{1} << 30},  // DESIGN.md "Medium blocks of large heaps in extents"
};
static_assert(std::size(kSpecs) == kOptCount, "one spec per OptionId, in its order");

// The values start at the specs' defaults (a guaranteed copy elision: atomics
// are neither copied nor moved).
template <size_t... I>
constexpr OptionValues defaults(std::index_sequence<I...>) {
  return {{kSpecs[I].default_value...}};
}

bool text_equals(const char* s, size_t len, const char* word) {
  return strlen(word) == len && memcmp(s, word, len) == 0;
}

bool parse_value(const OptionSpec& spec, const char* s, size_t len, int64_t* out) {
  if (spec.is_bool) {
    if (text_equals(s, len, "true") || text_equals(s, len, "1") || text_equals(s, len, "yes")) {
      *out = 1;
      return true;
    }
    if (text_equals(s, len, "false") || text_equals(s, len, "0") || text_equals(s, len, "no")) {
      *out = 0;
      return true;
    }
    return false;
  }
  if (len == 0 || len > 18) return false;
  int64_t v = 0;
  for (size_t i = 0; i < len; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  if (v < spec.min || v > spec.max) return false;
  *out = v;
  return true;
}

int find_option(const char* name, size_t len) {
  for (unsigned i = 0; i < kOptCount; ++i) {
    if (text_equals(name, len, kSpecs[i].name)) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

constinit OptionValues g_options = defaults(std::make_index_sequence<kOptCount>());

MALLARD_RARE bool option_set_text(const char* name, size_t name_len, const char* value, size_t value_len,
                     const char* source) {
  int id = find_option(name, name_len);
  if (id < 0) {
    Message m;
    m.add("mallard: warning: ").add(source).add(": unknown option '").add(name, name_len).add("'");
    m.add(" (known:");
    for (unsigned i = 0; i < kOptCount; ++i) m.add(i == 0 ? " " : ", ").add(kSpecs[i].name);
    m.add(")\n");
    m.write();
    return false;
  }
  int64_t v = 0;
  if (!parse_value(kSpecs[id], value, value_len, &v)) {
    Message m;
    m.add("mallard: warning: ").add(source).add(": bad value '").add(value, value_len);
    m.add("' for option '").add(kSpecs[id].name).add("' (expected ");
    if (kSpecs[id].is_bool) {
      m.add("true or false)\n");
    } else {
      m.add("an integer from ").add_u64(static_cast<uint64_t>(kSpecs[id].min)).add(" to ");
      m.add_u64(static_cast<uint64_t>(kSpecs[id].max)).add(")\n");
    }
    m.write();
    return false;
  }
  g_options.value[id].store(v, std::memory_order_relaxed);
  return true;
}

// Read at every process start: not in .rodata (config.hpp, MALLARD_RESIDENT_CONST).
MALLARD_RESIDENT_CONST(conf_variable) constexpr char kConfVariable[] = "MALLARD_CONF";

void options_load_from_env() {
  const char* conf = os::env(kConfVariable);
  if (conf == nullptr) return;
  const char* p = conf;
  while (*p != '\0') {
    const char* item = p;
    while (*p != '\0' && *p != ',') ++p;
    size_t item_len = static_cast<size_t>(p - item);
    if (*p == ',') ++p;
    if (item_len == 0) continue;
    const char* colon = static_cast<const char*>(memchr(item, ':', item_len));
    if (colon == nullptr) {
      Message m;
      m.add("mallard: warning: MALLARD_CONF: '").add(item, item_len);
      m.add("' is not key:value; ignored\n");
      m.write();
      continue;
    }
    size_t key_len = static_cast<size_t>(colon - item);
    option_set_text(item, key_len, colon + 1, item_len - key_len - 1, "MALLARD_CONF");
  }
  if (option_verbose()) {
    Message m;
    m.add("mallard: options:");
    char buf[24];
    for (unsigned i = 0; i < kOptCount; ++i) {
      m.add(" ").add(kSpecs[i].name).add(":").add(option_get_text(kSpecs[i].name, buf));
    }
    m.add("\n").write();
  }
}

MALLARD_RARE const char* option_get_text(const char* name, char* buf) {
  int id = find_option(name, strlen(name));
  if (id < 0) return nullptr;
  int64_t v = option(static_cast<OptionId>(id));
  if (kSpecs[id].is_bool) return v ? "true" : "false";
  char tmp[24];
  size_t n = 0;
  uint64_t u = static_cast<uint64_t>(v);
  do {
    tmp[n++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0);
  for (size_t i = 0; i < n; ++i) buf[i] = tmp[n - 1 - i];
  buf[n] = '\0';
  return buf;
}

MALLARD_RARE const char* option_name(unsigned i) { return kSpecs[i].name; }

}  // namespace mallard
