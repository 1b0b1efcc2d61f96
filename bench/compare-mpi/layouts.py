#!/usr/bin/env python3
"""mcast against Open MPI across hosts, one fixed CPU layout at a time.

The namespace test cluster (bench/cluster) runs every "host" on the same
machine's CPUs, so where the kernel puts the ranks on those CPUs decides
much of a small message's time, and the kernel moves them during a run: an
unpinned comparison (run.py --hosts) mixes placements, differently for each
side. This pins rank r of both runtimes to CPU LAYOUT[r] (pin.sh, through
taskset) and measures each layout in turn, with the same commands and
settings as run.py's hosts mode otherwise:

    python3 bench/compare-mpi/layouts.py --hosts /tmp/mcast-cluster/hostfile \\
        --launch-agent "ssh -F /tmp/mcast-cluster/ssh_config" \\
        [--layouts 0,1,0,1,0,1 0,0,1,1,0,1 ...] [--rounds 3] [--max-size 4096] [--out DIR]

Rounds are interleaved: in each round every layout runs mcast (auto) and
Open MPI, the order alternating. Per layout and size it reports the medians
over rounds of both figures of run.py's table (the timed bcast, osu_bcast's
average over ranks, and bcast + barrier, rank 0's wall clock per
iteration) and the ratios mcast / Open MPI. The default layouts are those
of 3 hosts x 2 ranks mapped by slot (ranks 0 1 on the first host, ...) on
two CPUs: ranks spread the way `mclaunch --bind-to core` binds them, and
four others (see bench/results/compare-mpi-hosts/LOG.md, *One placement at
a time*). Writes DIR/layouts.md and DIR/layouts.csv. Standard library only;
needs Open MPI and the release build, as run.py --hosts does.
"""
import argparse
import csv
import datetime
import os
import shlex
import statistics
import subprocess
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as cmp  # noqa: E402  (run.py's hosts mode: commands, probes)

PIN = os.path.join(HERE, "pin.sh")
DEFAULT_LAYOUTS = ["0,1,0,1,0,1", "0,0,1,1,0,1", "0,0,0,1,1,1", "0,1,0,0,1,1", "0,1,1,0,1,0"]


def pinned(cmd, program, layout):
    """`cmd` with PIN_LAYOUT passed on (-x) and pin.sh in front of `program`."""
    i = cmd.index(program)
    return cmd[:i] + ["-x", f"PIN_LAYOUT={layout}", PIN] + cmd[i:]


def check_layout(layout, n, cpus):
    parts = layout.split(",")
    if len(parts) != n or not all(p.isdigit() for p in parts):
        sys.exit(f"layout {layout!r}: need {n} CPU numbers, comma-separated")
    bad = [p for p in parts if int(p) not in cpus]
    if bad:
        sys.exit(f"layout {layout!r}: CPU {bad[0]} is not among this machine's {sorted(cpus)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", required=True, metavar="HOSTFILE", help="hostfile (`host slots=N` lines)")
    ap.add_argument("--launch-agent", default=None,
                    help="command that reaches a host (default $MCAST_LAUNCH_AGENT, else ssh)")
    ap.add_argument("--if", dest="iface", default=None, metavar="CIDR",
                    help="network between the hosts (default: as run.py finds it)")
    ap.add_argument("--layouts", nargs="+", default=None, metavar="LAYOUT",
                    help="CPU of each rank, comma-separated (default: five layouts of 6 ranks on CPUs 0 and 1)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--max-size", type=int, default=4096, help="largest message, bytes (default 4096)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds allowed per benchmark run")
    ap.add_argument("--out", default=None, help="directory for layouts.md and layouts.csv")
    a = ap.parse_args()

    hostfile = os.path.abspath(a.hosts)
    hosts = cmp.parse_hostfile(hostfile)
    n = sum(sl for _, sl in hosts)
    layouts = a.layouts or DEFAULT_LAYOUTS
    cpus = set(os.sched_getaffinity(0))
    for lay in layouts:
        check_layout(lay, n, cpus)
    if a.rounds < 1 or a.max_size < 1:
        sys.exit("--rounds and --max-size must be at least 1")
    agent_s = a.launch_agent or os.environ.get("MCAST_LAUNCH_AGENT") or "ssh"
    agent = shlex.split(agent_s)
    info = cmp.probe_hosts(hosts, agent)
    cidr = a.iface
    if cidr is None:
        addr = cmp.host_address(hosts[0][0], agent)
        cidr = cmp.route_network(addr) if addr else None
        if cidr is None:
            sys.exit(f"cannot tell which network reaches {hosts[0][0]}: give --if CIDR")
    cmp.ensure_openmpi(True)  # as run.py --hosts does: apt-get install if missing
    cmp.build(False, only_bcast=True)
    for exe in (cmp.MCLAUNCH, cmp.MCBENCH, cmp.OSU):
        if not os.access(exe, os.X_OK):
            sys.exit(f"{exe} missing (cargo build --release -p mcast-suite -p mclaunch; run.py builds the C side)")
    opts = types.SimpleNamespace(max_size=a.max_size, quick=False, ompi_btl="vader,self,tcp",
                                 no_ompi_yield=False)
    cmds, _ = cmp.hosts_cmds(opts, hostfile, agent, cidr, n)
    base = {"mcast": (cmds["auto"], cmp.MCBENCH), "ompi": (cmds["ompi"], cmp.OSU)}

    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.monotonic()
    res = {}  # (layout, impl) -> [ {size: (avg, cycle)} per round ]
    for rnd in range(a.rounds):
        for j, lay in enumerate(layouts):
            order = ("mcast", "ompi") if (rnd + j) % 2 == 0 else ("ompi", "mcast")
            for impl in order:
                cmd, prog = base[impl]
                rep = cmp.run_report(pinned(cmd, prog, lay), impl, n, a.timeout)
                res.setdefault((lay, impl), []).append(
                    {r["size"]: (r["avg_us"], r["cycle_us"]) for r in rep["results"]})
                cmp.log(f"round {rnd + 1}/{a.rounds}: layout {lay}, {impl} done")
    took = time.monotonic() - t0

    sizes = sorted(res[(layouts[0], "mcast")][0])
    rows = []
    for lay in layouts:
        for s in sizes:
            med = {impl: [statistics.median(r[s][k] for r in res[(lay, impl)]) for k in (0, 1)]
                   for impl in ("mcast", "ompi")}
            rows.append([lay, s, *med["mcast"], *med["ompi"]])

    out = a.out or os.path.join("bench", "results", "compare-mpi-hosts")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "layouts.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["layout", "size", "mcast_avg_us", "mcast_cycle_us", "ompi_avg_us", "ompi_cycle_us"])
        w.writerows(rows)

    def by_cpu(lay):
        on = {}
        for r, c in enumerate(lay.split(",")):
            on.setdefault(int(c), []).append(str(r))
        return "; ".join(f"CPU {c}: {' '.join(rs)}" for c, rs in sorted(on.items()))

    hosts_s = ", ".join(f"{h} ({info[h]['hostname']}, {sl} slots)" for h, sl in hosts)
    lines = [
        f"# mcast vs Open MPI across hosts, one CPU layout at a time ({started:%Y-%m-%d %H:%M} UTC)",
        "",
        f"* command: `python3 bench/compare-mpi/layouts.py --hosts {a.hosts} --launch-agent "
        f"'{agent_s}' --rounds {a.rounds} --max-size {a.max_size}"
        + (f" --if {a.iface}" if a.iface else "")
        + (f" --layouts {' '.join(a.layouts)}" if a.layouts else "") + "`",
        f"* hosts: {hosts_s}; {n} ranks mapped by slot; network {cidr}",
        f"* scheduling: {cmp.cluster_sched(a.hosts)}",
        f"* mcast: `{' '.join(shlex.quote(x) for x in pinned(*base['mcast'], 'LAYOUT'))}`",
        f"* Open MPI: `{' '.join(shlex.quote(x) for x in pinned(*base['ompi'], 'LAYOUT'))}`",
        "* transports: mcast TCP between hosts, Unix sockets + shared memory within a host; "
        "Open MPI tcp between hosts, vader within a host",
        f"* rank r runs on CPU LAYOUT[r] (bench/compare-mpi/pin.sh, taskset) on both sides; "
        f"medians of {a.rounds} interleaved rounds; {took:.0f} s",
        "",
        "Per layout, over the sizes from 1 B to "
        f"{cmp.fmt_size(sizes[-1])}: each runtime's range of medians (µs) and the range of the ratios "
        "mcast / Open MPI (below 1: mcast faster).",
        "",
        "| layout | ranks on each CPU | bcast + barrier mcast | Open MPI | ratio | timed bcast mcast "
        "| Open MPI | ratio |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    def span(vals, fmt="{:.0f}"):
        return f"{fmt.format(min(vals))}–{fmt.format(max(vals))}"

    for lay in layouts:
        mine = [r for r in rows if r[0] == lay]
        cyc = [r[3] / r[5] for r in mine]
        alone = [r[2] / r[4] for r in mine]
        lines.append(
            f"| `{lay}` | {by_cpu(lay)} | {span([r[3] for r in mine])} | {span([r[5] for r in mine])} "
            f"| {span(cyc, '{:.2f}')} | {span([r[2] for r in mine], '{:.1f}')} "
            f"| {span([r[4] for r in mine], '{:.1f}')} | {span(alone, '{:.2f}')} |")
    summary = len(lines)
    lines += ["", "Every size (µs, medians over rounds):", "",
              "| layout | size | mcast timed | Open MPI timed | mcast bcast + barrier | Open MPI bcast + barrier "
              "| ratio |", "|---|---:|---:|---:|---:|---:|---:|"]
    for lay, s, ma, mc, oa, oc in rows:
        lines.append(f"| `{lay}` | {cmp.fmt_size(s)} | {ma:.1f} | {oa:.1f} | {mc:.1f} | {oc:.1f} | {mc / oc:.2f} |")
    with open(os.path.join(out, "layouts.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[:summary]))
    cmp.log(f"wrote {os.path.join(out, 'layouts.md')} and {os.path.join(out, 'layouts.csv')}")


if __name__ == "__main__":
    main()
