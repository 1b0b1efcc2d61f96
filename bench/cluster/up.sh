#!/usr/bin/env bash
# shellcheck disable=SC2016 # sh -c '..."$1"...' sh ARG: expanded by that sh
# up.sh N [--rate RATE] [--cc NAME] [--mtu BYTES] [--cpus SPEC] [--sched MODE]: a test cluster of N hosts h1..hN on this machine.
# Each host is a network namespace mc-hI (10.77.0.I) behind the bridge mcbr0
# (10.77.0.254), with its own sshd and slurmd, both in a UTS namespace whose
# hostname is hI. One munged and slurmctld (as "mcctl") run in the root
# namespace. Everything else lives under the state dir (see README.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$here/common.sh"

usage() { echo "usage: $0 N [--rate RATE] [--cc NAME] [--mtu BYTES] [--cpus SPEC] [--sched MODE]   (N hosts, 1..250; RATE e.g. 100mbit for tc tbf; NAME a TCP congestion control, default cubic; BYTES the links' MTU, 576..65535, default 1500; 9000 for jumbo frames; SPEC the CPUs each host's processes run on: 'split' to share this machine's CPUs out among the hosts, or one taskset list per host joined by ':', e.g. 0:1:0-1; default: every host runs on every CPU; MODE how the kernel shares CPUs among the hosts' processes: 'flat', the default, one cpu cgroup for the whole cluster, every process a task among the others as the ranks of one job on one machine are; 'autogroup', the kernel's default, every ssh login and srun step a scheduling group of its own)" >&2; exit 2; }
made=0
die() {
  echo "up.sh: $*" >&2
  [[ $made -eq 0 ]] || echo "up.sh: what was made is left for inspection; $here/down.sh removes it" >&2
  exit 1
}

n=""
rate=""
cc=cubic
mtu=1500
cpus=""
sched=flat
while [[ $# -gt 0 ]]; do
  case $1 in
    --rate) [[ $# -ge 2 ]] || usage; rate=$2; shift 2 ;;
    --rate=*) rate=${1#--rate=}; shift ;;
    --cc) [[ $# -ge 2 ]] || usage; cc=$2; shift 2 ;;
    --cc=*) cc=${1#--cc=}; shift ;;
    --mtu) [[ $# -ge 2 ]] || usage; mtu=$2; shift 2 ;;
    --mtu=*) mtu=${1#--mtu=}; shift ;;
    --cpus) [[ $# -ge 2 ]] || usage; cpus=$2; shift 2 ;;
    --cpus=*) cpus=${1#--cpus=}; shift ;;
    --sched) [[ $# -ge 2 ]] || usage; sched=$2; shift 2 ;;
    --sched=*) sched=${1#--sched=}; shift ;;
    -h|--help) usage ;;
    *) [[ -z $n ]] || usage; n=$1; shift ;;
  esac
done
if ! [[ $n =~ ^[0-9]+$ ]] || ((n < 1 || n > 250)); then usage; fi
if ! [[ $mtu =~ ^[0-9]+$ ]] || ((mtu < 576 || mtu > 65535)); then usage; fi
[[ $sched == flat || $sched == autogroup ]] || usage
[[ $(id -u) -eq 0 ]] || die "must run as root"
for c in ip tc unshare nsenter sshd ssh ssh-keygen munged munge unmunge slurmctld slurmd sinfo srun; do
  command -v "$c" >/dev/null || die "missing '$c': run bench/cluster/deps.sh"
done
sshd_bin=$(command -v sshd)

# CPUs per host (--cpus): host_cpus[I-1] is hI's taskset list, empty for
# every CPU. Its sshd and slurmd start with that affinity, and every process
# they start (mclaunch's proxies and ranks, Open MPI's orted and ranks,
# srun's tasks) inherits it, so a host's processes compete for the host's
# CPUs only, as on a real cluster, instead of every host's for all of them.
host_cpus=()
if [[ -n $cpus ]]; then
  mine=()
  while read -r c; do mine+=("$c"); done < <(taskset -c -p $$ | sed 's/.*: //' | tr ',' '\n' |
    awk -F- '{ if (NF == 2) for (c = $1; c <= $2; c++) print c; else print $1 }')
  [[ ${#mine[@]} -gt 0 ]] || die "cannot read this shell's CPUs (taskset -p $$)"
  if [[ $cpus == split ]]; then
    # n <= CPUs: each host a block of CPUs/n of its own; more hosts than
    # CPUs: host I on CPU (I-1) mod CPUs.
    per=$(( ${#mine[@]} / n ))
    for ((i = 0; i < n; i++)); do
      if ((per >= 1)); then
        host_cpus+=("$(IFS=,; echo "${mine[*]:i*per:per}")")
      else
        host_cpus+=("${mine[i % ${#mine[@]}]}")
      fi
    done
  else
    IFS=: read -r -a host_cpus <<<"$cpus"
    [[ ${#host_cpus[@]} -eq $n ]] || die "--cpus '$cpus' names ${#host_cpus[@]} CPU lists for $n hosts (one per host, joined by ':')"
    for l in "${host_cpus[@]}"; do
      [[ $l =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] && taskset -c "$l" true 2>/dev/null \
        || die "--cpus: '$l' is not a CPU list this machine can run on (e.g. 0, 0-1, 0,2)"
    done
  fi
fi
cat_bin=$(command -v cat)

# tbf needs a bucket of at least rate/HZ bytes; take ~4 ms of traffic, >= 32 KiB.
tbf_burst() {
  local r=${1,,} num unit bps
  num=${r%%[a-z]*}; unit=${r#"$num"}
  [[ $num =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "cannot parse --rate '$1' (e.g. 100mbit, 1gbit, 500kbit)"
  case $unit in
    bit) bps=1 ;; kbit) bps=1000 ;; mbit) bps=1000000 ;; gbit) bps=1000000000 ;;
    bps) bps=8 ;; kbps) bps=8000 ;; mbps) bps=8000000 ;; gbps) bps=8000000000 ;;
    *) die "cannot parse --rate '$1' (units: bit kbit mbit gbit bps kbps mbps gbps)" ;;
  esac
  awk -v n="$num" -v m="$bps" 'BEGIN { b = n * m / 8 / 250; if (b < 32768) b = 32768; printf "%d\n", b }'
}
burst=""
[[ -z $rate ]] || burst=$(tbf_burst "$rate")

# A previous cluster (or pieces of one) goes first.
if [[ -e $MC_DIR ]] || ip link show "$MC_BR" >/dev/null 2>&1 || [[ -n $(mc_list_ns) ]] \
   || grep -Fxq "$MC_HOSTS_BEGIN" /etc/hosts; then
  "$here/down.sh"
fi

# ---------------------------------------------------------------- state dir
D=$MC_DIR
made=1
mkdir -p "$D"
chmod 0755 "$D"
echo "mcast test cluster made by bench/cluster/up.sh; remove with down.sh" >"$D/.mcast-cluster"
echo "$mtu" >"$D/mtu"
if [[ ${#host_cpus[@]} -gt 0 ]]; then
  for ((i = 1; i <= n; i++)); do echo "h$i ${host_cpus[i-1]}"; done >"$D/cpus"
fi
mkdir -p "$D/ssh" "$D/munge" "$D/slurm/ctld" "$D/log"
chmod 0700 "$D/ssh"
hosts=()
for ((i = 1; i <= n; i++)); do hosts+=("h$i"); mkdir -p "$D/h$i/slurmd"; done
# Every daemon carries this marker, so down.sh finds it even without a pid file.
export MCAST_CLUSTER_DAEMON=$D

# ---------------------------------------------------------------- scheduling
# The hosts share this machine's CPUs. With the kernel's autogroups on
# (kernel.sched_autogroup_enabled), every new session is a scheduling group
# of its own: each ssh login (so each host's mclaunch proxy or orted and its
# ranks) and each srun step. The kernel then shares a CPU among the groups on
# it by weight, whatever each does with its share: a rank with a message to
# send waits behind other hosts' ranks that only poll, and its yielding
# host-mates cannot hand it their turn. No real cluster has that (a host's
# CPUs are its own), and it made a runtime's latency on this cluster depend
# on which CPU the kernel put each rank on (README "Measured across hosts";
# bench/compare-mpi/layouts.py). --sched flat (the default) starts every
# daemon of the cluster in one cpu cgroup, so autogroups do not apply to
# anything they start: the cluster's processes are tasks among each other,
# as the ranks of one job on one machine are, whichever launcher started
# them. --sched autogroup leaves the kernel's default. $D/cgroup names the
# cgroup; down.sh removes it.
cg=""
if [[ $sched == flat ]]; then
  cg=$(mc_cpu_cgroup)
  if [[ -z $cg ]]; then
    echo "up.sh: no cpu cgroup controller on this machine: every session stays a scheduling group of its own (as --sched autogroup)" >&2
    sched=autogroup
  else
    if [[ $cg == /sys/fs/cgroup/"$(basename "$cg")" ]] && ! grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control; then
      echo +cpu >/sys/fs/cgroup/cgroup.subtree_control || die "cannot enable the cpu controller (cgroup v2) for $cg"
    fi
    mkdir -p "$cg" || die "cannot make the cpu cgroup $cg"
    echo "$cg" >"$D/cgroup"
    # up.sh itself joins it until every daemon has started (they inherit it).
    echo $$ >"$cg/cgroup.procs" || die "cannot move up.sh into $cg"
  fi
fi

# ---------------------------------------------------------------- network
# TCP congestion control in every host: Linux's default, cubic, whatever this
# machine's own default is (--cc NAME for another). On a machine whose
# default is BBR (this VM's), each connection is paced by an hrtimer (there
# is no fq qdisc), which held the last segment of a 64 KiB write for 1 to 6 ms
# here: 14 such stalls in 5 runs of 300 bcasts across 3 hosts of 2, none
# with cubic (bench/cluster/README.md). A namespace may only pick from the
# machine's tcp_allowed_congestion_control, so NAME joins that list; the
# list as it was is kept in the state dir and down.sh puts it back.
allowed=/proc/sys/net/ipv4/tcp_allowed_congestion_control
if ! grep -qw -- "$cc" /proc/sys/net/ipv4/tcp_available_congestion_control; then
  modprobe "tcp_$cc" 2>/dev/null || true
  grep -qw -- "$cc" /proc/sys/net/ipv4/tcp_available_congestion_control \
    || die "TCP congestion control '$cc' is not available (see $allowed and tcp_available_congestion_control)"
fi
if ! grep -qw -- "$cc" "$allowed"; then
  cat "$allowed" >"$D/allowed_cc"
  echo "$(cat "$allowed") $cc" >"$allowed"
fi
ip link add "$MC_BR" mtu "$mtu" type bridge
ip addr add "$MC_NET.254/24" dev "$MC_BR"
ip link set "$MC_BR" up
for ((i = 1; i <= n; i++)); do
  ns=$MC_NS_PREFIX$i v=$MC_VETH_PREFIX$i
  ip netns add "$ns"
  ip link add "$v" mtu "$mtu" type veth peer name eth0 mtu "$mtu" netns "$ns"
  ip link set "$v" master "$MC_BR" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$MC_NET.$i/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" route add default via "$MC_NET.254"
  ip netns exec "$ns" sysctl -qw "net.ipv4.tcp_congestion_control=$cc" \
    || die "cannot set TCP congestion control '$cc' in $ns"
  if [[ -n $rate ]]; then
    # Host egress (eth0 in the namespace) and host ingress (bridge -> veth).
    ip netns exec "$ns" tc qdisc replace dev eth0 root tbf rate "$rate" burst "$burst" latency 50ms
    tc qdisc replace dev "$v" root tbf rate "$rate" burst "$burst" latency 50ms
  fi
done

# Names: /etc/hosts is shared by the root namespace and every `ip netns exec`
# (no /etc/netns/<ns>/hosts is made), so one marked block serves all.
block=("$MC_NET.254 $MC_CTL_NAME")
for ((i = 1; i <= n; i++)); do block+=("$MC_NET.$i h$i"); done
mc_hosts_block "${block[@]}"

# ---------------------------------------------------------------- daemons
# No DNS inside the hosts: names come from /etc/hosts, and a lookup that
# misses it fails at once on 127.0.0.1 instead of timing out on a server the
# host namespaces cannot reach (getent hosts asks for IPv6 first: 2 x 5 s).
cat >"$D/resolv.conf" <<CFG
# mcast test cluster (bench/cluster/up.sh): no DNS inside the host namespaces
nameserver 127.0.0.1
options timeout:1 attempts:1
CFG
# in_host I CMD...: run CMD (a daemon that forks) as host hI: in network
# namespace mc-hI, in a new UTS namespace whose hostname is hI, and in a new
# mount namespace where $D/resolv.conf is /etc/resolv.conf. Not `ip netns
# exec`: it remounts /sys, hiding /sys/fs/cgroup, and slurmd 22.05 will not
# start without a cgroup mount even with proctrack/linuxproc and task/none.
in_host() {
  local i=$1 pin=(); shift
  [[ -z ${host_cpus[i-1]:-} ]] || pin=(taskset -c "${host_cpus[i-1]}")
  "${pin[@]}" nsenter --net="/run/netns/$MC_NS_PREFIX$i" \
    unshare --uts --mount --propagation slave -- \
    sh -c 'mount --bind "$1" /etc/resolv.conf && hostname "$2" && shift 2 && exec "$@"' \
    sh "$D/resolv.conf" "h$i" "$@"
}

# ---------------------------------------------------------------- ssh
ssh-keygen -q -t ed25519 -N '' -C "mcast-cluster" -f "$D/ssh/id_ed25519"
cp "$D/ssh/id_ed25519.pub" "$D/ssh/authorized_keys"
chmod 0600 "$D/ssh/authorized_keys"
mkdir -p /run/sshd && chmod 0755 /run/sshd   # sshd's privilege separation dir
{
  echo "# Generated by bench/cluster/up.sh: ssh -F $D/ssh_config h1 hostname"
  for ((i = 1; i <= n; i++)); do printf 'Host h%d\n  HostName %s.%d\n' "$i" "$MC_NET" "$i"; done
  cat <<CFG
Host ${hosts[*]} $MC_NET.*
  User root
  IdentityFile $D/ssh/id_ed25519
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
  BatchMode yes
  ConnectTimeout 5
  ServerAliveInterval 15
CFG
} >"$D/ssh_config"
for ((i = 1; i <= n; i++)); do
  h=h$i
  ssh-keygen -q -t ed25519 -N '' -C "$h" -f "$D/$h/ssh_host_ed25519_key"
  # The keys are read with AuthorizedKeysCommand: an AuthorizedKeysFile
  # under /tmp (mode 1777) would fail StrictModes' path check.
  cat >"$D/$h/sshd_config" <<CFG
# Generated by bench/cluster/up.sh for $h
ListenAddress $MC_NET.$i:22
HostKey $D/$h/ssh_host_ed25519_key
PidFile $D/$h/sshd.pid
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes yes
AuthorizedKeysFile none
AuthorizedKeysCommand $cat_bin $D/ssh/authorized_keys
AuthorizedKeysCommandUser root
UseDNS no
X11Forwarding no
PrintMotd no
PrintLastLog no
AcceptEnv LANG LC_* MCAST_* RUST_*
MaxStartups 200:30:400
MaxSessions 200
Subsystem sftp internal-sftp
LogLevel INFO
CFG
  "$sshd_bin" -t -f "$D/$h/sshd_config" || die "sshd -t rejected $D/$h/sshd_config"
  # sshd daemonizes and keeps its namespaces, so its sessions see hostname hI.
  in_host "$i" "$sshd_bin" -f "$D/$h/sshd_config" -E "$D/log/sshd-$h.log" \
    || die "sshd on $h failed to start; see $D/log/sshd-$h.log"
done

# ---------------------------------------------------------------- munge
dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none
chmod 0400 "$D/munge/munge.key"
munge_sock=$D/munge/munge.socket.2
# One munged in the root namespace; its socket is a path, which the host
# namespaces reach through the shared filesystem.
munged --force --socket="$munge_sock" --key-file="$D/munge/munge.key" \
  --pid-file="$D/munge/munged.pid" --log-file="$D/log/munged.log" \
  --seed-file="$D/munge/munged.seed" \
  || die "munged failed to start; see $D/log/munged.log"

# ---------------------------------------------------------------- slurm
export SLURM_CONF=$D/slurm/slurm.conf
{
  cat <<CFG
# Generated by bench/cluster/up.sh. Use: . $D/env.sh (exports SLURM_CONF).
ClusterName=mcast
SlurmctldHost=$MC_CTL_NAME($MC_NET.254)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_sock
StateSaveLocation=$D/slurm/ctld
SlurmctldPidFile=$D/slurm/slurmctld.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdSpoolDir=$D/%n/slurmd
SlurmdPidFile=$D/%n/slurmd.pid
SlurmdLogFile=$D/log/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=30
SlurmctldDebug=info
SlurmdDebug=info
CFG
  for ((i = 1; i <= n; i++)); do echo "NodeName=h$i NodeAddr=$MC_NET.$i CPUs=2 State=UNKNOWN"; done
  echo "PartitionName=mc Nodes=$(IFS=,; echo "${hosts[*]}") Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
} >"$SLURM_CONF"

# slurmctld checks that its hostname is the SlurmctldHost name: give it "mcctl".
unshare --uts -- sh -c 'hostname "$1" && exec slurmctld' sh "$MC_CTL_NAME" \
  || die "slurmctld failed to start; see $D/log/slurmctld.log"
for ((i = 1; i <= n; i++)); do
  in_host "$i" slurmd -N "h$i" \
    || die "slurmd on h$i failed to start; see $D/log/slurmd-h$i.log"
done

# Every daemon has started: up.sh leaves the cluster's cgroup.
[[ -z $cg ]] || echo $$ >"$(dirname "$cg")/cgroup.procs" || die "cannot move up.sh out of $cg"

# ---------------------------------------------------------------- client env
cat >"$D/env.sh" <<CFG
# Generated by bench/cluster/up.sh: . $D/env.sh
export SLURM_CONF=$SLURM_CONF
export MCAST_CLUSTER_DIR=$D
export MCAST_CLUSTER_SSH_CONFIG=$D/ssh_config
export MCAST_CLUSTER_HOSTFILE=$D/hostfile
# mclaunch reaches the hosts through this agent (mclaunch --launch-agent).
export MCAST_LAUNCH_AGENT="ssh -F $D/ssh_config"
# munge clients take the socket as an option: munge -S \$MCAST_CLUSTER_MUNGE_SOCKET
export MCAST_CLUSTER_MUNGE_SOCKET=$munge_sock
CFG
for ((i = 1; i <= n; i++)); do echo "h$i slots=2"; done >"$D/hostfile"

# ---------------------------------------------------------------- wait
deadline=$((SECONDS + ${MCAST_CLUSTER_TIMEOUT:-60}))
pending=("${hosts[@]}")
while [[ ${#pending[@]} -gt 0 ]]; do
  still=()
  for h in "${pending[@]}"; do
    ssh -F "$D/ssh_config" -o ConnectTimeout=2 "$h" true </dev/null 2>/dev/null || still+=("$h")
  done
  pending=("${still[@]+"${still[@]}"}")
  [[ ${#pending[@]} -eq 0 ]] && break
  [[ $SECONDS -lt $deadline ]] || die "sshd not answering on: ${pending[*]} (logs: $D/log/sshd-*.log)"
  sleep 0.2
done
while :; do
  states=$(sinfo -h -N -p mc -o '%N %t' 2>/dev/null || true)
  idle=$(awk '$2 == "idle" { c++ } END { print c + 0 }' <<<"$states")
  [[ $idle -eq $n ]] && break
  if [[ $SECONDS -ge $deadline ]]; then
    echo "$states" >&2
    die "Slurm nodes not all idle (logs: $D/log/slurmctld.log, $D/log/slurmd-h*.log)"
  fi
  sleep 0.3
done

cpu_note="every host on every CPU (--cpus to share them out)"
if [[ ${#host_cpus[@]} -gt 0 ]]; then
  cpu_note=$(for ((i = 1; i <= n; i++)); do printf 'h%d on %s  ' "$i" "${host_cpus[i-1]}"; done)
fi
sched_note="flat: every process of the cluster in one cpu cgroup, $cg (--sched autogroup: one group per session)"
[[ $sched == flat ]] || sched_note="autogroup: each ssh login and srun step a scheduling group of its own (--sched flat: one for the cluster)"
cat <<MSG
mcast test cluster up: $n hosts ${hosts[*]}${rate:+, tbf $rate each way per host}, TCP $cc, MTU $mtu
  bridge $MC_BR $MC_NET.254/24 (root namespace, slurmctld as $MC_CTL_NAME)
  hosts  ${hosts[0]}=$MC_NET.1 .. h$n=$MC_NET.$n (namespaces $MC_NS_PREFIX{1..$n}), names in /etc/hosts
  ssh    ssh -F $D/ssh_config h1 hostname
  slurm  . $D/env.sh; srun -N$n hostname     (partition mc, 2 CPUs/node)
  cpus   $cpu_note
  sched  $sched_note
  files  $D/{ssh_config,hostfile,env.sh,log/}
  stop   $here/down.sh
MSG
