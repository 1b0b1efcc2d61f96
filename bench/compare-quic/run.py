#!/usr/bin/env python3
"""mcast over QUIC against mcast over TCP (issue 19): broadcast latency from
1 B to 4 MiB (mcbench, the osu_bcast method) and `mcbench --throughput` at
4 MiB, interleaved rounds, medians.

Two modes:

* loopback (default): all ranks on this machine; TCP is
  `mclaunch --transport tcp` (TCP between every pair), QUIC is
  `--transport quic-all` (QUIC between every pair). Neither uses shared
  memory.
* --hosts HOSTFILE [--launch-agent CMD] [--if CIDR]: one rank per slot of the
  hostfile; TCP is `--transport auto` (Unix sockets and shared memory within
  a host, TCP between hosts), QUIC is `--transport quic` (the same within a
  host, QUIC between hosts).

Outputs (default bench/results/compare-quic[-hosts]): table.md, summary.csv,
raw.json, latency.svg (drawn by `mcsim plot`). Python 3 standard library only.
"""

import argparse
import datetime
import json
import os
import shlex
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "compare-mpi"))
import run as cm  # noqa: E402  (shared helpers: run, log, hostfiles, plots)

SERIES = ("tcp", "quic")
LABEL = {"tcp": "mcast TCP", "quic": "mcast QUIC"}


# mcbench's small-message class ends below this size (its defaults: 1000
# timed iterations below, 100 from here).
SMALL_END = 8192


def latency_args(a):
    """mcbench's latency runs: one sweep, or (with --small-iterations) the
    sizes below 8 KiB with that many timed iterations, then the rest with
    mcbench's defaults."""
    if a.quick:
        return [["-m", f"1:{a.max_size}", "-i", "50", "-x", "5"]]
    if not a.small_iterations or a.max_size < SMALL_END:
        return [["-m", f"1:{a.max_size}"]]
    n = a.small_iterations
    return [["-m", f"1:{SMALL_END // 2}", "-i", str(n), "-x", str(max(n // 10, 1))],
            ["-m", f"{SMALL_END}:{a.max_size}"]]


def commands(a, n, hostfile, agent):
    """The (latency runs, throughput) commands of each series at n ranks."""
    tput = ["--throughput", "-m", str(a.max_size), "-i", str(a.messages)]
    if hostfile:
        base = [cm.MCLAUNCH, "--hostfile", hostfile, "--launch-agent", " ".join(agent), "-n", str(n)]
        base += (["--if", a.iface] if a.iface else [])
        transport = {"tcp": "auto", "quic": "quic"}
    else:
        base = [cm.MCLAUNCH, "-n", str(n)]
        transport = {"tcp": "tcp", "quic": "quic-all"}
    base += ["-x", "RUST_LOG=off", "--timeout", str(a.timeout)]
    return {s: ([base + ["--transport", transport[s], cm.MCBENCH, "--json"] + lat for lat in latency_args(a)],
                base + ["--transport", transport[s], cm.MCBENCH, "--json"] + tput)
            for s in SERIES}, transport


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="3,4", help="rank counts, loopback mode (default 3,4)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--max-size", type=int, default=4 << 20, help="largest size (default 4 MiB)")
    ap.add_argument("--messages", type=int, default=50, help="--throughput messages per rank (default 50)")
    ap.add_argument("--quick", action="store_true", help="50 timed / 5 warm-up iterations (noisy)")
    ap.add_argument("--small-iterations", type=int, default=10000,
                    help="timed iterations below 8 KiB, a tenth as many warm-up (default 10000; "
                         "0: mcbench's 1000). With 3-4 ranks on 2 cores the ranks' placement "
                         "shifts every ~100 ms and moves small-message latency 2-3x either way, "
                         "so 1000 iterations (~10 ms) sample one placement")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per run (default 600)")
    ap.add_argument("--no-build", action="store_true", help="use target/release as it is")
    ap.add_argument("--out", default=None, help="output directory")
    ap.add_argument("--hosts", metavar="HOSTFILE", help="across the hosts of HOSTFILE instead")
    ap.add_argument("--launch-agent", default=None, help="with --hosts (default $MCAST_LAUNCH_AGENT or ssh)")
    ap.add_argument("--if", dest="iface", default=None, help="with --hosts: mclaunch --if")
    ap.add_argument("--note", default=None,
                    help="a sentence for table.md's header: how the hosts were set up (e.g. 'MTU 9000')")
    a = ap.parse_args()
    if a.rounds < 1 or a.messages < 1 or a.max_size < 1:
        sys.exit("--rounds, --messages and --max-size must be positive")
    if not a.no_build:
        cm.log("building mcbench, mclaunch and mcsim (release)")
        for pkg, what in (("mcast-suite", ["--bin", "mcbench"]), ("mclaunch", ["--bins"]),
                          ("mcast-emulator", ["--bin", "mcsim"])):
            cm.run(["cargo", "build", "--release", "-q", "-p", pkg] + what)
    hostfile, agent = None, []
    if a.hosts:
        hostfile = os.path.abspath(a.hosts)
        ranks = [sum(s for _, s in cm.parse_hostfile(hostfile))]
        agent = shlex.split(a.launch_agent or os.environ.get("MCAST_LAUNCH_AGENT") or "ssh")
    else:
        ranks = [int(x) for x in a.ranks.split(",")]
    out = a.out or os.path.join(cm.ROOT, "bench", "results", "compare-quic" + ("-hosts" if hostfile else ""))
    os.makedirs(out, exist_ok=True)

    started = datetime.datetime.now(datetime.timezone.utc)
    raw = []
    for rnd in range(a.rounds):
        for n in ranks:
            cmds, transport = commands(a, n, hostfile, agent)
            # Interleaved, and the order flips every round.
            order = SERIES if rnd % 2 == 0 else SERIES[::-1]
            for s in order:
                lats, tput = cmds[s]
                for kind, cmd in [("latency", c) for c in lats] + [("throughput", tput)]:
                    t0 = time.monotonic()
                    p = cm.run(cmd, timeout=a.timeout + 30)
                    rep = json.loads(p.stdout)
                    cm.log(f"round {rnd + 1}/{a.rounds}, {n} ranks, {LABEL[s]} {kind}: "
                           f"{time.monotonic() - t0:.1f} s")
                    raw.append(dict(round=rnd, ranks=n, series=s, kind=kind, command=cmd, report=rep))

    summary, tput = [], []
    for n in ranks:
        sizes = sorted({r["size"] for x in raw if x["ranks"] == n and x["kind"] == "latency"
                        for r in x["report"]["results"]})
        for size in sizes:
            row = dict(ranks=n, size=size)
            for s in SERIES:
                vals = [r["avg_us"] for x in raw if (x["ranks"], x["series"], x["kind"]) == (n, s, "latency")
                        for r in x["report"]["results"] if r["size"] == size]
                row[f"{s}_us"] = round(statistics.median(vals), 3)
                cyc = [r["cycle_us"] for x in raw if (x["ranks"], x["series"], x["kind"]) == (n, s, "latency")
                       for r in x["report"]["results"] if r["size"] == size and r.get("cycle_us") is not None]
                row[f"{s}_cycle_us"] = round(statistics.median(cyc), 3) if cyc else None
            row["ratio"] = round(row["quic_us"] / row["tcp_us"], 3)
            row["cycle_ratio"] = (round(row["quic_cycle_us"] / row["tcp_cycle_us"], 3)
                                  if row["quic_cycle_us"] and row["tcp_cycle_us"] else None)
            summary.append(row)
        row = dict(ranks=n, message_bytes=a.max_size, messages_per_rank=a.messages)
        for s in SERIES:
            vals = [x["report"]["bytes_per_s"] for x in raw
                    if (x["ranks"], x["series"], x["kind"]) == (n, s, "throughput")]
            row[f"{s}_mb_s"] = round(statistics.median(vals) / 1e6, 1)
        row["ratio"] = round(row["quic_mb_s"] / row["tcp_mb_s"], 3)
        tput.append(row)

    links = {x["series"]: x["report"].get("links") for x in raw if x["kind"] == "latency"}
    where = (f"{len(cm.parse_hostfile(hostfile))} hosts of {hostfile}, one rank per slot" if hostfile
             else "one host, loopback")
    how = ", ".join(f"{LABEL[s]} = `--transport {transport[s]}` (links: {links.get(s)})" for s in SERIES)
    lines = [f"# mcast QUIC against TCP: {where}", "",
             f"{started:%Y-%m-%d %H:%M} UTC; {a.rounds} interleaved rounds, medians; {how}."
             + (f" {a.note}" if a.note else ""), "",
             "Latency: mcbench (the osu_bcast method), "
             + ("; ".join(f"`mcbench {' '.join(x)}`" for x in latency_args(a)))
             + " (mcbench's defaults: 1000 timed iterations below 8 KiB, 100 from 8 KiB).", "",
             "Bcast + barrier: rank 0's wall clock per timed iteration (mcbench's `cycle_us`: the "
             "bcast and the untimed barrier after it), which the barrier cannot flatter as it can the "
             "timed bcast alone.", "",
             "| ranks | size (B) | TCP µs | QUIC µs | QUIC / TCP | bcast + barrier TCP µs | QUIC µs | QUIC / TCP |",
             "|---|---|---|---|---|---|---|---|"]
    cyc = lambda v: "" if v is None else f"{v:.1f}"
    lines += [f"| {r['ranks']} | {r['size']} | {r['tcp_us']:.1f} | {r['quic_us']:.1f} | {r['ratio']:.2f} | "
              f"{cyc(r['tcp_cycle_us'])} | {cyc(r['quic_cycle_us'])} | "
              f"{'' if r['cycle_ratio'] is None else format(r['cycle_ratio'], '.2f')} |"
              for r in summary]
    lines += ["", f"Throughput (`mcbench --throughput -m {a.max_size} -i {a.messages}`, aggregate MB/s):", "",
              "| ranks | TCP MB/s | QUIC MB/s | QUIC / TCP |", "|---|---|---|---|"]
    lines += [f"| {r['ranks']} | {r['tcp_mb_s']} | {r['quic_mb_s']} | {r['ratio']:.2f} |" for r in tput]
    table = "\n".join(lines) + "\n"
    print(table)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(table)
    cm.write_csv(os.path.join(out, "summary.csv"), list(summary[0]), summary)
    cm.write_csv(os.path.join(out, "throughput.csv"), list(tput[0]), tput)
    with open(os.path.join(out, "raw.json"), "w") as f:
        json.dump(dict(started=f"{started:%Y-%m-%dT%H:%M:%SZ}", mode=where, rounds=a.rounds, runs=raw), f, indent=1)
    cm.svg_plot(os.path.join(out, "latency.svg"), summary, ranks, None,
                f"Broadcast, mcast over QUIC and over TCP ({where})",
                series=[(s, LABEL[s], None) for s in SERIES])
    cm.log(f"wrote {out}/table.md, summary.csv, throughput.csv, raw.json, latency.svg")


if __name__ == "__main__":
    main()
