/* The double free of a 48-byte block that has left the thread's cache: a
 * thousand frees after it push it to the shared level first. glibc 2.36:
 * "free(): double free detected in tcache 2" or, out of the tcache,
 * "double free or corruption", SIGABRT. */
#include "common.h"
int main(void) {
    enum { N = 1000 };
    static char *volatile blocks[N];
    char *volatile p = malloc(48);
    for (int i = 0; i < N; i++) blocks[i] = malloc(48);
    printf("block %p\n", (void *)p);
    fflush(stdout);
    free(p);
    for (int i = 0; i < N; i++) free(blocks[i]);
    free(p);
    report("after double free", 48);
    return 0;
}
