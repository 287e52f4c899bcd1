/* A free of a block the library linked into a free list but never handed
 * out: the neighbour of the first block of a class that no start-up code
 * uses (700 bytes: the 704-byte class). A class's blocks are linked a run
 * at a time in address order, so the block after the first one handed out
 * is the next one of its run: free, never allocated. glibc 2.36: the
 * pointer lies in the first block's chunk, whose bytes are zeroed, so its
 * size reads 0: SIGABRT. */
#include <malloc.h>
#include <string.h>
#include "common.h"
int main(void) {
    enum { N = 700 };
    char *volatile p = malloc(N);
    size_t usable = malloc_usable_size(p);
    memset(p, 0, usable);
    char *q = p + usable;
    printf("block %p\n", (void *)q);
    fflush(stdout);
    free(q);
    report("after a free of a block never handed out", N);
    return 0;
}
