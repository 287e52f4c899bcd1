/* What the library's blocks cost and hold, printed for the test to check
 * against SegregatedFit's size classes (run under LD_PRELOAD only):
 *   usable N U        malloc_usable_size(malloc(N)), after writing U bytes
 *   aligned A N ok    memalign(A, N) is aligned, holds N bytes, frees
 *   realloc ok        contents kept across class -> large -> class moves
 *   per-block B       resident bytes per block of a million malloc(48)s
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long resident_bytes(void) {
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2) {
        printf("FAILED: /proc/self/statm\n");
        exit(1);
    }
    fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

static int filled(const unsigned char *p, size_t n, unsigned char v) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != v) return 0;
    return 1;
}

int main(void) {
    static const size_t sizes[] = {0, 1, 16, 24, 48, 100, 1000, 4097, 65536, 65537, 300000};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        unsigned char *p = malloc(sizes[i]);
        size_t u = malloc_usable_size(p);
        memset(p, 0xab, u);
        printf("usable %zu %zu\n", sizes[i], u);
        free(p);
    }
    static const size_t aligns[] = {32, 64, 256, 4096, 8192, 65536};
    for (size_t i = 0; i < sizeof aligns / sizeof *aligns; i++) {
        unsigned char *p = memalign(aligns[i], 1000);
        int ok = p && ((uintptr_t)p % aligns[i]) == 0 && malloc_usable_size(p) >= 1000;
        memset(p, 0xcd, 1000);
        free(p);
        printf("aligned %zu 1000 %s\n", aligns[i], ok ? "ok" : "FAILED");
    }
    unsigned char *p = malloc(100);
    memset(p, 1, 100);
    p = realloc(p, 200000);
    int ok = filled(p, 100, 1);
    memset(p, 2, 200000);
    p = realloc(p, 300000);
    ok = ok && filled(p, 200000, 2);
    p = realloc(p, 50);
    ok = ok && filled(p, 50, 2);
    unsigned char *same = realloc(p, 56);
    ok = ok && same == p && filled(same, 50, 2);
    free(same);
    printf("realloc %s\n", ok ? "ok" : "FAILED");

    enum { N = 1000000 };
    void **blocks = malloc(N * sizeof *blocks);
    memset(blocks, 0, N * sizeof *blocks);
    long before = resident_bytes();
    for (int i = 0; i < N; i++) {
        blocks[i] = malloc(48);
        memset(blocks[i], 0x5a, 48);
    }
    long after = resident_bytes();
    printf("per-block %ld\n", (after - before) / N);
    for (int i = 0; i < N; i++) free(blocks[i]);
    free(blocks);
    return 0;
}
