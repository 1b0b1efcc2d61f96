#!/bin/sh
# pin.sh: run one rank of a job on the CPU a fixed layout gives it.
#
#   PIN_LAYOUT=0,1,0,1,0,1 pin.sh PROGRAM [ARGS...]
#
# Rank r runs on CPU number r of PIN_LAYOUT (comma-separated, one entry per
# rank). The rank comes from MCAST_RANK (mclaunch), OMPI_COMM_WORLD_RANK
# (mpirun), PMI_RANK (Hydra) or SLURM_PROCID (srun), whichever is set first.
# Both launchers pass PIN_LAYOUT on with -x PIN_LAYOUT=... .
#
# A measurement device for the namespace test cluster (bench/cluster), whose
# "hosts" share one machine's CPUs: there the kernel's placement of the ranks
# on those CPUs decides much of a small message's time, and it moves ranks
# around during a run. Pinning each rank, the same way for mcast and for
# Open MPI, compares the two runtimes at one placement at a time
# (bench/compare-mpi/layouts.py). On a real cluster use the launchers' own
# binding (mclaunch --bind-to core, mpirun --bind-to core).
set -eu
rank=${MCAST_RANK:-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-}}}}
if [ -z "$rank" ]; then
    echo "pin.sh: no rank in the environment (MCAST_RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID)" >&2
    exit 2
fi
if [ -z "${PIN_LAYOUT:-}" ]; then
    echo "pin.sh: PIN_LAYOUT is not set (e.g. PIN_LAYOUT=0,1,0,1)" >&2
    exit 2
fi
cpu=$(printf '%s\n' "$PIN_LAYOUT" | tr ',' '\n' | sed -n "$((rank + 1))p")
case "$cpu" in
    '' | *[!0-9]*)
        echo "pin.sh: PIN_LAYOUT=$PIN_LAYOUT has no CPU number for rank $rank" >&2
        exit 2
        ;;
esac
exec taskset -c "$cpu" "$@"
