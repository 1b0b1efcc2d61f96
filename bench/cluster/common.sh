# shellcheck shell=bash disable=SC2034 # the variables are used by the scripts that source this
# Settings shared by up.sh, down.sh and selfcheck.sh (sourced, not run).

# State directory: keys, configs, pid files, logs, spool dirs.
MC_DIR=${MCAST_CLUSTER_DIR:-/tmp/mcast-cluster}
# First three octets of the cluster's /24: hosts are $MC_NET.1..N, the bridge
# (root namespace, slurmctld) is $MC_NET.254.
MC_NET=${MCAST_CLUSTER_NET:-10.77.0}
MC_BR=${MCAST_CLUSTER_BRIDGE:-mcbr0}
MC_NS_PREFIX=mc-h          # namespaces mc-h1..mc-hN
MC_VETH_PREFIX=mcv         # root-side veth ends mcv1..mcvN (host side: eth0)
MC_CTL_NAME=mcctl          # SlurmctldHost name, resolves to $MC_NET.254
MC_HOSTS_BEGIN="# BEGIN mcast-cluster (bench/cluster/up.sh; down.sh removes this block)"
MC_HOSTS_END="# END mcast-cluster"

if ! [[ $MC_NET =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]]; then
  echo "MCAST_CLUSTER_NET must be three octets, e.g. 10.77.0 (got '$MC_NET')" >&2
  exit 2
fi
case $MC_DIR in
  /*) ;;
  *) echo "MCAST_CLUSTER_DIR must be an absolute path (got '$MC_DIR')" >&2; exit 2 ;;
esac

# The cpu cgroup up.sh --sched flat puts the cluster in (a path under
# /sys/fs/cgroup; its name is the state dir's), or nothing when this machine
# has no cpu controller to make one with: cgroup v1's cpu hierarchy, or
# cgroup v2's with the cpu controller available at the root.
mc_cpu_cgroup() {
  local name
  name=$(basename "$MC_DIR")
  if [[ -f /sys/fs/cgroup/cpu/cgroup.procs && -f /sys/fs/cgroup/cpu/cpu.shares ]]; then
    echo "/sys/fs/cgroup/cpu/$name"
  elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    echo "/sys/fs/cgroup/$name"
  fi
}

# The namespaces that exist now, one name a line.
mc_list_ns() {
  ip netns list 2>/dev/null | awk -v p="$MC_NS_PREFIX" 'index($1, p) == 1 && substr($1, length(p) + 1) ~ /^[0-9]+$/ { print $1 }'
}

# Rewrite /etc/hosts without our block, in place (keeps the inode, so a
# bind-mounted /etc/hosts works), then append "$@" as a new block if given.
mc_hosts_block() {
  local tmp
  tmp=$(mktemp)
  awk -v b="$MC_HOSTS_BEGIN" -v e="$MC_HOSTS_END" '
    $0 == b { skip = 1; next }
    $0 == e { skip = 0; next }
    !skip { print }' /etc/hosts >"$tmp"
  if [[ $# -gt 0 ]]; then
    { echo "$MC_HOSTS_BEGIN"; printf '%s\n' "$@"; echo "$MC_HOSTS_END"; } >>"$tmp"
  fi
  if ! cmp -s "$tmp" /etc/hosts; then
    cat "$tmp" >/etc/hosts
  fi
  rm -f "$tmp"
}
