#!/usr/bin/env python3
"""A/B of allreduce's algorithm menu: mcbench --coll allreduce (f32 Sum)
under each forced MCAST_ALLREDUCE (doubling, rabenseifner, ring,
reduce_bcast), ROUNDS interleaved rounds (every algorithm and rank count
once per round, in a rotated order), medians of the OSU average. Run from
the repository root after
`cargo build --release -p mcast-suite --bin mcbench` and
`cargo build --release -p mclaunch --bin mclaunch`.

Usage: allreduce_ab.py [ROUNDS] [RANKS,...] [MAX_BYTES] [RAW_JSON] [ALGOS,...]
(ALGOS: the MCAST_ALLREDUCE values to run, `auto` among them if wanted.)
Prints a markdown table: per rank count and size, each algorithm's median
in µs, the fastest, and its lead over the runner-up."""
import json, os, statistics, subprocess, sys

ALGOS = ["doubling", "rabenseifner", "ring", "reduce_bcast"]
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
ranks = [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "4,5,8").split(",")]
top = sys.argv[3] if len(sys.argv) > 3 else "1048576"
raw_path = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] != "-" else None
if len(sys.argv) > 5:
    ALGOS = sys.argv[5].split(",")
rows = {}
for rnd in range(rounds):
    order = ALGOS[rnd % len(ALGOS):] + ALGOS[:rnd % len(ALGOS)]
    for n in ranks:
        for algo in order:
            env = dict(os.environ, MCAST_ALLREDUCE=algo)
            out = subprocess.run(["target/release/mcbench", "-n", str(n), "--coll", "allreduce",
                                  "-m", f"4:{top}", "--json"],
                                 capture_output=True, text=True, env=env, timeout=900)
            if out.returncode != 0:
                sys.exit(f"{algo} n={n}: {out.stderr}")
            for r in json.loads(out.stdout)["results"]:
                rows.setdefault((n, r["size"], algo), []).append(r["avg_us"])
            print(f"round {rnd} n={n} {algo} done", file=sys.stderr, flush=True)
if raw_path:
    with open(raw_path, "w") as f:
        json.dump([{"ranks": n, "size": s, "algorithm": a, "avg_us": v}
                   for (n, s, a), v in sorted(rows.items())], f, indent=1)
print("| ranks | size B | " + " | ".join(f"{a} µs" for a in ALGOS) + " | fastest | runner-up / fastest |")
print("|---:|---:|" + "---:|" * len(ALGOS) + "---|---:|")
for n, s in sorted({(n, s) for (n, s, _) in rows}):
    med = {a: statistics.median(rows[(n, s, a)]) for a in ALGOS}
    best = sorted(ALGOS, key=med.get)
    cells = " | ".join(f"{med[a]:.1f}" for a in ALGOS)
    print(f"| {n} | {s} | {cells} | {best[0]} | {med[best[1]] / med[best[0]]:.2f} |")
