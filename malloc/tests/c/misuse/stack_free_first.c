/* free(buf + 64) of a stack buffer before the program's first malloc.
 * glibc 2.36: "free(): invalid pointer", SIGABRT. */
#include "common.h"
#include <unistd.h>
int main(void) {
    char buf[256];
    char *volatile p = buf + 64;
    write(1, "block\n", 6);
    free(p);
    report("after stack free", 64);
    return 0;
}
