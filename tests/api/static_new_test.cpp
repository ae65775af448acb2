// operator new from the static library, which uses the program's C++ runtime
// directly (the shared library looks it up by name instead; see
// src/api/new_delete.cpp and override_test): the blocks are mallard's,
// failure calls the new-handler and throws std::bad_alloc, and the nothrow
// forms turn a handler's exception into nullptr.
#include <mallard/mallard.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <new>

namespace {

int g_handler_calls = 0;
void throwing_handler() {
  ++g_handler_calls;
  throw std::bad_alloc();
}
void uninstalling_handler() {
  ++g_handler_calls;
  std::set_new_handler(nullptr);
}

void* volatile g_sink;
size_t huge() {
  volatile size_t n = SIZE_MAX - 100;
  return n;
}

}  // namespace

TEST(StaticLibrary, OperatorNewServesMallardBlocks) {
  mallard_stats before{}, after{};
  mallard_stats_get(&before);
  void* p = ::operator new(100000);
  mallard_stats_get(&after);
  EXPECT_GE(after.allocated - before.allocated, 100000u);
  mallard_free(p);  // reported and aborted if it were not mallard's
}

TEST(StaticLibrary, FailureThrowsBadAlloc) {
  EXPECT_THROW(g_sink = ::operator new(huge()), std::bad_alloc);
  EXPECT_THROW(g_sink = ::operator new[](huge(), std::align_val_t{64}), std::bad_alloc);
}

TEST(StaticLibrary, FailureCallsTheNewHandlerFirst) {
  g_handler_calls = 0;
  std::set_new_handler(uninstalling_handler);
  EXPECT_THROW(g_sink = ::operator new(huge()), std::bad_alloc);
  EXPECT_EQ(g_handler_calls, 1);
}

TEST(StaticLibrary, NothrowFormsReturnNullWhenTheHandlerThrows) {
  g_handler_calls = 0;
  std::set_new_handler(throwing_handler);
  EXPECT_EQ(::operator new(huge(), std::nothrow), nullptr);
  EXPECT_EQ(::operator new[](huge(), std::align_val_t{64}, std::nothrow), nullptr);
  EXPECT_EQ(g_handler_calls, 2);
  std::set_new_handler(nullptr);
  EXPECT_EQ(::operator new(huge(), std::nothrow), nullptr);
  EXPECT_EQ(g_handler_calls, 2);
}
