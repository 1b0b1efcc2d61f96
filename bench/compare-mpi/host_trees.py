#!/usr/bin/env python3
"""Host-aware `auto` against the rank-order k-binomial tree, across hosts.

Runs `mcbench --json --algo auto` and `--algo kbinomial` under
`mclaunch --hostfile HOSTFILE --map-by MAP`, interleaved (A B, then B A)
over ROUNDS rounds, and prints the medians over rounds per size with the
ratio auto / kbinomial as a markdown table. With `--map-by node` ranks are
dealt round-robin over the hosts, so a rank-order tree crosses hosts on
almost every edge, while the host-aware tree crosses each host boundary
once (README "Host-aware trees").

    python3 bench/compare-mpi/host_trees.py --hosts /tmp/mcast-cluster/hostfile \\
        --launch-agent "ssh -F /tmp/mcast-cluster/ssh_config" [--map-by node] [--rounds 5]

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
    ap.add_argument("--hosts", required=True, help="hostfile (host slots=N lines)")
    ap.add_argument("--launch-agent", default=os.environ.get("MCAST_LAUNCH_AGENT", "ssh"))
    ap.add_argument("--map-by", default="node", choices=["slot", "node"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--max-size", type=int, default=4 << 20)
    a = ap.parse_args()
    bin_dir = os.path.join(ROOT, "target", "release")
    res = {"auto": {}, "kbinomial": {}}
    meta = None
    for rnd in range(a.rounds):
        order = ["auto", "kbinomial"] if rnd % 2 == 0 else ["kbinomial", "auto"]
        for algo in order:
            cmd = [os.path.join(bin_dir, "mclaunch"), "--hostfile", a.hosts,
                   "--launch-agent", a.launch_agent, "--map-by", a.map_by,
                   os.path.join(bin_dir, "mcbench"), "--json", "--algo", algo,
                   "-m", f"1:{a.max_size}"]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                               env=dict(os.environ, RUST_LOG="off"))
            if p.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
            rep = json.loads(p.stdout[p.stdout.find("{"):])
            if rep.get("algorithm") != algo:
                sys.exit(f"mcbench ran {rep.get('algorithm')!r}, not {algo}")
            meta = rep
            for r in rep["results"]:
                res[algo].setdefault(r["size"], []).append(r["avg_us"])
            with open("/proc/loadavg") as f:
                load = f.read().split()[0]
            print(f"round {rnd + 1}/{a.rounds}: {algo}, load {load}", file=sys.stderr, flush=True)
    hosts = ", ".join(f"{h['host']}: {' '.join(map(str, h['ranks']))}" for h in meta["hosts"])
    print(f"mcast bcast, {meta['ranks']} ranks, --map-by {a.map_by} ({hosts}); medium "
          f"`{meta['medium']}`, packet {meta['packet_bytes']} B; medians of {a.rounds} "
          f"interleaved rounds, µs (average over ranks, osu_bcast method)\n")
    print("| size | auto (host-aware) µs | kbinomial (rank order) µs | auto / kbinomial |")
    print("|---:|---:|---:|---:|")
    for s in sorted(res["auto"]):
        x, y = statistics.median(res["auto"][s]), statistics.median(res["kbinomial"][s])
        print(f"| {s} | {x:.1f} | {y:.1f} | {x / y:.2f} |")


if __name__ == "__main__":
    main()
