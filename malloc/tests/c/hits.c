/* The hit paths of malloc and free, for scripts/malloc-hits: after a
 * warm-up pair, N pairs of malloc(size) and free of the same block.
 *
 *   hits N SIZE
 *
 * One block stays live throughout, so that no allocator sees its page
 * empty on each free (mimalloc retires an empty page, which is not its hit
 * path). Counted under callgrind with --toggle-collect=malloc (or free):
 * the difference between two values of N, divided by theirs, is the
 * instructions of one call, with the warm-up's misses cancelled out. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: hits N SIZE\n");
        return 2;
    }
    long n = atol(argv[1]);
    size_t size = (size_t)atol(argv[2]);
    void *volatile sink;
    void *keep = malloc(size);
    void *p = malloc(size);
    free(p);
    for (long i = 0; i < n; i++) {
        p = malloc(size);
        sink = p;
        free(p);
    }
    (void)sink;
    free(keep);
    return 0;
}
