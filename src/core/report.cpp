#include "core/report.hpp"

#include <cstring>

#include "core/config.hpp"
#include "os/os.hpp"

namespace mallard {

MALLARD_RARE Message& Message::add(const char* text, size_t len) {
  size_t room = sizeof buf_ - len_;
  if (len > room) len = room;
  memcpy(buf_ + len_, text, len);
  len_ += len;
  return *this;
}

MALLARD_RARE Message& Message::add(const char* text) { return add(text, strlen(text)); }

MALLARD_RARE Message& Message::add_u64(uint64_t value) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  char out[24];
  for (size_t i = 0; i < n; ++i) out[i] = tmp[n - 1 - i];
  return add(out, n);
}

MALLARD_RARE Message& Message::add_hex(uintptr_t value) {
  if (value == 0) return add("(nil)");
  char tmp[20];
  size_t n = 0;
  while (value != 0) {
    tmp[n++] = "0123456789abcdef"[value & 15];
    value >>= 4;
  }
  char out[20] = {'0', 'x'};
  for (size_t i = 0; i < n; ++i) out[2 + i] = tmp[n - 1 - i];
  return add(out, n + 2);
}

MALLARD_RARE void Message::write() const { os::write_stderr(buf_, len_); }

MALLARD_RARE void report_invalid_pointer(const char* what, const void* p) {
  Message m;
  m.add("mallard: error: ").add(what).add("(): invalid pointer ");
  m.add_hex(reinterpret_cast<uintptr_t>(p)).add(" (not allocated by mallard)\n").write();
  os::abort_process();
}

MALLARD_RARE void report_interior_pointer(const char* what, const void* p, const void* block) {
  Message m;
  m.add("mallard: error: ").add(what).add("(): interior pointer ");
  m.add_hex(reinterpret_cast<uintptr_t>(p)).add(" (block at ");
  m.add_hex(reinterpret_cast<uintptr_t>(block)).add(")\n").write();
  os::abort_process();
}

MALLARD_RARE void report_double_free(const char* what, const void* p) {
  Message m;
  m.add("mallard: error: ").add(what).add("(): double free of ");
  m.add_hex(reinterpret_cast<uintptr_t>(p)).add("\n").write();
  os::abort_process();
}

}  // namespace mallard
