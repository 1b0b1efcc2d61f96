#!/usr/bin/env python3
"""Where a small bcast's time goes across hosts: the same 6-rank mcbench run
(1 B .. 1 KiB, osu_bcast method, auto) on one host over Unix sockets, on one
host over TCP (MCAST_TRANSPORT=tcp), and across the hosts of a hostfile,
interleaved over ROUNDS rounds; prints the medians as a markdown table.

    python3 bench/compare-mpi/small_hops.py --hosts /tmp/mcast-cluster/hostfile \\
        --launch-agent "ssh -F /tmp/mcast-cluster/ssh_config" [--rounds 5]

Standard library only; uses target/release/{mclaunch,mcbench}.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", required=True)
    ap.add_argument("--launch-agent", default=os.environ.get("MCAST_LAUNCH_AGENT", "ssh"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-n", type=int, default=6)
    a = ap.parse_args()
    launch = os.path.join(ROOT, "target", "release", "mclaunch")
    bench = [os.path.join(ROOT, "target", "release", "mcbench"), "--json", "-m", "1:1024"]
    n = str(a.n)
    series = {
        "one host, Unix sockets": [launch, "-n", n] + bench,
        "one host, TCP": [launch, "-n", n, "-x", "MCAST_TRANSPORT=tcp"] + bench,
        "across hosts (TCP between, Unix sockets within)":
            [launch, "-n", n, "--hostfile", a.hosts, "--launch-agent", a.launch_agent] + bench,
    }
    res = {k: {} for k in series}
    for rnd in range(a.rounds):
        items = list(series.items())
        for key, cmd in (items if rnd % 2 == 0 else items[::-1]):
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                               env=dict(os.environ, RUST_LOG="off"))
            if p.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
            rep = json.loads(p.stdout[p.stdout.find("{"):])
            for r in rep["results"]:
                res[key].setdefault(r["size"], []).append(r["avg_us"])
            print(f"round {rnd + 1}: {key}", file=sys.stderr, flush=True)
    print(f"mcast bcast, {n} ranks, auto, µs (osu_bcast method), medians of {a.rounds} "
          "interleaved rounds\n")
    print("| size | " + " | ".join(series) + " |")
    print("|---:|" + "---:|" * len(series))
    for s in sorted(next(iter(res.values()))):
        print(f"| {s} | " + " | ".join(f"{statistics.median(res[k][s]):.1f}" for k in series) + " |")


if __name__ == "__main__":
    main()
