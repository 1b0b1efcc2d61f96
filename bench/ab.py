#!/usr/bin/env python3
"""Interleaved A/B runs of mcbench: two builds, or two settings of one build.

    # two builds (e.g. a worktree of the previous commit built into /tmp/old)
    python3 bench/ab.py --a /tmp/old/release --b target/release -n 4 -m 4194304 -i 100 --rounds 8
    # two settings of one build, across the namespace test cluster
    python3 bench/ab.py --b-env MCAST_PACKET_BYTES=262144 -m 65536:4194304 --rounds 6 \\
        -- --hostfile /tmp/mcast-cluster/hostfile --launch-agent "ssh -F /tmp/mcast-cluster/ssh_config" \\
           -n 6 --if 10.77.0.0/24

A round runs A then B, the next B then A (so drift and the order hit both
alike); each run is `mclaunch [MCLAUNCH ARGS] [-x K=V ...] mcbench -m SIZES
[-i ITERS] --json` with the side's mclaunch and mcbench. Per size it prints
the medians over the rounds of mcbench's two figures, the timed bcast
(osu_bcast's average over ranks, `avg_us`) and bcast + barrier (rank 0's wall
clock per iteration, `cycle_us`), the ratio B / A of each (below 1: B
faster), and every round's bcast + barrier, so a bimodal cell shows.

With --pin LAYOUT both sides run rank r on CPU LAYOUT[r]
(compare-mpi/pin.sh): on the namespace cluster, whose hosts share this
machine's CPUs, the kernel's placement of the ranks otherwise decides much of
a small message's time and changes within a run (the same build's bcast +
barrier moved up to 2x between unpinned runs on 2026-12-02, about 15%
between pinned ones); one placement at a time, over several layouts
(bench/compare-mpi/layouts.py lists some), shows a change to the runtime
with less noise.

Standard library only. Medians of interleaved rounds from one run are the
figures to quote on this shared, noisy machine (README "Performance").
"""

import argparse
import json
import os
import statistics
import subprocess
import sys


PIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compare-mpi", "pin.sh")


def run(bin_dir, env, sizes, iters, mclaunch_args, timeout, pin=None):
    """One mcbench run: {size: (avg_us, cycle_us)}; with `pin`, a layout for
    compare-mpi/pin.sh (rank r on CPU pin[r])."""
    cmd = [os.path.join(bin_dir, "mclaunch"), *mclaunch_args]
    for kv in env:
        cmd += ["-x", kv]
    if pin:
        cmd += ["-x", f"PIN_LAYOUT={pin}", PIN]
    cmd += [os.path.join(bin_dir, "mcbench"), "-m", sizes, "--json"]
    if iters:
        cmd += ["-i", str(iters)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        sys.exit(f"ab.py: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    rows = json.loads(p.stdout)["results"]
    return {r["size"]: (r["avg_us"], r["cycle_us"]) for r in rows}


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--a", default="target/release", help="A's directory of mclaunch and mcbench")
    ap.add_argument("--b", default="target/release", help="B's directory of mclaunch and mcbench")
    ap.add_argument("--a-env", action="append", default=[], metavar="K=V",
                    help="a variable for A's ranks (mclaunch -x), repeatable")
    ap.add_argument("--b-env", action="append", default=[], metavar="K=V",
                    help="a variable for B's ranks (mclaunch -x), repeatable")
    ap.add_argument("-n", type=int, help="ranks (mclaunch -n; or give it after --)")
    ap.add_argument("-m", default="1:4194304",
                    help="sizes, as mcbench -m (SIZE or MIN:MAX; default 1:4194304)")
    ap.add_argument("-i", type=int, help="timed iterations (mcbench -i; default mcbench's)")
    ap.add_argument("--rounds", type=int, default=6, help="interleaved rounds (default 6)")
    ap.add_argument("--pin", metavar="LAYOUT", default=None,
                    help="run rank r on CPU LAYOUT[r] on both sides (e.g. 0,1,0,1,0,1; "
                    "compare-mpi/pin.sh): one placement instead of the kernel's, less noise "
                    "on the namespace cluster, whose hosts share this machine's CPUs")
    ap.add_argument("--timeout", type=float, default=600, help="seconds allowed per run")
    ap.add_argument("mclaunch_args", nargs="*",
                    help="after --: more mclaunch arguments (hosts, transport, ...)")
    a = ap.parse_args()
    if a.rounds < 1:
        sys.exit("ab.py: --rounds must be at least 1")
    sizes = a.m if ":" in a.m else f"{a.m}:{a.m}"
    extra = (["-n", str(a.n)] if a.n else []) + a.mclaunch_args
    sides = {"A": (a.a, a.a_env), "B": (a.b, a.b_env)}
    for name, (d, _) in sides.items():
        for b in ("mclaunch", "mcbench"):
            if not os.access(os.path.join(d, b), os.X_OK):
                sys.exit(f"ab.py: {name}: no {b} in {d} (cargo build --release -p mcast-suite -p mclaunch)")
    res = {"A": [], "B": []}
    for r in range(a.rounds):
        for name in ("A", "B") if r % 2 == 0 else ("B", "A"):
            d, env = sides[name]
            res[name].append(run(d, env, sizes, a.i, extra, a.timeout, a.pin))
            print(f"round {r + 1}/{a.rounds}: {name} done", file=sys.stderr)
    print(f"A: {a.a} {' '.join(a.a_env)}".rstrip())
    print(f"B: {a.b} {' '.join(a.b_env)}".rstrip())
    print(f"mclaunch {' '.join(extra)}; mcbench -m {sizes}" + (f" -i {a.i}" if a.i else "")
          + (f"; pinned to CPUs {a.pin} (rank order)" if a.pin else "")
          + f"; medians of {a.rounds} interleaved rounds, µs")
    print()
    print("| size | timed A | timed B | B / A | bcast + barrier A | B | B / A | rounds A | rounds B |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for s in sorted(res["A"][0]):
        med = {k: [statistics.median(run[s][i] for run in res[k]) for i in (0, 1)] for k in res}
        each = {k: " ".join(f"{run[s][1]:.0f}" for run in res[k]) for k in res}
        (ta, ca), (tb, cb) = med["A"], med["B"]
        print(f"| {s} | {ta:.1f} | {tb:.1f} | {tb / ta:.2f} | {ca:.1f} | {cb:.1f} | {cb / ca:.2f} "
              f"| {each['A']} | {each['B']} |")


if __name__ == "__main__":
    main()
