// Messages on stderr without malloc or stdio (both may be unusable when the
// allocator reports a problem), and the fatal error reports for bad frees.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mallard {

// A fixed-size line builder; text beyond its capacity is cut.
class Message {
 public:
  Message& add(const char* text);
  Message& add(const char* text, size_t len);
  Message& add_u64(uint64_t value);
  Message& add_hex(uintptr_t value);  // 0x... as printf's %p prints it
  void write() const;                  // to stderr
  const char* data() const { return buf_; }
  size_t size() const { return len_; }

 private:
  char buf_[512];
  size_t len_ = 0;
};

// Fatal: prints "mallard: error: <what>(): <problem> <address>..." and aborts.
[[noreturn]] void report_invalid_pointer(const char* what, const void* p);
[[noreturn]] void report_interior_pointer(const char* what, const void* p, const void* block);
[[noreturn]] void report_double_free(const char* what, const void* p);

}  // namespace mallard
