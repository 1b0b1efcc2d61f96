#!/usr/bin/env python3
"""Measure how fast survivors learn that a rank died (issue 7).

Runs `mclaunch --on-failure continue mcast-faults kill` KILLS times with a
random victim and kill point, and reports, over every (kill, survivor) pair,
the median and maximum time from the victim's last line (printed right before
it sends itself SIGKILL, or SIGSTOP with --signal stop) to the survivor's
PeerLost. Usage:

    cargo build --release --workspace
    python3 bench/failure_detection.py [--ranks 8] [--kills 20] [--signal kill|stop]
"""
import argparse, os, random, re, statistics, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument("--ranks", type=int, default=8)
ap.add_argument("--kills", type=int, default=20)
ap.add_argument("--signal", default="kill", choices=["kill", "stop"])
ap.add_argument("--seed", type=int, default=None)
ap.add_argument("--target", default="target/release")
a = ap.parse_args()
seed = a.seed if a.seed is not None else random.randrange(1 << 30)
rng = random.Random(seed)
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
launch = os.path.join(root, a.target, "mclaunch")
faults = os.path.join(root, a.target, "mcast-faults")
env = dict(os.environ, RUST_LOG="off")

per_kill_max, all_ms = [], []
for k in range(a.kills):
    victim, at = rng.randrange(a.ranks), rng.randrange(5, 500)
    mode = ["--on-failure", "continue"] if a.signal == "kill" else ["--timeout", "10"]
    out = subprocess.run([launch, "-n", str(a.ranks), *mode, faults, "kill",
                          "--victim", str(victim), "--at", str(at), "--signal", a.signal],
                         capture_output=True, text=True, env=env, timeout=120)
    kill = re.search(r"KILL rank=(\d+) pid=(\d+) t_ns=(\d+)", out.stdout)
    lost = re.findall(r"LOST rank=(\d+) by=(\d+) t_ns=(\d+)", out.stdout)
    if not kill or len(lost) != a.ranks - 1 or any(int(r) != victim for r, _, _ in lost):
        sys.exit(f"kill {k}: victim {victim} at {at}: unexpected output\n{out.stdout}\n{out.stderr}")
    t0 = int(kill.group(3))
    ms = [(int(t) - t0) / 1e6 for _, _, t in lost]
    all_ms += ms
    per_kill_max.append(max(ms))
    print(f"kill {k:2}: victim {victim} at iteration {at:3}: survivors knew after "
          f"{min(ms):7.2f} .. {max(ms):7.2f} ms; mclaunch exit {out.returncode}")
print(f"\n{a.kills} kills ({a.signal}), {a.ranks} ranks, seed {seed}: over {len(all_ms)} survivor reports, "
      f"median {statistics.median(all_ms):.2f} ms, max {max(all_ms):.2f} ms "
      f"(median of per-kill max {statistics.median(per_kill_max):.2f} ms)")
