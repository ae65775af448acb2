/* What purging many separate ranges costs: 2,048 ranges of 64 KiB (every
 * other 64 KiB of a touched 256 MiB mapping), by one madvise(MADV_DONTNEED)
 * each (mode 0) or by process_madvise on this process with up to PER ranges
 * a call (mode 1). Prints the calls, the time and the time per range.
 * Not part of the build:
 *   cc -O2 bench/purge_ranges_cost.c -o /tmp/purge_ranges_cost
 *   /tmp/purge_ranges_cost 0; /tmp/purge_ranges_cost 1 64
 * (DESIGN.md, "Purges go out in batches"). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tool_common.h"

#define PIDFD_SELF_ (-10000)

int main(int argc, char** argv) {
  const size_t total = (size_t)256 << 20, chunk = (size_t)64 << 10;
  int batched = argc > 1 && atoi(argv[1]) != 0;
  size_t per = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;
  if (per == 0 || per > 1024) per = 64;
  char* m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 1;
  memset(m, 1, total);
  struct iovec ranges[1024];
  size_t count = 0, calls = 0, n = 0;
  double start = now_seconds();
  for (size_t offset = 0; offset < total; offset += 2 * chunk, n++) {
    if (!batched) {
      madvise(m + offset, chunk, MADV_DONTNEED);
      calls++;
      continue;
    }
    ranges[count].iov_base = m + offset;
    ranges[count].iov_len = chunk;
    if (++count == per || offset + 2 * chunk >= total) {
      if (syscall(SYS_process_madvise, PIDFD_SELF_, ranges, count, MADV_DONTNEED, 0) < 0) {
        printf("process_madvise: %s\n", strerror(errno));
        return 1;
      }
      calls++;
      count = 0;
    }
  }
  double seconds = now_seconds() - start;
  printf("%s: %zu calls for %zu ranges, %.1f ms (%.1f us a range)\n", batched ? "process_madvise" : "madvise", calls, n,
         seconds * 1e3, seconds * 1e6 / (double)n);
  return 0;
}
