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

With --sched FILE, a scheduler trace of the same run, it also says where
the ranks ran: for each iteration at the root, which CPU each rank's main
thread ran on, and the iteration times grouped by that layout. Make the
trace with perf on the CLOCK_MONOTONIC clock, around the benchmark run:

    perf record -a -e sched:sched_switch --clockid monotonic -o /tmp/sched.data -- \
        mclaunch ... mcbench -m 1:1 -i 10000 --timeline /tmp/tl
    perf script -i /tmp/sched.data -F cpu,time,event,trace > /tmp/sched.txt
    python3 bench/timeline.py /tmp/tl --sched /tmp/sched.txt

Both benchmarks write DIR/rank-<R>.pid beside each timeline, the rank's
process id, which is its main thread's id in the trace. Every other task
counts as "other", the ranks' own helper threads and perf's buffer
flushes included; an iteration where other tasks ran for more than 20 µs
is counted apart, as is one where a rank ran on more than one CPU.
"""
import argparse
import bisect
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


SWITCH = re.compile(
    r"\[(\d+)\]\s+(\d+\.\d+):\s+sched:sched_switch:.*==>.*\bnext_comm=(.*?) next_pid=(\d+)\b")

# Other tasks that ran longer than this in an iteration set it apart.
DISTURBED_US = 20.0


def load_pids(d, ranks):
    """{pid: rank} from DIR/rank-<R>.pid."""
    pids = {}
    for r in ranks:
        path = os.path.join(d, f"rank-{r}.pid")
        try:
            with open(path) as f:
                pids[int(f.read().strip())] = r
        except (OSError, ValueError) as e:
            sys.exit(f"{path}: {e} (--sched needs each rank's process id: rerun the benchmark)")
    return pids


def load_sched(path):
    """{cpu: (starts, runs)}: what ran on each CPU, as (start_ns, end_ns, pid, comm), in order."""
    runs = collections.defaultdict(list)
    cur = {}
    n = 0
    with open(path, errors="replace") as f:
        for line in f:
            m = SWITCH.search(line)
            if not m:
                continue
            n += 1
            cpu, t = int(m.group(1)), round(float(m.group(2)) * 1e9)
            if cpu in cur:
                start, pid, comm = cur[cpu]
                runs[cpu].append((start, t, pid, comm))
            cur[cpu] = (t, int(m.group(4)), m.group(3))
    if not n:
        sys.exit(f"{path}: no sched:sched_switch lines (see --help for how to make the trace)")
    return {c: ([r[0] for r in rs], rs) for c, rs in runs.items()}


def layouts(ranks, size, root, pids, sched):
    """Group the iterations at `root` by which CPU each rank's main thread ran on."""
    per = {r: {row[0]: row[1:] for row in ranks[r].get(size, [])} for r in ranks}
    its = sorted(per[root])
    groups = collections.defaultdict(list)
    others = collections.Counter()
    for a, b in zip(its, its[1:]):
        if b != a + 1:
            continue
        t0, t1 = per[root][a][0], per[root][b][0]
        cpus_of = collections.defaultdict(set)
        other_ns = 0
        for cpu, (starts, rs) in sched.items():
            i = max(0, bisect.bisect_right(starts, t0) - 1)
            while i < len(rs) and rs[i][0] < t1:
                s, e, pid, comm = rs[i]
                i += 1
                ran = min(e, t1) - max(s, t0)
                if ran <= 0:
                    continue
                if pid in pids:
                    cpus_of[pids[pid]].add(cpu)
                elif pid != 0:
                    other_ns += ran
                    others[comm] += ran
        it_us = (t1 - t0) / 1000
        if other_ns / 1000 > DISTURBED_US:
            groups["(other tasks ran > %d µs)" % DISTURBED_US].append(it_us)
            continue
        if any(len(c) > 1 for c in cpus_of.values()):
            groups["(a rank moved between CPUs)"].append(it_us)
            continue
        on = collections.defaultdict(list)
        for r, c in cpus_of.items():
            on[min(c)].append(r)
        key = " | ".join(f"CPU {c}: " + " ".join(map(str, sorted(on[c]))) for c in sorted(on))
        groups[key].append(it_us)
    total = sum(len(v) for v in groups.values())
    if not total:
        print(f"size {size}: the trace covers no iteration of the timeline\n")
        return
    print(f"size {size} B: where the ranks ran ({total} iterations in the trace)")
    print(f"{'layout (the ranks on each CPU)':<40} {'iterations':>10} {'mean µs':>9} {'median µs':>10}")
    for key, v in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"{key:<40} {len(v):>10} {statistics.mean(v):>9.1f} {statistics.median(v):>10.1f}")
    if others:
        print("other tasks, CPU time in these iterations: "
              + ", ".join(f"{c} {ns / 1e6:.1f} ms" for c, ns in others.most_common(5)))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--root", type=int, default=0, help="the bcast's root (default 0)")
    ap.add_argument("--size", type=int, action="append", help="only this size (repeatable)")
    ap.add_argument("--sched", metavar="FILE",
                    help="`perf script -F cpu,time,event,trace` of sched:sched_switch on the "
                         "monotonic clock (see above): group the iterations by where the ranks ran")
    a = ap.parse_args()
    ranks = load(a.dir)
    if a.root not in ranks:
        sys.exit(f"no timeline of rank {a.root} in {a.dir}")
    runs = None
    if a.sched:
        runs = (load_pids(a.dir, ranks), load_sched(a.sched))
    sizes = sorted(set().union(*(set(r) for r in ranks.values())))
    for size in a.size or sizes:
        report(ranks, size, a.root)
        if runs:
            layouts(ranks, size, a.root, *runs)


if __name__ == "__main__":
    main()
