#!/usr/bin/env python3
"""Compare an mcbench run against the baseline kept in the repository.

    python3 bench/regress.py                 # measure, compare, exit 1 on a regression
    python3 bench/regress.py --update        # measure and write a new baseline
    python3 bench/regress.py --check FILE    # compare a saved run (no measuring)

A run is R rounds (default 5) of `mcbench -n N --json` for every rank count
(default 4 and 8), interleaved (4, 8, 4, 8, ...) so drift hits both alike. Per
(ranks, size) it keeps the median of the rounds' osu-style averages and the
spread (max/min over rounds) as the measure of noise.

A cell regresses when its new median exceeds the baseline median by more than
the noise allows: more than `--tolerance` (default 0.30, i.e. 30 %) and more
than twice the larger of the two runs' relative spreads. This machine is
shared and noisy; the thresholds are meant to catch real slow-downs (a lost
optimisation typically costs 1.5x to 10x), not a few percent.

A baseline belongs to one machine: figures differ by machine far more than by
any change worth catching (the same code took 2.3 to 4.5 times as long on
2026-11-29's Intel Xeon VM as on the previous day's AMD EPYC one). Each run
records its CPU model and count; the default baseline is the one kept for
this machine, bench/baseline/mcbench-<cpu>-<n>cpu.json, and comparing a run
with a baseline of another machine is refused (exit 2) unless --any-machine
is given. With no baseline for this machine, take one with --update.

Standard library only.
"""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BASELINES = os.path.join(HERE, "baseline")
MCBENCH = os.path.join(ROOT, "target", "release", "mcbench")


def git_rev():
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_model():
    """This machine's CPU model, as lscpu's "Model name" (e.g. "AMD EPYC")."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_key(cpu, cpus):
    """What a baseline is valid for: the CPU model and count."""
    return f"{cpu}, {cpus} CPUs"


def baseline_path(cpu, cpus):
    """The baseline kept for a machine: bench/baseline/mcbench-<cpu>-<n>cpu.json."""
    slug = re.sub(r"[^a-z0-9]+", "-", cpu.lower()).strip("-") or "unknown"
    return os.path.join(BASELINES, f"mcbench-{slug}-{cpus}cpu.json")


def run_machine(run):
    """The (cpu, cpus) a saved run or baseline was taken on (None if it does not say)."""
    if "cpu" not in run:
        return None
    return run["cpu"], run.get("cpus")


def one_run(n, sizes, iters, timeout):
    cmd = [MCBENCH, "-n", str(n), "--json", "-m", sizes]
    if iters:
        cmd += ["-i", str(iters[0]), "-x", str(iters[1])]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr}")
    return json.loads(out.stdout)


def measure(args):
    if not args.no_build:
        # mcbench is the workspace root's (mcast-suite), mclaunch its own
        # package's: name both packages, or cargo looks for mclaunch among
        # the default-run packages only and fails.
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "mcast-suite", "-p",
                        "mclaunch", "--bin", "mcbench", "--bin", "mclaunch"],
                       cwd=ROOT, check=True)
    ranks = [int(r) for r in args.ranks.split(",")]
    iters = (50, 5) if args.quick else None
    samples = {}  # (ranks, size) -> [avg_us per round]
    start = time.time()
    for rnd in range(args.rounds):
        for n in ranks:
            rep = one_run(n, args.sizes, iters, args.timeout)
            for row in rep["results"]:
                samples.setdefault((n, row["size"]), []).append(row["avg_us"])
            print(f"round {rnd + 1}/{args.rounds}, {n} ranks done", file=sys.stderr)
    cells = []
    for (n, size), v in sorted(samples.items()):
        cells.append({
            "ranks": n,
            "size": size,
            "median_us": round(statistics.median(v), 2),
            "min_us": round(min(v), 2),
            "max_us": round(max(v), 2),
            "rounds": len(v),
        })
    return {
        "what": "mcbench -n N --json, osu_bcast method, medians over interleaved rounds",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, "
                   f"kernel {platform.release()}",
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "mcast": git_rev(),
        "quick": bool(args.quick),
        "seconds": round(time.time() - start),
        "cells": cells,
    }


def spread(c):
    return c["max_us"] / c["min_us"] - 1 if c["min_us"] > 0 else 0.0


def compare(base, new, tolerance):
    """Rows of (ranks, size, base, new, ratio, limit, verdict)."""
    old = {(c["ranks"], c["size"]): c for c in base["cells"]}
    rows = []
    for c in new["cells"]:
        b = old.get((c["ranks"], c["size"]))
        if b is None:
            rows.append((c["ranks"], c["size"], None, c["median_us"], None, None, "new"))
            continue
        ratio = c["median_us"] / b["median_us"] if b["median_us"] > 0 else float("inf")
        limit = 1 + max(tolerance, 2 * max(spread(b), spread(c)))
        verdict = "REGRESSED" if ratio > limit else ("faster" if ratio < 1 / limit else "ok")
        rows.append((c["ranks"], c["size"], b["median_us"], c["median_us"], ratio, limit, verdict))
    return rows


def print_rows(rows):
    print(f"{'ranks':>5} {'size':>9} {'baseline µs':>12} {'now µs':>10} {'ratio':>6} {'limit':>6}  verdict")
    for n, size, b, c, ratio, limit, verdict in rows:
        bs = f"{b:.1f}" if b is not None else "-"
        rs = f"{ratio:.2f}" if ratio is not None else "-"
        ls = f"{limit:.2f}" if limit is not None else "-"
        print(f"{n:>5} {size:>9} {bs:>12} {c:>10.1f} {rs:>6} {ls:>6}  {verdict}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", default="4,8")
    p.add_argument("--sizes", default="1:4194304", help="mcbench -m (default 1:4194304)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="50 timed / 5 warm-up iterations per size")
    p.add_argument("--tolerance", type=float, default=0.30)
    p.add_argument("--baseline", help="the baseline file (default: this machine's, "
                   "bench/baseline/mcbench-<cpu>-<n>cpu.json)")
    p.add_argument("--any-machine", action="store_true",
                   help="compare even with a baseline taken on another machine")
    p.add_argument("--update", action="store_true", help="write the run as the new baseline")
    p.add_argument("--check", metavar="FILE", help="compare this saved run instead of measuring")
    p.add_argument("--save", metavar="FILE", help="also write the run here")
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--timeout", type=int, default=1800)
    args = p.parse_args()

    if args.check:
        with open(args.check) as f:
            new = json.load(f)
    else:
        new = measure(args)
    here = run_machine(new) or (cpu_model(), os.cpu_count())
    baseline = args.baseline or baseline_path(*here)
    if args.save:
        with open(args.save, "w") as f:
            json.dump(new, f, indent=1)
    if args.update:
        os.makedirs(os.path.dirname(baseline), exist_ok=True)
        with open(baseline, "w") as f:
            json.dump(new, f, indent=1)
            f.write("\n")
        print(f"wrote {baseline} ({len(new['cells'])} cells)")
        return 0
    try:
        with open(baseline) as f:
            base = json.load(f)
    except OSError as e:
        kept = sorted(n for n in os.listdir(BASELINES) if n.endswith(".json")) \
            if os.path.isdir(BASELINES) else []
        print(f"regress.py: no baseline for this machine ({machine_key(*here)}): {e.strerror}: "
              f"{baseline}; kept: {', '.join(kept) or 'none'}; take one here with --update",
              file=sys.stderr)
        return 2
    there = run_machine(base)
    if there != here and not args.any_machine:
        what = machine_key(*there) if there else "a machine it does not name"
        print(f"regress.py: {baseline} was taken on {what}, this run on {machine_key(*here)}: "
              f"figures differ by machine, not only by code; take a baseline here with "
              f"--update, or compare anyway with --any-machine", file=sys.stderr)
        return 2
    print(f"baseline: {base['date']}, mcast {base['mcast']}; now: {new['date']}, mcast {new['mcast']}")
    rows = compare(base, new, args.tolerance)
    print_rows(rows)
    bad = [r for r in rows if r[6] == "REGRESSED"]
    if bad:
        print(f"{len(bad)} cell(s) regressed beyond noise", file=sys.stderr)
        return 1
    print("no regression beyond noise")
    return 0


if __name__ == "__main__":
    sys.exit(main())
