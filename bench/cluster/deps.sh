#!/usr/bin/env bash
# Install what bench/cluster/ needs (idempotent, quiet when all is present).
# Debian packages only; services are NOT enabled or started here: up.sh runs
# its own sshd/munged/slurmctld/slurmd with configs under its state dir.
set -euo pipefail

pkgs=(
  openssh-server openssh-client   # sshd per host namespace, ssh client
  iproute2                        # ip netns/link/addr, tc (tbf)
  util-linux                      # unshare (UTS namespace per host)
  procps                          # pgrep/pkill-free checks in selfcheck
  tcpdump                         # tests/cluster.rs: is the wire encrypted?
  munge                           # munged, munge, unmunge
  slurm-wlm slurmctld slurmd slurm-client  # slurmctld, slurmd, srun/salloc/sinfo
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "deps.sh: need root to install: ${missing[*]}" >&2
  exit 1
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
