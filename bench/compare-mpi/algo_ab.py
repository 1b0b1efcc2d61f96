#!/usr/bin/env python3
"""A/B/... of one collective's forced algorithms: mcbench --coll COLL under
ENV=each value, interleaved rounds (every value and rank count once per
round, the values' order rotated from round to round), medians of the OSU
average (µs).

    python3 bench/compare-mpi/algo_ab.py --coll allgather --env MCAST_ALLGATHER \\
        --values ring,doubling,multicast --ranks 4,8 -m 1:1048576 --rounds 3
    # allreduce's menu (issue 18), with every run kept:
    python3 bench/compare-mpi/algo_ab.py --coll allreduce --env MCAST_ALLREDUCE \\
        --values doubling,rabenseifner,ring,reduce_bcast --ranks 4,5,8 -m 4:1048576 \\
        --raw allreduce_raw.json
    # a value of `auto` runs the collective's own choice (the variable unset)

Run from the repository root after
`cargo build --release -p mcast-suite --bin mcbench -p mclaunch`; prints a
markdown table with each value's median, its ratio to the first value's,
the fastest value and its lead over the runner-up. (It replaces
`menu_ab.py` and `allreduce_ab.py`, which earlier result files name:
`menu_ab.py` was this with `--coll allgather --env MCAST_ALLGATHER --values
ring,auto` and `--coll alltoall --env MCAST_ALLTOALL --values
pairwise,auto`, `--ranks 4,8 -m 1:65536`; `allreduce_ab.py 3 4,5,8 1048576
FILE` the allreduce example above.)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--coll", required=True, help="mcbench --coll (allreduce, allgather, alltoall, gather, ...)")
ap.add_argument("--env", required=True, help="the variable that forces the algorithm (e.g. MCAST_ALLREDUCE)")
ap.add_argument("--values", required=True, help="comma-separated values of --env; `auto`: unset")
ap.add_argument("--ranks", default="4,8", help="comma-separated rank counts (default 4,8)")
ap.add_argument("-m", "--sizes", default="1:65536", help="mcbench -m (default 1:65536)")
ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
ap.add_argument("--raw", help="write every run's figures to this JSON file")
ap.add_argument("--timeout", type=int, default=900, help="seconds allowed per mcbench run")
a = ap.parse_args()
values = a.values.split(",")
ranks = [int(x) for x in a.ranks.split(",")]
rows = {}
for rnd in range(a.rounds):
    order = values[rnd % len(values):] + values[:rnd % len(values)]
    for n in ranks:
        for v in order:
            env = dict(os.environ)
            if v == "auto":
                env.pop(a.env, None)
            else:
                env[a.env] = v
            out = subprocess.run(
                ["target/release/mcbench", "-n", str(n), "--coll", a.coll, "-m", a.sizes, "--json"],
                capture_output=True, text=True, env=env, timeout=a.timeout)
            if out.returncode != 0:
                sys.exit(f"{a.env}={v} n={n}: {out.stderr}")
            for r in json.loads(out.stdout)["results"]:
                rows.setdefault((n, r["size"], v), []).append(r["avg_us"])
            print(f"round {rnd + 1}/{a.rounds} n={n} {v} done", file=sys.stderr, flush=True)
if a.raw:
    with open(a.raw, "w") as f:
        json.dump([{"ranks": n, "size": s, "value": v, "avg_us": us}
                   for (n, s, v), us in sorted(rows.items())], f, indent=1)
print(f"{a.coll}, {a.env} = {', '.join(values)}; medians of {a.rounds} interleaved rounds (µs)\n")
head = " | ".join(f"{v} µs" for v in values) + "".join(f" | {v} / {values[0]}" for v in values[1:])
print(f"| ranks | size | {head} | fastest | runner-up / fastest |")
print("|---:|---:|" + "---:|" * (2 * len(values) - 1) + "---|---:|")
for n, s in sorted({(n, s) for (n, s, _) in rows}):
    med = {v: statistics.median(rows[(n, s, v)]) for v in values}
    best = sorted(values, key=med.get)
    lead = f"{med[best[1]] / med[best[0]]:.2f}" if len(best) > 1 else ""
    cells = " | ".join(f"{med[v]:.1f}" for v in values) + "".join(
        f" | {med[v] / med[values[0]]:.2f}" for v in values[1:])
    print(f"| {n} | {s} | {cells} | {best[0]} | {lead} |")
