#!/usr/bin/env bash
# Install the Debian 12 packages Xportals needs to build, test and compare.
# Safe to run again: installs only what is missing. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake pkg-config procps   # build + tests (ps)
  mpich libmpich-dev                        # PMI-1 client tests, Hydra, MPI comparisons
  openmpi-bin libopenmpi-dev libpmix-dev    # PMIx bootstrap, Open MPI comparisons
  ucx-utils                                 # ucx_perftest for comparisons
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "deps.sh: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
