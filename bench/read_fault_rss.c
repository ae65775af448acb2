/* Whether reading memory never written costs RSS on this machine's kernel:
 * maps 1 MiB of anonymous memory, reads one byte in each of its first 200
 * pages, and prints the mapping's RSS from /proc/self/smaps. With the
 * kernel's shared zero page the reads cost nothing (0 KiB); on the
 * development machine (6.18, a PVM guest) they cost 800 KiB, a page each,
 * so every read of an untouched global or descriptor is a resident page
 * (DESIGN.md, "Small globals on one page"). Not part of the build:
 *   cc -O2 bench/read_fault_rss.c -o /tmp/read_fault_rss && /tmp/read_fault_rss */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

int main(void) {
  enum { kPages = 200 };
  volatile char* memory = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return 1;
  int sum = 0;
  for (int i = 0; i < kPages; ++i) sum += memory[i * 4096];
  FILE* smaps = fopen("/proc/self/smaps", "r");
  if (smaps == NULL) return 1;
  char line[512];
  int ours = 0;
  while (fgets(line, sizeof line, smaps)) {
    unsigned long low, high;
    if (sscanf(line, "%lx-%lx ", &low, &high) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      ours = low <= (uintptr_t)memory && (uintptr_t)memory < high;
    } else if (ours && strncmp(line, "Rss:", 4) == 0) {
      printf("read %d untouched pages: the mapping's %s", kPages, line);
    }
  }
  return sum;
}
