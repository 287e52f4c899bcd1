/* free(p + 16) of a 64-byte block. glibc 2.36: "free(): invalid pointer",
 * SIGABRT. */
#include "common.h"
int main(void) {
    char *volatile p = malloc(64);
    printf("block %p\n", (void *)(p + 16));
    fflush(stdout);
    free(p + 16);
    report("after interior free", 64);
    return 0;
}
