// Helpers shared by mallard's API tests: content stamps, optimizer barriers,
// RSS measurement and child processes.
#pragma once

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

extern "C" char** environ;

// Set by tests/api/CMakeLists.txt under ThreadSanitizer (or ASan), which
// makes every memory access several times slower: the long tests scale
// their operation counts down.
#ifndef MALLARD_TEST_SANITIZED
#define MALLARD_TEST_SANITIZED 0
#endif

namespace mallard_test {

inline constexpr bool kSanitized = MALLARD_TEST_SANITIZED != 0;

// Hides a value from the optimizer. Sizes such as SIZE_MAX passed to
// malloc would otherwise trigger -Walloc-size-larger-than (an error with
// -Werror), and the compiler could fold or drop the call.
template <class T>
inline T opaque(T value) {
  asm volatile("" : "+r"(value));
  return value;
}

// Makes the compiler believe that `p` (and what it points to) is used, so
// that a malloc/free or new/delete pair cannot be elided.
inline void escape(const void* p) { asm volatile("" : : "g"(p) : "memory"); }

inline bool is_aligned(const void* p, size_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

inline size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

inline size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// --- content stamps -------------------------------------------------------
//
// A stamp fills a block with a pattern derived from a 64-bit tag (for
// instance the block's address and size, or a serial number) so that any
// byte overwritten by another block, by allocator metadata or by a bad copy
// is caught when the block is verified.

// Byte i of a stamp is byte i%8 of a 64-bit hash of (tag, i/8), so that the
// bulk loops below compute one hash per 8 bytes.
inline uint64_t stamp_word(uint64_t tag, size_t word_index) {
  uint64_t x = tag ^ (static_cast<uint64_t>(word_index) * 0x9E3779B97F4A7C15ull);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return x;
}

inline uint8_t stamp_byte(uint64_t tag, size_t offset) {
  return static_cast<uint8_t>(stamp_word(tag, offset / 8) >> (offset % 8 * 8));
}

// Writes the stamp over bytes [begin, end) of the block at `bytes`.
inline void stamp_bytes(uint8_t* bytes, size_t begin, size_t end, uint64_t tag) {
  size_t i = begin;
  for (; i < end && i % 8 != 0; ++i) bytes[i] = stamp_byte(tag, i);
  for (; i + 8 <= end; i += 8) {
    uint64_t w = stamp_word(tag, i / 8);
    for (size_t k = 0; k < 8; ++k) bytes[i + k] = static_cast<uint8_t>(w >> (k * 8));
  }
  for (; i < end; ++i) bytes[i] = stamp_byte(tag, i);
}

// First offset in [begin, end) that does not carry the stamp, or SIZE_MAX.
inline size_t stamp_bytes_mismatch(const uint8_t* bytes, size_t begin, size_t end, uint64_t tag) {
  size_t i = begin;
  for (; i < end && i % 8 != 0; ++i)
    if (bytes[i] != stamp_byte(tag, i)) return i;
  for (; i + 8 <= end; i += 8) {
    uint64_t w = stamp_word(tag, i / 8);
    for (size_t k = 0; k < 8; ++k)
      if (bytes[i + k] != static_cast<uint8_t>(w >> (k * 8))) return i + k;
  }
  for (; i < end; ++i)
    if (bytes[i] != stamp_byte(tag, i)) return i;
  return SIZE_MAX;
}

inline uint64_t stamp_tag(const void* p, size_t size, uint64_t salt = 0) {
  return (reinterpret_cast<uintptr_t>(p) * 0xD6E8FEB86659FD93ull) ^ (size * 0x9E3779B97F4A7C15ull) ^ salt;
}

// Byte ranges a stamp covers. Blocks up to kFullStampLimit are covered
// whole; larger ones at their head, their tail and 64 bytes of every page,
// which catches misplaced pages and overlaps at a fraction of the cost.
inline constexpr size_t kFullStampLimit = 64 * 1024;

template <class F>
inline void for_each_stamped_range(size_t size, F&& f) {
  if (size <= kFullStampLimit) {
    f(size_t{0}, size);
    return;
  }
  f(size_t{0}, size_t{4096});
  for (size_t off = 4096; off + 4096 < size; off += 4096) f(off, size_t{64});
  f(size - 4096, size_t{4096});
}

inline void stamp(void* p, size_t size, uint64_t tag) {
  for_each_stamped_range(size, [&](size_t begin, size_t len) { stamp_bytes(static_cast<uint8_t*>(p), begin, begin + len, tag); });
}

// Returns the offset of the first byte that does not match the stamp, or
// SIZE_MAX when the block is intact.
inline size_t stamp_mismatch(const void* p, size_t size, uint64_t tag) {
  size_t bad = SIZE_MAX;
  for_each_stamped_range(size, [&](size_t begin, size_t len) {
    if (bad == SIZE_MAX) bad = stamp_bytes_mismatch(static_cast<const uint8_t*>(p), begin, begin + len, tag);
  });
  return bad;
}

// Full stamps cover every byte. Use them when a prefix of the block is
// verified later (realloc): sparse stamps depend on the block's size.
inline void stamp_all(void* p, size_t size, uint64_t tag, size_t from = 0) {
  stamp_bytes(static_cast<uint8_t*>(p), from, size, tag);
}

inline size_t stamp_all_mismatch(const void* p, size_t size, uint64_t tag) {
  return stamp_bytes_mismatch(static_cast<const uint8_t*>(p), 0, size, tag);
}

// Index of the first nonzero byte of [p, p+size), or SIZE_MAX.
inline size_t first_nonzero(const void* p, size_t size) {
  const auto* bytes = static_cast<const uint8_t*>(p);
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {  // a word at a time, then find the byte
    uint64_t w;
    std::memcpy(&w, bytes + i, 8);
    if (w != 0) break;
  }
  for (; i < size; ++i)
    if (bytes[i] != 0) return i;
  return SIZE_MAX;
}

// --- process measurements -------------------------------------------------

// Resident set size of this process in bytes (second field of statm).
inline size_t rss_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long total = 0, resident = 0;
  int n = std::fscanf(f, "%lu %lu", &total, &resident);
  std::fclose(f);
  return n == 2 ? resident * page_size() : 0;
}

// --- child processes ------------------------------------------------------

struct ChildResult {
  int status = -1;  // as returned by waitpid
  std::string out;
  std::string err;
  bool exited_with(int code) const { return WIFEXITED(status) && WEXITSTATUS(status) == code; }
};

// Runs argv[0] with the given arguments; `env_overrides` are NAME=VALUE
// strings that replace or extend this process's environment (a bare NAME
// removes it). Captures stdout and stderr.
inline ChildResult run_child(const std::vector<std::string>& argv, const std::vector<std::string>& env_overrides = {}) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& o : env_overrides)
      if (o.substr(0, o.find('=')) == name) overridden = true;
    if (!overridden) env_strings.push_back(entry);
  }
  for (const auto& o : env_overrides)
    if (o.find('=') != std::string::npos) env_strings.push_back(o);

  // Everything the child needs is built before fork: between fork and exec
  // only async-signal-safe calls are allowed.
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env_strings) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  ChildResult result;
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) return result;
  pid_t pid = fork();
  if (pid < 0) return result;
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[0]);
    close(err_pipe[1]);
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  while (waitpid(pid, &result.status, 0) < 0 && errno == EINTR) {
  }
  return result;
}

inline std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("signal ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

inline std::string self_exe() {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return {};
  path[n] = '\0';
  return path;
}

inline std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

}  // namespace mallard_test
