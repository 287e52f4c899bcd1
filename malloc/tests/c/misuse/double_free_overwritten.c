/* free(p); a write after free into the block's first word; free(p) again,
 * of a 48-byte block. The first word held the free list's link, so the
 * block no longer looks free by its link, only by its tag. glibc 2.36 finds
 * the block in its thread's tcache bin: "free(): double free detected in
 * tcache 2", SIGABRT. */
#include "common.h"
int main(void) {
    char *volatile p = malloc(48);
    printf("block %p\n", (void *)p);
    fflush(stdout);
    free(p);
    *(uintptr_t volatile *)p = 0x4141414141414141u; /* the write after free */
    free(p);
    report("after double free", 48);
    return 0;
}
