/* dlopen probe: a program NOT linked with mallard that loads libmallard.so
 * late (path in argv[1]) and calls mallard_malloc/mallard_free through dlsym
 * from several threads: some started before the dlopen, some after. A
 * library built with initial-exec TLS fails here if the static TLS surplus
 * is too small, and a heap that assumes its TLS was set up at load time
 * crashes in the threads that predate the load. Blocks also cross threads.
 * Prints "dlopen probe: ok" and exits 0 on success. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void* (*malloc_fn)(size_t);
typedef void (*free_fn)(void*);
typedef size_t (*usable_fn)(const void*);
typedef const char* (*version_fn)(void);

static malloc_fn p_malloc;
static free_fn p_free;
static usable_fn p_usable;

enum { kEarlyThreads = 4, kLateThreads = 4, kThreads = kEarlyThreads + kLateThreads, kIterations = 20000, kKept = 256 };

static pthread_barrier_t loaded;
/* Each thread (and main, as id kThreads) leaves kKept blocks here for the
 * main thread to free after they exit. */
static void* left_behind[kThreads + 1][kKept];
static int failures;
static pthread_mutex_t failures_lock = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char* what, size_t size) {
  pthread_mutex_lock(&failures_lock);
  ++failures;
  fprintf(stderr, "dlopen probe: %s (size %zu)\n", what, size);
  pthread_mutex_unlock(&failures_lock);
}

static void work(int id) {
  uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(id + 1);
  void* ring[64] = {0};
  size_t sizes[64] = {0};
  for (int i = 0; i < kIterations; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    size_t size = (x % 16 == 0) ? 1 + x % 300000 : 1 + x % 1000;
    int slot = (int)(x >> 40) % 64;
    if (ring[slot] != NULL) {
      unsigned char* b = ring[slot];
      if (b[0] != (unsigned char)id || b[sizes[slot] - 1] != (unsigned char)id) fail("block damaged", sizes[slot]);
      p_free(ring[slot]);
    }
    ring[slot] = p_malloc(size);
    if (ring[slot] == NULL) {
      fail("mallard_malloc returned NULL", size);
      return;
    }
    if (p_usable(ring[slot]) < size) fail("usable size too small", size);
    memset(ring[slot], id, size);
    sizes[slot] = size;
  }
  for (int i = 0; i < 64; ++i) p_free(ring[i]);
  for (int i = 0; i < kKept; ++i) {
    left_behind[id][i] = p_malloc((size_t)(16 + i * 8));
    if (left_behind[id][i] == NULL) fail("mallard_malloc returned NULL", (size_t)(16 + i * 8));
  }
}

static void* early_thread(void* arg) {
  pthread_barrier_wait(&loaded); /* wait until main has loaded the library */
  work((int)(intptr_t)arg);
  return NULL;
}

static void* late_thread(void* arg) {
  work((int)(intptr_t)arg);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s /path/to/libmallard.so\n", argv[0]);
    return 2;
  }
  pthread_t threads[kThreads];
  pthread_barrier_init(&loaded, NULL, kEarlyThreads + 1);
  for (int i = 0; i < kEarlyThreads; ++i) pthread_create(&threads[i], NULL, early_thread, (void*)(intptr_t)i);

  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen probe: dlopen failed: %s\n", dlerror());
    return 1;
  }
  /* POSIX allows object-to-function pointer conversion; ISO C does not, so
   * copy the bits (keeps -Wpedantic quiet). */
  void* sym;
  version_fn version;
  sym = dlsym(lib, "mallard_malloc");
  memcpy(&p_malloc, &sym, sizeof sym);
  sym = dlsym(lib, "mallard_free");
  memcpy(&p_free, &sym, sizeof sym);
  sym = dlsym(lib, "mallard_malloc_usable_size");
  memcpy(&p_usable, &sym, sizeof sym);
  sym = dlsym(lib, "mallard_version");
  memcpy(&version, &sym, sizeof sym);
  if (p_malloc == NULL || p_free == NULL || p_usable == NULL || version == NULL) {
    fprintf(stderr, "dlopen probe: dlsym failed: %s\n", dlerror());
    return 1;
  }
  pthread_barrier_wait(&loaded);
  for (int i = kEarlyThreads; i < kThreads; ++i) pthread_create(&threads[i], NULL, late_thread, (void*)(intptr_t)i);
  work(kThreads); /* the main thread too */
  for (int i = 0; i < kThreads; ++i) pthread_join(threads[i], NULL);
  /* Free every thread's leftovers from here: frees of blocks whose owner
   * thread has exited. */
  for (int t = 0; t <= kThreads; ++t)
    for (int i = 0; i < kKept; ++i) p_free(left_behind[t][i]);
  if (failures != 0) return 1;
  printf("dlopen probe: ok (mallard %s)\n", version());
  return 0;
}
