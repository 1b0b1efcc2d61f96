#!/usr/bin/env python3
"""Peak RSS of every rank of an mcast-pressure scenario, read from outside.

    bench/pressure.py --bin-dir target/release --scenario bcast-loop -n 8 --secs 60

Starts `mclaunch -n N mcast-pressure SCENARIO ...`, polls /proc/PID/status
(VmHWM, the peak resident set) of every rank every 100 ms, and prints one
line per rank plus the maximum. A job whose ranks together pass --cap-mb is
killed (the machine must survive the "before" runs); the figure is then a
lower bound, marked ">=".
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time


def vm_hwm_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", default="target/release")
    ap.add_argument("--scenario", required=True)
    ap.add_argument("-n", type=int, default=8)
    ap.add_argument("--secs", type=float, default=60)
    ap.add_argument("--cap-mb", type=float, default=8000)
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for the ranks")
    ap.add_argument("extra", nargs="*", help="more scenario arguments (after --)")
    a = ap.parse_args()

    env = dict(os.environ)
    for kv in a.env:
        k, v = kv.split("=", 1)
        env[k] = v
    cmd = [
        os.path.join(a.bin_dir, "mclaunch"), "-n", str(a.n),
        os.path.join(a.bin_dir, "mcast-pressure"), a.scenario, "--secs", str(a.secs),
    ] + a.extra
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, start_new_session=True)
    pids, lines, err = {}, [], []

    def read_out():
        for line in p.stdout:
            lines.append(line.rstrip())
            m = re.match(r"READY rank=(\d+) pid=(\d+)", line)
            if m:
                pids[int(m.group(1))] = int(m.group(2))

    def read_err():
        for line in p.stderr:
            err.append(line.rstrip())

    threads = [threading.Thread(target=read_out), threading.Thread(target=read_err)]
    for t in threads:
        t.start()
    peak, capped, start = {}, False, time.time()
    while p.poll() is None:
        for r, pid in list(pids.items()):
            kb = vm_hwm_kb(pid)
            if kb is not None:
                peak[r] = max(peak.get(r, 0), kb)
        if sum(peak.values()) / 1024 > a.cap_mb:
            capped = True
            os.killpg(p.pid, signal.SIGKILL)
            break
        time.sleep(0.1)
    p.wait()
    for t in threads:
        t.join()
    took = time.time() - start
    mark = ">=" if capped else ""
    for r in sorted(peak):
        print(f"rank {r}: peak RSS {mark}{peak[r] / 1024:.1f} MiB")
    if peak:
        print(f"max peak RSS {mark}{max(peak.values()) / 1024:.1f} MiB "
              f"(rank {max(peak, key=peak.get)}), {took:.0f} s, exit {p.returncode}"
              + (", killed at the cap" if capped else ""))
    for line in lines:
        if line.startswith(("DONE", "BLOCKED")):
            print(line)
    for line in err[-5:]:
        print("stderr:", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
