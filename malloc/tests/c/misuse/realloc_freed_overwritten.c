/* realloc of a 48-byte block already freed, to 24 bytes (the request
 * realloc's hit path takes), after a write after free into its first
 * word: the block's tag says free and its link says not. glibc 2.36
 * shrinks the freed chunk in place and returns it while its tcache still
 * holds it, so a later malloc(48) returns the realloc's block again;
 * without the check here, the move put the freed block on its list a
 * second time, and the next two malloc(48) return it twice. (The 32-byte
 * block freed first puts one in the thread cache's list, so that the hit
 * path, not its miss, meets the freed block.) */
#include "common.h"
int main(void) {
    char *volatile warm = malloc(32);
    free(warm);
    char *volatile p = malloc(48);
    char *volatile keep = malloc(48);
    printf("block %p\n", (void *)p);
    fflush(stdout);
    free(p);
    *(uintptr_t volatile *)p = 0x4141414141414141u; /* the write after free */
    char *volatile q = realloc(p, 24);
    char *volatile r = malloc(48);
    char *volatile s = malloc(48);
    if (q == r || q == s || r == s)
        printf("after realloc of a freed block: SAME block twice: %p %p %p\n", (void *)q,
               (void *)r, (void *)s);
    else
        printf("after realloc of a freed block: distinct blocks\n");
    (void)keep;
    return 0;
}
