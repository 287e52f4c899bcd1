/* Threads that allocate and free without pause while the main thread forks
 * again and again; each child allocates (small blocks, a large one, a
 * realloc), frees and exits. Under a malloc that lets a child inherit a lock
 * another thread held, a child hangs: the parent then kills it after 10 s
 * and the program exits 1. Prints one line and exits 0 when every child
 * exited on its own. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define FORKS 200

static atomic_int stop;

static void *churn(void *arg) {
  unsigned seed = (unsigned)(size_t)arg;
  void *keep[64] = {0};
  while (!atomic_load(&stop)) {
    unsigned i = (seed = seed * 1103515245u + 12345u) % 64;
    free(keep[i]);
    size_t n = (seed >> 8) % 4 == 0 ? 70000 + (seed >> 12) % 100000 : 8 + (seed >> 12) % 2000;
    keep[i] = malloc(n);
    memset(keep[i], 1, n < 64 ? n : 64);
  }
  for (int i = 0; i < 64; i++) free(keep[i]);
  return NULL;
}

static int wait_for(pid_t pid) {
  for (int tick = 0; tick < 1000; tick++) {
    int status;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 2;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return 1;
}

int main(void) {
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, churn, (void *)(size_t)(i + 1));
  int hung = 0, failed = 0;
  for (int f = 0; f < FORKS; f++) {
    pid_t pid = fork();
    if (pid == 0) {
      void *v[100];
      for (int i = 0; i < 100; i++) v[i] = malloc(16 + i * 40);
      void *big = malloc(1 << 20);
      big = realloc(big, 3 << 20);
      for (int i = 0; i < 100; i++) free(v[i]);
      free(big);
      _exit(0);
    }
    int r = wait_for(pid);
    hung += r == 1;
    failed += r == 2;
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  printf("%d forks beside %d allocating threads: %d hung, %d failed\n", FORKS, THREADS, hung, failed);
  return hung || failed;
}
