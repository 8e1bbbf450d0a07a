#!/usr/bin/env bash
# Builds the stand-in Datadog agent the trace plugin's datadog tests export to (tools/datadog-agent:
# the agent's /v0.4/traces intake, decoding with the agent's own pbgo/trace msgpack code, whose
# module comes through the Go module proxy) into $REPO/.bin/datadog-agent. Idempotent: a second
# run rebuilds only when the source or go.sum changed (the binary's build records the source
# hash) and prints the path.
# Usage: scripts/install-datadog-agent.sh   (prints the absolute path of the binary)
# Env:   GO (path to the go binary), GOBIN_DIR (default $REPO/.bin)
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$REPO_ROOT/tools/datadog-agent"
BIN_DIR="${GOBIN_DIR:-$REPO_ROOT/.bin}"
OUT="$BIN_DIR/datadog-agent"

GO="${GO:-}"
if [ -z "$GO" ]; then
  if command -v go >/dev/null 2>&1; then GO="$(command -v go)"
  elif [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go
  else echo "install-datadog-agent: go not found (set GO=/path/to/go)" >&2; exit 1
  fi
fi

# The source's hash, stamped into the binary (-X) and printed by its -version on the next run.
hash="$(cat "$SRC/main.go" "$SRC/go.mod" "$SRC/go.sum" | sha256sum | cut -c1-16)"
have_hash() {
  [ -x "$OUT" ] || return 1
  [ "$("$OUT" -version 2>/dev/null)" = "$hash" ]
}

if have_hash; then
  echo "$OUT"
  exit 0
fi

mkdir -p "$BIN_DIR"
echo "install-datadog-agent: step 1/1: go build ($("$GO" version)) into $OUT" >&2
start=$(date +%s)
tmp="$OUT.tmp.$$"
(cd "$SRC" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -buildvcs=false -mod=readonly" "$GO" build -trimpath \
  -ldflags "-X main.sourceHash=$hash" -o "$tmp" .) >&2 || {
  rm -f "$tmp"
  echo "install-datadog-agent: go build in $SRC failed (read the go output above; a download" \
    "error means the Go module proxy, GOPROXY, is unreachable)" >&2
  exit 1
}
mv -f "$tmp" "$OUT"
echo "install-datadog-agent: done in $(( $(date +%s) - start ))s" >&2
echo "$OUT"
