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
 *                                   [-r ROOT] [--json] [--timeline DIR]
 *
 * --timeline DIR (an existing directory): each rank writes DIR/rank-<R>.tsv,
 * when it called and left MPI_Bcast and MPI_Barrier in each timed iteration
 * (the first 10,000 of each size), CLOCK_MONOTONIC ns, in the format of
 * `mcbench --timeline`; bench/timeline.py lines the ranks up.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LARGE_MESSAGE 8192
/* --timeline: timed iterations kept per size, as mcbench --timeline. */
#define TIMELINE_KEPT 10000

/* CLOCK_MONOTONIC now, ns (mcbench --timeline's clock). */
static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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
                        "[-r ROOT] [--json] [--timeline DIR]\n");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    size_t lo = 1, hi = 4194304;
    long iters_opt = -1, warm_opt = -1;
    int root = 0, json = 0;
    const char *timeline = NULL;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--json")) {
            json = 1;
        } else if (a + 1 < argc && !strcmp(argv[a], "--timeline")) {
            timeline = argv[++a];
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
    /* --timeline DIR: DIR/rank-<R>.tsv in mcbench --timeline's format
     * (bench/timeline.py reads both). DIR must exist. */
    FILE *tl = NULL;
    uint64_t (*tl_rows)[4] = NULL;
    if (timeline) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rank-%d.tsv", timeline, rank);
        tl = fopen(path, "w");
        tl_rows = malloc(sizeof *tl_rows * TIMELINE_KEPT);
        if (!tl || !tl_rows) {
            fprintf(stderr, "rank %d: cannot write %s\n", rank, path);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        fprintf(tl, "size\titeration\tbcast_call_ns\tbcast_done_ns\tbarrier_call_ns\tbarrier_done_ns\n");
        /* DIR/rank-<R>.pid: this rank's process id, for timeline.py --sched. */
        snprintf(path, sizeof path, "%s/rank-%d.pid", timeline, rank);
        FILE *pf = fopen(path, "w");
        if (!pf || fprintf(pf, "%ld\n", (long)getpid()) < 0 || fclose(pf) != 0) {
            fprintf(stderr, "rank %d: cannot write %s\n", rank, path);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
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
            uint64_t called = tl ? now_ns() : 0;
            double t0 = MPI_Wtime();
            MPI_Bcast(buf, (int)size, MPI_CHAR, root, MPI_COMM_WORLD);
            double dt = MPI_Wtime() - t0;
            uint64_t done = tl ? now_ns() : 0;
            if (i >= warmup) total += dt;
            if (rank != root) {
                long at = check(buf, size, i);
                if (at >= 0) {
                    fprintf(stderr, "rank %d: wrong byte at offset %ld of a %zu-byte bcast "
                                    "(iteration %zu)\n", rank, at, size, i);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
            uint64_t entered = tl ? now_ns() : 0;
            MPI_Barrier(MPI_COMM_WORLD);
            if (tl && i >= warmup && i - warmup < TIMELINE_KEPT) {
                uint64_t *r = tl_rows[i - warmup];
                r[0] = called, r[1] = done, r[2] = entered, r[3] = now_ns();
            }
        }
        double cycle = (MPI_Wtime() - cycle0) * 1e6 / (double)iters;
        /* After the clock stopped: writing is not part of the iteration. */
        if (tl) {
            for (size_t j = 0; j < iters && j < TIMELINE_KEPT; j++)
                fprintf(tl, "%zu\t%zu\t%llu\t%llu\t%llu\t%llu\n", size, j,
                        (unsigned long long)tl_rows[j][0], (unsigned long long)tl_rows[j][1],
                        (unsigned long long)tl_rows[j][2], (unsigned long long)tl_rows[j][3]);
            fflush(tl);
        }
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
    if (tl) fclose(tl);
    free(tl_rows);
    MPI_Finalize();
    return 0;
}
