/* free(p); free(p); of a 1 MiB block. glibc 2.36: SIGSEGV (the chunk's
 * mapping is gone when the second free reads its header). */
#include "common.h"
int main(void) {
    char *volatile p = malloc(1 << 20);
    p[0] = 1;
    printf("block %p\n", (void *)p);
    fflush(stdout);
    free(p);
    free(p);
    report("after large double free", 1 << 20);
    return 0;
}
