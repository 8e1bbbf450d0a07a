#!/usr/bin/env bash
# Installs the Debian packages the real-node cluster needs (scripts/cluster/), when missing and this
# runs as root with apt-get; elsewhere it says what is missing and exits 1. Idempotent: with
# everything installed it only asks dpkg. Called by up.sh and .ci/run.
#   containerd, runc, containernetworking-plugins (bridge, host-local, loopback): the node's runtime
#   iptables, conntrack: kube-proxy's iptables mode; iproute2, util-linux: the namespace (ip, nsenter)
#   umoci: builds the OCI images; openssl: the cluster's CA and keys; libcap2-bin: setcap for the
#   image's node binary; musl-tools, gcc, libc6-dev, dnsutils: the pause and client images
# Debian's containerd package ships a systemd unit; nothing here starts it (up.sh runs its own
# containerd inside the cluster's namespace with its own configuration).
set -euo pipefail

PACKAGES=(containerd runc containernetworking-plugins iptables conntrack iproute2 util-linux umoci
  openssl libcap2-bin musl-tools gcc libc6-dev dnsutils)

command -v dpkg >/dev/null 2>&1 || { echo "cluster packages: not a Debian system; install the equivalents of: ${PACKAGES[*]}" >&2; exit 1; }
need=()
for pkg in "${PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
[ "${#need[@]}" -eq 0 ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "cluster packages: installing ${need[*]}" >&2
  apt-get update -qq
  # policy-rc.d: no service starts on installation (containerd's unit would on a systemd machine).
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  # --no-remove: never make room by removing a package (Docker's containerd.io conflicts with
  # containerd and runc); fail instead and let the operator decide.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends --no-remove "${need[@]}"
else
  echo "cluster packages: missing ${need[*]} (run as root, or: sudo apt-get install ${need[*]})" >&2
  exit 1
fi
