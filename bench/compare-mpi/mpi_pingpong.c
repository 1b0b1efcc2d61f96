/*
 * mpi_pingpong: Open MPI's point-to-point one-way latency, the figure
 * `mcbench --coll latency` gives for mcast (osu_latency's method: ranks 0
 * and 1 bounce a message, one way = round trip / 2).
 *
 * For each size of 1, 4, 16, 64, 256 and 1024 bytes: 2,000 warm-up and
 * 20,000 timed round trips of MPI_Send / MPI_Recv; rank 0 prints
 * "SIZE ONE_WAY_US", the mean over the timed ones.
 *
 *   mpicc -O2 -o mpi_pingpong bench/compare-mpi/mpi_pingpong.c
 *   # one host, shared memory:
 *   mpirun --bind-to none --mca pml ob1 --mca btl self,vader -n 2 ./mpi_pingpong
 *   # two namespace hosts (bench/cluster), TCP:
 *   mpirun --hostfile HOSTFILE --bind-to none \
 *     --mca plm_rsh_agent 'ssh -F /tmp/mcast-cluster/ssh_config' --mca pml ob1 \
 *     --mca btl self,tcp --mca btl_tcp_if_include 10.77.0.0/24 \
 *     --mca oob_tcp_if_include 10.77.0.0/24 --mca mpi_yield_when_idle 1 \
 *     -n 2 ./mpi_pingpong
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "mpi_pingpong: run it with exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char buf[1024] = {0};
    const int warmup = 2000, iters = 20000;
    for (int s = 1; s <= 1024; s *= 4) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = 0;
        for (int i = 0; i < warmup + iters; i++) {
            if (i == warmup) t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buf, s, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(buf, s, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, s, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, s, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
            }
        }
        if (rank == 0) printf("%d %.2f\n", s, (MPI_Wtime() - t0) * 1e6 / iters / 2);
    }
    MPI_Finalize();
    return 0;
}
