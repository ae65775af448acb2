// What one madvise(MADV_DONTNEED) costs the calling thread: 2,000 times,
// PAGES pages (default 8) of a 1 MiB range are written and the whole range
// purged (only the purge is timed). With a first argument of 1, another
// thread of the process keeps writing its own memory on the other CPU
// meanwhile, so the kernel has to shoot down that CPU's TLB too.
//
//   cc -O2 -pthread bench/madvise_cost.c -o /tmp/madvise_cost
//   /tmp/madvise_cost 0; /tmp/madvise_cost 1; /tmp/madvise_cost 0 33; /tmp/madvise_cost 0 34
//
// The kernel flushes the TLB entries of the zapped range one page at a time
// when the range it zapped (first to last present page) spans at most 33
// pages (x86's tlb_single_page_flush_ceiling), and the whole TLB past that.
// On this virtual machine a one-page flush costs about 3.3 us, so 33 pages
// take longer to purge than 34 (DESIGN.md, "No medium purge at thread exit").
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "tool_common.h"

static volatile int stop;
static char* other_memory;

static void* keep_writing(void* arg) {
  (void)arg;
  while (!stop) {
    for (int i = 0; i < 8; i++) other_memory[i * 4096]++;
  }
  return NULL;
}

int main(int argc, char** argv) {
  int with_thread = argc > 1 && atoi(argv[1]) != 0;
  int pages = argc > 2 ? atoi(argv[2]) : 8;
  size_t range = (size_t)1 << 20;
  if (pages < 1 || pages > 256) pages = 8;
  other_memory = mmap(NULL, range, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char* purged = mmap(NULL, range, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (other_memory == MAP_FAILED || purged == MAP_FAILED) return 1;
  pthread_t thread;
  if (with_thread && pthread_create(&thread, NULL, keep_writing, NULL) != 0) return 1;
  const int rounds = 2000;
  double total = 0;
  for (int i = 0; i < rounds; i++) {
    for (int j = 0; j < pages; j++) purged[j * 4096] = 1;
    double start = now_seconds();
    if (madvise(purged, range, MADV_DONTNEED) != 0) return 1;
    total += now_seconds() - start;
  }
  stop = 1;
  if (with_thread) pthread_join(thread, NULL);
  printf("%s, %d pages: %.1f us per madvise\n", with_thread ? "another thread running" : "alone", pages,
         total / rounds * 1e6);
  return 0;
}
