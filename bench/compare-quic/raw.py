#!/usr/bin/env python3
"""What the link stacks alone move (issue 19): one-way bulk transfer with
`mcquic-raw`, nothing of mcast but its link settings, over plain TCP, TLS 1.3
over TCP (rustls, the provider and certificates mcast uses) and QUIC (quinn
with mcast's endpoint and transport settings). Interleaved rounds, medians.

Layouts:

* one flow: host B sends to host A (the first two hosts of --hosts), or on
  loopback without --hosts;
* with --hosts and three or more hosts, also three flows at once, host i+1
  to host i around the first three hosts (every host sends one flow and
  receives one, as the hosts of a bcast or of `mcbench --throughput` do);
  the figure is all their bytes over the time from the first start to the
  last end (they start together, at a time given to each: the hosts'
  clocks must agree, as namespaces of one machine do).

This is the ceiling the stack itself sets for mcast's links on that network
and this machine: a QUIC link of mcast cannot move bytes faster than quinn
alone does here.

Outputs (default bench/results/quic-raw[-hosts]): table.md, raw.json.
Python 3 standard library only.
"""

import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "compare-mpi"))
import run as cm  # noqa: E402  (shared helpers: run, log, hostfiles)

MODES = ("tcp", "tls", "quic")
# Seconds from launching the senders to their common start: room for the
# launch agent and the handshakes.
START_DELAY = 2.0
LABEL = {"tcp": "TCP", "tls": "TLS 1.3 over TCP", "quic": "QUIC (quinn)"}


def start_server(agent, host, addr, mode, binary, timeout):
    """Start `serve` on host (None: here); return (process, port, bundle)."""
    cmd = [binary, "serve", "--mode", mode, "--bind", f"{addr}:0", "--timeout", str(timeout)]
    if host is not None:
        cmd = agent + [host, " ".join(shlex.quote(c) for c in cmd)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    line = p.stdout.readline().split()
    if len(line) != 3 or line[0] != "READY":
        p.kill()
        sys.exit(f"mcquic-raw serve on {host or 'this host'}: no READY line ({line!r})")
    return p, int(line[1]), line[2]


def flows(a, agent, pairs, mode):
    """Run one transfer per (receiver host, receiver address, sender host),
    all starting at one moment (the hosts' clocks agree: namespaces share
    this machine's); return (each one's MB/s, their sum over the time from
    the first start to the last end)."""
    servers = [start_server(agent, rh, ra, mode, a.binary, a.timeout) for rh, ra, _ in pairs]
    senders = []
    start_at = time.time() + START_DELAY
    for (rh, ra, sh_), (_, port, bundle) in zip(pairs, servers):
        cmd = [a.binary, "send", "--mode", mode, "--to", f"{ra}:{port}", "--bytes", str(a.bytes),
               "--start-at", f"{start_at:.3f}"]
        if sh_ is not None:
            cmd = agent + [sh_, " ".join(shlex.quote(c) for c in cmd)]
        s = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        s.stdin.write(bundle + "\n")
        s.stdin.close()
        senders.append(s)
    out = []
    for s in senders:
        text = s.stdout.read()
        if s.wait(timeout=a.timeout) != 0:
            sys.exit(f"mcquic-raw send failed: {text!r}")
        out.append(json.loads(text))
    for p, _, _ in servers:
        p.wait(timeout=a.timeout)
    span = max(r["t1"] for r in out) - min(r["t0"] for r in out)
    return [r["mb_per_s"] for r in out], sum(r["bytes"] for r in out) / span / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", metavar="HOSTFILE", help="hosts to run between (default: loopback)")
    ap.add_argument("--launch-agent", help="command that reaches a host (default $MCAST_LAUNCH_AGENT, else ssh)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--bytes", type=int, default=1 << 30, help="bytes per flow (default 1 GiB)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds allowed per transfer")
    ap.add_argument("--note", action="append", default=[], help="a line for the table's header (e.g. the MTU)")
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--binary", default=os.path.join(cm.ROOT, "target", "release", "mcquic-raw"))
    ap.add_argument("--no-build", action="store_true", help="skip cargo build")
    a = ap.parse_args()
    if not a.no_build:
        cm.run(["cargo", "build", "--release", "-q", "-p", "mcast-suite", "--bin", "mcquic-raw"])
    agent = shlex.split(a.launch_agent or os.environ.get("MCAST_LAUNCH_AGENT") or "ssh")
    layouts = {}
    if a.hosts:
        hosts = [h for h, _ in cm.parse_hostfile(os.path.abspath(a.hosts))]
        addr = {h: cm.host_address(h, agent) for h in hosts}
        if len(hosts) < 2 or None in addr.values():
            sys.exit(f"--hosts: need two hosts with IPv4 addresses, got {addr}")
        layouts["1 flow"] = [(hosts[0], addr[hosts[0]], hosts[1])]
        if len(hosts) >= 3:
            layouts["3 flows"] = [(hosts[i], addr[hosts[i]], hosts[(i + 1) % 3]) for i in range(3)]
    else:
        layouts["1 flow"] = [(None, "127.0.0.1", None)]
    out = a.out or os.path.join(cm.ROOT, "bench", "results", "quic-raw" + ("-hosts" if a.hosts else ""))
    os.makedirs(out, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    raw = {lay: {m: [] for m in MODES} for lay in layouts}
    for rnd in range(a.rounds):
        order = MODES if rnd % 2 == 0 else tuple(reversed(MODES))
        for lay, pairs in layouts.items():
            for m in order:
                each, total = flows(a, agent, pairs, m)
                raw[lay][m].append(total)
                cm.log(f"round {rnd + 1}/{a.rounds} {lay} {m}: {total:.0f} MB/s (each alone: {', '.join(f'{x:.0f}' for x in each)})")
    with open(os.path.join(out, "raw.json"), "w") as f:
        json.dump({"started": started.isoformat(), "bytes": a.bytes, "hosts": a.hosts, "mb_per_s": raw}, f, indent=1)
    where = f"hosts of {a.hosts}" if a.hosts else "loopback"
    lines = [f"# The link stacks alone: one-way bulk transfer, {where}", "",
             f"{started:%Y-%m-%d %H:%M} UTC; `bench/compare-quic/raw.py`: `mcquic-raw` moves {a.bytes} B per flow "
             f"in 4 MiB writes, flows that run together starting at one moment; {a.rounds} interleaved rounds, medians of all bytes moved over the time from the first flow's start to the last one's end."]
    lines += [""] + [f"- {n}" for n in a.note] if a.note else []
    lines += ["", "| layout | " + " | ".join(f"{LABEL[m]} MB/s" for m in MODES) + " | QUIC / TCP | QUIC / TLS |",
              "|---|" + "---:|" * (len(MODES) + 2)]
    for lay in layouts:
        med = {m: statistics.median(raw[lay][m]) for m in MODES}
        lines.append(f"| {lay} | " + " | ".join(f"{med[m]:.0f}" for m in MODES)
                     + f" | {med['quic'] / med['tcp']:.2f} | {med['quic'] / med['tls']:.2f} |")
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
