/* Shared by the misuse programs (malloc/tests/preload.rs runs each under
 * glibc and under liballocasm_malloc.so): after the misuse, a program that
 * is still running allocates twice and reports whether it got one block
 * twice or two overlapping blocks. A hardened allocator never gets there:
 * it aborts at the misuse. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static void report(const char *what, size_t n) {
    char *a = malloc(n), *b = malloc(n);
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    if (a == b)
        printf("%s: SAME block twice: %p\n", what, (void *)a);
    else if (x < y + n && y < x + n)
        printf("%s: OVERLAPPING blocks: %p %p\n", what, (void *)a, (void *)b);
    else
        printf("%s: distinct blocks\n", what);
    fflush(stdout);
}

/* The same for a misuse the library catches later, when it links a block
 * again: `count` allocations of `n` bytes, and whether two were one block. */
static void report_many(const char *what, size_t n, int count) {
    char **got = calloc(count, sizeof *got);
    for (int i = 0; i < count; i++) {
        got[i] = malloc(n);
        for (int j = 0; j < i; j++)
            if (got[j] == got[i]) {
                printf("%s: SAME block twice: %p\n", what, (void *)got[i]);
                fflush(stdout);
                return;
            }
    }
    printf("%s: distinct blocks\n", what);
    fflush(stdout);
}
