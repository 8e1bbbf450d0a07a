#!/usr/bin/env bash
# Builds one of the repository's own Go test tools, tools/NAME (a single main package whose
# modules come through the Go module proxy), into $REPO/.bin/NAME. Idempotent: a second run
# rebuilds only when main.go, go.mod or go.sum changed (the binary's build records their hash,
# printed by its -version) and prints the path.
# Usage: scripts/install-go-tool.sh NAME   (prints the absolute path of the binary)
# Env:   GO (path to the go binary), GOBIN_DIR (default $REPO/.bin)
set -euo pipefail

NAME="${1:?usage: install-go-tool.sh NAME (a folder of tools/)}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$REPO_ROOT/tools/$NAME"
BIN_DIR="${GOBIN_DIR:-$REPO_ROOT/.bin}"
OUT="$BIN_DIR/$NAME"
TAG="install-$NAME"
[ -f "$SRC/main.go" ] || { echo "$TAG: no $SRC/main.go" >&2; exit 1; }

GO="${GO:-}"
if [ -z "$GO" ]; then
  if command -v go >/dev/null 2>&1; then GO="$(command -v go)"
  elif [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go
  else echo "$TAG: go not found (set GO=/path/to/go)" >&2; exit 1
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
echo "$TAG: step 1/1: go build ($("$GO" version)) into $OUT" >&2
start=$(date +%s)
tmp="$OUT.tmp.$$"
(cd "$SRC" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -buildvcs=false -mod=readonly" "$GO" build -trimpath \
  -ldflags "-X main.sourceHash=$hash" -o "$tmp" .) >&2 || {
  rm -f "$tmp"
  echo "$TAG: go build in $SRC failed (read the go output above; a download" \
    "error means the Go module proxy, GOPROXY, is unreachable)" >&2
  exit 1
}
mv -f "$tmp" "$OUT"
echo "$TAG: done in $(( $(date +%s) - start ))s" >&2
echo "$OUT"
