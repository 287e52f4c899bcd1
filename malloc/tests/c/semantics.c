/* glibc's malloc semantics, one line per case: run under glibc and under
 * liballocasm_malloc.so (LD_PRELOAD), the two outputs must be equal. Only
 * what the C library promises is printed (a pointer's being null, errno, an
 * alignment, that the usable size covers the request), never an address or
 * a usable size itself. The first line names the library `malloc` came from. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int aligned(void *p, size_t a) { return ((uintptr_t)p % a) == 0; }
/* Through volatile so the compiler cannot fold a call away. */
static volatile size_t big = SIZE_MAX, half = SIZE_MAX / 2;

int main(void) {
  Dl_info info;
  void *(*volatile m)(size_t) = malloc;
  if (dladdr((void *)m, &info) && info.dli_fname) {
    const char *base = strrchr(info.dli_fname, '/');
    printf("malloc from %s\n", base ? base + 1 : info.dli_fname);
  }
  void *p, *q;
  int r;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);

  p = malloc(0);
  printf("malloc(0): non-null %d, aligned 16 %d\n", p != NULL, aligned(p, 16));
  q = malloc(0);
  printf("malloc(0) twice: distinct %d\n", p != q);
  free(p); free(q);
  for (size_t n = 1; n <= (1u << 22); n = n * 3 + 1) {
    p = malloc(n);
    memset(p, 0xa5, n);
    int ok = p && aligned(p, 16) && malloc_usable_size(p) >= n;
    if (!ok) printf("malloc(%zu): FAILED\n", n);
    free(p);
  }
  printf("malloc(1..4M): aligned 16, usable >= asked\n");
  errno = 0; p = malloc(big);
  printf("malloc(SIZE_MAX): null %d, ENOMEM %d\n", p == NULL, errno == ENOMEM);
  errno = 0; p = malloc(PTRDIFF_MAX);
  printf("malloc(PTRDIFF_MAX): null %d, ENOMEM %d\n", p == NULL, errno == ENOMEM);
  errno = 0; p = calloc(half, 3);
  printf("calloc overflow: null %d, ENOMEM %d\n", p == NULL, errno == ENOMEM);
  p = calloc(0, 5);
  printf("calloc(0, 5): non-null %d\n", p != NULL);
  free(p);
  {
    /* A calloc'd block is zero even where a freed one of its class was not:
     * a class up to 1 KiB (calloc's hit path), one above (its miss path's
     * cache pop), a block of the largest classes. */
    size_t sizes[][2] = {{1, 48}, {100, 10}, {4, 1000}, {1, 60000}};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
      size_t n = sizes[k][0] * sizes[k][1];
      for (int round = 0; round < 2; round++) {
        unsigned char *c = calloc(sizes[k][0], sizes[k][1]);
        int zero = 1;
        for (size_t i = 0; i < n; i++) zero &= c[i] == 0;
        if (!zero) printf("calloc(%zu, %zu): NOT ZERO\n", sizes[k][0], sizes[k][1]);
        memset(c, 0xff, n);
        free(c);
      }
    }
    /* The second round gets the first's freed (dirty) 1 MiB mapping back
     * where freed large mappings are cached and reused. */
    int zero = 1;
    for (int round = 0; round < 2; round++) {
      unsigned char *volatile c = calloc(1, 1 << 20);
      for (int i = 0; i < (1 << 20); i++) zero &= c[i] == 0;
      memset(c, 0xff, 1 << 20);
      free(c);
    }
    printf("calloc zeroes (small and 1 MiB): %d\n", zero);
  }
  p = realloc(NULL, 10);
  printf("realloc(NULL, 10): non-null %d\n", p != NULL);
  memcpy(p, "123456789", 10);
  p = realloc(p, 100000);
  printf("realloc grow keeps data: %d\n", p && memcmp(p, "123456789", 10) == 0);
  p = realloc(p, 5);
  printf("realloc shrink keeps data: %d\n", p && memcmp(p, "12345", 5) == 0);
  errno = 0; q = realloc(p, big);
  printf("realloc(p, SIZE_MAX): null %d, ENOMEM %d, block kept %d\n", q == NULL,
         errno == ENOMEM, memcmp(p, "12345", 5) == 0);
  errno = 0; q = realloc(p, 0);
  printf("realloc(p, 0): null %d, errno %d\n", q == NULL, errno);
  errno = 0; p = reallocarray(NULL, half, 3);
  printf("reallocarray overflow: null %d, ENOMEM %d\n", p == NULL, errno == ENOMEM);
  p = reallocarray(NULL, 10, 10);
  printf("reallocarray(NULL, 10, 10): non-null %d, usable >= 100 %d\n", p != NULL,
         malloc_usable_size(p) >= 100);
  free(p);

  size_t bad[] = {0, 3, 4, 24, 48};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    p = (void *)1;
    errno = 0;
    r = posix_memalign(&p, bad[i], 10);
    printf("posix_memalign(%zu): %d, memptr untouched %d, errno %d\n", bad[i], r,
           p == (void *)1, errno);
  }
  size_t good[] = {8, 16, 32, 64, 256, 4096, 65536, 1 << 20};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    for (size_t n = 0; n <= 200000; n = n ? n * 7 : 1) {
      r = posix_memalign(&p, good[i], n);
      if (r != 0 || !aligned(p, good[i]) || malloc_usable_size(p) < n)
        printf("posix_memalign(%zu, %zu): FAILED (%d)\n", good[i], n, r);
      if (n) memset(p, 1, n);
      q = realloc(p, n + 100);
      if (!q || (n && ((unsigned char *)q)[n - 1] != 1))
        printf("realloc of posix_memalign(%zu, %zu): FAILED\n", good[i], n);
      free(q);
    }
  }
  printf("posix_memalign(8..1M, 0..200k): aligned, usable, realloc keeps data\n");
  errno = 0; r = posix_memalign(&p, 64, big);
  printf("posix_memalign(64, SIZE_MAX): %d\n", r);

  /* realloc between every pair of small sizes (the class-to-class path):
     the old bytes survive, the new block is usable to its end, and the
     blocks around it (filled with 0x5a) are untouched. */
  {
    size_t sizes[] = {1, 7, 8, 15, 16, 17, 24, 31, 32, 33, 48, 56, 63, 64, 65,
                      100, 127, 128, 129, 500, 1000, 1024, 1025, 5000, 70000};
    size_t ns = sizeof sizes / sizeof *sizes, bad = 0;
    for (size_t a = 0; a < ns; a++) {
      for (size_t b = 0; b < ns; b++) {
        unsigned char *before = malloc(sizes[b]), *after;
        unsigned char *x = malloc(sizes[a]);
        after = malloc(sizes[b]);
        memset(before, 0x5a, sizes[b]);
        memset(after, 0x5a, sizes[b]);
        for (size_t k = 0; k < sizes[a]; k++) x[k] = (unsigned char)(k * 31 + 7);
        unsigned char *y = realloc(x, sizes[b]);
        size_t keep = sizes[a] < sizes[b] ? sizes[a] : sizes[b];
        for (size_t k = 0; y && k < keep; k++)
          if (y[k] != (unsigned char)(k * 31 + 7)) { bad++; break; }
        if (y) memset(y, 0xc3, sizes[b]);
        for (size_t k = 0; k < sizes[b]; k++)
          if (before[k] != 0x5a || after[k] != 0x5a) { bad++; break; }
        if (!y) bad++;
        free(before); free(after); free(y);
      }
    }
    printf("realloc across 25 sizes (1..70000 both ways): %zu bad\n", bad);
  }

  errno = 0; p = aligned_alloc(64, 10);
  printf("aligned_alloc(64, 10): aligned %d, errno %d\n", aligned(p, 64), errno);
  free(p);
  errno = 0; p = aligned_alloc(3, 10);
  printf("aligned_alloc(3, 10): non-null %d, aligned 4 %d\n", p != NULL, aligned(p, 4));
  free(p);
  errno = 0; p = aligned_alloc(0, 10);
  printf("aligned_alloc(0, 10): non-null %d\n", p != NULL);
  free(p);
  errno = 0; p = memalign(48, 10);
  printf("memalign(48, 10): aligned 64 %d\n", aligned(p, 64));
  free(p);
  errno = 0; p = memalign(half + 2, 10);
  printf("memalign(SIZE_MAX/2+2): null %d, EINVAL %d\n", p == NULL, errno == EINVAL);
  errno = 0; p = memalign(4096, big);
  printf("memalign(4096, SIZE_MAX): null %d, ENOMEM %d\n", p == NULL, errno == ENOMEM);
  p = valloc(1);
  printf("valloc(1): page-aligned %d\n", aligned(p, page));
  free(p);
  p = pvalloc(1);
  printf("pvalloc(1): page-aligned %d, usable >= page %d\n", aligned(p, page),
         malloc_usable_size(p) >= page);
  free(p);
  p = pvalloc(0);
  printf("pvalloc(0): non-null %d, page-aligned %d\n", p != NULL, aligned(p, page));
  free(p);
  errno = 0; p = pvalloc(big - 100);
  printf("pvalloc(SIZE_MAX-100): null %d, ENOMEM %d\n", p == NULL, errno == ENOMEM);
  printf("malloc_usable_size(NULL): %zu\n", malloc_usable_size(NULL));
  free(NULL);
  printf("free(NULL): ok\n");
  return 0;
}
