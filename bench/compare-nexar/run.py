#!/usr/bin/env python3
"""Broadcast latency: mcast in QUIC mode against nexar, side by side.

Each round runs every series once at each rank layout (mcast's mcbench under
mclaunch, nexar's nexar-bcast with its default transport, and with
`--nexar-quic-only` also nexar with its TCP sidecar off), in an order that
rotates from round to round; the table gives each cell's median over rounds.
Both benchmarks use the osu_bcast method (see README.md). Python 3 stdlib.

  bench/compare-nexar/run.py                        # loopback, 3 ranks
  bench/compare-nexar/run.py --ranks 3,4 --rounds 5
  bench/compare-nexar/run.py --hosts /tmp/mcast-cluster/hostfile \\
      --launch-agent "ssh -F /tmp/mcast-cluster/ssh_config" --per-host 1,2
"""

import argparse
import datetime
import json
import os
import random
import secrets
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HARNESS = os.path.join(HERE, "harness")
TARGET = os.environ.get("CARGO_TARGET_DIR")
REL = os.path.join(TARGET or os.path.join(ROOT, "target"), "release")
MCBENCH, MCLAUNCH, MCSIM = (os.path.join(REL, b) for b in ("mcbench", "mclaunch", "mcsim"))
NEXAR = os.path.join(TARGET or os.path.join(HARNESS, "target"), "release", "nexar-bcast")

# series key -> (column label, environment of nexar's ranks)
NEXAR_SERIES = {
    "nexar": ("nexar", {}),
    "nexar_quic": ("nexar QUIC-only", {"NEXAR_ENABLE_TCP_BULK_SIDECAR": "0"}),
}


def log(msg):
    print(f"[{datetime.datetime.now():%H:%M:%S}] {msg}", file=sys.stderr, flush=True)


def build(a):
    if a.no_build:
        return
    jobs = ["-j", str(a.jobs)] if a.jobs else []
    steps = [
        # --bin filters every -p: name all three binaries.
        (ROOT, ["cargo", "build", "--release", *jobs, "-p", "mcast-suite", "-p", "mclaunch",
                "-p", "mcast-emulator", "--bin", "mcbench", "--bin", "mclaunch", "--bin", "mcsim"],
         [MCBENCH, MCLAUNCH, MCSIM]),
        (HARNESS, ["cargo", "build", "--release", "--locked", *jobs], [NEXAR]),
    ]
    for cwd, cmd, outs in steps:
        if all(os.access(o, os.X_OK) for o in outs) and not a.rebuild:
            continue
        log(f"building: {' '.join(cmd)} (in {os.path.relpath(cwd, ROOT) or '.'})")
        subprocess.run(cmd, cwd=cwd, check=True, timeout=3600)


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def wait_all(procs, timeout):
    """Wait for every process (a dict name -> Popen) up to `timeout` seconds in
    all; kill the stragglers' process groups. Returns {name: (rc, out, err)};
    rc None for a killed one."""
    deadline = time.monotonic() + timeout
    res = {}
    try:
        for name, p in procs.items():
            try:
                out, err = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
                res[name] = (p.returncode, out, err)
            except subprocess.TimeoutExpired:
                kill_group(p)
                out, err = p.communicate()
                res[name] = (None, out, err)
    finally:
        for p in procs.values():
            if p.poll() is None:
                kill_group(p)
                p.wait()
    return res


def spawn(cmd, env=None):
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)


def report_of(rc, out, err, what):
    if rc != 0:
        tail = "\n".join(err.strip().splitlines()[-15:])
        raise RuntimeError(f"{what}: exit {'timeout' if rc is None else rc}\n{tail}")
    start = out.find("{")
    if start < 0:
        raise RuntimeError(f"{what}: no JSON report on stdout\n{out[-2000:]}")
    return json.loads(out[start:])


def bench_args(a):
    extra = []
    if a.iterations:
        extra += ["-i", str(a.iterations)]
    if a.warmup is not None:
        extra += ["-x", str(a.warmup)]
    return ["--json", "-m", f"1:{a.max_size}"] + extra


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- the commands of one run -------------------------------------------------

def mcast_cmd(a, layout):
    cmd = [MCLAUNCH, "-n", str(layout["n"]), "--timeout", str(a.timeout),
           "--transport", a.mcast_transport, "-x", "RUST_LOG=off"]
    if layout.get("hostfile"):
        cmd += ["--hostfile", layout["hostfile"], "--launch-agent", a.launch_agent]
    return cmd + [MCBENCH] + bench_args(a)


def run_mcast(a, layout):
    cmd = mcast_cmd(a, layout)
    res = wait_all({"mclaunch": spawn(cmd)}, a.timeout + 30)
    rep = report_of(*res["mclaunch"], "mcast")
    return rep, cmd


def nexar_rank_cmd(a, layout, rank, seed, bind):
    role = "seed" if rank == 0 else "join"
    cmd = [NEXAR, role, "--seed", seed, "--np", str(layout["n"]), "--bind", bind,
           "--timeout", str(a.timeout)] + bench_args(a)
    return cmd + ([] if rank == 0 else ["--rank", str(rank)])


def run_nexar(a, layout, key):
    """One nexar-bcast job: rank 0 (the seed process) first, then ranks 1..n-1
    joining it, each asking for its rank. Returns (report, commands)."""
    env_extra = dict(NEXAR_SERIES[key][1])
    n = layout["n"]
    hosts = layout.get("hosts")
    procs, cmds, pidfiles = {}, [], []
    if hosts is None:  # loopback
        seed = f"127.0.0.1:{free_udp_port()}"
        env = dict(os.environ, RUST_LOG="off", **env_extra)
        env.pop("NEXAR_CLUSTER_TOKEN", None)
        for r in range(n):
            cmd = nexar_rank_cmd(a, layout, r, seed, "127.0.0.1:0")
            cmds.append(" ".join(f"{k}={v}" for k, v in env_extra.items()) + (" " if env_extra else "")
                        + " ".join(cmd))
            procs[r] = spawn(cmd, env)
            if r == 0:
                time.sleep(0.2)
    else:
        k = layout["per_host"]
        seed = f"{hosts[0][1]}:{random.randint(20000, 40000)}"
        token = secrets.token_hex(16)
        env_extra = dict(env_extra, RUST_LOG="off", NEXAR_CLUSTER_TOKEN=token)
        agent = shlex.split(a.launch_agent)
        for r in range(n):
            host, ip = hosts[r // k]
            pidfile = os.path.join(layout["tmp"], f"nexar-{key}-{r}.pid")
            pidfiles.append(pidfile)
            inner = ["env"] + [f"{kk}={v}" for kk, v in env_extra.items()] + \
                nexar_rank_cmd(a, layout, r, seed, f"{ip}:0")
            remote = f"echo $$ > {shlex.quote(pidfile)}; exec {shlex.join(inner)}"
            cmds.append(f"{host}: " + shlex.join(inner).replace(token, "<token>"))
            procs[r] = spawn(agent + [host, remote])
            if r == 0:
                time.sleep(0.5)
    try:
        res = wait_all(procs, a.timeout + 30)
    finally:
        # Ranks started through the agent may outlive their ssh: kill them by
        # the pid each wrote (one kernel, one pid namespace on the test cluster).
        for f in pidfiles:
            try:
                os.kill(int(open(f).read().strip()), signal.SIGKILL)
            except (OSError, ValueError):
                pass
    bad = [r for r, (rc, _, _) in res.items() if rc != 0]
    if bad:
        r = bad[0]
        tail = "\n".join(res[r][2].strip().splitlines()[-15:])
        raise RuntimeError(f"{key}: rank {r} exit {res[r][0]} (ranks failing: {bad})\n{tail}")
    return report_of(*res[0], key), cmds


# ---- layouts ----------------------------------------------------------------

def parse_hostfile(path):
    hosts = []
    for line in open(path):
        line = line.split("#")[0].strip()
        if line:
            hosts.append(line.split()[0])
    return hosts


def host_ip(agent, host):
    out = subprocess.run(shlex.split(agent) + [host, "hostname -I"], capture_output=True,
                         text=True, timeout=30, check=True).stdout.split()
    ips = [x for x in out if ":" not in x and not x.startswith("127.")]
    if not ips:
        sys.exit(f"no IPv4 address on {host}: {out}")
    return ips[0]


def layouts(a, tmp):
    if not a.hosts:
        return [{"label": f"{n}", "n": n} for n in a.ranks]
    names = parse_hostfile(a.hosts)
    hosts = [(h, host_ip(a.launch_agent, h)) for h in names]
    log("hosts: " + ", ".join(f"{h} {ip}" for h, ip in hosts))
    out = []
    for k in a.per_host:
        hf = os.path.join(tmp, f"hostfile-{k}")
        with open(hf, "w") as f:
            f.writelines(f"{h} slots={k}\n" for h in names)
        out.append({"label": f"{len(names) * k} ({len(names)}×{k})", "n": len(names) * k,
                    "per_host": k, "hostfile": hf, "hosts": hosts, "tmp": tmp})
    return out


# ---- summary ----------------------------------------------------------------

def summarize(raw, series):
    cells = {}
    for run in raw:
        if run.get("error"):
            continue
        for row in run["report"]["results"]:
            cell = cells.setdefault((run["layout"], row["size"]), {})
            cell.setdefault(run["series"], []).append(row["avg_us"])
            if row.get("cycle_us") is not None:
                cell.setdefault(("cycle", run["series"]), []).append(row["cycle_us"])
    order = {}
    for run in raw:
        order.setdefault(run["layout"], len(order))
    rows = []
    for (lay, size), v in sorted(cells.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        row = {"ranks": lay, "size": size}
        for s in series:
            xs = v.get(s, [])
            row[f"{s}_us"] = statistics.median(xs) if xs else None
            row[f"{s}_min_us"] = min(xs) if xs else None  # over rounds
            row[f"{s}_max_us"] = max(xs) if xs else None
            row[f"{s}_rounds"] = len(xs)
            cs = v.get(("cycle", s), [])
            row[f"{s}_cycle_us"] = statistics.median(cs) if cs else None
        rows.append(row)
    return rows


def fmt(x):
    return "–" if x is None else f"{x:.1f}"


def ratio(a, b):
    return "–" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def table(rows, series, key="us"):
    """The medians of `{series}_{key}` (us: the timed bcast; cycle_us: bcast +
    barrier) and mcast's ratio to each nexar series."""
    nx = [s for s in series if s != "mcast"]
    head = ["ranks", "size", "mcast QUIC"] + [NEXAR_SERIES[s][0] for s in nx] + \
        [f"mcast/{NEXAR_SERIES[s][0]}" for s in nx]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        m = r.get(f"mcast_{key}")
        cells = [r["ranks"], str(r["size"]), fmt(m)] + [fmt(r.get(f"{s}_{key}")) for s in nx] + \
            [ratio(m, r.get(f"{s}_{key}")) for s in nx]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def plot(out, rows, series, title):
    if not os.access(MCSIM, os.X_OK):
        log("no mcsim: no plot")
        return
    label = {"mcast": "mcast QUIC", **{k: v[0] for k, v in NEXAR_SERIES.items()}}
    pts = [(f"{label[s]}, {r['ranks']} ranks", r["size"], r[f"{s}_us"])
           for s in series for r in rows if r[f"{s}_us"] is not None]
    csv = os.path.join(out, "latency.plot.csv")
    with open(csv, "w") as f:
        f.write("series,x,y\n")
        f.writelines(f"{n},{x},{y}\n" for n, x, y in pts)
    cmd = [MCSIM, "plot", "--csv", csv, "--out", os.path.join(out, "latency.svg"), "--log-x",
           "--log-y", "--title", title, "--x-label", "message size (bytes, log scale)",
           "--y-label", "broadcast latency (µs, median over rounds, log scale)"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        log(f"mcsim plot failed: {p.stderr.strip()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="3", help="loopback: comma-separated rank counts [3]")
    ap.add_argument("--hosts", help="hostfile: run across its hosts instead of on loopback")
    ap.add_argument("--per-host", default="1", help="hosts mode: ranks per host, comma-separated [1]")
    ap.add_argument("--launch-agent", default=os.environ.get("MCAST_LAUNCH_AGENT", "ssh"),
                    help="ssh-like command: AGENT HOST 'shell command' [$MCAST_LAUNCH_AGENT or ssh]")
    ap.add_argument("--mcast-transport",
                    help="mclaunch --transport [quic-all on loopback, quic across hosts]")
    ap.add_argument("--nexar-quic-only", action="store_true",
                    help="also run nexar with NEXAR_ENABLE_TCP_BULK_SIDECAR=0 (collectives on QUIC)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--max-size", type=int, default=4 << 20)
    ap.add_argument("-i", "--iterations", type=int, help="timed iterations (default: mcbench's)")
    ap.add_argument("-x", "--warmup", type=int, help="warm-up iterations (default: mcbench's)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per run [300]")
    ap.add_argument("--budget", type=float,
                    help="seconds: start no round that would likely end past this (keep what ran)")
    ap.add_argument("--out", help="output dir [bench/results/compare-nexar/<mode>]")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--rebuild", action="store_true", help="run cargo build even if the binaries exist")
    ap.add_argument("-j", "--jobs", type=int, help="cargo build -j")
    ap.add_argument("--append", action="store_true",
                    help="add this invocation's rounds to those of OUT/raw.json (same series)")
    ap.add_argument("--resummarize", metavar="DIR",
                    help="only rewrite DIR's table, CSV and plot from its raw.json")
    a = ap.parse_args()
    if a.resummarize:
        with open(os.path.join(a.resummarize, "raw.json")) as f:
            d = json.load(f)
        write_outputs(os.path.abspath(a.resummarize), d["meta"], d["runs"])
        return 0
    a.ranks = [int(x) for x in a.ranks.split(",")]
    a.per_host = [int(x) for x in a.per_host.split(",")]
    mode = "hosts" if a.hosts else "loopback"
    a.mcast_transport = a.mcast_transport or ("quic" if a.hosts else "quic-all")
    out = os.path.abspath(a.out or os.path.join(ROOT, "bench", "results", "compare-nexar", mode))
    series = ["mcast", "nexar"] + (["nexar_quic"] if a.nexar_quic_only else [])

    # A SIGTERM (say, from `timeout`) unwinds through the finally blocks that
    # kill every rank this script started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    build(a)
    os.makedirs(out, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    raw, failed, before, old = [], 0, 0, None
    if a.append:
        with open(os.path.join(out, "raw.json")) as f:
            old = json.load(f)
        if old["meta"]["series"] != series:
            sys.exit(f"--append: {out} has the series {old['meta']['series']}, not {series}")
        raw, failed, before = old["runs"], old["meta"]["failed_runs"], old["meta"]["rounds"]
        started = datetime.datetime.fromisoformat(old["meta"]["started"])
    with tempfile.TemporaryDirectory(prefix="compare-nexar-") as tmp:
        lays = layouts(a, tmp)
        t_start, rounds_done = time.monotonic(), 0
        for rnd in range(1, a.rounds + 1):
            spent = time.monotonic() - t_start
            if a.budget and rounds_done and spent + spent / rounds_done > a.budget:
                log(f"--budget {a.budget:.0f} s: stopping after {rounds_done} rounds")
                break
            rounds_done = rnd
            for lay in lays:
                # Rotate the order each round: every series runs first in turn.
                k = (before + rnd - 1) % len(series)
                order = series[k:] + series[:k]
                for s in order:
                    t0 = time.monotonic()
                    entry = {"round": before + rnd, "layout": lay["label"], "series": s,
                             "load_before": os.getloadavg()[0]}
                    try:
                        if s == "mcast":
                            rep, cmd = run_mcast(a, lay)
                            entry["command"] = shlex.join(cmd)
                        else:
                            rep, cmds = run_nexar(a, lay, s)
                            entry["commands"] = cmds
                        entry["report"] = rep
                    except (RuntimeError, json.JSONDecodeError) as e:
                        failed += 1
                        entry["error"] = str(e)
                        log(f"round {rnd} {lay['label']} {s}: FAILED: {e}")
                    entry["seconds"] = round(time.monotonic() - t0, 1)
                    raw.append(entry)
                    if "report" in entry:
                        r1 = entry["report"]["results"][0]["avg_us"]
                        log(f"round {rnd}/{a.rounds} ranks {lay['label']} {s}: "
                            f"{entry['seconds']} s, 1 B {r1:.1f} µs, links {entry['report'].get('links')}")

    meta = {"mode": mode, "started": started.isoformat(timespec="seconds"),
            "rounds": before + rounds_done, "series": series,
            "mcast_transport": a.mcast_transport, "argv": sys.argv[1:],
            "failed_runs": failed, "nproc": os.cpu_count(),
            "mcast_commit": subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                           capture_output=True, text=True).stdout.strip()}
    if old:
        meta["argv"] = old["meta"]["argv"]
        meta["appended_argv"] = old["meta"].get("appended_argv", []) + [sys.argv[1:]]
        if old["meta"]["mcast_commit"] != meta["mcast_commit"]:
            meta["mcast_commit"] = f"{old['meta']['mcast_commit']}, then {meta['mcast_commit']}"
    with open(os.path.join(out, "raw.json"), "w") as f:
        json.dump({"meta": meta, "runs": raw}, f, indent=1)
    write_outputs(out, meta, raw)
    return 1 if failed else 0


def write_outputs(out, meta, raw):
    """summary.csv, table.md and latency.svg from the runs of raw.json."""
    series = meta["series"]
    rows = summarize(raw, series)
    tbl = table(rows, series)
    with open(os.path.join(out, "summary.csv"), "w") as f:
        keys = list(rows[0].keys()) if rows else []
        f.write(",".join(keys) + "\n")
        f.writelines(",".join("" if r[k] is None else str(round(r[k], 3)) if isinstance(r[k], float)
                              else str(r[k]) for k in keys) + "\n" for r in rows)
    title = (f"bcast latency, mcast --transport {meta['mcast_transport']} vs nexar "
             f"({meta['mode']}, median of {meta['rounds']} rounds)")
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(f"{title}; latency in µs (osu_bcast method, average over ranks)\n\n{tbl}")
        if any(r.get("mcast_cycle_us") is not None for r in rows):
            f.write("\nBcast + barrier: rank 0's wall clock per timed iteration (fill, broadcast, "
                    "check, the untimed barrier; `cycle_us`), which the barrier cannot flatter as it "
                    "can the timed broadcast alone; each side runs its own barrier. µs, median over "
                    f"rounds.\n\n{table(rows, series, 'cycle_us')}")
    plot(out, rows, series, title)
    print(tbl)
    log(f"wrote {out}/{{table.md,summary.csv,raw.json,latency.svg}}; {meta['failed_runs']} failed runs")


if __name__ == "__main__":
    sys.exit(main())
