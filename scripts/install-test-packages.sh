#!/usr/bin/env bash
# Installs the Debian packages the test suite uses, when they are missing and this runs as root on
# a machine with apt-get (a fresh CI machine, a dev container); elsewhere it only says what is
# missing, and the tests that need it fail with the same reason. Idempotent: with everything
# installed it only asks dpkg. Called by .ci/run and by `npm test` (pretest).
#   dnsutils (dig), knot-dnsutils (kdig), dnsperf (bench smoke), dnsmasq-base (a real upstream in
#   the forward tests), iproute2 (ip netns for the resolver suite), musl-tools (musl-gcc: the
#   resolver suite also checks musl's getaddrinfo, the resolver of Alpine-based images), gcc and
#   libc6-dev (musl-gcc wraps gcc; the kubernetes keepalive test compiles a socket-option reader).
set -euo pipefail

PACKAGES=(dnsutils knot-dnsutils dnsperf dnsmasq-base iproute2 musl-tools gcc libc6-dev)

command -v dpkg >/dev/null 2>&1 || { echo "install-test-packages: not a Debian system; install the equivalents of: ${PACKAGES[*]}" >&2; exit 0; }
need=()
for pkg in "${PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
[ "${#need[@]}" -eq 0 ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "install-test-packages: installing ${need[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
else
  echo "install-test-packages: missing ${need[*]} (run as root, or: sudo apt-get install ${need[*]}); the tests that need them will fail" >&2
fi
