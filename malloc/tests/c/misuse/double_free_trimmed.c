/* A double free of a block whose span malloc_trim gave back to the OS:
 * the trim purged the page that held the block's double-free tag, so the
 * second free finds none and goes through. The class then grows the
 * trimmed span again and links the block a second time. 64 blocks of 700
 * bytes (the 704-byte class: no start-up code uses it) fill three spans;
 * all are freed, the last one again after the trim; then the program
 * allocates twice as many. glibc 2.36: the block's
 * chunk was merged and trimmed: "free(): invalid pointer", SIGABRT. */
#include <malloc.h>
#include "common.h"
int main(void) {
    enum { N = 700, COUNT = 64 };
    char *blocks[COUNT];
    for (int i = 0; i < COUNT; i++)
        blocks[i] = malloc(N);
    char *q = blocks[COUNT - 1];
    for (int i = 0; i < COUNT; i++)
        free(blocks[i]);
    malloc_trim(0);
    printf("block %p\n", (void *)q);
    fflush(stdout);
    free(q);
    report_many("after a double free of a trimmed block", N, 2 * COUNT);
    return 0;
}
