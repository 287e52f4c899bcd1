/* q = realloc(p, 32) moves a 16-byte block to the 32-byte class through
 * realloc's hit path (the thread cache's pop and push in one step), which
 * frees p itself; free(p) then frees it a second time. (The 32-byte block
 * freed first puts one in the thread cache's list, so that the hit path,
 * not its miss, moves p.) */
#include "common.h"
int main(void) {
    char *volatile warm = malloc(32);
    free(warm);
    char *volatile p = malloc(16);
    char *volatile after = malloc(16);
    char *volatile q = realloc(p, 32);
    printf("block %p\nmoved to %p (%p after it)\n", (void *)p, (void *)q, (void *)after);
    fflush(stdout);
    free(p);
    report("after double free", 16);
    return 0;
}
