#!/usr/bin/env python3
"""A/B of allgather's and alltoall's algorithm menus: mcbench with the old
fixed algorithms (MCAST_ALLGATHER=ring, MCAST_ALLTOALL=pairwise) against
`auto`, 3 interleaved rounds, 4 and 8 ranks, 1 B to 64 KiB, medians of the
OSU average. Run from the repository root after
`cargo build --release -p mcast-suite --bin mcbench -p mclaunch`;
prints a markdown table."""
import json, subprocess, statistics, os, sys
rows = {}
sets = [("old ring/pairwise", {"MCAST_ALLGATHER": "ring", "MCAST_ALLTOALL": "pairwise"}), ("new auto", {})]
for rnd in range(3):
    for coll in ["allgather", "alltoall"]:
        for n in [4, 8]:
            for name, env in sets:
                e = dict(os.environ, **env)
                out = subprocess.run(["target/release/mcbench", "-n", str(n), "--coll", coll, "-m", "1:65536", "--json"],
                                     capture_output=True, text=True, env=e, timeout=300)
                d = json.loads(out.stdout)
                for r in d["results"]:
                    rows.setdefault((coll, n, r["size"], name), []).append(r["avg_us"])
keys = sorted({(c, n, s) for (c, n, s, _) in rows})
print("| coll | ranks | size | ring/pairwise µs | auto µs | auto / old |")
print("|---|---:|---:|---:|---:|---:|")
for c, n, s in keys:
    o = statistics.median(rows[(c, n, s, sets[0][0])]); a = statistics.median(rows[(c, n, s, sets[1][0])])
    print(f"| {c} | {n} | {s} | {o:.1f} | {a:.1f} | {a/o:.2f} |")
