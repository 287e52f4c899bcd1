/* realloc of a block already freed (a use after free), to a size of the
 * same class: an allocator that resizes in place hands the block back while
 * its free list still holds it. glibc 2.36 does: realloc returns the block,
 * and the next malloc(48) returns it again from the tcache. */
#include "common.h"
int main(void) {
    char *volatile p = malloc(48);
    char *volatile keep = malloc(48);
    printf("block %p\n", (void *)p);
    fflush(stdout);
    free(p);
    char *volatile q = realloc(p, 40);
    char *volatile r = malloc(48);
    if (q == r)
        printf("after realloc of a freed block: SAME block twice: %p\n", (void *)q);
    else
        printf("after realloc of a freed block: distinct blocks\n");
    (void)keep;
    return 0;
}
