#!/usr/bin/env bash
# Tear down what up.sh made: daemons, every process left in a host namespace,
# the namespaces, the bridge, the /etc/hosts block and the state directory.
# Idempotent; prints nothing when there is nothing to remove.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$here/common.sh"

if [[ $(id -u) -ne 0 ]]; then
  echo "down.sh: must run as root" >&2
  exit 1
fi

said=0
say() { [[ $said -eq 1 ]] || { echo "down.sh: removing the mcast test cluster ($MC_DIR)"; said=1; }; }

# Does process $1 belong to this cluster? up.sh starts every daemon with
# MCAST_CLUSTER_DAEMON=$MC_DIR in its environment; sshd overwrites its
# environ with its process title, but that title holds "-f $MC_DIR/...".
ours() {
  local p=$1
  [[ -r /proc/$p/environ ]] || return 1
  grep -zFxqs "MCAST_CLUSTER_DAEMON=$MC_DIR" "/proc/$p/environ" && return 0
  grep -zFqs -- "$MC_DIR/" "/proc/$p/cmdline" && return 0
  return 1
}

pids=()
# 1. Daemons, by pid file (only if the pid is still one of ours).
if [[ -d $MC_DIR ]]; then
  while IFS= read -r f; do
    p=$(tr -dc '0-9' <"$f" 2>/dev/null || true)
    [[ -n $p ]] && ours "$p" && pids+=("$p")
  done < <(find "$MC_DIR" -name '*.pid' -type f 2>/dev/null)
fi
# 2. Anything started with our marker whose pid file is gone.
for e in /proc/[0-9]*/environ; do
  p=${e#/proc/}; p=${p%/environ}
  [[ $p -eq $$ ]] && continue
  grep -zFxqs "MCAST_CLUSTER_DAEMON=$MC_DIR" "$e" && pids+=("$p")
done
# 3. Every process in a host namespace (sessions, slurmstepd, job tasks).
mapfile -t nss < <(mc_list_ns)
for ns in "${nss[@]}"; do
  while IFS= read -r p; do [[ -n $p ]] && pids+=("$p"); done < <(ip netns pids "$ns" 2>/dev/null || true)
done
# 3a. Everything in the cluster's cpu cgroup (up.sh --sched flat).
if [[ -f $MC_DIR/.mcast-cluster && -s $MC_DIR/cgroup && -r $(cat "$MC_DIR/cgroup")/cgroup.procs ]]; then
  while IFS= read -r p; do [[ -n $p && $p -ne $$ ]] && pids+=("$p"); done <"$(cat "$MC_DIR/cgroup")/cgroup.procs"
fi

if [[ ${#pids[@]} -gt 0 ]]; then
  say
  kill -9 "${pids[@]}" 2>/dev/null || true
  # Bounded wait until they are gone. Orphaned daemons are reaped by PID 1,
  # which here can take a second: wait for the zombies too, so that
  # `pgrep sshd` shows nothing once down.sh returns.
  deadline=$((SECONDS + 10))
  while :; do
    live=() zombies=()
    for p in "${pids[@]}"; do
      st=$(awk '/^State:/ { print $2 }' "/proc/$p/status" 2>/dev/null || true)
      case $st in
        '') ;;
        Z|X) zombies+=("$p") ;;
        *) live+=("$p") ;;
      esac
    done
    [[ ${#live[@]} -eq 0 && ${#zombies[@]} -eq 0 ]] && break
    if [[ $SECONDS -ge $deadline ]]; then
      [[ ${#live[@]} -eq 0 ]] || echo "down.sh: still alive after kill -9: ${live[*]}" >&2
      [[ ${#zombies[@]} -eq 0 ]] || echo "down.sh: killed, not yet reaped by their parent: ${zombies[*]}" >&2
      break
    fi
    sleep 0.1
  done
fi

# 3b. The cpu cgroup of --sched flat, empty now.
if [[ -f $MC_DIR/.mcast-cluster && -s $MC_DIR/cgroup ]]; then
  cg=$(cat "$MC_DIR/cgroup")
  if [[ -d $cg ]]; then
    say
    rmdir "$cg" 2>/dev/null || echo "down.sh: cannot remove the cgroup $cg (processes in it: $(tr '\n' ' ' <"$cg/cgroup.procs" 2>/dev/null))" >&2
  fi
fi

# 4. Namespaces (their eth0 ends go with them), root-side veths, the bridge.
for ns in "${nss[@]}"; do
  say
  ip netns del "$ns" 2>/dev/null || true
done
while IFS= read -r v; do
  say
  ip link del "$v" 2>/dev/null || true
done < <(ip -o link show 2>/dev/null | awk -F': ' -v p="$MC_VETH_PREFIX" '{ sub(/@.*/, "", $2) } index($2, p) == 1 && substr($2, length(p) + 1) ~ /^[0-9]+$/ { print $2 }')
if ip link show "$MC_BR" >/dev/null 2>&1; then
  say
  ip link del "$MC_BR"
fi

# 5. The /etc/hosts block.
if grep -Fxq "$MC_HOSTS_BEGIN" /etc/hosts 2>/dev/null; then
  say
  # shellcheck disable=SC2119 # no arguments: remove the block only
  mc_hosts_block
fi

# 6. The machine's list of allowed TCP congestion controls, as up.sh found it.
if [[ -f $MC_DIR/.mcast-cluster && -s $MC_DIR/allowed_cc ]]; then
  say
  cat "$MC_DIR/allowed_cc" >/proc/sys/net/ipv4/tcp_allowed_congestion_control || true
fi

# 7. The state directory, only if up.sh made it.
if [[ -e $MC_DIR ]]; then
  if [[ -f $MC_DIR/.mcast-cluster ]]; then
    say
    rm -rf -- "$MC_DIR"
  else
    echo "down.sh: $MC_DIR exists but is not an mcast cluster state dir (no .mcast-cluster); left alone" >&2
    exit 1
  fi
fi
if [[ $said -eq 1 ]]; then echo "down.sh: done"; fi
