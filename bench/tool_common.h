/* What the standalone tools in bench/ share (each is built by its own `cc`
 * line, given in its header; none is part of the build). */
#pragma once

#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static inline double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The sizes workload's step, `count` times: allocate `bytes`, write one byte
 * in each OS page, free. */
static inline void alloc_touch_free(size_t bytes, long count) {
  for (long i = 0; i < count; i++) {
    char* p = (char*)malloc(bytes);
    if (p == NULL) abort();
    for (size_t o = 0; o < bytes; o += 4096) ((volatile char*)p)[o] = 1;
    __asm__ volatile("" : : "r"(p) : "memory");
    free(p);
  }
}

/* xorshift64: the tools' random numbers (seed `*x` with any non-zero value). */
static inline uint64_t next_random(uint64_t* x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

/* A size log-uniform from 8 bytes to 8 * 2^log2_span, as the churn workload
 * draws them (link with -lm). */
static inline size_t log_uniform_size(uint64_t* x, double log2_span) {
  double unit = (double)(next_random(x) >> 11) / 9007199254740992.0;
  return (size_t)(8.0 * exp2(unit * log2_span));
}

/* What the workloads write into a new block (tools/workloads/common.hpp's
 * touch_pages): a byte per 4 KiB from its start, and its last byte. */
static inline void touch_pages(void* block, size_t bytes) {
  volatile unsigned char* p = (volatile unsigned char*)block;
  for (size_t offset = 0; offset < bytes; offset += 4096) p[offset] = (unsigned char)offset;
  if (bytes > 0) p[bytes - 1] = 1;
}

/* Reads the whole of `path` (a /proc file) into `text`, at most `capacity`
 * - 1 bytes, and ends it with a 0; returns the bytes read (0 if it cannot be
 * opened). No stdio: the smaps tools run it from a thread sampling a
 * program, and in destructors after the program has closed its streams. */
static inline size_t read_whole_file(const char* path, char* text, size_t capacity) {
  int fd = open(path, O_RDONLY);
  size_t used = 0;
  ssize_t got;
  while (fd >= 0 && used + 1 < capacity && (got = read(fd, text + used, capacity - 1 - used)) > 0) used += (size_t)got;
  if (fd >= 0) close(fd);
  text[used] = 0;
  return used;
}

/* This process's resident memory now, in KiB (/proc/self/statm). */
static inline long resident_kib(void) {
  char text[128];
  if (read_whole_file("/proc/self/statm", text, sizeof text) == 0) return 0;
  long size = 0, resident = 0;
  sscanf(text, "%ld %ld", &size, &resident);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}
