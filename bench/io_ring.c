/* The mixed:read-64k loop of `mallard bench` in 30 lines, for studying it
 * without the harness: one job keeps 8 I/Os in flight; each I/O allocates a
 * request (232 bytes) and a buffer, the "device" writes one byte per 4 KiB
 * page of the buffer and its last byte at completion, then both are freed.
 * Prints nanoseconds per I/O; with a third argument, the first addresses.
 * Not part of the build (a study aid; see docs/DESIGN.md, Known gaps):
 *   cc -O2 bench/io_ring.c -o /tmp/io_ring
 *   LD_PRELOAD=build/src/libmallard.so /tmp/io_ring 4000000 65536 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct io {
  uint64_t offset, length;
  int is_read;
  unsigned char* buffer;
  char driver_state[200];
};

static void touch_pages(unsigned char* block, size_t bytes) {
  volatile unsigned char* b = block;
  for (size_t offset = 0; offset < bytes; offset += 4096) b[offset] = (unsigned char)offset;
  b[bytes - 1] = 1;
}

int main(int argc, char** argv) {
  long ios = argc > 1 ? atol(argv[1]) : 4000000;
  size_t length = argc > 2 ? (size_t)atol(argv[2]) : 65536;
  int show = argc > 3;
  struct io* ring[8] = {0};
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (long i = 0; i < ios; i++) {
    struct io** slot = &ring[i & 7];
    if (*slot != NULL) {
      touch_pages((*slot)->buffer, (*slot)->length);
      free((*slot)->buffer);
      free(*slot);
    }
    struct io* unit = malloc(sizeof *unit);
    unit->length = length;
    unit->is_read = 1;
    unit->buffer = malloc(length);
    if (show && i < 10) printf("request %p buffer %p\n", (void*)unit, (void*)unit->buffer);
    *slot = unit;
  }
  clock_gettime(CLOCK_MONOTONIC, &end);
  printf("%.1f ns per I/O\n", ((end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec)) / ios);
  return 0;
}
