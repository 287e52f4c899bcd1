/* malloc_trim gives the pages of freed blocks back: 20,000 blocks of 700
 * bytes (13.7 MiB) allocated, written and freed; the resident set is
 * printed before the trim and after it, with what malloc_trim returned (1:
 * memory was released). Then the blocks are allocated again, and their
 * contents written and checked. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

int main(void) {
    enum { COUNT = 20000, N = 700 };
    static char *blocks[COUNT];
    for (int i = 0; i < COUNT; i++) {
        blocks[i] = malloc(N);
        memset(blocks[i], i & 0xff, N);
    }
    for (int i = 0; i < COUNT; i++)
        free(blocks[i]);
    long before = rss_kib();
    int released = malloc_trim(0);
    long after = rss_kib();
    printf("released %d\nrss-before %ld\nrss-after %ld\n", released, before, after);
    for (int i = 0; i < COUNT; i++) {
        blocks[i] = malloc(N);
        memset(blocks[i], (i * 7) & 0xff, N);
    }
    for (int i = 0; i < COUNT; i++) {
        for (int j = 0; j < N; j++)
            if ((unsigned char)blocks[i][j] != ((i * 7) & 0xff)) {
                printf("block %d byte %d changed\n", i, j);
                return 1;
            }
        free(blocks[i]);
    }
    printf("reused ok\n");
    return 0;
}
