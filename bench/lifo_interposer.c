/* An experiment, not an allocator: a per-thread stack of freed blocks for
 * each of mallard's size classes, in front of the allocator preloaded after
 * it, to measure what handing out the most recently freed block of a class
 * first (tcmalloc's and jemalloc's thread caches) would give mallard. free()
 * pushes a block of at most LIFO_MAX bytes (default 128 KiB) onto its class's
 * stack while that holds fewer than LIFO_DEPTH (default 32, at most 256);
 * malloc() pops from the request's class. Cached blocks stay allocated in
 * mallard: no double-free check, no statistics, and nothing gives them back
 * at thread exit. The class of a freed block comes from malloc_usable_size
 * (a medium class that is a multiple of 4 KiB reports one cache line more,
 * page.cpp's block_stride). DESIGN.md "Where churn's time goes". Not part of
 * the build:
 *   cc -O2 -shared -fPIC bench/lifo_interposer.c -o /tmp/lifo.so -ldl
 *   LD_PRELOAD="/tmp/lifo.so build/src/libmallard.so" PROGRAM... */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

enum { kClasses = 96, kMaxDepth = 256 };

static void* (*next_malloc)(size_t);
static void (*next_free)(void*);
static unsigned depth = 32;
static size_t largest = 128 * 1024;

struct stack {
  unsigned count;
  void* blocks[kMaxDepth];
};
static __thread struct stack cache[kClasses];

/* mallard's size_class_of (src/core/size_class.hpp), for sizes up to 128 KiB. */
static unsigned size_class_of(size_t size) {
  if (size <= 128) return size <= 16 ? 1 : (unsigned)((size + 7) / 8 - 1);
  size_t s = size - 1;
  unsigned bit = 63u - (unsigned)__builtin_clzll(s);
  unsigned sub = (unsigned)((s >> (bit - 3)) & 7);
  return 15 + (bit - 7) * 8 + sub + 1;
}

__attribute__((constructor)) static void init(void) {
  next_malloc = (void* (*)(size_t))dlsym(RTLD_NEXT, "malloc");
  next_free = (void (*)(void*))dlsym(RTLD_NEXT, "free");
  const char* text = getenv("LIFO_DEPTH");
  if (text != NULL) depth = (unsigned)atoi(text) < kMaxDepth ? (unsigned)atoi(text) : kMaxDepth;
  text = getenv("LIFO_MAX");
  if (text != NULL) largest = (size_t)atol(text) < 128 * 1024 ? (size_t)atol(text) : 128 * 1024;
}

void* malloc(size_t size) {
  if (next_malloc == NULL) init();
  if (size != 0 && size <= largest) {
    struct stack* stack = &cache[size_class_of(size)];
    if (stack->count != 0) return stack->blocks[--stack->count];
  }
  return next_malloc(size);
}

void free(void* block) {
  if (block == NULL) return;
  if (next_free == NULL) init();
  size_t usable = malloc_usable_size(block);
  if (usable > 8192 && usable % 4096 == 64) usable -= 64;
  if (usable <= largest) {
    struct stack* stack = &cache[size_class_of(usable)];
    if (stack->count < depth) {
      stack->blocks[stack->count++] = block;
      return;
    }
  }
  next_free(block);
}
