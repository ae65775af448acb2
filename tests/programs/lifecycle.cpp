// Allocation outside main: in a constructor that runs before main, in C++
// static initializers and destructors, in thread_local destructors (of
// threads and of the main thread), and in an atexit handler that runs after
// every static destructor. Blocks allocated before main are freed after it.
// Linked with libmallard (not preloaded): its malloc is mallard's.
// Exits 0 and prints "lifecycle: ok" last; any problem prints a line and
// exits 1 (a crash or a hang fails the test too).
#include <mallard/mallard.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "lifecycle: FAILED: %s\n", what);
    ++failures;
  }
}

void* before_main_block = nullptr;
void* before_main_buffer = nullptr;  // made and grown by realloc: an extent (src/core/extent.hpp)
void* handed_to_exit_block = nullptr;

// Registered first (from the earliest constructor), so it runs last: after
// main returned, after every static destructor.
void last_at_exit() {
  void* p = std::malloc(4096);
  check(p != nullptr, "malloc in the last atexit handler");
  std::memset(p, 1, 4096);
  check(mallard_malloc_usable_size(p) >= 4096, "usable size in the last atexit handler");
  std::free(p);
  // A buffer that realloc makes and grows after every destructor ran.
  auto* buffer = static_cast<char*>(std::realloc(nullptr, 3000));
  check(buffer != nullptr, "realloc from NULL in the last atexit handler");
  std::memset(buffer, 3, 3000);
  buffer = static_cast<char*>(std::realloc(buffer, 50000));
  check(buffer != nullptr && buffer[2999] == 3, "realloc growth in the last atexit handler");
  std::free(buffer);
  check(before_main_buffer != nullptr && static_cast<char*>(before_main_buffer)[19999] == 4,
        "buffer grown before main intact at exit");
  std::free(before_main_buffer);
  std::free(before_main_block);  // allocated before main
  std::free(handed_to_exit_block);
  if (failures != 0) {
    std::fprintf(stderr, "lifecycle: %d failure(s)\n", failures);
    std::fflush(stderr);
    _exit(1);
  }
  std::printf("lifecycle: ok\n");
  std::fflush(stdout);
}

__attribute__((constructor(101))) void before_everything() {
  before_main_block = std::malloc(1000);
  check(before_main_block != nullptr, "malloc in a constructor before main");
  std::memset(before_main_block, 2, 1000);
  check(mallard_malloc_usable_size(before_main_block) >= 1000, "usable size before main");
  before_main_buffer = std::realloc(std::realloc(nullptr, 3000), 20000);
  check(before_main_buffer != nullptr, "realloc before main");
  if (before_main_buffer != nullptr) std::memset(before_main_buffer, 4, 20000);
  std::atexit(last_at_exit);
}

// A static object whose constructor and destructor allocate.
struct StaticHolder {
  std::vector<std::string> strings;
  StaticHolder() {
    for (int i = 0; i < 1000; ++i) strings.emplace_back(100 + i % 50, 'g');
  }
  ~StaticHolder() {
    check(strings.size() == 1000 && strings[999] == std::string(149, 'g'), "static object intact at exit");
    strings.clear();
    strings.shrink_to_fit();
    for (int i = 0; i < 1000; ++i) strings.emplace_back(30, 'h');  // allocate again during exit
    handed_to_exit_block = std::malloc(50000);
    check(handed_to_exit_block != nullptr, "malloc in a static destructor");
  }
} static_holder;

// A thread_local whose destructor frees and allocates: it runs at thread
// exit, possibly after mallard has already seen the thread go.
struct ThreadLocalHolder {
  std::string* text = nullptr;
  void touch() {
    if (text == nullptr) text = new std::string(500, 't');
  }
  ~ThreadLocalHolder() {
    delete text;
    void* p = std::malloc(777);
    check(p != nullptr, "malloc in a thread_local destructor");
    std::free(p);
  }
};
thread_local ThreadLocalHolder thread_holder;

}  // namespace

int main() {
  std::vector<void*> left_by_threads(64, nullptr);
  std::vector<std::thread> threads;
  for (int i = 0; i < 64; ++i) {
    threads.emplace_back([i, &left_by_threads] {
      thread_holder.touch();
      left_by_threads[i] = std::malloc(64 + i * 100);  // freed by main after the thread exits
    });
  }
  for (auto& t : threads) t.join();
  for (void* p : left_by_threads) std::free(p);
  thread_holder.touch();  // the main thread's destructor runs during exit
  check(mallard_malloc_usable_size(before_main_block) >= 1000, "block allocated before main still ours");
  return 0;
}
