/* How much of a large calloc block is resident before the program touches
 * it (run under LD_PRELOAD only), counted with mincore:
 *   populate yes|no        whether this kernel takes MADV_POPULATE_WRITE
 *   resident N R P zero    calloc(N): R of its P whole pages resident, and
 *                          every byte read as zero ("zero") or not
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static void report(size_t n) {
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *p = calloc(1, n);
    if (!p) {
        printf("FAILED: calloc(%zu)\n", n);
        exit(1);
    }
    uintptr_t start = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t end = ((uintptr_t)p + n) & ~(uintptr_t)(page - 1);
    size_t pages = (end - start) / page, resident = 0;
    unsigned char *vec = malloc(pages);
    if (mincore((void *)start, end - start, vec) != 0) {
        printf("FAILED: mincore\n");
        exit(1);
    }
    for (size_t i = 0; i < pages; i++) resident += vec[i] & 1;
    int zero = 1;
    for (size_t i = 0; i < n; i += 512) zero &= p[i] == 0;
    printf("resident %zu %zu %zu %s\n", n, resident, pages, zero ? "zero" : "NONZERO");
    free(vec);
    free(p);
}

int main(void) {
    long page = sysconf(_SC_PAGESIZE);
    void *probe = mmap(0, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("populate %s\n", madvise(probe, page, MADV_POPULATE_WRITE) == 0 ? "yes" : "no");
    munmap(probe, page);
    report(1 << 20);        /* large, populated */
    report(16 << 20);       /* liblzma's match-finder table is about this */
    report(64 << 20);       /* above the limit: stays lazy */
    return 0;
}
