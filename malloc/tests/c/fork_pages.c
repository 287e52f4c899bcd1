/* How many pages a fork costs the allocator: a process that has used many
 * size classes forks 200 times (each child allocates, frees and exits) and
 * prints the minor faults per fork of the parent and of the children. After
 * a fork every page either process writes is copied (or reclaimed by a
 * write fault), so what the allocator's fork handlers write shows here. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define FORKS 200

int main(void) {
    void *kept[64];
    for (int i = 0; i < 64; i++)
        kept[i] = malloc(16 + 24 * i); /* classes from 16 bytes to 1.5 KiB */
    struct rusage before, after, children;
    getrusage(RUSAGE_SELF, &before);
    for (int i = 0; i < FORKS; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            free(malloc(100));
            _exit(0);
        }
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            printf("FAILED: child %d\n", i);
            return 1;
        }
        free(malloc(100));
    }
    getrusage(RUSAGE_SELF, &after);
    getrusage(RUSAGE_CHILDREN, &children);
    printf("parent %.2f\nchild %.2f\n", (double)(after.ru_minflt - before.ru_minflt) / FORKS,
           (double)children.ru_minflt / FORKS);
    for (int i = 0; i < 64; i++)
        free(kept[i]);
    return 0;
}
