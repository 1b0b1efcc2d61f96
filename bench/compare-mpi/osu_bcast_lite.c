/*
 * osu_bcast_lite: MPI_Bcast latency, measured the osu_bcast way, with the same
 * method, defaults, data pattern and JSON output as mcast's `mcbench --json`,
 * so that bench/compare-mpi/run.py can compare the two cell by cell.
 *
 * For each message size (powers of two from MIN to MAX):
 *   MPI_Barrier; then warm-up + timed iterations, each one MPI_Bcast from the
 *   root (timed with MPI_Wtime) followed by an untimed MPI_Barrier. The root
 *   fills the buffer before starting the clock; every other rank checks every
 *   received byte after stopping it (a mismatch aborts the job). Each rank
 *   averages its own timed iterations; MPI_Reduce (MIN, MAX, SUM) gives rank 0
 *   the minimum, maximum and average over ranks. cycle_us: rank 0's wall clock
 *   per timed iteration, fill, bcast, check and barrier included (as mcbench's).
 *
 * Defaults (as osu_bcast and mcbench): 1000 timed / 200 warm-up iterations
 * below 8 KiB, 100 / 10 from 8 KiB.
 *
 * Usage: mpirun -n N osu_bcast_lite [-m [MIN:]MAX] [-i ITERS] [-x WARMUP]
 *                                   [-r ROOT] [--json]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LARGE_MESSAGE 8192

/* The byte at i of iteration iter's message of size bytes: mcbench's fill(). */
static unsigned char seed_of(size_t size, size_t iter) {
    return (unsigned char)((iter * 7u) ^ (size * 13u));
}

/* The byte at i is (i mod 256) + seed: a 256-byte period, so fill and check
 * go a block at a time with memcpy/memcmp (as mcbench's fill and check). */
static void pattern(unsigned char p[256], size_t size, size_t iter) {
    unsigned char s = seed_of(size, iter);
    for (size_t i = 0; i < 256; i++) p[i] = (unsigned char)((unsigned char)i + s);
}

static void fill(unsigned char *buf, size_t size, size_t iter) {
    unsigned char p[256];
    pattern(p, size, iter);
    for (size_t i = 0; i < size; i += 256) memcpy(buf + i, p, size - i < 256 ? size - i : 256);
}

/* Offset of the first wrong byte, or -1. */
static long check(const unsigned char *buf, size_t size, size_t iter) {
    unsigned char p[256];
    pattern(p, size, iter);
    for (size_t i = 0; i < size; i += 256) {
        size_t n = size - i < 256 ? size - i : 256;
        if (memcmp(buf + i, p, n) != 0)
            for (size_t j = 0; j < n; j++)
                if (buf[i + j] != p[j]) return (long)(i + j);
    }
    return -1;
}

static void usage(int rank) {
    if (rank == 0)
        fprintf(stderr, "usage: osu_bcast_lite [-m [MIN:]MAX] [-i ITERS] [-x WARMUP] "
                        "[-r ROOT] [--json]\n");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    size_t lo = 1, hi = 4194304;
    long iters_opt = -1, warm_opt = -1;
    int root = 0, json = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--json")) {
            json = 1;
        } else if (a + 1 < argc && !strcmp(argv[a], "-m")) {
            char *colon = strchr(argv[++a], ':');
            if (colon) {
                lo = strtoull(argv[a], NULL, 10);
                hi = strtoull(colon + 1, NULL, 10);
            } else {
                hi = strtoull(argv[a], NULL, 10);
            }
        } else if (a + 1 < argc && !strcmp(argv[a], "-i")) {
            iters_opt = atol(argv[++a]);
        } else if (a + 1 < argc && !strcmp(argv[a], "-x")) {
            warm_opt = atol(argv[++a]);
        } else if (a + 1 < argc && !strcmp(argv[a], "-r")) {
            root = atoi(argv[++a]);
        } else {
            usage(rank);
            MPI_Finalize();
            return 2;
        }
    }
    if (lo < 1 || lo > hi || root < 0 || root >= nranks) {
        usage(rank);
        MPI_Finalize();
        return 2;
    }

    unsigned char *buf = malloc(hi);
    if (!buf) {
        fprintf(stderr, "rank %d: cannot allocate %zu bytes\n", rank, hi);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    if (rank == 0) {
        if (json)
            printf("{\n  \"benchmark\": \"bcast\",\n  \"implementation\": \"MPI_Bcast\",\n"
                   "  \"ranks\": %d,\n  \"root\": %d,\n  \"results\": [", nranks, root);
        else
            printf("# osu_bcast_lite (MPI_Bcast), ranks: %d, root: %d\n"
                   "# Size       Avg Latency(us)     Min Latency(us)     Max Latency(us)"
                   "  Iterations\n", nranks, root);
    }

    int first = 1;
    for (size_t size = lo; size <= hi; size *= 2) {
        int large = size >= LARGE_MESSAGE;
        size_t iters = iters_opt >= 0 ? (size_t)iters_opt : (large ? 100 : 1000);
        size_t warmup = warm_opt >= 0 ? (size_t)warm_opt : (large ? 10 : 200);
        if (iters < 1) iters = 1;

        MPI_Barrier(MPI_COMM_WORLD);
        double total = 0.0, cycle0 = MPI_Wtime();
        for (size_t i = 0; i < warmup + iters; i++) {
            if (i == warmup) cycle0 = MPI_Wtime();
            if (rank == root) fill(buf, size, i);
            double t0 = MPI_Wtime();
            MPI_Bcast(buf, (int)size, MPI_CHAR, root, MPI_COMM_WORLD);
            double dt = MPI_Wtime() - t0;
            if (i >= warmup) total += dt;
            if (rank != root) {
                long at = check(buf, size, i);
                if (at >= 0) {
                    fprintf(stderr, "rank %d: wrong byte at offset %ld of a %zu-byte bcast "
                                    "(iteration %zu)\n", rank, at, size, i);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        double cycle = (MPI_Wtime() - cycle0) * 1e6 / (double)iters;
        double mine = total * 1e6 / (double)iters, mn, mx, sum;
        MPI_Reduce(&mine, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            double avg = sum / nranks;
            if (json)
                printf("%s\n    {\"size\": %zu, \"avg_us\": %.4f, \"min_us\": %.4f, "
                       "\"max_us\": %.4f, \"iterations\": %zu, \"cycle_us\": %.4f}",
                       first ? "" : ",", size, avg, mn, mx, iters, cycle);
            else
                printf("%-10zu%18.2f%20.2f%20.2f%12zu\n", size, avg, mn, mx, iters);
            fflush(stdout);
        }
        first = 0;
        if (size > SIZE_MAX / 2) break;
    }
    if (rank == 0 && json) printf("\n  ]\n}\n");
    free(buf);
    MPI_Finalize();
    return 0;
}
