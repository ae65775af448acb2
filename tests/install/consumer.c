/* A consumer of the installed mallard: calls malloc and checks that mallard
 * served it (24-byte class: usable size 24, which glibc would not give). */
#include <mallard/mallard.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  char* p = malloc(24);
  if (p == NULL) return 1;
  strcpy(p, "hello");
  size_t usable = malloc_usable_size(p);
  size_t ours = mallard_malloc_usable_size(p);
  free(p);
  printf("mallard %s usable %zu %zu\n", mallard_version(), usable, ours);
  return usable == 24 && ours == 24 ? 0 : 2;
}
