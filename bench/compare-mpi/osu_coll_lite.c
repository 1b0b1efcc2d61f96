/*
 * osu_coll_lite: MPI_Allreduce / MPI_Allgather / MPI_Alltoall latency,
 * measured the OSU way (osu_allreduce, osu_allgather, osu_alltoall), with the
 * same method, defaults, data and checks as mcast's `mcbench --coll X --json`,
 * so that bench/compare-mpi/run.py can compare the two cell by cell.
 * Modelled on osu_bcast_lite.c beside it.
 *
 * For each message size (powers of two from MIN to MAX):
 *   MPI_Barrier; then warm-up + timed iterations, each one collective call
 *   (timed with MPI_Wtime) followed by an untimed MPI_Barrier. Every rank fills
 *   its input before starting the clock and checks every element of its output
 *   after stopping it (a mismatch aborts the job). Each rank averages its own
 *   timed iterations; MPI_Reduce (MIN, MAX, SUM) gives rank 0 the minimum,
 *   maximum and average over ranks.
 *
 * Sizes are OSU's (and mcbench's):
 *   allreduce  the whole vector, MPI_FLOAT with MPI_SUM: size / 4 elements
 *              (rounded down; a size below one element is skipped)
 *   allgather  one rank's block of MPI_CHAR (the result is N blocks)
 *   alltoall   one block of MPI_CHAR per destination (N blocks in, N out)
 * Data (mcbench's coll.rs): float element j of rank r in iteration i is
 * (j + 3r + i) mod 16, so every sum is exact in any order; the bytes rank s
 * sends to rank d in iteration i are mcbench's pattern with seed
 * key(i, s, d) = s + 17 d + 101 i (allgather: d = 0).
 *
 * Defaults (as OSU and mcbench): 1000 timed / 200 warm-up iterations below
 * 8 KiB, 100 / 10 from 8 KiB.
 *
 * Usage: mpirun -n N osu_coll_lite allreduce|allgather|alltoall
 *                    [-m [MIN:]MAX] [-i ITERS] [-x WARMUP] [--json]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LARGE_MESSAGE 8192

enum coll { ALLREDUCE, ALLGATHER, ALLTOALL };
static const char *NAME[] = {"allreduce", "allgather", "alltoall"};
static const char *MPI_NAME[] = {"MPI_Allreduce", "MPI_Allgather", "MPI_Alltoall"};
static const char *TITLE[] = {"Allreduce", "Allgather", "Alltoall"};

/* mcbench's pattern(size, iter): byte i of the 256-byte period. */
static void pattern(unsigned char p[256], size_t size, size_t iter) {
    unsigned char s = (unsigned char)((iter * 7u) ^ (size * 13u));
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

/* mcbench's key(i, src, dst). */
static size_t key(size_t i, size_t src, size_t dst) { return src + dst * 17u + i * 101u; }

static float val(size_t r, size_t j, size_t i) { return (float)((j + 3 * r + i) % 16); }

static void usage(int rank) {
    if (rank == 0)
        fprintf(stderr, "usage: osu_coll_lite allreduce|allgather|alltoall "
                        "[-m [MIN:]MAX] [-i ITERS] [-x WARMUP] [--json]\n");
}

static void fail(int rank, const char *what, long at, size_t size, size_t iter) {
    fprintf(stderr, "rank %d: wrong %s at element %ld of a %zu-byte call (iteration %zu)\n",
            rank, what, at, size, iter);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    size_t np = (size_t)nranks, me = (size_t)rank;

    size_t lo = 1, hi = 4194304;
    long iters_opt = -1, warm_opt = -1;
    int json = 0, coll = -1;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--json")) {
            json = 1;
        } else if (!strcmp(argv[a], "allreduce")) {
            coll = ALLREDUCE;
        } else if (!strcmp(argv[a], "allgather")) {
            coll = ALLGATHER;
        } else if (!strcmp(argv[a], "alltoall")) {
            coll = ALLTOALL;
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
        } else {
            coll = -2;
            break;
        }
    }
    if (coll < 0 || lo < 1 || lo > hi) {
        usage(rank);
        MPI_Finalize();
        return 2;
    }

    /* Largest buffers: allreduce one vector (in place), the others N blocks. */
    size_t in_bytes = coll == ALLREDUCE ? hi : coll == ALLGATHER ? hi : hi * np;
    size_t out_bytes = coll == ALLREDUCE ? 0 : hi * np;
    unsigned char *in = malloc(in_bytes ? in_bytes : 1);
    unsigned char *out = malloc(out_bytes ? out_bytes : 1);
    if (!in || !out) {
        fprintf(stderr, "rank %d: cannot allocate %zu + %zu bytes\n", rank, in_bytes, out_bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    if (rank == 0) {
        if (json)
            printf("{\n  \"benchmark\": \"%s\",\n  \"implementation\": \"%s\",\n"
                   "  \"ranks\": %d,\n  \"element\": \"%s\",%s\n  \"results\": [",
                   NAME[coll], MPI_NAME[coll], nranks, coll == ALLREDUCE ? "f32" : "u8",
                   coll == ALLREDUCE ? "\n  \"op\": \"Sum\"," : "");
        else
            printf("# osu_coll_lite %s Latency Test (%s), ranks: %d\n"
                   "# Size       Avg Latency(us)     Min Latency(us)     Max Latency(us)"
                   "  Iterations\n", TITLE[coll], MPI_NAME[coll], nranks);
    }

    int first = 1;
    for (size_t size = lo; size <= hi; size *= 2) {
        size_t n = coll == ALLREDUCE ? size / 4 : size; /* elements per block */
        if (n == 0) {
            if (size > SIZE_MAX / 2) break;
            continue;
        }
        int large = size >= LARGE_MESSAGE;
        size_t iters = iters_opt >= 0 ? (size_t)iters_opt : (large ? 100 : 1000);
        size_t warmup = warm_opt >= 0 ? (size_t)warm_opt : (large ? 10 : 200);
        if (iters < 1) iters = 1;

        MPI_Barrier(MPI_COMM_WORLD);
        double total = 0.0;
        for (size_t i = 0; i < warmup + iters; i++) {
            float *f = (float *)in;
            /* Fill the input (untimed). */
            if (coll == ALLREDUCE)
                for (size_t j = 0; j < n; j++) f[j] = val(me, j, i);
            else if (coll == ALLGATHER)
                fill(in, n, key(i, me, 0));
            else
                for (size_t d = 0; d < np; d++) fill(in + d * n, n, key(i, me, d));

            double t0 = MPI_Wtime();
            if (coll == ALLREDUCE)
                MPI_Allreduce(MPI_IN_PLACE, f, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            else if (coll == ALLGATHER)
                MPI_Allgather(in, (int)n, MPI_CHAR, out, (int)n, MPI_CHAR, MPI_COMM_WORLD);
            else
                MPI_Alltoall(in, (int)n, MPI_CHAR, out, (int)n, MPI_CHAR, MPI_COMM_WORLD);
            double dt = MPI_Wtime() - t0;
            if (i >= warmup) total += dt;

            /* Check every element of the output (untimed). */
            if (coll == ALLREDUCE) {
                float want[16];
                for (size_t k = 0; k < 16; k++) {
                    want[k] = 0.0f;
                    for (size_t r = 0; r < np; r++) want[k] += val(r, k, i);
                }
                for (size_t j = 0; j < n; j++)
                    if (f[j] != want[j % 16]) fail(rank, NAME[coll], (long)j, size, i);
            } else {
                for (size_t s = 0; s < np; s++) {
                    long at = check(out + s * n, n, key(i, s, coll == ALLGATHER ? 0 : me));
                    if (at >= 0) fail(rank, NAME[coll], (long)(s * n) + at, size, i);
                }
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        double mine = total * 1e6 / (double)iters, mn, mx, sum;
        MPI_Reduce(&mine, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            double avg = sum / nranks;
            if (json)
                printf("%s\n    {\"size\": %zu, \"avg_us\": %.4f, \"min_us\": %.4f, "
                       "\"max_us\": %.4f, \"iterations\": %zu}",
                       first ? "" : ",", size, avg, mn, mx, iters);
            else
                printf("%-10zu%18.2f%20.2f%20.2f%12zu\n", size, avg, mn, mx, iters);
            fflush(stdout);
        }
        first = 0;
        if (size > SIZE_MAX / 2) break;
    }
    if (rank == 0 && json) printf("\n  ]\n}\n");
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
