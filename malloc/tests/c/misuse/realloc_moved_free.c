/* q = realloc(p, 4000) moves a 48-byte block to another class (realloc
 * frees p itself; the block after p keeps glibc from growing it in place);
 * free(p) then frees it a second time. glibc 2.36: "free(): double free
 * detected in tcache 2", SIGABRT. */
#include "common.h"
int main(void) {
    char *volatile p = malloc(48);
    char *volatile after = malloc(48);
    char *volatile q = realloc(p, 4000);
    printf("block %p\nmoved to %p (%p after it)\n", (void *)p, (void *)q, (void *)after);
    fflush(stdout);
    free(p);
    report("after double free", 48);
    return 0;
}
