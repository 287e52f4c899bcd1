/* A write after free into a 48-byte block that has left the thread's
 * cache: freed in the middle of a thousand frees, it goes to the shared
 * level with one of the cache's flushes (the 48-byte class caches 128
 * blocks and flushes the newest 64: a run, or the class queue), and the
 * write puts the address of a live block into its link there. Allocating
 * the blocks back reaches that link: a plain link would hand out the live
 * block a second time. glibc 2.36 (the block sits in a fastbin,
 * safe-linked): "malloc(): unaligned fastbin chunk detected 3", SIGABRT. */
#include "common.h"
int main(void) {
    enum { N = 1000 };
    static char *volatile blocks[N + 1];
    for (int i = 0; i < N; i++) blocks[i] = malloc(48);
    char *volatile live = malloc(48);
    char *volatile p = malloc(48);
    /* Printed first: stdout's buffer is allocated now, not between the
     * frees and the write (glibc consolidates its fastbins for it). */
    printf("block %p\n", (void *)p);
    fflush(stdout);
    for (int i = 0; i < N / 2; i++) free(blocks[i]);
    free(p);
    for (int i = N / 2; i < N; i++) free(blocks[i]);
    *(char *volatile *)p = live; /* the write after free */
    for (int i = 0; i <= N; i++) {
        blocks[i] = malloc(48);
        if (blocks[i] == live) {
            printf("malloc returned the live block %p: SAME block twice\n",
                   (void *)live);
            fflush(stdout);
            break;
        }
    }
    report("after write after free", 48);
    return 0;
}
