/* A free of a block the library linked into a free list but never handed
 * out: the neighbour of the second block of a class that no start-up code
 * uses (700 bytes: the 704-byte class). A class's first span hands out the
 * blocks on its header's page first (one here), then a run at a time from
 * its first block in address order, so the block after the second one
 * handed out is the next one of its run: free, never allocated. glibc
 * 2.36: the pointer lies in the second block's chunk, whose bytes are
 * zeroed, so its size reads 0: SIGABRT. */
#include <malloc.h>
#include <string.h>
#include "common.h"
int main(void) {
    enum { N = 700 };
    char *volatile first = malloc(N);
    char *volatile p = malloc(N);
    size_t usable = malloc_usable_size(p);
    memset(p, 0, usable);
    char *q = p + usable;
    printf("blocks %p %p; freeing %p\n", (void *)first, (void *)p, (void *)q);
    fflush(stdout);
    free(q);
    report("after a free of a block never handed out", N);
    return 0;
}
