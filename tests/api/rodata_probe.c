/* Nothing libmallard runs reads its .rodata (DESIGN.md "No reads of
 * .rodata"): the kernel maps up to 16 pages around a read fault in a file
 * mapping, so one read there made the library's whole read-only mapping
 * (its messages and unwind tables, 16 KiB) resident in every process.
 *
 * This program finds that mapping (libmallard's read-only PT_LOAD after its
 * first executable one), checks that start-up left none of it resident,
 * then makes it unreadable and runs the allocator's paths: small, medium,
 * large and extent blocks, calloc, realloc, the aligned calls, usable
 * sizes, frees from other threads, threads that exit with blocks live, trim
 * and statistics. A read reports the address and the instruction's offset
 * in the library (`objdump -d` finds the function) and exits 1. Exits 0
 * when none happens. */
#define _GNU_SOURCE
#include <link.h>
#include <malloc.h>
#include <mallard/mallard.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "layout_probe_support.h"

static uintptr_t lib_base, ro_start, ro_end;

static int find_read_only_segment(struct dl_phdr_info* info, size_t size, void* unused) {
  (void)size, (void)unused;
  if (info->dlpi_name == NULL || strstr(info->dlpi_name, "libmallard") == NULL) return 0;
  ElfW(Off) text_offset = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    /* The first executable one: the hot text (rare code follows .rodata). */
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && text_offset == 0) text_offset = ph->p_offset;
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && ph->p_flags == PF_R && ph->p_offset > text_offset) {
      lib_base = info->dlpi_addr;
      ro_start = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)4095;
      ro_end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~(uintptr_t)4095;
      return 1;
    }
  }
  return 0;
}

static void on_fault(int sig, siginfo_t* info, void* context) {
  (void)sig;
  uintptr_t address = (uintptr_t)info->si_addr;
  uintptr_t ip = (uintptr_t)((ucontext_t*)context)->uc_mcontext.gregs[REG_RIP];
  char message[160];
  int n = snprintf(message, sizeof message,
                   "a read of libmallard's .rodata at offset %#lx, by the instruction at offset %#lx (objdump -d)\n",
                   (unsigned long)(address - lib_base), (unsigned long)(ip - lib_base));
  if (address < ro_start || address >= ro_end) n = snprintf(message, sizeof message, "segmentation fault at %p\n", info->si_addr);
  if (n > 0) (void)!write(2, message, (size_t)n);
  _exit(1);
}

/* Blocks of every kind, some freed by another thread, some left live when a
 * thread exits. */
static const size_t kHandedSizes[] = {8, 24, 100, 640, 3000, 9000, 40000, 200000, 3 << 20};

static void exercise(void) {
  malloc_and_calloc_sizes_up_to(1u << 22);
  /* Buffers that realloc grows a little at a time (extents past 2 KiB),
   * and shrinks. */
  char* buffers[16] = {0};
  for (size_t length = 16; length < 300000; length += length / 8 + 7) {
    for (int b = 0; b < 16; ++b) {
      buffers[b] = realloc(buffers[b], length + (size_t)b * 40);
      if (buffers[b] == NULL) abort();
      buffers[b][length - 1] = 1;
    }
  }
  for (int b = 0; b < 16; ++b) free(realloc(buffers[b], 100));
  for (size_t alignment = 8; alignment <= (1u << 16); alignment *= 2) {
    void* p = NULL;
    if (posix_memalign(&p, alignment, 3 * alignment / 2) != 0) abort();
    void* q = aligned_alloc(alignment, alignment * 4);
    void* r = memalign(alignment, 100);
    if (q == NULL || r == NULL || ((uintptr_t)p | (uintptr_t)q | (uintptr_t)r) % alignment != 0) abort();
    free(p);
    free(q);
    free(r);
  }
  free(valloc(5000));
  void* sized = malloc(96);
  mallard_free_sized(sized, 96);
  hand_over_blocks(kHandedSizes, sizeof kHandedSizes / sizeof kHandedSizes[0], 3);
  mallard_stats stats;
  if (mallard_stats_get(&stats) != 0) abort();
  mallard_trim(0);
}

int main(void) {
  dl_iterate_phdr(find_read_only_segment, NULL);
  if (ro_start == 0) {
    fprintf(stderr, "libmallard's read-only segment not found\n");
    return 1;
  }
  long kib = mapping_resident_kib(ro_start);
  if (kib != 0) {
    fprintf(stderr, "libmallard's .rodata mapping has %ld KiB resident after start-up (-1: not found)\n", kib);
    return 1;
  }
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_fault;
  action.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &action, NULL);
  if (mprotect((void*)ro_start, ro_end - ro_start, PROT_NONE) != 0) {
    perror("mprotect");
    return 1;
  }
  exercise();
  mprotect((void*)ro_start, ro_end - ro_start, PROT_READ);
  return 0;
}
