// kv: a Redis-like store built from Redis's classic data structures (seed
// 002), so its allocation pattern is Redis's without a server in the way.
// Phase 1 does the seed's `RPUSH dummy x` a million times: each element is a
// list node, an object header and a one-byte sds string. Phase 2 SETs small
// keys into a chained hash table that doubles as it fills; phase 3 DELs a
// random half; phase 4 refills as many keys with values of other sizes, which
// the freed holes do not fit. After each phase it reports the bytes the store
// requested, the RSS, and their ratio, as INFO's used_memory, used_memory_rss
// and mem_fragmentation_ratio do. Last, outside the throughput's clock, it
// frees the whole store at once, as FLUSHALL does, and reports how long that
// took (flush_ms): what an allocator does with hundreds of MiB of pages
// emptied in a few milliseconds shows there.
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "util/proc.hpp"
#include "util/text.hpp"
#include "workloads/common.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

namespace {

// zmalloc's job: count the bytes requested, so fragmentation can be computed.
class Accounting {
 public:
  void* allocate(std::size_t bytes) {
    void* block = std::malloc(bytes);
    if (block == nullptr) std::abort();
    requested_ += bytes;
    return block;
  }
  void* allocate_zeroed(std::size_t count, std::size_t bytes) {
    void* block = std::calloc(count, bytes);
    if (block == nullptr) std::abort();
    requested_ += count * bytes;
    return block;
  }
  void release(void* block, std::size_t bytes) {
    requested_ -= bytes;
    std::free(block);
  }
  std::uint64_t requested() const { return requested_; }

 private:
  std::uint64_t requested_ = 0;
};

// sds with an sdshdr8 header: len, alloc, flags, then the bytes and a NUL.
struct Sds {
  static char* make(Accounting& memory, const char* data, std::size_t length) {
    auto* block = static_cast<unsigned char*>(memory.allocate(3 + length + 1));
    block[0] = static_cast<unsigned char>(length);
    block[1] = static_cast<unsigned char>(length);
    block[2] = 1;  // SDS_TYPE_8
    std::memcpy(block + 3, data, length);
    block[3 + length] = '\0';
    return reinterpret_cast<char*>(block + 3);
  }
  static std::size_t length(const char* s) { return static_cast<unsigned char>(s[-3]); }
  static void release(Accounting& memory, char* s) { memory.release(s - 3, 3 + length(s) + 1); }
};

// robj: type, encoding and LRU bits, a refcount and the value pointer (16 bytes).
struct RedisObject {
  std::uint32_t type_encoding_lru;
  int refcount;
  char* value;
};

RedisObject* make_string_object(Accounting& memory, const char* data, std::size_t length) {
  auto* object = static_cast<RedisObject*>(memory.allocate(sizeof(RedisObject)));
  *object = {0, 1, Sds::make(memory, data, length)};
  return object;
}

void release_object(Accounting& memory, RedisObject* object) {
  Sds::release(memory, object->value);
  memory.release(object, sizeof(RedisObject));
}

struct ListNode {
  ListNode* prev;
  ListNode* next;
  RedisObject* value;
};

struct List {
  ListNode* head = nullptr;
  ListNode* tail = nullptr;
  std::uint64_t length = 0;

  void push_back(Accounting& memory, RedisObject* value) {
    auto* node = static_cast<ListNode*>(memory.allocate(sizeof(ListNode)));
    *node = {tail, nullptr, value};
    (tail ? tail->next : head) = node;
    tail = node;
    ++length;
  }
  void clear(Accounting& memory) {
    for (ListNode* node = head; node != nullptr;) {
      ListNode* next = node->next;
      release_object(memory, node->value);
      memory.release(node, sizeof(ListNode));
      node = next;
    }
    head = tail = nullptr;
    length = 0;
  }
};

struct DictEntry {
  char* key;
  RedisObject* value;
  DictEntry* next;
};

// A chained hash table with power-of-two buckets that doubles when full, as dict.c does.
class Dict {
 public:
  explicit Dict(Accounting& memory) : memory_(memory) { resize(4); }
  ~Dict() { clear(); }

  void set(const char* key, std::size_t key_length, const char* value, std::size_t value_length) {
    if (used_ >= size_) resize(size_ * 2);
    std::uint64_t bucket = hash(key, key_length) & (size_ - 1);
    for (DictEntry* entry = table_[bucket]; entry != nullptr; entry = entry->next) {
      if (Sds::length(entry->key) == key_length && std::memcmp(entry->key, key, key_length) == 0) {
        release_object(memory_, entry->value);
        entry->value = make_string_object(memory_, value, value_length);
        return;
      }
    }
    auto* entry = static_cast<DictEntry*>(memory_.allocate(sizeof(DictEntry)));
    *entry = {Sds::make(memory_, key, key_length), make_string_object(memory_, value, value_length), table_[bucket]};
    table_[bucket] = entry;
    ++used_;
  }

  bool erase(const char* key, std::size_t key_length) {
    DictEntry** link = &table_[hash(key, key_length) & (size_ - 1)];
    for (; *link != nullptr; link = &(*link)->next) {
      DictEntry* entry = *link;
      if (Sds::length(entry->key) == key_length && std::memcmp(entry->key, key, key_length) == 0) {
        *link = entry->next;
        Sds::release(memory_, entry->key);
        release_object(memory_, entry->value);
        memory_.release(entry, sizeof(DictEntry));
        --used_;
        return true;
      }
    }
    return false;
  }

  void clear() {
    for (std::uint64_t bucket = 0; bucket < size_; ++bucket) {
      for (DictEntry* entry = table_[bucket]; entry != nullptr;) {
        DictEntry* next = entry->next;
        Sds::release(memory_, entry->key);
        release_object(memory_, entry->value);
        memory_.release(entry, sizeof(DictEntry));
        entry = next;
      }
      table_[bucket] = nullptr;
    }
    used_ = 0;
  }

 private:
  static std::uint64_t hash(const char* key, std::size_t length) {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (std::size_t i = 0; i < length; ++i) h = (h ^ static_cast<unsigned char>(key[i])) * 1099511628211ull;
    return h;
  }

  void resize(std::uint64_t new_size) {
    auto** new_table = static_cast<DictEntry**>(memory_.allocate_zeroed(new_size, sizeof(DictEntry*)));
    for (std::uint64_t bucket = 0; bucket < size_; ++bucket) {
      for (DictEntry* entry = table_[bucket]; entry != nullptr;) {
        DictEntry* next = entry->next;
        std::uint64_t target = hash(entry->key, Sds::length(entry->key)) & (new_size - 1);
        entry->next = new_table[target];
        new_table[target] = entry;
        entry = next;
      }
    }
    if (table_ != nullptr) memory_.release(table_, size_ * sizeof(DictEntry*));
    table_ = new_table;
    size_ = new_size;
  }

  Accounting& memory_;
  DictEntry** table_ = nullptr;
  std::uint64_t size_ = 0;
  std::uint64_t used_ = 0;
};

std::size_t format_key(char* buffer, std::uint64_t index) {
  return static_cast<std::size_t>(std::snprintf(buffer, 32, "key:%010llu", static_cast<unsigned long long>(index)));
}

void run_kv(const Params& params, const std::string&, const RunContext&, MetricSink& sink) {
  std::uint64_t list_items = params.count("list_items");
  std::uint64_t keys = params.count("keys");
  std::uint64_t value_min = params.size("value_min"), value_max = params.size("value_max");
  std::uint64_t refill_min = params.size("refill_min"), refill_max = params.size("refill_max");
  if (value_min > value_max || refill_min > refill_max || value_max > 250 || refill_max > 250) {
    throw std::invalid_argument("kv: value sizes must satisfy min <= max <= 250 (sdshdr8)");
  }
  Accounting memory;
  FastRandom random(42);
  char value[256];
  std::memset(value, 'v', sizeof value);
  char key[32];
  std::uint64_t commands = 0;

  auto report_phase = [&](const char* phase) {
    double requested = static_cast<double>(memory.requested());
    double rss = static_cast<double>(resident_bytes().value_or(0));
    sink.metric(std::string("requested_bytes_") + phase, requested);
    sink.metric(std::string("rss_bytes_") + phase, rss);
    sink.metric(std::string("frag_ratio_") + phase, requested > 0 ? rss / requested : 0);
    sink.log(strprintf("after %-7s used_memory(requested) %12.0f  used_memory_rss %12.0f  mem_fragmentation_ratio %.2f", phase,
                       requested, rss, requested > 0 ? rss / requested : 0));
  };

  auto start = SteadyClock::now();
  List list;
  for (std::uint64_t i = 0; i < list_items; ++i) list.push_back(memory, make_string_object(memory, "x", 1));
  commands += list_items;
  report_phase("rpush");

  Dict dict(memory);
  for (std::uint64_t i = 0; i < keys; ++i) {
    dict.set(key, format_key(key, i), value, random.between(value_min, value_max));
  }
  commands += keys;
  report_phase("set");

  std::uint64_t deleted = 0;
  for (std::uint64_t i = 0; i < keys; ++i) {
    if (random.unit() < 0.5) deleted += dict.erase(key, format_key(key, i)) ? 1 : 0;
  }
  commands += keys;
  report_phase("del");

  for (std::uint64_t i = 0; i < deleted; ++i) {
    dict.set(key, format_key(key, keys + i), value, random.between(refill_min, refill_max));
  }
  commands += deleted;
  report_phase("refill");
  double requested = static_cast<double>(memory.requested());
  double rss = static_cast<double>(resident_bytes().value_or(0));
  double seconds = seconds_between(start, SteadyClock::now());

  auto flush_start = SteadyClock::now();
  dict.clear();
  list.clear(memory);
  double flush_seconds = seconds_between(flush_start, SteadyClock::now());
  report_phase("flush");
  sink.metric("flush_ms", flush_seconds * 1e3);

  sink.throughput(static_cast<double>(commands), seconds);
  sink.metric("requested_bytes", requested);
  sink.metric("rss_bytes", rss);
  sink.metric("frag_ratio", requested > 0 ? rss / requested : 0);
}

}  // namespace

Workload make_kv_workload() {
  Workload workload;
  workload.name = "kv";
  workload.description =
      "Redis-like store: 1M RPUSH of 'x' (node+robj+sds each), SET small keys, DEL a random half, refill with "
      "other value sizes; requested bytes, RSS and fragmentation ratio after each phase";
  workload.ops_unit = "commands";
  workload.params = {
      {"list_items", "1M", "1M", "RPUSH dummy x count"},
      {"keys", "2M", "500k", "keys SET in phase 2"},
      {"value_min", "8", "8", "smallest value in phase 2 (bytes)"},
      {"value_max", "24", "24", "largest value in phase 2"},
      {"refill_min", "40", "40", "smallest value of the refill"},
      {"refill_max", "120", "120", "largest value of the refill"},
  };
  workload.run = run_kv;
  workload.chart_rss_over_time = true;
  workload.metric_columns = {{"frag_ratio", "RSS/requested", "%.2f", ""}, {"flush_ms", "flush ms", "%.0f", ""}};
  return workload;
}

}  // namespace mallard::tool
