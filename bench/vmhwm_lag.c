/* Whether VmHWM can miss part of a peak on this kernel. Since Linux 6.2 a
 * process's RSS counters are per-CPU counters: a CPU folds its count into
 * the shared one only every 32 pages or so. /proc/self/status reads VmRSS
 * exactly (it sums the CPUs), but the kernel records the high-water mark,
 * just before it unmaps or purges memory, from the shared count alone.
 * The main thread first faults in 2 MiB of its own (well past the batch, so
 * counted); then a thread pinned to each CPU faults in PAGES pages (fewer
 * than the batch, so they stay in its CPU's count); the main thread reads
 * VmRSS and VmHWM, unmaps its 2 MiB, and reads VmHWM again. An exact
 * high-water mark cannot fall below the VmRSS read before; here it does,
 * by the pages still in the CPUs' counts. Not part of the build:
 *   cc -O2 -pthread bench/vmhwm_lag.c -o /tmp/vmhwm_lag && /tmp/vmhwm_lag 24
 * (docs/target-gaps.md, "Peak RSS geometric mean": what it means for the
 * peaks the benchmark reports). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static long status_kib(const char* name) {
  char text[8192];
  FILE* f = fopen("/proc/self/status", "r");
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  const char* field = strstr(text, name);
  return field == NULL ? -1 : strtol(field + strlen(name), NULL, 10);
}

static long pages;

static void* fault_on_cpu(void* cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET((int)(long)cpu, &set);
  sched_setaffinity(0, sizeof set, &set);
  char* p = mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) abort();
  for (long i = 0; i < pages; ++i) p[i * 4096] = 1;
  return NULL;
}

int main(int argc, char** argv) {
  pages = argc > 1 ? atol(argv[1]) : 24;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const long own_bytes = 2L << 20;
  char* own = mmap(NULL, own_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (own == MAP_FAILED) abort();
  for (long i = 0; i < own_bytes; i += 4096) own[i] = 1;
  pthread_t threads[64];
  for (long c = 0; c < cpus && c < 64; ++c) pthread_create(&threads[c], NULL, fault_on_cpu, (void*)c);
  for (long c = 0; c < cpus && c < 64; ++c) pthread_join(threads[c], NULL);
  long rss = status_kib("VmRSS:"), hwm_before = status_kib("VmHWM:");
  munmap(own, own_bytes);
  long hwm_after = status_kib("VmHWM:");
  printf("%ld CPUs, %ld pages each: VmRSS %ld, VmHWM %ld; after unmapping 2 MiB VmHWM %ld KiB (%ld below the VmRSS read)\n",
         cpus, pages, rss, hwm_before, hwm_after, rss - hwm_after);
  return 0;
}
