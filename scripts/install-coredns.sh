#!/usr/bin/env bash
# Installs the real CoreDNS (the behaviour oracle of the differential tests) into $REPO/.bin/coredns
# through the Go module proxy when it is missing. Idempotent: a second run only checks
# `.bin/coredns -version` and prints the path.
# Usage: scripts/install-coredns.sh          (prints the absolute path of the coredns binary)
# Env:   COREDNS_VERSION (default below), GO (path to the go binary), GOBIN_DIR (default $REPO/.bin)
set -euo pipefail

COREDNS_VERSION="${COREDNS_VERSION:-v1.15.0}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN_DIR="${GOBIN_DIR:-$REPO_ROOT/.bin}"
COREDNS="$BIN_DIR/coredns"

have_version() {
  # `coredns -version` prints e.g. "CoreDNS-1.15.0\nlinux/amd64, go1.26.8, "
  [ -x "$1" ] || return 1
  local out
  out="$("$1" -version 2>/dev/null || true)"
  [ "${out%%$'\n'*}" = "CoreDNS-${COREDNS_VERSION#v}" ]
}

if have_version "$COREDNS"; then
  echo "$COREDNS"
  exit 0
fi

GO="${GO:-}"
if [ -z "$GO" ]; then
  if command -v go >/dev/null 2>&1; then GO="$(command -v go)"
  elif [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go
  else echo "install-coredns: go not found (set GO=/path/to/go)" >&2; exit 1
  fi
fi

mkdir -p "$BIN_DIR"
echo "install-coredns: building coredns $COREDNS_VERSION with $("$GO" version) into $BIN_DIR" >&2
start=$(date +%s)
# CGO off: static binary, no C toolchain needed. -trimpath keeps the build reproducible.
CGO_ENABLED=0 GOBIN="$BIN_DIR" GOFLAGS="${GOFLAGS:-} -buildvcs=false" "$GO" install -trimpath \
  "github.com/coredns/coredns@$COREDNS_VERSION" >&2
echo "install-coredns: done in $(( $(date +%s) - start ))s" >&2

if ! have_version "$COREDNS"; then
  echo "install-coredns: $COREDNS does not report CoreDNS-${COREDNS_VERSION#v}:" >&2
  "$COREDNS" -version >&2 || true
  exit 1
fi
echo "$COREDNS"
