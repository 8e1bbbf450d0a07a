#!/usr/bin/env bash
# Installs the Debian packages the real-node cluster needs (scripts/cluster/), when missing and this
# runs as root with apt-get; elsewhere it says what is missing and exits 2. Idempotent: with
# everything installed it only asks dpkg. Called by up.sh and .ci/run.
#   containerd, runc, containernetworking-plugins (bridge, host-local, loopback): the node's runtime
#   iptables, conntrack: kube-proxy's iptables mode; iproute2, util-linux: the namespace (ip, nsenter)
#   umoci: builds the OCI images; openssl: the cluster's CA and keys; libcap2-bin: setcap for the
#   image's node binary; musl-tools, gcc, libc6-dev, dnsutils: the pause and client images
#   nftables (with iptables and iproute2): the node-cache image's tools, and the node-local test's
#   look at the rules; curl: the tests read pods' /metrics and /ready from the node's namespace
# Debian's containerd package ships a systemd unit; nothing here starts it (up.sh runs its own
# containerd inside the cluster's namespace with its own configuration).
set -euo pipefail

PACKAGES=(containerd runc containernetworking-plugins iptables conntrack iproute2 util-linux umoci
  openssl libcap2-bin musl-tools gcc libc6-dev dnsutils nftables curl)

# shellcheck source=../lib/apt-packages.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/apt-packages.sh"
install_missing_packages "cluster packages" "${PACKAGES[@]}"
