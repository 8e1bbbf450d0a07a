#!/usr/bin/env bash
# Installs the Debian packages the test suite uses, when they are missing and this runs as root on
# a machine with apt-get (a fresh CI machine, a dev container); elsewhere it only says what is
# missing, and the tests that need it fail with the same reason. Idempotent: with everything
# installed it only asks dpkg (scripts/lib/apt-packages.sh). Called by .ci/run and by `npm test` (pretest).
#   dnsutils (dig; nsupdate through bind9-dnsutils, for tsig and dynupdate), knot-dnsutils (kdig),
#   dnsperf (bench smoke), dnsmasq-base (a real upstream in the forward tests), iproute2 (ip netns
#   for the resolver suite), musl-tools (musl-gcc: the resolver suite also checks musl's
#   getaddrinfo, the resolver of Alpine-based images), gcc and libc6-dev (musl-gcc wraps gcc; the
#   kubernetes keepalive test compiles a socket-option reader), nftables, iptables, conntrack
#   (node-cache's rules and conntrack check, test/e2e/node-cache-netns), bind9-utils (dnssec-keygen:
#   the dnssec and sign tests make their keys; dnssec-verify checks a zone sign wrote), ldnsutils
#   (ldns-verify-zone, the second opinion on a signed zone), nghttp2-client (h2load: nghttp2's
#   HTTP/2 client loads the DoH listener in its tests and is the DoH load of `npm run bench`).
set -euo pipefail

PACKAGES=(dnsutils knot-dnsutils dnsperf dnsmasq-base iproute2 musl-tools gcc libc6-dev nftables iptables conntrack bind9-utils ldnsutils nghttp2-client)

# shellcheck source=lib/apt-packages.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/apt-packages.sh"
status=0
install_missing_packages install-test-packages "${PACKAGES[@]}" || status=$?
# Not installable here (not root, not Debian): said above; the tests that need them will fail.
[ "$status" = 2 ] && exit 0
exit "$status"
