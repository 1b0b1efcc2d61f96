/* What a single copy across processes costs here, against a memcpy.
 *
 *   cc -O2 -o /tmp/cma_copy bench/compare-mpi/cma_copy.c && /tmp/cma_copy [BYTES] [ITERS]
 *
 * Open MPI's vader (and MPICH's nemesis) move a large message between two
 * ranks of one host with one copy: the receiver reads the sender's buffer
 * with process_vm_readv (Linux's cross-memory attach, CMA). mcast copies
 * through its shared-memory arena instead: the root's memcpy into its
 * arena, then each host-mate's memcpy out of it. Whether a CMA path would
 * pay depends on what a process_vm_readv costs against a memcpy on the
 * machine: the kernel pins each remote page (get_user_pages) and copies
 * with its own routine. This program answers that for one size: a child
 * holds BYTES (default 4 MiB), the parent reads them ITERS times (default
 * 50) with one process_vm_readv, then with one per 1 MiB (as per-packet
 * reads would), then copies its own BYTES with memcpy as many times, and
 * prints the mean of each, three rounds. Standard C and Linux only; the
 * read needs the ptrace permission CMA needs (same user, and Yama's
 * ptrace_scope 0, or root). bench/results/compare-mpi-hosts/LOG.md,
 * *A single copy by process_vm_readv*, has what it measured here. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* Read n bytes at src in process pid into dst, in reads of at most chunk. */
static int read_remote(pid_t pid, char *dst, char *src, size_t n, size_t chunk) {
    for (size_t off = 0; off < n;) {
        size_t len = n - off < chunk ? n - off : chunk;
        struct iovec l = {dst + off, len}, r = {src + off, len};
        ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (got <= 0) {
            perror("process_vm_readv");
            return -1;
        }
        off += (size_t)got;
    }
    return 0;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)4 << 20;
    int iters = argc > 2 ? atoi(argv[2]) : 50;
    if (n == 0 || iters <= 0) {
        fprintf(stderr, "usage: %s [BYTES > 0] [ITERS > 0]\n", argv[0]);
        return 2;
    }
    char *src = malloc(n), *dst = malloc(n);
    if (!src || !dst) {
        perror("malloc");
        return 1;
    }
    memset(src, 1, n);
    memset(dst, 0, n);
    /* The child shares src's pages copy-on-write and never writes them:
     * the parent reads the child's copy at the same address. */
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    if (child == 0) {
        pause();
        _exit(0);
    }
    int rc = 0;
    for (int round = 0; round < 3 && rc == 0; round++) {
        double t0 = now_us();
        for (int i = 0; i < iters && rc == 0; i++) rc = read_remote(child, dst, src, n, n);
        double t1 = now_us();
        for (int i = 0; i < iters && rc == 0; i++) rc = read_remote(child, dst, src, n, 1 << 20);
        double t2 = now_us();
        for (int i = 0; i < iters; i++) {
            memcpy(dst, src, n);
            __asm__ volatile("" : : "r"(dst) : "memory");
        }
        double t3 = now_us();
        if (rc == 0)
            printf("%zu bytes: process_vm_readv %.1f us, in 1 MiB reads %.1f us, memcpy %.1f us "
                   "(readv / memcpy %.2f)\n",
                   n, (t1 - t0) / iters, (t2 - t1) / iters, (t3 - t2) / iters,
                   (t1 - t0) / (t3 - t2));
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    free(src);
    free(dst);
    return rc == 0 ? 0 : 1;
}
