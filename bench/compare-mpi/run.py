#!/usr/bin/env python3
"""Compare mcast's broadcast latency with Open MPI's MPI_Bcast (issues 8, 17).

All are measured the osu_bcast way (warm-up, then timed bcast + untimed
barrier per iteration, per-rank average, avg/min/max over ranks) by programs
that share the method, the iteration counts and the data check: mcast's
`mcbench --json` and our `osu_bcast_lite.c` under Open MPI's `mpirun`, on one
host, three ways: mcast (Unix sockets + shared-memory arenas), Open MPI on its
default one-host transport (pml ob1, btl vader,self: shared memory) and Open
MPI on its TCP transport over loopback (btl tcp,self). Runs interleave
A B C A B C over several rounds (default 5) so that machine drift cancels;
each round also measures the loopback TCP ping-pong floor. Prints two tables
of medians over rounds (mcast vs Open MPI vader, mcast vs Open MPI TCP) and
writes CSV, an SVG plot and the tables (see README.md beside this file).

    python3 bench/compare-mpi/run.py [--ranks 4,8] [--rounds 5] [--quick]
                                     [--ompi-transports vader,tcp]
                                     [--out bench/results/compare-mpi]

With --coll allreduce,allgather,alltoall (any of bcast,allreduce,allgather,
alltoall; default bcast, the comparison above) it compares instead
`mcbench --coll X` with MPI_Allreduce / MPI_Allgather / MPI_Alltoall
(`osu_coll_lite.c`, bcast: `osu_bcast_lite.c`), both on shared memory (one
host), and prints the ratios per (collective, ranks, size).

With --hosts HOSTFILE [--launch-agent CMD] [--if CIDR] it compares instead
the broadcast across the hosts of HOSTFILE, one rank per slot: mcast `auto`,
mcast with the k-binomial tree forced, and Open MPI with its default
transports across hosts (vader within a host, tcp between), interleaved per
round; output in bench/results/compare-mpi-hosts by default.

Standard library only. Installs Open MPI (openmpi-bin, libopenmpi-dev) with
apt-get if mpicc/mpirun are missing, and builds the workspace with cargo.
"""
import argparse
import csv
import datetime
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(ROOT, "target", "compare-mpi")
MCBENCH = os.path.join(ROOT, "target", "release", "mcbench")
# Every figure is drawn by `mcsim plot`, the project's one plotting module
# (emulator/src/repro/plot.rs, plotters).
MCSIM = os.path.join(ROOT, "target", "release", "mcsim")
MCLAUNCH = os.path.join(ROOT, "target", "release", "mclaunch")
OSU = os.path.join(BUILD, "osu_bcast_lite")
OSU_COLL = os.path.join(BUILD, "osu_coll_lite")
COLLS = ("bcast", "allreduce", "allgather", "alltoall")
MPI_FN = {"bcast": "MPI_Bcast", "allreduce": "MPI_Allreduce", "allgather": "MPI_Allgather",
          "alltoall": "MPI_Alltoall"}
PINGPONG = os.path.join(BUILD, "tcp_pingpong")
CMA_COPY = os.path.join(BUILD, "cma_copy")
LARGE_MESSAGE = 8192  # osu_bcast's small/large threshold (iteration counts)
IMPLS = ("mcast", "ompi")  # --coll: mcast and Open MPI (shared memory)
LABEL = {"mcast": "mcast", "ompi": "Open MPI"}

# The one-host broadcast comparison (the default mode): mcast and Open MPI on
# each transport of --ompi-transports, in the order each round runs them
# (A B C A B C ...). Keys name the columns of summary.csv (f"{key}_us", ...).
BCAST_SERIES = ("mcast", "ompi_vader", "ompi_tcp")
OMPI_TRANSPORTS = {"vader": "ompi_vader", "tcp": "ompi_tcp"}  # --ompi-transports → series
BCAST_LABEL = {"mcast": "mcast", "ompi_vader": "Open MPI vader", "ompi_tcp": "Open MPI tcp"}

# What mcast's ranks talk over, as the tables say it: the `transport` of
# mcbench's --json report if it has one; else this text for the `medium` it
# reports (mcast::Medium: every rank on one host's shared memory, or not);
# else MCAST_TRANSPORT_DEFAULT. Change the words here, in one place.
MCAST_TRANSPORT_BY_MEDIUM = {
    "shared-memory": "Unix sockets + shared-memory arenas",
    "network": "TCP",
}
MCAST_TRANSPORT_DEFAULT = "Unix sockets + shared-memory arenas"
# mcbench's "links" (what carried the packets to the peers) when it reports them.
MCAST_TRANSPORT_BY_LINKS = {
    "ring": "shared-memory rings (+ arenas from 16 KiB)",
    "unix": "Unix sockets + shared-memory arenas",
    "tcp": "TCP",
}

# Open MPI on its TCP transport, over loopback only, 8 ranks on 2 cores.
MPIRUN_TCP_OPTS = ["--oversubscribe", "--bind-to", "none",
                   "--mca", "btl", "tcp,self", "--mca", "pml", "ob1",
                   "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, timeout=None, env=None, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if check and p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n"
                 f"--- stdout\n{p.stdout[-4000:]}\n--- stderr\n{p.stderr[-4000:]}")
    return p


def sh(cmd):
    """Output of an informational command, or '' if it is unavailable."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


# ---------------------------------------------------------------- setup

def ensure_openmpi(allow_install):
    if shutil.which("mpicc") and shutil.which("mpirun"):
        return
    if not allow_install:
        sys.exit("mpicc/mpirun not found (and --no-install given)")
    pre = [] if os.geteuid() == 0 else (["sudo"] if shutil.which("sudo") else None)
    if pre is None or not shutil.which("apt-get"):
        sys.exit("Open MPI is missing: install openmpi-bin and libopenmpi-dev (needs apt-get and root)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = pre + ["apt-get", "install", "-y", "openmpi-bin", "libopenmpi-dev"]
    log("installing Open MPI: " + " ".join(install))
    if subprocess.run(install, env=env, stdout=subprocess.DEVNULL).returncode != 0:
        log("apt-get install failed; running apt-get update and retrying")
        run(pre + ["apt-get", "update"], env=env)
        run(install, env=env)
    if not (shutil.which("mpicc") and shutil.which("mpirun")):
        sys.exit("Open MPI installed but mpicc/mpirun still not on PATH")


def build(cargo, only_bcast=False):
    if cargo:
        log("cargo build --release --workspace")
        p = subprocess.run(["cargo", "build", "--release", "--workspace"], cwd=ROOT)
        if p.returncode != 0:
            sys.exit("cargo build failed")
    if not os.access(MCBENCH, os.X_OK):
        sys.exit(f"{MCBENCH} missing: run cargo build --release --workspace")
    os.makedirs(BUILD, exist_ok=True)
    run(["mpicc", "-O2", "-Wall", "-o", OSU, os.path.join(HERE, "osu_bcast_lite.c")])
    cc = shutil.which("cc") or shutil.which("gcc") or "mpicc"
    # Informational (single_copy_cost): a machine without it still compares.
    run([cc, "-O2", "-Wall", "-o", CMA_COPY, os.path.join(HERE, "cma_copy.c")], check=False)
    if only_bcast:
        return
    run(["mpicc", "-O2", "-Wall", "-o", OSU_COLL, os.path.join(HERE, "osu_coll_lite.c")])
    run([cc, "-O2", "-Wall", "-o", PINGPONG, os.path.join(HERE, "tcp_pingpong.c")])


# ---------------------------------------------------------------- measurements

def single_copy_cost(size=4 << 20, iters=20):
    """What one process_vm_readv of `size` bytes from another process costs
    on this machine against a memcpy (cma_copy.c: three rounds, the median
    of each): Open MPI's vader reads a host-mate's large message that way,
    mcast copies through its arena, so the ratio says much of how the two
    compare for large messages on a machine. None if it cannot be measured
    (no permission, no compiler), with the reason."""
    try:
        p = run([CMA_COPY, str(size), str(iters)], timeout=120, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        return None, str(e)[-300:]
    rows = [re.search(r"process_vm_readv ([0-9.]+) us, in 1 MiB reads ([0-9.]+) us, memcpy ([0-9.]+) us",
                      line) for line in p.stdout.splitlines()]
    rows = [m for m in rows if m]
    if p.returncode != 0 or not rows:
        return None, (p.stderr.strip() or p.stdout.strip() or f"exit status {p.returncode}")[-300:]
    med = [statistics.median(float(m.group(i)) for m in rows) for i in (1, 2, 3)]
    return dict(bytes=size, iterations=iters, readv_us=med[0], readv_1mib_us=med[1], memcpy_us=med[2],
                readv_vs_memcpy=round(med[0] / med[2], 2)), None


def bench_cmd(impl, n, max_size, quick, mpi_opts=None):
    # The same sizes (every power of two, as osu_bcast) and iteration counts for
    # all; --quick cuts them to 50 timed / 5 warm-up at every size.
    common = ["-m", f"1:{max_size}"] + (["-i", "50", "-x", "5"] if quick else [])
    if impl == "mcast":
        return [MCBENCH, "-n", str(n), "--json"] + common
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    return ["mpirun"] + root + mpi_opts + ["-n", str(n), OSU, "--json"] + common


# --bind: `none` or `core` (set by main).
BIND = "none"


def ompi_opts(key):
    """mpirun's options for an Open MPI series of the one-host comparison.
    ompi_vader: what a plain `mpirun --oversubscribe -n N` gives on one host
    (pml ob1, the shared-memory BTL to every other rank, self to itself;
    ranks unbound when oversubscribed), named explicitly so that neither ucx
    nor tcp can be picked; see README.md for the evidence. ompi_tcp: the TCP
    BTL over loopback."""
    opts = mpirun_shm_opts() if key == "ompi_vader" else list(MPIRUN_TCP_OPTS)
    if BIND == "core":
        # Open MPI refuses to bind more ranks than cores to cores unless told
        # that overloading is allowed.
        opts[opts.index("--bind-to") + 1] = "core:overload-allowed"
    return opts


def ompi_probe(key, opts, n):
    """What Open MPI does under `opts` with n ranks, in its own words: one
    tiny run (1 B, 1 iteration) with --report-bindings, mpi_show_mca_params
    and the PML/BTL selection verbose. Exits if it is not the transport the
    series is named after (pml ob1; the BTLs of the series, to every peer)."""
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    cmd = (["mpirun"] + root + opts + ["--report-bindings", "--mca", "mpi_show_mca_params", "all",
                                       "--mca", "pml_base_verbose", "100", "--mca", "btl_base_verbose", "100",
                                       "-n", str(n), OSU, "--json", "-m", "1:1", "-i", "1", "-x", "0"])
    p = run(cmd, timeout=120)
    text = p.stdout + "\n" + p.stderr
    pml = sorted(set(re.findall(r"selected (\w+) best priority", text)))
    btls = sorted(set(re.findall(r"bml: Using (\w+) btl for send to", text)))
    y = re.search(r"mpi_yield_when_idle=(\w+) \(([^)]*)\)", text)
    over = re.search(r"mpi_oversubscribe=(\w+)", text)
    unbound = len(re.findall(r"MCW rank \d+ is not bound", text))
    bound = len(re.findall(r"MCW rank \d+ bound to", text))
    want = {"self", shm_btl()} if key == "ompi_vader" else {"self", "tcp"}
    if pml != ["ob1"] or not btls or not set(btls) <= want or want - {"self"} - set(btls):
        sys.exit(f"{BCAST_LABEL[key]} -n {n}: Open MPI selected pml {pml}, btls {btls}; "
                 f"expected ob1 and {sorted(want)}\n{' '.join(cmd)}")
    return dict(ranks=n, pml=pml[0], btls=btls,
                yield_when_idle=y.group(1) if y else "?", yield_when_idle_source=y.group(2) if y else "?",
                oversubscribed=over.group(1) if over else "?",
                ranks_unbound=unbound, ranks_bound=bound, command=cmd)


def probe_text(key, probe):
    """One line of what ompi_probe found, for the table."""
    others = [b for b in probe["btls"] if b != "self"]
    y = probe["yield_when_idle"]
    why = (" (Open MPI's own default: it turns it on when the node is oversubscribed)"
           if y == "true" and probe["yield_when_idle_source"] == "default" else
           f" ({probe['yield_when_idle_source']})")
    bind = ("ranks not bound" if probe["ranks_bound"] == 0 else
            f"{probe['ranks_bound']} ranks bound, {probe['ranks_unbound']} not")
    return (f"{probe['ranks']} ranks: pml {probe['pml']}, btl {'/'.join(others)} to the other ranks"
            f"{' and self to itself' if 'self' in probe['btls'] else ''}, "
            f"mpi_yield_when_idle={y}{why}, {bind}")


def parse_report(p, label, n):
    """The JSON report a benchmark run printed, checked for its rank count."""
    try:
        rep = json.loads(p.stdout[p.stdout.find("{"):])
    except ValueError:
        sys.exit(f"{label}: output is not JSON:\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}")
    if rep.get("ranks") != n:
        sys.exit(f"{label}: asked for {n} ranks, report says {rep.get('ranks')}")
    return rep


def run_report(cmd, impl, n, timeout):
    """Run one benchmark command; its report with the time and command."""
    env = dict(os.environ)
    if impl == "mcast":
        env.setdefault("RUST_LOG", "off")
    t0 = time.monotonic()
    p = run(cmd, timeout=timeout, env=env)
    secs = time.monotonic() - t0
    rep = parse_report(p, f"{impl} -n {n}", n)
    rep["seconds"] = secs
    rep["command"] = cmd
    return rep


def floor_pair(server_cpu, client_cpu, iters, warmup):
    """One-way latency of a 1-byte TCP ping-pong, each end pinned by taskset."""
    srv = ["taskset", "-c", str(server_cpu), PINGPONG, "serve"]
    cli = ["taskset", "-c", str(client_cpu), PINGPONG, "client"]
    s = subprocess.Popen(srv, stdout=subprocess.PIPE, text=True)
    try:
        line = s.stdout.readline().split()
        if len(line) != 2 or line[0] != "PORT":
            sys.exit(f"tcp_pingpong serve printed {line!r}")
        p = run(cli + [line[1], str(iters), str(warmup)], timeout=300)
        s.wait(timeout=30)
    finally:
        if s.poll() is None:
            s.kill()
            s.wait()
    return json.loads(p.stdout)


def floors(iters, warmup):
    out = {"unpinned": json.loads(run([PINGPONG, "local", str(iters), str(warmup)], timeout=300).stdout)}
    cpus = sorted(os.sched_getaffinity(0))
    if shutil.which("taskset"):
        out["same core"] = floor_pair(cpus[0], cpus[0], iters, warmup)
        if len(cpus) > 1:
            out["different cores"] = floor_pair(cpus[0], cpus[1], iters, warmup)
    return out


# ---------------------------------------------------------------- mcast's tree depth

def ceil_log2(n):
    return 0 if n <= 1 else (n - 1).bit_length()


def l1(n, k):
    """L1(n, k): steps of a k-binomial tree on n nodes (algorithms/src/kbinomial.rs)."""
    if n <= 1:
        return 0
    if k == 1:
        return n - 1
    if ceil_log2(n) <= k:
        return ceil_log2(n)
    window = [1 << t for t in range(1, k + 1)]  # N(1..k) = 2^t
    s = k
    while True:
        s += 1
        nxt = 1 + sum(window)
        if nxt >= n:
            return s
        window = window[1:] + [nxt]


def optimal_k(n, m):
    best = None
    for k in range(1, max(ceil_log2(n), 1) + 1):
        cost = l1(n, k) + (max(m, 1) - 1) * k
        if best is None or cost < best[0]:
            best = (cost, k)
    return best[1]


def depth(n, size, packet_bytes):
    """Depth of the tree mcast's `auto` uses: the optimal k-binomial tree for
    m = ceil(size / packet) packets. For one packet it is ceil(log2 n)."""
    m = max(1, -(-size // packet_bytes))
    return l1(n, optimal_k(n, m))


# ---------------------------------------------------------------- output

def fmt_size(b):
    for unit, v in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= v and b % v == 0:
            return f"{b // v} {unit}"
    return f"{b} B"


def fmt_us(v):
    return f"{v:.1f}" if v < 1000 else f"{v:.0f}"


def write_csv(path, header, rows):
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for r in rows:
            f.write(",".join(str(r[h]) for h in header) + "\n")


def svg_plot(path, summary, ranks, floor_us, title, series=None, legend_ranks=True, subtitle=None):
    """Latency against size, log-log, drawn by `mcsim plot` from a CSV written
    beside the SVG (`<name>.plot.csv`). `series`: (key, label, _) for the
    columns f"{key}_us" of `summary` (default mcast and Open MPI); one line per
    series and rank count; `floor_us` None draws no floor lines; legend_ranks
    False leaves the rank count out of the legend (say it in the title);
    `subtitle` follows the title."""
    if series is None:
        series = [(impl, LABEL[impl], None) for impl in IMPLS]
    rows = []
    for impl, label, _ in series:
        for n in ranks:
            name = f"{label}, {n} ranks" if legend_ranks else label
            rows += [(name, r["size"], r[f"{impl}_us"]) for r in summary if r["ranks"] == n]
    sizes = sorted({r["size"] for r in summary})
    if floor_us:
        # Floor lines: one hop, and depth x one hop for each rank count.
        floors = [(f"loopback TCP hop ({floor_us:.1f} µs)", floor_us)]
        for n in ranks:
            dn = depth(n, 1, 1 << 16)
            if dn > 1:
                floors.append((f"{dn} hops (tree depth at N={n})", dn * floor_us))
        for lab, v in floors:
            rows += [(lab, sizes[0], v), (lab, sizes[-1], v)]
    points = os.path.splitext(path)[0] + ".plot.csv"
    with open(points, "w") as f:
        f.write("series,x,y\n")
        f.writelines(f"{name},{x},{y}\n" for name, x, y in rows)
    caption = title + (f" ({subtitle})" if subtitle else "")
    cmd = [MCSIM, "plot", "--csv", points, "--out", path, "--log-x", "--log-y",
           "--title", caption, "--x-label", "message size (bytes, log scale)",
           "--y-label", "latency (µs, median over rounds, log scale)"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"mcsim plot failed ({' '.join(cmd[:2])}): {p.stderr.strip()}")


def plot_one_host(out, summary, meta, shm):
    """The one-host bcast comparison's latency.svg, from its summary rows and
    the meta of raw.json."""
    keys = meta["series"]
    ompi_keys = [k for k in keys if k != "mcast"]
    title = f"Broadcast latency on one host, {meta['nproc']} cores: mcast vs Open MPI"
    subtitle = (f"mcast: {meta['mcast_transport']}; Open MPI: " + " and ".join(
        {"ompi_vader": f"{shm} (shared memory)", "ompi_tcp": "tcp (loopback)"}[k] for k in ompi_keys))
    svg_plot(os.path.join(out, "latency.svg"), summary, meta["ranks"], meta["floor_median_us"]["unpinned"],
             title, subtitle=subtitle,
             series=[(k, BCAST_LABEL[k] if k == "mcast" else
                      f"Open MPI {'tcp' if k == 'ompi_tcp' else shm}", None) for k in keys])


def build_label(a):
    """The mcast commit the binaries were built from, marked when the source
    has uncommitted changes (or the binaries came from --bin-dir)."""
    git = sh(["git", "-C", os.path.dirname(os.path.dirname(MCBENCH)), "rev-parse", "--short", "HEAD"]) \
        or sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    dirty = " (with uncommitted changes)" if sh(["git", "-C", ROOT, "status", "--porcelain", "--", "runtime",
                                               "algorithms", "launcher", "src", "Cargo.toml", "Cargo.lock"]) else ""
    if getattr(a, "bin_dir", None):
        dirty = f" (binaries from {os.path.abspath(a.bin_dir)})"
    return git + dirty


def plot_hosts(out, summary, meta, shm):
    """The across-hosts comparison's latency.svg, from its summary rows and
    the meta of raw.json."""
    n, hosts = meta["ranks"], meta["hosts"]
    title = (f"Broadcast, {n} ranks on {len(hosts)} hosts: mcast (TCP + UDS/shm) vs Open MPI "
             f"({'tcp + ' + shm[0] if shm else 'tcp'})")
    svg_plot(os.path.join(out, "latency.svg"), summary, [n], None, title,
             series=[(k, HOST_LABEL[k], None) for k in HOST_SERIES], legend_ranks=False)


def replot(d):
    """Redraw DIR/latency.svg from DIR/summary.csv and DIR/raw.json (a bcast
    result of this script, one host or across hosts) without measuring."""
    try:
        meta = json.load(open(os.path.join(d, "raw.json")))["meta"]
        with open(os.path.join(d, "summary.csv")) as f:
            rows = list(csv.DictReader(f))
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"--replot {d}: needs raw.json and summary.csv of a bcast run ({e})")
    summary = []
    for r in rows:
        row = dict(r, ranks=int(r["ranks"]), size=int(r["size"]))
        for k, v in r.items():
            if k.endswith("_us"):
                try:
                    row[k] = float(v)
                except ValueError:
                    pass
        summary.append(row)
    if "hosts" in meta:
        btl = meta.get("open_mpi_transport", "")
        shm = [b for b in ("vader", "sm") if f"btl {b}" in btl or f",{b}" in btl or f" {b}," in btl]
        plot_hosts(d, summary, meta, shm)
    else:
        shm = meta.get("ompi_transports", ["vader"])[0] if "vader" in meta.get("ompi_transports", []) else "vader"
        plot_one_host(d, summary, meta, shm)
    print(f"redrew {os.path.join(d, 'latency.svg')}")


# ---------------------------------------------------------------- main

def ranks_and_out(a):
    """--ranks as a list (checked with --rounds and --max-size), and the
    output directory, made absolute and created."""
    ranks = [int(x) for x in a.ranks.split(",") if x.strip()]
    if not ranks or min(ranks) < 2 or a.rounds < 1 or a.max_size < 1:
        sys.exit("need --ranks >= 2, --rounds >= 1, --max-size >= 1")
    out = a.out if os.path.isabs(a.out) else os.path.join(os.getcwd(), a.out)
    os.makedirs(out, exist_ok=True)
    return ranks, out


def main():
    global MCBENCH, MCLAUNCH, MCSIM, BIND
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", default=None, help="rank counts, comma-separated (default 4,8; "
                    "not with --hosts, which runs one rank per slot of the hostfile)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="interleaved rounds; medians over them (default 5; 3 with --coll or --hosts)")
    ap.add_argument("--quick", action="store_true",
                    help="development: 50 timed / 5 warm-up iterations at every size, shorter floor")
    ap.add_argument("--out", default=None,
                    help="output directory (default bench/results/compare-mpi, with --hosts "
                    "bench/results/compare-mpi-hosts)")
    ap.add_argument("--max-size", type=int, default=4 << 20, help="largest message, bytes (default 4 MiB)")
    ap.add_argument("--no-build", action="store_true", help="skip cargo build (still compiles the C programs)")
    ap.add_argument("--no-install", action="store_true", help="do not apt-get install Open MPI")
    ap.add_argument("--bind", choices=["none", "core"], default="none",
                    help="leave both sides' ranks to the scheduler (none, the default: Open MPI's "
                         "own choice when oversubscribed, and its effective one for more than 2 "
                         "ranks on a one-socket host) or bind each rank to a CPU in turn on both "
                         "sides (core). One host: MCAST_BIND_TO=core for mclaunch, --bind-to "
                         "core:overload-allowed for mpirun. Hosts mode: mclaunch --bind-to core "
                         "and mpirun --bind-to core, each host's ranks over that host's CPUs")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed per benchmark run")
    ap.add_argument("--coll", default="bcast",
                    help="collectives, comma-separated, from " + ",".join(COLLS) + " (default bcast: "
                    "the broadcast comparison with Open MPI on vader and on TCP, and the floor; anything "
                    "else: every listed collective, both sides on shared memory)")
    ap.add_argument("--ompi-transports", default="vader,tcp",
                    help="the broadcast comparison's Open MPI series, comma-separated: vader (its default "
                    "on one host, shared memory) and/or tcp (TCP over loopback) (default vader,tcp)")
    ap.add_argument("--bin-dir", default=None,
                    help="take mcbench and mclaunch from DIR instead of target/release (no cargo build)")
    hg = ap.add_argument_group("hosts mode (bcast across hosts; see README.md)")
    hg.add_argument("--hosts", metavar="HOSTFILE", default=None,
                    help="compare across the hosts of HOSTFILE (`host slots=N` lines): mcast auto, "
                    "mcast kbinomial and Open MPI (vader within a host, tcp between), one rank per slot")
    hg.add_argument("--launch-agent", default=None,
                    help="command that reaches a host (default $MCAST_LAUNCH_AGENT, else ssh); "
                    "mclaunch --launch-agent and mpirun --mca plm_rsh_agent")
    hg.add_argument("--if", dest="iface", default=None, metavar="CIDR",
                    help="network between the hosts (default: the network of this machine's address "
                    "on the route to the first host); mclaunch --if, Open MPI btl/oob_tcp_if_include")
    hg.add_argument("--goal", type=float, default=0.8,
                    help="the mcast / Open MPI ratio each table counts the rounds at or below "
                    "(default 0.8, the clusters issue's goal)")
    hg.add_argument("--ompi-btl", default="vader,self,tcp",
                    help="Open MPI's BTLs (default vader,self,tcp, its default across hosts; "
                    "tcp,self puts the ranks of one host on TCP too)")
    hg.add_argument("--no-ompi-yield", action="store_true",
                    help="do not pass --mca mpi_yield_when_idle 1 to mpirun (see README.md)")
    ap.add_argument("--replot", metavar="DIR", default=None,
                    help="redraw DIR/latency.svg from DIR/summary.csv and DIR/raw.json (a bcast result, "
                    "one host or --hosts) with mcsim plot, measuring nothing")
    a = ap.parse_args()
    if a.bind == "core":
        if a.coll != "bcast":
            sys.exit("--bind core is for the bcast comparisons")
        BIND = "core"
        if not a.hosts:
            # mcbench -n N starts mclaunch, which takes --bind-to from here;
            # the table's header lists it among mcast's MCAST_* settings.
            # (Hosts mode passes --bind-to on both command lines instead.)
            os.environ["MCAST_BIND_TO"] = "core"
    if a.replot:
        if a.bin_dir:
            MCSIM = os.path.join(os.path.abspath(a.bin_dir), "mcsim")
        return replot(a.replot)
    if a.bin_dir:
        MCBENCH = os.path.join(os.path.abspath(a.bin_dir), "mcbench")
        MCSIM = os.path.join(os.path.abspath(a.bin_dir), "mcsim")
        MCLAUNCH = os.path.join(os.path.abspath(a.bin_dir), "mclaunch")
        a.no_build = True
    transports = [t.strip() for t in a.ompi_transports.split(",") if t.strip()]
    if not transports or any(t not in OMPI_TRANSPORTS for t in transports) or len(set(transports)) < len(transports):
        sys.exit("--ompi-transports takes vader, tcp or vader,tcp")
    custom_transports = a.ompi_transports != "vader,tcp"
    if a.hosts:
        if a.ranks is not None:
            sys.exit("--ranks does not go with --hosts: the hostfile's slots are the ranks")
        if a.coll != "bcast":
            sys.exit("--hosts compares bcast only (no --coll)")
        if custom_transports:
            sys.exit("--ompi-transports is for the one-host bcast comparison (with --hosts: --ompi-btl)")
        if a.rounds is None:
            a.rounds = 3
        return main_hosts(a)
    if a.ranks is None:
        a.ranks = "4,8"
    if a.out is None:
        a.out = os.path.join("bench", "results", "compare-mpi")
    colls = [c.strip() for c in a.coll.split(",") if c.strip()]
    if not colls or any(c not in COLLS for c in colls):
        sys.exit(f"--coll takes a comma-separated list of {', '.join(COLLS)}")
    if colls != ["bcast"]:
        if custom_transports:
            sys.exit("--ompi-transports is for the bcast comparison (--coll runs Open MPI on shared memory)")
        if a.rounds is None:
            a.rounds = 3
        return main_coll(a, colls)
    if a.rounds is None:
        a.rounds = 5
    return main_bcast(a, [t for t in OMPI_TRANSPORTS if t in transports])


def packet_text(rep):
    """mcbench's packet size as the tables name it: `262144`, or `262144 B
    (1048576 B from 2097152 B)` where large messages go in larger packets."""
    base = rep.get("packet_bytes", 65536)
    large, start = rep.get("large_packet_bytes"), rep.get("large_from_bytes")
    if large and start:
        return f"{base} B ({large} B from {start} B)"
    return f"{base} B"


def mcast_transport_text(rep):
    """What mcast's ranks talked over, from mcbench's report (see
    MCAST_TRANSPORT_BY_MEDIUM)."""
    if rep.get("transport"):
        return str(rep["transport"])
    links = rep.get("links")
    if links in MCAST_TRANSPORT_BY_LINKS:
        return MCAST_TRANSPORT_BY_LINKS[links]
    return MCAST_TRANSPORT_BY_MEDIUM.get(rep.get("medium"), MCAST_TRANSPORT_DEFAULT)


def main_bcast(a, transports):
    """The one-host broadcast comparison: mcast, Open MPI on its default
    transport (vader) and on TCP, interleaved, with the loopback floor."""
    ranks, out = ranks_and_out(a)
    keys = ["mcast"] + [OMPI_TRANSPORTS[t] for t in transports]
    ompi_keys = keys[1:]

    started = datetime.datetime.now(datetime.timezone.utc)
    t_start = time.monotonic()
    ensure_openmpi(not a.no_install)
    build(not a.no_build)
    opts = {k: ompi_opts(k) for k in ompi_keys}
    # What Open MPI really does under those options, per rank count: checked
    # (pml, BTLs) and recorded (yield, binding).
    probes = {k: [ompi_probe(k, opts[k], n) for n in ranks] for k in ompi_keys}
    for k in ompi_keys:
        for pr in probes[k]:
            log(f"{BCAST_LABEL[k]}: {probe_text(k, pr)}")
    t_measure = time.monotonic()

    floor_iters, floor_warm = (5000, 500) if a.quick else (20000, 2000)
    runs, floor_rounds, raw, loads = [], [], [], []
    for rnd in range(1, a.rounds + 1):
        fl = floors(floor_iters, floor_warm)
        floor_rounds.append(fl)
        log(f"round {rnd}/{a.rounds}: floor " + ", ".join(f"{k} {v['median_us']:.2f} µs" for k, v in fl.items()))
        for n in ranks:
            for key in keys:  # A B C A B C ...
                loads.append(os.getloadavg()[0])
                rep = run_report(bench_cmd(key, n, a.max_size, a.quick, opts.get(key)), key, n, a.timeout)
                rep.update(impl=key, round=rnd)
                raw.append(rep)
                log(f"round {rnd}/{a.rounds}: {BCAST_LABEL[key]:14} -n {n}: {rep['seconds']:.1f} s")
                for r in rep["results"]:
                    runs.append(dict(impl=key, ranks=n, round=rnd, size=r["size"],
                                     avg_us=r["avg_us"], min_us=r["min_us"], max_us=r["max_us"],
                                     iterations=r["iterations"], depth=r.get("depth"),
                                     cycle_us=r.get("cycle_us")))
    t_end = time.monotonic()

    # Every program must have run the same sizes and iteration counts.
    its = {}
    for r in runs:
        its.setdefault((r["ranks"], r["size"]), {}).setdefault(r["impl"], set()).add(r["iterations"])
    bad = {k: v for k, v in its.items() if set(v) != set(keys) or len(set().union(*v.values())) != 1}
    if bad:
        sys.exit(f"sizes or iteration counts differ between the programs: {bad}")

    mc_raw = [r for r in raw if r["impl"] == "mcast"]
    packet = packet_text(mc_raw[0])
    mediums = sorted({r.get("medium", "?") for r in mc_raw})
    mc_transport = " / ".join(sorted({mcast_transport_text(r) for r in mc_raw}))
    shm = shm_btl()
    ompi_transport = {"ompi_vader": f"{shm}, shared memory", "ompi_tcp": "tcp, loopback"}
    floor_kinds = list(floor_rounds[0])
    floor_med = {k: statistics.median(f[k]["median_us"] for f in floor_rounds) for k in floor_kinds}
    floor = floor_med["unpinned"]

    sizes = []
    s = 1
    while s <= a.max_size:
        sizes.append(s)
        s *= 4
    summary = []
    for n in ranks:
        for s in sizes:
            row = dict(ranks=n, size=s, iterations=next(iter(its[(n, s)]["mcast"])))
            for key in keys:
                cell = sorted((r for r in runs if (r["impl"], r["ranks"], r["size"]) == (key, n, s)),
                              key=lambda c: c["round"])
                for stat in ("avg", "min", "max"):
                    row[f"{key}_{stat}_us"] = round(statistics.median(c[f"{stat}_us"] for c in cell), 3)
                row[f"{key}_us"] = row[f"{key}_avg_us"]
                row[f"{key}_rounds_us"] = " ".join(f"{c['avg_us']:.2f}" for c in cell)
                cycles = [c["cycle_us"] for c in cell if c.get("cycle_us") is not None]
                row[f"{key}_cycle_us"] = round(statistics.median(cycles), 3) if cycles else ""
            for t in transports:
                row[f"mcast_vs_{t}"] = round(row["mcast_us"] / row[f"{OMPI_TRANSPORTS[t]}_us"], 3)
                o = row[f"{OMPI_TRANSPORTS[t]}_cycle_us"]
                row[f"mcast_cycle_vs_{t}"] = (round(row["mcast_cycle_us"] / o, 3)
                                              if o and row["mcast_cycle_us"] != "" else "")
            # mcbench reports the depth of the tree it used (shared memory
            # makes `auto` pick the binomial tree); older ones did not.
            reported = [r.get("depth") for r in runs
                        if (r["impl"], r["ranks"], r["size"]) == ("mcast", n, s) and r.get("depth")]
            row["depth"] = reported[0] if reported else depth(n, s, packet)
            small = s < LARGE_MESSAGE
            for key in keys:
                row[f"{key}_x_depth_floor"] = round(row[f"{key}_us"] / (row["depth"] * floor), 2) if small else ""
            summary.append(row)

    # ---- outputs
    write_csv(os.path.join(out, "runs.csv"),
              ["impl", "ranks", "round", "size", "avg_us", "min_us", "max_us", "iterations"], runs)
    write_csv(os.path.join(out, "summary.csv"),
              ["ranks", "size", "iterations"] + [f"{k}_us" for k in keys]
              + [f"mcast_vs_{t}" for t in transports] + ["depth"]
              + [f"{k}_x_depth_floor" for k in keys]
              + [f"{k}_{st}_us" for k in keys for st in ("min", "max")]
              + [f"{k}_cycle_us" for k in keys] + [f"mcast_cycle_vs_{t}" for t in transports]
              + [f"{k}_rounds_us" for k in keys], summary)
    frows = []
    for rnd, f in enumerate(floor_rounds, 1):
        for k, v in f.items():
            frows.append(dict(round=rnd, pinning=k.replace(" ", "_"), **v))
    write_csv(os.path.join(out, "floor.csv"),
              ["round", "pinning", "iterations", "median_us", "mean_us", "p10_us", "p90_us"], frows)

    ompi_ver = sh(["mpirun", "--version"]).splitlines()
    mc_env = {k: v for k, v in os.environ.items() if k.startswith("MCAST_")}
    meta = dict(
        date_utc=started.strftime("%Y-%m-%d %H:%M UTC"),
        command="python3 bench/compare-mpi/run.py " + " ".join(sys.argv[1:]),
        host=platform.node(), kernel=platform.release(), nproc=os.cpu_count(),
        cpu=next((l.split(":", 1)[1].strip() for l in sh(["lscpu"]).splitlines()
                  if l.startswith("Model name")), platform.processor()),
        open_mpi=ompi_ver[0] if ompi_ver else "?", mcast_commit=build_label(a), mcbench=MCBENCH,
        mcast_algorithm=mc_raw[0].get("algorithm", "?"),
        mcast_packets=packet, mcast_medium=mediums, mcast_transport=mc_transport, mcast_env=mc_env,
        series=keys, ompi_transports=transports,
        open_mpi_transport={k: ompi_transport[k] for k in ompi_keys},
        mpirun_options={k: " ".join(opts[k]) for k in ompi_keys},
        open_mpi_probes=probes,
        quick=a.quick, rounds=a.rounds, ranks=ranks,
        seconds_total=round(t_end - t_start, 1), seconds_measuring=round(t_end - t_measure, 1),
        load_average_1min_before_runs=[round(x, 2) for x in loads],
        floor_median_us=floor_med,
    )
    with open(os.path.join(out, "raw.json"), "w") as f:
        json.dump(dict(meta=meta, floors=floor_rounds, runs=raw), f, indent=1)

    plot_one_host(out, summary, meta, shm)

    order = " ".join(("mcast", *[{"ompi_vader": shm, "ompi_tcp": "tcp"}[k] for k in ompi_keys]))
    lines = [f"# mcast vs Open MPI broadcast latency, one host ({meta['date_utc']})", "",
             f"* command: `{meta['command']}`" + ("  (**--quick: development numbers**)" if a.quick else ""),
             f"* machine: {meta['nproc']} CPUs ({meta['cpu']}), kernel {meta['kernel']}",
             f"* mcast {meta['mcast_commit']}: `{MCBENCH} -n N --json -m 1:{a.max_size}"
             + (" -i 50 -x 5" if a.quick else "") + f"`; algorithm {meta['mcast_algorithm']}, packet {packet}, "
             f"medium {', '.join(f'`{m}`' for m in mediums)} (as mcbench reports it)"
             + (", environment " + " ".join(f"{k}={v}" for k, v in sorted(mc_env.items())) if mc_env else ""),
             f"* {meta['open_mpi']}: `osu_bcast_lite` (`MPI_Bcast`) under"]
    for k in ompi_keys:
        lines.append(f"  * {ompi_transport[k]}: `mpirun {meta['mpirun_options'][k]} -n N {OSU} --json "
                     f"-m 1:{a.max_size}" + (" -i 50 -x 5" if a.quick else "") + "`; "
                     "Open MPI's own report (probe run): " + "; ".join(probe_text(k, pr) for pr in probes[k]))
    lines += [f"* method: osu_bcast (warm-up, timed bcast + untimed barrier, per-rank average, "
              f"average over ranks); medians over {a.rounds} interleaved round{'s' * (a.rounds != 1)} "
              f"({order}, {order}, ...)",
              f"* 1-minute load average before each run: "
              f"{min(loads):.1f} to {max(loads):.1f}" if loads else "",
              f"* duration: {meta['seconds_total']:.0f} s ({meta['seconds_measuring']:.0f} s measuring)", "",
              "Loopback TCP one-hop floor (1-byte ping-pong round trip / 2, median over rounds of the per-run "
              "medians): " + ", ".join(f"{k} {v:.2f} µs" for k, v in floor_med.items()) + ".", "",
              "Latency in µs (average over ranks; median over rounds). mcast / OMPI = mcast / Open MPI "
              "(above 1: mcast slower); depth = steps of mcast's tree (as mcbench reports it: `auto` takes "
              "the binomial tree when every rank shares one host's memory, else the optimal k-binomial "
              "tree; ⌈log2 N⌉ for one packet). bcast + barrier = rank 0's wall clock per timed "
              "iteration (`cycle_us`: the bcast and the untimed barrier after it, each side's own "
              "barrier), which a barrier cannot flatter as it can the timed bcast alone.", ""]
    for t, key in ((t, OMPI_TRANSPORTS[t]) for t in transports):
        ratio = f"mcast_vs_{t}"
        if key == "ompi_vader":
            lines += [f"## mcast vs Open MPI default transport ({shm}, shared memory)", "",
                      f"Transports: mcast **{mc_transport}**; Open MPI **{ompi_transport[key]}** "
                      "(pml ob1; its default on one host).", ""]
            floor_cols = False
        else:
            lines += ["## mcast vs Open MPI TCP", "",
                      f"Transports: mcast **{mc_transport}**; Open MPI **{ompi_transport[key]}** "
                      "(pml ob1, btl tcp,self; for the across-hosts story). ×floor = latency / "
                      f"(depth × {floor:.2f} µs unpinned floor), for messages below {LARGE_MESSAGE} B.", ""]
            floor_cols = True
        olabel = {"ompi_vader": shm, "ompi_tcp": "tcp"}[key]
        for n in ranks:
            lines += [f"### {n} ranks", "",
                      f"| size | mcast µs ({mc_transport}) | Open MPI µs ({ompi_transport[key]}) | "
                      f"mcast / OMPI {olabel} | depth |" + (" mcast ×floor | Open MPI ×floor |" if floor_cols else "")
                      + " bcast + barrier: mcast µs | Open MPI µs | mcast / OMPI |",
                      "|---:|---:|---:|---:|---:|" + ("---:|---:|" if floor_cols else "") + "---:|---:|---:|"]
            for r in summary:
                if r["ranks"] != n:
                    continue
                lines.append(f"| {fmt_size(r['size'])} | {fmt_us(r['mcast_us'])} | {fmt_us(r[f'{key}_us'])} | "
                             f"{r[ratio]:.2f} | {r['depth']} |"
                             + (f" {r['mcast_x_depth_floor']} | {r[f'{key}_x_depth_floor']} |" if floor_cols else "")
                             + f" {fmt_us(r['mcast_cycle_us']) if r['mcast_cycle_us'] != '' else ''} | "
                             f"{fmt_us(r[f'{key}_cycle_us']) if r[f'{key}_cycle_us'] != '' else ''} | "
                             f"{'' if r[f'mcast_cycle_vs_{t}'] == '' else format(r[f'mcast_cycle_vs_{t}'], '.2f')} |")
            lines.append("")
        worst = max(summary, key=lambda r: r[ratio])
        above = [r for r in summary if r[ratio] > 1.0]
        lines += [f"mcast / Open MPI {olabel} ≤ 1.00 in {len(summary) - len(above)} of {len(summary)} cells; "
                  f"largest {worst[ratio]:.2f} ({worst['ranks']} ranks, {fmt_size(worst['size'])}).", ""]
    table = "\n".join(l for l in lines if l is not None)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(table + "\n")
    print(table)
    log(f"wrote {', '.join(os.path.join(a.out, x) for x in ('table.md', 'summary.csv', 'runs.csv', 'floor.csv', 'latency.svg', 'raw.json'))}")


# ---------------------------------------------------------------- --coll: collectives on shared memory

_SHM_BTL = []


def shm_btl():
    """Open MPI's shared-memory BTL: vader (4.x) or sm (5.x)."""
    if not _SHM_BTL:
        info = sh(["ompi_info", "--parsable", "--all"]) or sh(["ompi_info"])
        _SHM_BTL.append("vader" if "btl:vader" in info.replace(" ", "") else "sm")
    return _SHM_BTL[0]


def mpirun_shm_opts():
    # On one host Open MPI's default is the ob1 PML over its shared-memory BTL
    # (self for a rank to itself); named explicitly so that no other PML or
    # transport (ucx, tcp) can be picked. 8 ranks on 2 cores: oversubscribed.
    return ["--oversubscribe", "--bind-to", "none",
            "--mca", "pml", "ob1", "--mca", "btl", "self," + shm_btl()]


def coll_cmd(impl, coll, n, max_size, quick, mpi_opts):
    common = ["-m", f"1:{max_size}"] + (["-i", "50", "-x", "5"] if quick else [])
    if impl == "mcast":
        return [MCBENCH, "-n", str(n), "--coll", coll, "--json"] + common
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    prog = [OSU] if coll == "bcast" else [OSU_COLL, coll]
    return ["mpirun"] + root + mpi_opts + ["-n", str(n)] + prog + ["--json"] + common


def main_coll(a, colls):
    ranks, out = ranks_and_out(a)

    started = datetime.datetime.now(datetime.timezone.utc)
    t_start = time.monotonic()
    ensure_openmpi(not a.no_install)
    build(not a.no_build)
    mpi_opts = mpirun_shm_opts()
    t_measure = time.monotonic()

    runs, raw, loads = [], [], []
    mediums = set()
    for rnd in range(1, a.rounds + 1):
        for coll in colls:
            for n in ranks:
                for impl in IMPLS:  # A B A B ...
                    loads.append(os.getloadavg()[0])
                    cmd = coll_cmd(impl, coll, n, a.max_size, a.quick, mpi_opts)
                    rep = run_report(cmd, impl, n, a.timeout)
                    rep.update(impl=impl, round=rnd, coll=coll)
                    raw.append(rep)
                    if impl == "mcast":
                        mediums.add(rep.get("medium", "?"))
                    log(f"round {rnd}/{a.rounds}: {coll:9} {LABEL[impl]:8} -n {n}: {rep['seconds']:.1f} s")
                    for r in rep["results"]:
                        runs.append(dict(coll=coll, impl=impl, ranks=n, round=rnd, size=r["size"],
                                         avg_us=r["avg_us"], min_us=r["min_us"], max_us=r["max_us"],
                                         iterations=r["iterations"]))
    t_end = time.monotonic()

    # Both programs must have run the same sizes and iteration counts.
    its = {}
    for r in runs:
        its.setdefault((r["coll"], r["ranks"], r["size"]), {}).setdefault(r["impl"], set()).add(r["iterations"])
    bad = {k: v for k, v in its.items() if set(v) != set(IMPLS) or len(set().union(*v.values())) != 1}
    if bad:
        sys.exit(f"sizes or iteration counts differ between the programs: {bad}")

    sizes = []
    s = 1
    while s <= a.max_size:
        sizes.append(s)
        s *= 4
    summary = []
    for coll in colls:
        for n in ranks:
            for s in sizes:
                if (coll, n, s) not in its:  # below one f32 element
                    continue
                row = dict(coll=coll, ranks=n, size=s, iterations=next(iter(its[(coll, n, s)]["mcast"])))
                for impl in IMPLS:
                    cell = [r for r in runs if (r["coll"], r["impl"], r["ranks"], r["size"]) == (coll, impl, n, s)]
                    for stat in ("avg", "min", "max"):
                        row[f"{impl}_{stat}_us"] = round(statistics.median(c[f"{stat}_us"] for c in cell), 3)
                    row[f"{impl}_us"] = row[f"{impl}_avg_us"]
                    row[f"{impl}_rounds_us"] = " ".join(f"{c['avg_us']:.2f}" for c in sorted(cell, key=lambda c: c["round"]))
                row["ratio"] = round(row["mcast_us"] / row["ompi_us"], 3)
                summary.append(row)

    write_csv(os.path.join(out, "runs.csv"),
              ["coll", "impl", "ranks", "round", "size", "avg_us", "min_us", "max_us", "iterations"], runs)
    write_csv(os.path.join(out, "summary.csv"),
              ["coll", "ranks", "size", "iterations", "mcast_us", "ompi_us", "ratio",
               "mcast_min_us", "mcast_max_us", "ompi_min_us", "ompi_max_us",
               "mcast_rounds_us", "ompi_rounds_us"], summary)

    ompi_ver = sh(["mpirun", "--version"]).splitlines()
    mcast_transport = ", ".join(sorted(mediums))
    ompi_transport = f"shared memory (pml ob1, btl self,{shm_btl()})"
    meta = dict(
        date_utc=started.strftime("%Y-%m-%d %H:%M UTC"),
        command="python3 bench/compare-mpi/run.py " + " ".join(sys.argv[1:]),
        host=platform.node(), kernel=platform.release(), nproc=os.cpu_count(),
        cpu=next((l.split(":", 1)[1].strip() for l in sh(["lscpu"]).splitlines()
                  if l.startswith("Model name")), platform.processor()),
        open_mpi=ompi_ver[0] if ompi_ver else "?", mcast_commit=build_label(a),
        mcast_transport=mcast_transport, open_mpi_transport=ompi_transport,
        mpirun_options=" ".join(mpi_opts), collectives=colls,
        quick=a.quick, rounds=a.rounds, ranks=ranks,
        seconds_total=round(t_end - t_start, 1), seconds_measuring=round(t_end - t_measure, 1),
        load_average_1min_before_runs=[round(x, 2) for x in loads],
    )
    with open(os.path.join(out, "raw.json"), "w") as f:
        json.dump(dict(meta=meta, runs=raw), f, indent=1)

    lines = [f"# mcast vs Open MPI collectives ({meta['date_utc']})", "",
             f"* command: `{meta['command']}`" + ("  (**--quick: development numbers**)" if a.quick else ""),
             f"* machine: {meta['nproc']} CPUs ({meta['cpu']}), kernel {meta['kernel']}",
             f"* transports: mcast **{mcast_transport}** (mcbench's reported medium: every rank on this "
             f"host); Open MPI **{ompi_transport}**, its default on one host",
             f"* {meta['open_mpi']}, `mpirun {meta['mpirun_options']}`, "
             + ", ".join(f"`{MPI_FN[c]}`" for c in colls) + f"; mcast {meta['mcast_commit']}, "
             + ", ".join(f"`mcbench --coll {c}`" for c in colls),
             "* data: allreduce f32 Sum over the whole vector (size / 4 elements; 1 B is skipped), "
             "allgather / alltoall u8, size = one rank's block; every result checked by both",
             "* method: OSU's (per size: warm-up, then timed call + untimed barrier per iteration, "
             f"per-rank average, average over ranks); medians over {a.rounds} interleaved rounds (A B A B)",
             f"* 1-minute load average before each run: {min(loads):.1f} to {max(loads):.1f}" if loads else "",
             f"* duration: {meta['seconds_total']:.0f} s ({meta['seconds_measuring']:.0f} s measuring)", "",
             "ratio = mcast / Open MPI (above 1: mcast slower), of the average latency over ranks, "
             "median over rounds.", ""]
    # The ratios at a glance: one row per size, one column per (collective, ranks).
    cols = [(c, n) for c in colls for n in ranks]
    by = {(r["coll"], r["ranks"], r["size"]): r for r in summary}
    lines += ["| size | " + " | ".join(f"{c} {n}" for c, n in cols) + " |",
              "|---:|" + "---:|" * len(cols)]
    for s in sizes:
        lines.append(f"| {fmt_size(s)} | " + " | ".join(
            f"{by[(c, n, s)]['ratio']:.2f}" if (c, n, s) in by else "" for c, n in cols) + " |")
    lines.append("")
    for coll in colls:
        for n in ranks:
            lines += [f"### {coll}, {n} ranks", "",
                      "| size | mcast µs | Open MPI µs | ratio |", "|---:|---:|---:|---:|"]
            for r in summary:
                if (r["coll"], r["ranks"]) == (coll, n):
                    lines.append(f"| {fmt_size(r['size'])} | {fmt_us(r['mcast_us'])} | "
                                 f"{fmt_us(r['ompi_us'])} | {r['ratio']:.2f} |")
            lines.append("")
    table = "\n".join(lines)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(table + "\n")
    print(table)
    log(f"wrote {', '.join(os.path.join(a.out, x) for x in ('table.md', 'summary.csv', 'runs.csv', 'raw.json'))}")


# ---------------------------------------------------------------- --hosts: bcast across hosts

# The three series of the hosts mode, in the order each round runs them.
HOST_SERIES = ("auto", "kbin", "ompi")
HOST_LABEL = {"auto": "mcast auto", "kbin": "mcast kbinomial", "ompi": "Open MPI"}


def parse_hostfile(path):
    """[(host, slots)] from an Open MPI / Hydra hostfile (as mclaunch reads it)."""
    hosts = {}
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        sys.exit(f"--hosts {path}: {e.strerror}")
    for no, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        host, slots = words[0], 1
        if ":" in host:
            host, _, n = host.partition(":")
            slots = n
        for w in words[1:]:
            if w.startswith("slots="):
                slots = w.split("=", 1)[1]
        try:
            slots = int(slots)
        except ValueError:
            sys.exit(f"--hosts {path}:{no}: bad slot count in {line!r}")
        hosts[host] = hosts.get(host, 0) + slots
    if not hosts:
        sys.exit(f"--hosts {path}: no hosts")
    return list(hosts.items())


def is_ssh(agent):
    return os.path.basename(agent[0]) == "ssh"


def probe_hosts(hosts, agent, timeout=15):
    """One probe per host, in parallel, through the launch agent: its hostname
    and CPU count. Exits naming every host that does not answer."""
    opts = ["-o", "ConnectTimeout=5", "-o", "BatchMode=yes"] if is_ssh(agent) else []
    procs = {}
    for h, _ in hosts:
        procs[h] = subprocess.Popen(agent + opts + [h, "hostname && nproc"], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    info, bad = {}, []
    deadline = time.monotonic() + timeout
    for h, p in procs.items():
        try:
            out, err = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            bad.append(f"  {h}: no answer within {timeout} s")
            continue
        words = out.split()
        if p.returncode != 0 or len(words) < 2:
            why = (err.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
            bad.append(f"  {h}: {why}")
            continue
        info[h] = dict(hostname=words[0], nproc=int(words[1]) if words[1].isdigit() else words[1])
    if bad:
        sys.exit(f"--hosts: cannot reach {len(bad)} of {len(hosts)} hosts through "
                 f"`{' '.join(agent)} HOST hostname`:\n" + "\n".join(bad)
                 + "\n(is the cluster up? --launch-agent / $MCAST_LAUNCH_AGENT set?)")
    return info


def host_address(host, agent):
    """The IPv4 address the agent reaches `host` at (ssh's HostName if the
    agent is ssh), or None."""
    import socket
    name = host
    if is_ssh(agent):
        for line in sh(agent + ["-G", host]).splitlines():
            if line.startswith("hostname "):
                name = line.split(None, 1)[1]
    try:
        return socket.getaddrinfo(name, None, socket.AF_INET)[0][4][0]
    except (OSError, IndexError):
        return None


def route_network(addr):
    """The network (CIDR) of this machine's address on the route to `addr`."""
    import ipaddress
    words = sh(["ip", "-o", "route", "get", addr]).split()
    if "dev" not in words or "src" not in words:
        return None
    dev, src = words[words.index("dev") + 1], words[words.index("src") + 1]
    if dev == "lo":
        return None
    for line in sh(["ip", "-o", "-4", "addr", "show", "dev", dev]).splitlines():
        w = line.split()
        if "inet" in w:
            iface = ipaddress.ip_interface(w[w.index("inet") + 1])
            if str(iface.ip) == src:
                return str(iface.network)
    return None


def read_loadavg():
    try:
        return [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    except (OSError, ValueError):
        return [round(x, 2) for x in os.getloadavg()]


def mclaunch_bind():
    """mclaunch's binding option in hosts mode: with --bind core, each host's
    ranks bound to its CPUs in turn, as mpirun --bind-to core binds Open MPI's
    (a host's ranks never outnumber its slots there, so no overload)."""
    return ["--bind-to", "core"] if BIND == "core" else []


def cluster_sched(hostfile):
    """How the kernel schedules the hosts' processes: for a hostfile made by
    bench/cluster/up.sh, its --sched mode; for any other, each host's own."""
    d = os.path.dirname(os.path.abspath(hostfile))
    if not os.path.exists(os.path.join(d, ".mcast-cluster")):
        return "each host its own (not the bench/cluster test cluster)"
    try:
        with open(os.path.join(d, "cgroup")) as f:
            cg = f.read().strip()
    except OSError:
        cg = ""
    if cg:
        return f"flat: every process of the test cluster in one cpu cgroup ({cg}; up.sh --sched flat)"
    return "autogroup: each ssh login a scheduling group of its own (up.sh --sched autogroup)"


def hosts_cmds(a, hostfile, agent, cidr, n):
    """The three commands of a round, by series."""
    common = ["-m", f"1:{a.max_size}"] + (["-i", "50", "-x", "5"] if a.quick else [])
    ml = [MCLAUNCH, "--hostfile", hostfile, "--launch-agent", " ".join(agent), "-n", str(n)]
    ml += (["--if", cidr] if cidr else []) + ["-x", "RUST_LOG=off"]
    ml += mclaunch_bind()
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    mpi_opts = ["--hostfile", hostfile, "--bind-to", BIND,
                "--mca", "plm_rsh_agent", " ".join(agent),
                "--mca", "pml", "ob1", "--mca", "btl", a.ompi_btl]
    if cidr:
        mpi_opts += ["--mca", "btl_tcp_if_include", cidr, "--mca", "oob_tcp_if_include", cidr]
    if not a.no_ompi_yield:
        mpi_opts += ["--mca", "mpi_yield_when_idle", "1"]
    return {
        "auto": ml + [MCBENCH, "--json"] + common,
        # mcbench's bcast takes its tree from --algo (default auto), not from
        # MCAST_ALGORITHM (which only its collectives' inner bcasts read): both.
        "kbin": ml + ["-x", "MCAST_ALGORITHM=kbinomial", MCBENCH, "--json", "--algo", "kbinomial"] + common,
        "ompi": ["mpirun"] + root + mpi_opts + ["-n", str(n), OSU, "--json"] + common,
    }, mpi_opts


def rounds_at_goal(runs, size, field, goal):
    """'k/n': in how many of the n rounds mcast auto's `field` at `size`
    was at most `goal` times Open MPI's of the same round ('' without the
    figure)."""
    by = {}
    for r in runs:
        if r["size"] == size and r["series"] in ("auto", "ompi") and r[field] != "":
            by.setdefault(r["round"], {})[r["series"]] = r[field]
    pairs = [v for v in by.values() if len(v) == 2 and v["ompi"] > 0]
    if not pairs:
        return ""
    return f"{sum(v['auto'] / v['ompi'] <= goal for v in pairs)}/{len(pairs)}"


def main_hosts(a):
    hostfile = os.path.abspath(a.hosts)
    hosts = parse_hostfile(hostfile)
    n = sum(sl for _, sl in hosts)
    if n < 2 or a.rounds < 1 or a.max_size < 1:
        sys.exit("need at least 2 slots in the hostfile, --rounds >= 1, --max-size >= 1")
    agent_s = a.launch_agent or os.environ.get("MCAST_LAUNCH_AGENT") or "ssh"
    import shlex
    agent = shlex.split(agent_s)
    out = a.out or os.path.join("bench", "results", "compare-mpi-hosts")
    out_abs = out if os.path.isabs(out) else os.path.join(os.getcwd(), out)

    started = datetime.datetime.now(datetime.timezone.utc)
    t_start = time.monotonic()
    log(f"probing {len(hosts)} hosts through `{agent_s}`")
    info = probe_hosts(hosts, agent)
    cidr = a.iface
    if cidr is None:
        addr = host_address(hosts[0][0], agent)
        cidr = route_network(addr) if addr else None
        if cidr is None:
            sys.exit(f"cannot tell which network reaches {hosts[0][0]} (address {addr}): give --if CIDR")
    log("hosts: " + ", ".join(f"{h} ({info[h]['hostname']}, {info[h]['nproc']} CPUs, {sl} slots)"
                               for h, sl in hosts) + f"; network {cidr}")
    ensure_openmpi(not a.no_install)
    build(not a.no_build, only_bcast=True)
    for exe in (MCLAUNCH, MCBENCH):
        if not os.access(exe, os.X_OK):
            sys.exit(f"{exe} missing (--bin-dir DIR, or cargo build --release --workspace)")
    os.makedirs(out_abs, exist_ok=True)
    cmds, mpi_opts = hosts_cmds(a, hostfile, agent, cidr, n)
    single_copy, single_copy_err = single_copy_cost()
    if single_copy:
        log(f"single copy here: process_vm_readv of 4 MiB {single_copy['readv_us']:.0f} us, "
            f"memcpy {single_copy['memcpy_us']:.0f} us ({single_copy['readv_vs_memcpy']}x)")
    t_measure = time.monotonic()

    runs, raw = [], []
    for rnd in range(1, a.rounds + 1):
        # A B C, B C A, C A B, ...: interleaved, and each series takes each
        # place in the order (after the idle probe, after another's run) in turn.
        order = [HOST_SERIES[(i + rnd - 1) % len(HOST_SERIES)] for i in range(len(HOST_SERIES))]
        for key in order:
            env = dict(os.environ)
            env.pop("MCAST_ALGORITHM", None)  # auto unless the command says otherwise
            before = read_loadavg()
            t0 = time.monotonic()
            p = run(cmds[key], timeout=a.timeout, env=env)
            secs = time.monotonic() - t0
            after = read_loadavg()
            rep = parse_report(p, HOST_LABEL[key], n)
            want = {"auto": "auto", "kbin": "kbinomial"}.get(key)
            if want and rep.get("algorithm") != want:
                sys.exit(f"{HOST_LABEL[key]}: mcbench reports algorithm {rep.get('algorithm')!r}, not {want}")
            # Across hosts mcbench reports `hosts:H` (some hosts run several
            # ranks) or `network` (one rank per host); never one host's memory.
            medium = rep.get("medium", "")
            if key != "ompi" and len(hosts) > 1 and not (medium == "network" or medium.startswith("hosts:")):
                sys.exit(f"{HOST_LABEL[key]}: mcbench reports medium {medium!r}, not across hosts")
            rep.update(series=key, round=rnd, place=order.index(key) + 1, seconds=round(secs, 1), command=cmds[key],
                       loadavg_before=before, loadavg_after=after, stderr=p.stderr[-2000:])
            raw.append(rep)
            log(f"round {rnd}/{a.rounds}: {HOST_LABEL[key]:15} -n {n}: {secs:.1f} s, "
                f"load {before[0]:.2f} -> {after[0]:.2f}")
            for r in rep["results"]:
                runs.append(dict(series=key, round=rnd, size=r["size"], avg_us=r["avg_us"],
                                 min_us=r["min_us"], max_us=r["max_us"], iterations=r["iterations"],
                                 cycle_us=r.get("cycle_us", ""),
                                 depth=r.get("depth", ""), load_before=before[0], load_after=after[0]))
    t_end = time.monotonic()

    its = {}
    for r in runs:
        its.setdefault(r["size"], {}).setdefault(r["series"], set()).add(r["iterations"])
    bad = {k: v for k, v in its.items() if set(v) != set(HOST_SERIES) or len(set().union(*v.values())) != 1}
    if bad:
        sys.exit(f"sizes or iteration counts differ between the programs: {bad}")

    summary = []
    for s in sorted(its):
        row = dict(ranks=n, size=s, iterations=next(iter(its[s]["auto"])))
        for key in HOST_SERIES:
            cell = sorted((r for r in runs if (r["series"], r["size"]) == (key, s)), key=lambda c: c["round"])
            for stat in ("avg", "min", "max"):
                row[f"{key}_{stat}_us"] = round(statistics.median(c[f"{stat}_us"] for c in cell), 3)
            row[f"{key}_us"] = row[f"{key}_avg_us"]
            row[f"{key}_rounds_us"] = " ".join(f"{c['avg_us']:.2f}" for c in cell)
            cycles = [c["cycle_us"] for c in cell if c["cycle_us"] != ""]
            row[f"{key}_cycle_us"] = round(statistics.median(cycles), 3) if cycles else ""
            if key != "ompi":
                row[f"{key}_depth"] = cell[0]["depth"]
        row["auto_cycle_vs_ompi"] = (round(row["auto_cycle_us"] / row["ompi_cycle_us"], 3)
                                     if row["auto_cycle_us"] != "" and row["ompi_cycle_us"] else "")
        # Round by round: a round's runs of the two are minutes apart at
        # most, so their ratio sees the same machine; how many rounds meet
        # the goal says how far a cell's median is from the noise.
        row["auto_vs_ompi_rounds_at_goal"] = rounds_at_goal(runs, s, "avg_us", a.goal)
        row["auto_cycle_vs_ompi_rounds_at_goal"] = rounds_at_goal(runs, s, "cycle_us", a.goal)
        row["auto_vs_ompi"] = round(row["auto_us"] / row["ompi_us"], 3)
        row["kbin_vs_ompi"] = round(row["kbin_us"] / row["ompi_us"], 3)
        row["auto_vs_kbin"] = round(row["auto_us"] / row["kbin_us"], 3)
        summary.append(row)

    write_csv(os.path.join(out_abs, "runs.csv"),
              ["series", "round", "size", "avg_us", "min_us", "max_us", "iterations", "cycle_us", "depth",
               "load_before", "load_after"], runs)
    write_csv(os.path.join(out_abs, "summary.csv"),
              ["ranks", "size", "iterations", "auto_us", "kbin_us", "ompi_us",
               "auto_vs_ompi", "kbin_vs_ompi", "auto_vs_kbin", "auto_depth", "kbin_depth",
               "auto_min_us", "auto_max_us", "kbin_min_us", "kbin_max_us", "ompi_min_us", "ompi_max_us",
               "auto_cycle_us", "kbin_cycle_us", "ompi_cycle_us", "auto_cycle_vs_ompi",
               "auto_vs_ompi_rounds_at_goal", "auto_cycle_vs_ompi_rounds_at_goal",
               "auto_rounds_us", "kbin_rounds_us", "ompi_rounds_us"], summary)

    ompi_ver = sh(["mpirun", "--version"]).splitlines()
    mc_env = {k: v for k, v in os.environ.items() if k.startswith("MCAST_") and not k.startswith("MCAST_CLUSTER")
              and k != "MCAST_LAUNCH_AGENT"}
    first = {k: next(r for r in raw if r["series"] == k) for k in HOST_SERIES}
    packet = packet_text(first["auto"])
    loads = [x for r in raw for x in (r["loadavg_before"][0], r["loadavg_after"][0])]
    mcast_transport = ("TCP between hosts; Unix-domain sockets within a host, payloads of 16 KiB and more "
                       "through shared memory (MCAST_TRANSPORT=auto, MCAST_SHM_BYTES default)")
    btls = a.ompi_btl.split(",")
    shm = [b for b in btls if b in ("vader", "sm")]
    ompi_transport = (f"pml ob1, btl {a.ompi_btl}: " + ("tcp between hosts, " + shm[0] + " (shared memory) "
                      "within a host" if shm else "tcp between hosts and within a host"))
    meta = dict(
        date_utc=started.strftime("%Y-%m-%d %H:%M UTC"),
        command="python3 bench/compare-mpi/run.py " + " ".join(shlex.quote(x) for x in sys.argv[1:]),
        machine=platform.node(), kernel=platform.release(), nproc=os.cpu_count(),
        cpu=next((l.split(":", 1)[1].strip() for l in sh(["lscpu"]).splitlines()
                  if l.startswith("Model name")), platform.processor()),
        hostfile=hostfile, hosts=[dict(host=h, slots=sl, **info[h]) for h, sl in hosts], ranks=n,
        launch_agent=agent_s, network=cidr,
        open_mpi=ompi_ver[0] if ompi_ver else "?", mpirun_options=" ".join(shlex.quote(x) for x in mpi_opts),
        open_mpi_transport=ompi_transport,
        mcast_commit=build_label(a), mcbench=MCBENCH, mclaunch=MCLAUNCH,
        mcast_algorithms={k: first[k].get("algorithm") for k in ("auto", "kbin")},
        mcast_medium=first["auto"].get("medium"), mcast_forwarding=first["auto"].get("forwarding"),
        mcast_packets=packet, mcast_env=mc_env, mcast_transport=mcast_transport,
        quick=a.quick, rounds=a.rounds, binding=BIND, cluster_sched=cluster_sched(hostfile),
        single_copy=single_copy, single_copy_error=single_copy_err,
        seconds_total=round(t_end - t_start, 1), seconds_measuring=round(t_end - t_measure, 1),
        loadavg=[dict(round=r["round"], series=r["series"], before=r["loadavg_before"],
                      after=r["loadavg_after"], seconds=r["seconds"]) for r in raw],
    )
    with open(os.path.join(out_abs, "raw.json"), "w") as f:
        json.dump(dict(meta=meta, runs=raw), f, indent=1)

    hosts_s = ", ".join(f"{h} ({sl} slots)" for h, sl in hosts)
    plot_hosts(out_abs, summary, meta, shm)

    mlcmd = " ".join([f"mclaunch --hostfile {hostfile} --launch-agent \"{agent_s}\" -n {n} --if {cidr} "
                      "-x RUST_LOG=off"] + mclaunch_bind())
    lines = [f"# mcast vs Open MPI broadcast across hosts ({meta['date_utc']})", "",
             f"* command: `{meta['command']}`" + ("  (**--quick: 50 timed / 5 warm-up iterations at every "
                                                  "size**)" if a.quick else ""),
             f"* hosts: {hosts_s} from `{hostfile}`, {n} ranks (mapped by slot), reached through "
             f"`{agent_s}`, network {cidr}; "
             + ", ".join(f"{h} is `{info[h]['hostname']}` with {info[h]['nproc']} CPUs" for h, _ in hosts),
             f"* machine running the driver: {meta['nproc']} CPUs ({meta['cpu']}), kernel {meta['kernel']}",
             "* single copy on this machine (Open MPI's vader reads a host-mate's large message with "
             "`process_vm_readv`; mcast copies it through its arena), measured before the rounds by "
             f"`{os.path.relpath(CMA_COPY, ROOT)} 4194304 20`: "
             + (f"one read of 4 MiB took {single_copy['readv_us']:.0f} µs, a `memcpy` "
                f"{single_copy['memcpy_us']:.0f} µs ({single_copy['readv_vs_memcpy']:.2f}×)" if single_copy
                else f"not measured ({single_copy_err})"),
             f"* scheduling: {meta['cluster_sched']}",
             f"* mcast {meta['mcast_commit']}: `{mlcmd} [-x MCAST_ALGORITHM=kbinomial] {MCBENCH} --json "
             f"[--algo kbinomial] -m 1:{a.max_size}`; "
             f"medium `{meta['mcast_medium']}`, forwarding {meta['mcast_forwarding']}, packet {packet}"
             + (", environment " + " ".join(f"{k}={v}" for k, v in sorted(mc_env.items())) if mc_env
                else ", every other setting default"),
             f"* mcast transports: {mcast_transport}",
             f"* {meta['open_mpi']}: `mpirun {meta['mpirun_options']} -n {n} {OSU} --json -m 1:{a.max_size}`",
             f"* Open MPI transports: {ompi_transport}",
             f"* binding: " + ("each rank bound to one CPU of its host, in turn, on both sides "
                              "(`--bind-to core` for mclaunch and mpirun)" if BIND == "core" else
                              "none on either side (`--bind-to none` for mpirun; mclaunch's default)"),
             f"* method: osu_bcast (warm-up, timed bcast + untimed barrier, per-rank average, "
             f"average over ranks); medians over {a.rounds} interleaved rounds, the order rotating "
             f"(auto kbinomial OMPI, kbinomial OMPI auto, OMPI auto kbinomial, ...)",
             f"* duration: {meta['seconds_total']:.0f} s ({meta['seconds_measuring']:.0f} s measuring)", "",
             "Load (1-minute load average from /proc/loadavg, before → after each run; "
             f"{meta['nproc']} CPUs shared by every host): "
             + f"{min(loads):.2f} to {max(loads):.2f} (it counts this benchmark's own {n} ranks too, "
             "which poll while they wait).", "",
             "| round | " + " | ".join(HOST_LABEL[k] for k in HOST_SERIES) + " |",
             "|---:|" + "---|" * len(HOST_SERIES)]
    for rnd in range(1, a.rounds + 1):
        cells = []
        for k in HOST_SERIES:
            r = next(r for r in raw if (r["round"], r["series"]) == (rnd, k))
            cells.append(f"{r['loadavg_before'][0]:.2f} → {r['loadavg_after'][0]:.2f} "
                         f"({r['seconds']:.0f} s, run {r['place']})")
        lines.append(f"| {rnd} | " + " | ".join(cells) + " |")
    lines += ["",
              "Latency in µs, average over ranks, median over rounds. Transports: mcast = TCP between "
              "hosts, Unix sockets + shared memory within a host; Open MPI = "
              + (f"tcp between hosts, {shm[0]} within a host" if shm else "tcp everywhere")
              + ". auto / OMPI and kbin / OMPI = mcast / Open MPI (above 1: mcast slower); "
              "auto / kbin = mcast auto / mcast kbinomial; depth = levels of the tree mcast used "
              f"(auto, kbinomial); rounds ≤ {a.goal:g} = in how many rounds auto / OMPI, taken "
              "within the round, was at most that.", "",
              "| size | mcast auto µs (TCP + UDS/shm) | mcast kbinomial µs (TCP + UDS/shm) | "
              f"Open MPI µs ({'tcp + ' + shm[0] if shm else 'tcp'}) | auto / OMPI | kbin / OMPI | "
              f"auto / kbin | depth | rounds ≤ {a.goal:g} |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in summary:
        lines.append(f"| {fmt_size(r['size'])} | {fmt_us(r['auto_us'])} | {fmt_us(r['kbin_us'])} | "
                     f"{fmt_us(r['ompi_us'])} | {r['auto_vs_ompi']:.2f} | {r['kbin_vs_ompi']:.2f} | "
                     f"{r['auto_vs_kbin']:.2f} | {r['auto_depth']}, {r['kbin_depth']} | "
                     f"{r['auto_vs_ompi_rounds_at_goal']} |")
    if all(r["auto_cycle_vs_ompi"] != "" for r in summary):
        lines += ["",
                  "Bcast plus barrier: rank 0's wall clock per timed iteration (the root's fill, the "
                  "bcast, the receivers' check and the untimed barrier), median over rounds. The timed "
                  "bcast alone can hide a hop in the barrier (a rank that leaves the barrier after its "
                  "data arrived times almost nothing, and each side runs its own barrier); this cannot.",
                  "",
                  f"| size | mcast auto µs | mcast kbinomial µs | Open MPI µs | auto / OMPI | "
                  f"rounds ≤ {a.goal:g} |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for r in summary:
            lines.append(f"| {fmt_size(r['size'])} | {fmt_us(r['auto_cycle_us'])} | "
                         f"{fmt_us(r['kbin_cycle_us'])} | {fmt_us(r['ompi_cycle_us'])} | "
                         f"{r['auto_cycle_vs_ompi']:.2f} | {r['auto_cycle_vs_ompi_rounds_at_goal']} |")
    lines.append("")
    table = "\n".join(lines)
    with open(os.path.join(out_abs, "table.md"), "w") as f:
        f.write(table + "\n")
    print(table)
    log(f"wrote {', '.join(os.path.join(out, x) for x in ('table.md', 'summary.csv', 'runs.csv', 'latency.svg', 'raw.json'))}")


if __name__ == "__main__":
    main()
