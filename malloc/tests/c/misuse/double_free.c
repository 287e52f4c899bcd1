/* free(p); free(p); of a 48-byte block. glibc 2.36: "free(): double free
 * detected in tcache 2", SIGABRT. */
#include "common.h"
int main(void) {
    char *volatile p = malloc(48);
    printf("block %p\n", (void *)p);
    fflush(stdout);
    free(p);
    free(p);
    report("after double free", 48);
    return 0;
}
