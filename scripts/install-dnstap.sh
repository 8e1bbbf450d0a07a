#!/usr/bin/env bash
# Installs golang-dnstap's `dnstap` command (the real dnstap reader the dnstap plugin's tests read
# clusterdns's frames with) into $REPO/.bin/dnstap through the Go module proxy when it is missing.
# Idempotent: a second run only checks the module version built into .bin/dnstap and prints the path.
# Usage: scripts/install-dnstap.sh          (prints the absolute path of the dnstap binary)
# Env:   DNSTAP_VERSION (default below), GO (path to the go binary), GOBIN_DIR (default $REPO/.bin)
set -euo pipefail

DNSTAP_VERSION="${DNSTAP_VERSION:-v0.4.0}"
MODULE=github.com/dnstap/golang-dnstap
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN_DIR="${GOBIN_DIR:-$REPO_ROOT/.bin}"
DNSTAP="$BIN_DIR/dnstap"

GO="${GO:-}"
if [ -z "$GO" ]; then
  if command -v go >/dev/null 2>&1; then GO="$(command -v go)"
  elif [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go
  else echo "install-dnstap: go not found (set GO=/path/to/go)" >&2; exit 1
  fi
fi

have_version() {
  # The command has no version flag; `go version -m` prints its main module's line:
  # "	mod	github.com/dnstap/golang-dnstap	v0.4.0	h1:…".
  [ -x "$1" ] || return 1
  "$GO" version -m "$1" 2>/dev/null | awk -v m="$MODULE" -v v="$DNSTAP_VERSION" \
    '$1 == "mod" && $2 == m && $3 == v { found = 1 } END { exit !found }'
}

if have_version "$DNSTAP"; then
  echo "$DNSTAP"
  exit 0
fi

mkdir -p "$BIN_DIR"
echo "install-dnstap: building dnstap $DNSTAP_VERSION with $("$GO" version) into $BIN_DIR" >&2
start=$(date +%s)
# CGO off: static binary, no C toolchain needed. -trimpath keeps the build reproducible.
CGO_ENABLED=0 GOBIN="$BIN_DIR" GOFLAGS="${GOFLAGS:-} -buildvcs=false" "$GO" install -trimpath \
  "$MODULE/dnstap@$DNSTAP_VERSION" >&2 || {
  echo "install-dnstap: go install $MODULE/dnstap@$DNSTAP_VERSION failed (read the go output above;" \
    "a network failure means the module proxy, GOPROXY, is unreachable)" >&2
  exit 1
}
echo "install-dnstap: done in $(( $(date +%s) - start ))s" >&2

if ! have_version "$DNSTAP"; then
  echo "install-dnstap: $DNSTAP is not $MODULE $DNSTAP_VERSION:" >&2
  "$GO" version -m "$DNSTAP" >&2 || true
  exit 1
fi
echo "$DNSTAP"
