#!/usr/bin/env bash
# shellcheck disable=SC2016 # bash -c '...$VAR...': expanded by the job's shell
# selfcheck.sh: bring up a 3-host cluster, check ssh, names, TCP, munge and
# Slurm (srun, salloc, pmi2), tear it down, check nothing is left.
# Exits non-zero with a message on the first failure. Needs root and deps.sh.
# selfcheck.sh --mtu BYTES: the same with up.sh --mtu BYTES (and checks it).
# MCAST_CLUSTER_KEEP=1 leaves the cluster up when a check fails.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$here/common.sh"
repo=$(cd "$here/../.." && pwd)
D=$MC_DIR
N=3
t0=$SECONDS
mtu=1500
case ${1:-} in
  "") ;;
  --mtu) [[ $# -eq 2 && $2 =~ ^[0-9]+$ ]] || { echo "usage: $0 [--mtu BYTES]" >&2; exit 2; }; mtu=$2 ;;
  *) echo "usage: $0 [--mtu BYTES]" >&2; exit 2 ;;
esac

fail() { echo "selfcheck: FAIL: $*" >&2; exit 1; }
ok() { echo "selfcheck: ok   $*"; }
cleanup() {
  local rc=$?
  if [[ $rc -ne 0 && ${MCAST_CLUSTER_KEEP:-0} == 1 ]]; then
    echo "selfcheck: cluster left up for inspection ($D/log); run $here/down.sh" >&2
  else
    "$here/down.sh" >/dev/null || true
  fi
}
trap cleanup EXIT

s() { ssh -F "$D/ssh_config" "$@" </dev/null; }

"$here/up.sh" "$N" --mtu "$mtu" >/dev/null || fail "up.sh $N --mtu $mtu"
ok "up.sh $N --mtu $mtu in $((SECONDS - t0)) s"

# MTU: the bridge, every veth and every host's eth0 carry it.
[[ $(cat "/sys/class/net/$MC_BR/mtu") == "$mtu" ]] || fail "bridge $MC_BR mtu is not $mtu"
for ((i = 1; i <= N; i++)); do
  [[ $(cat "/sys/class/net/$MC_VETH_PREFIX$i/mtu") == "$mtu" ]] || fail "$MC_VETH_PREFIX$i mtu is not $mtu"
  got=$(ip netns exec "$MC_NS_PREFIX$i" cat /sys/class/net/eth0/mtu) || fail "read eth0 mtu in h$i"
  [[ $got == "$mtu" ]] || fail "h$i eth0 mtu is $got, not $mtu"
done
[[ $(cat "$D/mtu") == "$mtu" ]] || fail "$D/mtu does not say $mtu"
ok "MTU $mtu on the bridge, every veth and every host's eth0"
# shellcheck source=/dev/null
. "$D/env.sh"

# ssh: every host answers with its own hostname.
for ((i = 1; i <= N; i++)); do
  got=$(s "h$i" hostname) || fail "ssh h$i hostname"
  [[ $got == "h$i" ]] || fail "ssh h$i hostname printed '$got'"
done
ok "ssh hI hostname = hI for $N hosts"

# Scheduling (up.sh --sched flat, the default): a session on a host runs in
# the cluster's one cpu cgroup, not in an autogroup of its own.
cg=""
if [[ -s $D/cgroup ]]; then
  cg=$(cat "$D/cgroup")
  [[ -d $cg ]] || fail "$D/cgroup names $cg, which does not exist"
  got=$(s h2 cat /proc/self/cgroup) || fail "ssh h2 cat /proc/self/cgroup"
  grep -Eq "^[0-9]+:([^:]*,)?cpu(,[^:]*)?:/$(basename "$cg")\$|^0::/$(basename "$cg")\$" <<<"$got" \
    || fail "a session on h2 is not in the cgroup $cg: $got"
  ok "a session on h2 runs in the cluster's cpu cgroup $cg"
else
  echo "selfcheck: skip cgroup check (no cpu cgroup controller: up.sh fell back to autogroups)"
fi

# Names resolve in the root namespace and on a host, quickly (no DNS wait).
t1=$SECONDS
got=$(getent hosts h2 | awk '{ print $1 }')
[[ $got == "$MC_NET.2" ]] || fail "getent hosts h2 in the root namespace gave '$got'"
got=$(s h3 'getent hosts h2 mcctl' | awk '{ print $1 }' | tr '\n' ' ')
[[ $got == "$MC_NET.2 $MC_NET.254 " ]] || fail "getent hosts h2 mcctl on h3 gave '$got'"
s h3 '! getent hosts no-such-host.invalid' || fail "no-such-host.invalid resolved on h3"
((SECONDS - t1 <= 4)) || fail "name lookups took $((SECONDS - t1)) s (DNS timeouts?)"
ok "getent hosts: h2 in the root namespace, h2 and mcctl on h3, a miss fails fast"

# Reachability from h2: h1's sshd and slurmctld on the bridge address.
s h2 "timeout 3 bash -c '</dev/tcp/$MC_NET.1/22'" || fail "h2 cannot reach $MC_NET.1:22"
s h2 "timeout 3 bash -c '</dev/tcp/$MC_NET.254/6817'" || fail "h2 cannot reach $MC_NET.254:6817"
ok "h2 reaches $MC_NET.1:22 and $MC_NET.254:6817"

# A fresh TCP listener in h1 on its address, reached from h2 and from the root namespace.
if command -v python3 >/dev/null; then
  port=47001
  s h1 "nohup python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((\"$MC_NET.1\", $port)); s.listen(); s.settimeout(20)
for _ in range(2):
    c, a = s.accept(); c.sendall((socket.gethostname() + \" \" + a[0] + \"\\n\").encode()); c.close()
' >/dev/null 2>&1 &"
  probe="import socket, time
for _ in range(100):
    try:
        c = socket.create_connection(('$MC_NET.1', $port), timeout=3); break
    except OSError: time.sleep(0.05)
print(c.recv(100).decode().strip())"
  got=$(s h2 "python3 -c \"$probe\"") || fail "h2 -> listener in h1"
  [[ $got == "h1 $MC_NET.2" ]] || fail "h2 -> listener in h1 answered '$got'"
  got=$(python3 -c "$probe") || fail "root namespace -> listener in h1"
  [[ $got == "h1 $MC_NET.254" ]] || fail "root -> listener in h1 answered '$got'"
  ok "TCP listener in h1 on $MC_NET.1:$port reached from h2 and from the root namespace"
else
  echo "selfcheck: skip TCP listener check (no python3)"
fi

# The filesystem is shared: the same path is there over ssh.
bin=$here/up.sh
target=${CARGO_TARGET_DIR:-$repo/target}
for b in "$target"/debug/mclaunch "$target"/debug/mcast-selftest; do
  [[ -x $b ]] && bin=$b && break
done
s h2 "test -x '$bin'" || fail "$bin not visible on h2"
ok "$bin visible at the same path on h2"

# munge inside a host namespace, decoded in another.
ip netns exec mc-h2 munge -S "$MCAST_CLUSTER_MUNGE_SOCKET" -n \
  | ip netns exec mc-h3 unmunge -S "$MCAST_CLUSTER_MUNGE_SOCKET" >/dev/null \
  || fail "munge -n | unmunge across host namespaces"
ok "munge -n (mc-h2) | unmunge (mc-h3)"

# Slurm.
got=$(timeout 60 srun -N3 -n6 hostname | sort | tr '\n' ' ') || fail "srun -N3 -n6 hostname"
[[ $got == "h1 h1 h2 h2 h3 h3 " ]] || fail "srun -N3 -n6 hostname printed '$got'"
ok "srun -N3 -n6 hostname: $got"
got=$(timeout 60 salloc -N3 bash -c 'echo "$SLURM_JOB_NODELIST $SLURM_JOB_NUM_NODES"; srun hostname | sort | tr "\n" " "' 2>/dev/null) \
  || fail "salloc -N3 bash -c 'srun hostname'"
[[ $got == $'h[1-3] 3\nh1 h2 h3 ' ]] || fail "salloc -N3 printed '$got'"
ok "salloc -N3: SLURM_JOB_NODELIST=h[1-3], srun hostname: h1 h2 h3"
got=$(timeout 60 srun --mpi=pmi2 -N2 -n4 bash -c 'echo "$(hostname):$PMI_RANK/$PMI_SIZE"' | sort | tr '\n' ' ') \
  || fail "srun --mpi=pmi2"
[[ $got == "h1:0/4 h1:1/4 h2:2/4 h2:3/4 " ]] || fail "srun --mpi=pmi2 -N2 -n4 printed '$got'"
ok "srun --mpi=pmi2 -N2 -n4: $got"

# Down: nothing of it may remain.
mapfile -t daemons < <(find "$D" -name '*.pid' -type f -exec cat {} +)
[[ ${#daemons[@]} -ge $((2 * N + 2)) ]] || fail "expected >= $((2 * N + 2)) pid files, found ${#daemons[@]}"
"$here/down.sh" >/dev/null || fail "down.sh"
for p in "${daemons[@]}"; do
  [[ ! -e /proc/$p ]] || fail "pid $p ($(cat "/proc/$p/comm" 2>/dev/null)) still there after down.sh"
done
[[ -z $(mc_list_ns) ]] || fail "namespaces left: $(mc_list_ns | tr '\n' ' ')"
! ip link show "$MC_BR" >/dev/null 2>&1 || fail "bridge $MC_BR left"
! grep -Fq "$MC_HOSTS_BEGIN" /etc/hosts || fail "/etc/hosts block left"
[[ ! -e $D ]] || fail "$D left"
[[ -z $cg || ! -e $cg ]] || fail "cgroup $cg left"
! pgrep -f -- "$D/" >/dev/null || fail "processes mentioning $D left: $(pgrep -af -- "$D/")"
ok "down.sh: ${#daemons[@]} daemons gone, no namespaces, bridge, hosts block, cgroup or state dir"
echo "selfcheck: all passed in $((SECONDS - t0)) s"
