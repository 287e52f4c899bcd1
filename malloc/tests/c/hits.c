/* The hit paths of malloc, calloc and free, for scripts/malloc-hits:
 * after a warm-up pair, N pairs of malloc(size) (or calloc(1, size)) and
 * free of the same block.
 *
 *   hits N SIZE [calloc]
 *
 * One block stays live throughout, so that no allocator sees its page
 * empty on each free (mimalloc retires an empty page, which is not its hit
 * path). Counted under callgrind with --toggle-collect=malloc (calloc,
 * free):
 * the difference between two values of N, divided by theirs, is the
 * instructions of one call, with the warm-up's misses cancelled out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "calloc") != 0)) {
        fprintf(stderr, "usage: hits N SIZE [calloc]\n");
        return 2;
    }
    long n = atol(argv[1]);
    size_t size = (size_t)atol(argv[2]);
    int zeroed = argc == 4;
    void *volatile sink;
    void *keep = malloc(size);
    void *p = zeroed ? calloc(1, size) : malloc(size);
    free(p);
    for (long i = 0; i < n; i++) {
        p = zeroed ? calloc(1, size) : malloc(size);
        sink = p;
        free(p);
    }
    (void)sink;
    free(keep);
    return 0;
}
