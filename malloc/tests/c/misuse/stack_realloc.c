/* realloc(buf + 64, 100) of a stack buffer. glibc 2.36: "realloc():
 * invalid pointer", SIGABRT. */
#include "common.h"
int main(void) {
    char buf[256];
    char *volatile q = malloc(32);
    char *volatile p = buf + 64;
    (void)q;
    printf("block %p\n", (void *)p);
    fflush(stdout);
    char *r = realloc(p, 100);
    printf("realloc returned %p\n", (void *)r);
    report("after stack realloc", 64);
    return 0;
}
