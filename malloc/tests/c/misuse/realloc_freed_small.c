/* realloc of a block already freed (a use after free) to at most 32 bytes
 * of another class: the request realloc's hit path takes (Lua's arrays
 * grow 16 to 32 bytes). glibc 2.36 shrinks the freed chunk in place and
 * returns it while its tcache still holds it: the next malloc(48) returns
 * the same block again. (The 32-byte block freed first puts one in the
 * thread cache's list, so that the hit path, not its miss, meets the
 * freed block.) */
#include "common.h"
int main(void) {
    char *volatile warm = malloc(32);
    free(warm);
    char *volatile p = malloc(48);
    char *volatile keep = malloc(48);
    printf("block %p\n", (void *)p);
    fflush(stdout);
    free(p);
    char *volatile q = realloc(p, 24);
    char *volatile r = malloc(48);
    if (q == r)
        printf("after realloc of a freed block: SAME block twice: %p\n", (void *)q);
    else
        printf("after realloc of a freed block: distinct blocks\n");
    (void)keep;
    return 0;
}
