/* One million malloc(n)+free pairs, for counting the fast path's
 * instructions with callgrind (--toggle-collect=pair_loop). A second block of
 * the same size stays live, as in any real program, so the page never
 * empties. Usage: fastpath_pair N */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) void pair_loop(size_t n) {
  void* volatile sink;
  for (int i = 0; i < 1000000; i++) {
    void* p = malloc(n);
    sink = p;
    free(p);
  }
  (void)sink;
}

int main(int argc, char** argv) {
  size_t n = argc > 1 ? (size_t)atoi(argv[1]) : 16;
  void* volatile keep = malloc(n);
  pair_loop(n);
  free(keep);
  return 0;
}
