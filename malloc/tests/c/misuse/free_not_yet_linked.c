/* A free of a block the library has not even linked yet: the block just
 * before the first one of a class that no start-up code uses (700 bytes:
 * the 704-byte class). A class's first span hands out the blocks on its
 * header's page first, then the rest of the span from its first block on,
 * a run at a time, as they are needed; the block before the first is the
 * last to be linked. The free puts it in a free list, and the program's
 * next allocations would get it twice: once from that list, and again when
 * the span's chain reaches it. glibc 2.36: the pointer lies in the
 * zeroed block allocated before, so its size reads 0: SIGABRT. */
#include <malloc.h>
#include <string.h>
#include "common.h"
int main(void) {
    enum { N = 700, MORE = 64 };
    char *volatile pad = malloc(1024);
    memset(pad, 0, malloc_usable_size(pad));
    char *volatile first = malloc(N);
    char *q = first - 704;
    printf("block %p\nthe one before %p; freeing it\n", (void *)q, (void *)first);
    fflush(stdout);
    free(q);
    report_many("after a free of a block not yet linked", N, MORE);
    return 0;
}
