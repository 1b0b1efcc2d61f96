#!/usr/bin/env python3
"""A/B/... of one collective's forced algorithms: mcbench --coll COLL under
ENV=each value, interleaved rounds, medians of the OSU average (µs).

    python3 bench/compare-mpi/algo_ab.py --coll allgather --env MCAST_ALLGATHER \\
        --values ring,doubling,multicast --ranks 4,8 -m 1:1048576 --rounds 3

Run from the repository root after
`cargo build --release -p mcast-suite --bin mcbench -p mclaunch`; prints a
markdown table with each value's median and its ratio to the first value's.
"""
import argparse, json, os, statistics, subprocess

ap = argparse.ArgumentParser()
ap.add_argument("--coll", required=True)
ap.add_argument("--env", required=True)
ap.add_argument("--values", required=True)
ap.add_argument("--ranks", default="4,8")
ap.add_argument("-m", "--sizes", default="1:65536")
ap.add_argument("--rounds", type=int, default=3)
a = ap.parse_args()
values = a.values.split(",")
ranks = [int(x) for x in a.ranks.split(",")]
rows = {}
for _ in range(a.rounds):
    for n in ranks:
        for v in values:
            env = dict(os.environ, **{a.env: v})
            out = subprocess.run(
                ["target/release/mcbench", "-n", str(n), "--coll", a.coll, "-m", a.sizes, "--json"],
                capture_output=True, text=True, env=env, timeout=600, check=True)
            for r in json.loads(out.stdout)["results"]:
                rows.setdefault((n, r["size"], v), []).append(r["avg_us"])
print(f"{a.coll}, {a.env} = {', '.join(values)}; medians of {a.rounds} interleaved rounds (µs)\n")
head = " | ".join(f"{v} µs" for v in values) + " | " + " | ".join(f"{v} / {values[0]}" for v in values[1:])
print(f"| ranks | size | {head} |")
print("|---:|---:|" + "---:|" * (2 * len(values) - 1))
for n, s in sorted({(n, s) for (n, s, _) in rows}):
    med = [statistics.median(rows[(n, s, v)]) for v in values]
    cells = " | ".join(f"{m:.1f}" for m in med) + " | " + " | ".join(f"{m / med[0]:.2f}" for m in med[1:])
    print(f"| {n} | {s} | {cells} |")
