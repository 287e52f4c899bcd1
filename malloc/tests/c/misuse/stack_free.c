/* free(buf + 64) of a stack buffer, after a malloc. glibc 2.36: "free():
 * invalid pointer", SIGABRT. */
#include "common.h"
int main(void) {
    char buf[256];
    char *volatile q = malloc(32);
    char *volatile p = buf + 64;
    (void)q;
    printf("block %p\n", (void *)p);
    fflush(stdout);
    free(p);
    report("after stack free", 64);
    return 0;
}
