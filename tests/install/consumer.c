/* A consumer of the installed mallard: calls malloc and checks that mallard
 * served it: the block mallard's statistics count as allocated is the one
 * malloc returned, whose usable size malloc_usable_size and mallard's own
 * call agree on. */
#include <mallard/mallard.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  mallard_stats before, after;
  if (mallard_stats_get(&before) != 0) return 1;
  char* p = malloc(24);
  if (p == NULL) return 1;
  if (mallard_stats_get(&after) != 0) return 1;
  strcpy(p, "hello");
  size_t usable = malloc_usable_size(p);
  size_t ours = mallard_malloc_usable_size(p);
  size_t counted = after.allocated - before.allocated;
  free(p);
  printf("mallard %s usable %zu %zu counted %zu\n", mallard_version(), usable, ours, counted);
  return usable >= 24 && usable == ours && counted == ours ? 0 : 2;
}
