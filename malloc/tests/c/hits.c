/* The hit paths of malloc, calloc, realloc and free, for
 * scripts/malloc-hits: after a warm-up pair, N pairs of malloc(size) (or
 * calloc(1, size)) and free of the same block; with `realloc`, N rounds of
 * malloc(size), realloc to twice the size (Lua's arrays grow so) and free.
 *
 *   hits N SIZE [calloc|realloc]
 *
 * One block stays live throughout, so that no allocator sees its page
 * empty on each free (mimalloc retires an empty page, which is not its hit
 * path). Counted under callgrind with --toggle-collect=malloc (calloc,
 * realloc, free):
 * the difference between two values of N, divided by theirs, is the
 * instructions of one call, with the warm-up's misses cancelled out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *mode = argc == 4 ? argv[3] : "";
    if (argc < 3 || argc > 4 || (argc == 4 && strcmp(mode, "calloc") != 0 && strcmp(mode, "realloc") != 0)) {
        fprintf(stderr, "usage: hits N SIZE [calloc|realloc]\n");
        return 2;
    }
    long n = atol(argv[1]);
    size_t size = (size_t)atol(argv[2]);
    int zeroed = strcmp(mode, "calloc") == 0;
    int grown = strcmp(mode, "realloc") == 0;
    void *volatile sink;
    void *keep = malloc(size);
    for (long i = -1; i < n; i++) {
        void *p = zeroed ? calloc(1, size) : malloc(size);
        if (grown) {
            memset(p, (int)i, size);
            p = realloc(p, 2 * size);
            if (p == NULL) {
                return 1;
            }
        }
        sink = p;
        free(p);
    }
    (void)sink;
    free(keep);
    return 0;
}
