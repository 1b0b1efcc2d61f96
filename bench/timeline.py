#!/usr/bin/env python3
"""Line up the ranks' timelines that `mcbench --timeline DIR` wrote.

    mclaunch ... mcbench -m 1:1 -i 5000 --timeline /tmp/tl
    python3 bench/timeline.py /tmp/tl [--root 0] [--size 1]

For each message size, iteration by iteration, every rank's times are taken
relative to the moment the root called its bcast; the table gives each
rank's median over the iterations: when its bcast returned (its data was
there), when it entered the barrier (after the receivers' check), and when
it left the barrier. Below it: the iteration time at the root (from one
bcast call to the next: median and percentiles, and the share of time spent
in iterations above 500 µs), which rank entered the barrier last and how
often, and the median time from the last entry to the first rank leaving.

The files hold CLOCK_MONOTONIC times: lining ranks up is only meaningful
for ranks of one machine (one host, or the namespace test cluster of
bench/cluster). Standard library only.
"""
import argparse
import collections
import glob
import os
import re
import statistics
import sys


def load(d):
    ranks = {}
    for path in glob.glob(os.path.join(d, "rank-*.tsv")):
        m = re.fullmatch(r"rank-(\d+)\.tsv", os.path.basename(path))
        if not m:
            continue
        rows = collections.defaultdict(list)
        with open(path) as f:
            header = f.readline().split()
            if header[:2] != ["size", "iteration"] or len(header) != 6:
                sys.exit(f"{path}: not an mcbench --timeline file")
            for n, line in enumerate(f, 2):
                parts = line.split()
                try:
                    size, it, a, b, c, e = map(int, parts)
                except ValueError:
                    sys.exit(f"{path}:{n}: expected 6 integers, got {line.strip()!r}")
                rows[size].append((it, a, b, c, e))
        ranks[int(m.group(1))] = rows
    if not ranks:
        sys.exit(f"no rank-*.tsv in {d}")
    return ranks


def pct(xs, f):
    xs = sorted(xs)
    return xs[int((len(xs) - 1) * f)]


def report(ranks, size, root):
    n = len(ranks)
    per = {r: {row[0]: row[1:] for row in ranks[r].get(size, [])} for r in ranks}
    common = sorted(set.intersection(*(set(p) for p in per.values())))
    if len(common) < 2:
        print(f"size {size}: fewer than 2 iterations common to every rank")
        return
    print(f"size {size} B: {n} ranks, {len(common)} iterations; µs after rank {root} calls its bcast (medians)")
    print(f"{'rank':>5} {'bcast done':>11} {'barrier in':>11} {'barrier out':>12}")
    rel = {}
    for it in common:
        t0 = per[root][it][0]
        rel[it] = {r: [(t - t0) / 1000 for t in per[r][it]] for r in per}
    for r in sorted(per):
        med = [statistics.median(rel[it][r][k] for it in common) for k in (1, 2, 3)]
        print(f"{r:>5} {med[0]:>11.1f} {med[1]:>11.1f} {med[2]:>12.1f}")
    cycles = [(per[root][b][0] - per[root][a][0]) / 1000 for a, b in zip(common, common[1:]) if b == a + 1]
    if cycles:
        tot = sum(cycles)
        slow = sum(c for c in cycles if c > 500)
        print(f"iteration at rank {root}: median {statistics.median(cycles):.1f}, p10 {pct(cycles, .1):.1f}, "
              f"p90 {pct(cycles, .9):.1f}, p99 {pct(cycles, .99):.1f}, max {max(cycles):.0f} µs; "
              f"{sum(c > 500 for c in cycles)} above 500 µs, {100 * slow / tot:.0f}% of the time")
    # rel[it][r]: bcast called, bcast done, barrier called, barrier done.
    last = collections.Counter(max(rel[it], key=lambda r: rel[it][r][2]) for it in common)
    print("last into the barrier: " + ", ".join(f"rank {r} {c}×" for r, c in last.most_common()))
    gap = [min(v[3] for v in rel[it].values()) - max(v[2] for v in rel[it].values()) for it in common]
    print(f"last entry to first exit: median {statistics.median(gap):.1f} µs")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--root", type=int, default=0, help="the bcast's root (default 0)")
    ap.add_argument("--size", type=int, action="append", help="only this size (repeatable)")
    a = ap.parse_args()
    ranks = load(a.dir)
    if a.root not in ranks:
        sys.exit(f"no timeline of rank {a.root} in {a.dir}")
    sizes = sorted(set().union(*(set(r) for r in ranks.values())))
    for size in a.size or sizes:
        report(ranks, size, a.root)


if __name__ == "__main__":
    main()
