/* Two 48-byte blocks freed, then a write after free puts an address into
 * the newer one's link: the second malloc would return that address.
 * glibc 2.36 (safe-linking): "malloc(): unaligned tcache chunk detected",
 * SIGABRT. */
#include "common.h"
int main(void) {
    static char target[64];
    char *volatile p = malloc(48);
    char *volatile q = malloc(48);
    free(p);
    free(q);
    printf("block %p\n", (void *)q);
    fflush(stdout);
    *(char **)q = target + 16; /* the write after free */
    char *a = malloc(48);
    char *b = malloc(48);
    printf("malloc returned %p then %p (target %p)\n", (void *)a, (void *)b,
           (void *)(target + 16));
    report("after write after free", 48);
    return 0;
}
