#!/usr/bin/env bash
# Installs one command of a public Go module (a test client or oracle we do not write ourselves)
# into $REPO/.bin/NAME through the Go module proxy when it is missing or another version.
# Idempotent: a second run only checks the module version built into the binary and prints its path.
# Usage: scripts/install-go-command.sh NAME MODULE PACKAGE VERSION
#        e.g. install-go-command.sh h2spec github.com/summerwind/h2spec cmd/h2spec v2.2.1+incompatible
#        (prints the absolute path of the binary)
# Env:   GO (path to the go binary), GOBIN_DIR (default $REPO/.bin)
set -euo pipefail

NAME="${1:?usage: install-go-command.sh NAME MODULE PACKAGE VERSION}"
MODULE="${2:?module path}"
PACKAGE="${3:?package inside the module, or .}"
VERSION="${4:?module version}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN_DIR="${GOBIN_DIR:-$REPO_ROOT/.bin}"
OUT="$BIN_DIR/$NAME"
TAG="install-$NAME"
TARGET="$MODULE"
[ "$PACKAGE" = "." ] || TARGET="$MODULE/$PACKAGE"

GO="${GO:-}"
if [ -z "$GO" ]; then
  if command -v go >/dev/null 2>&1; then GO="$(command -v go)"
  elif [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go
  else echo "$TAG: go not found (set GO=/path/to/go)" >&2; exit 1
  fi
fi

have_version() {
  # `go version -m` prints the main module's line: "	mod	MODULE	VERSION	h1:…".
  [ -x "$OUT" ] || return 1
  "$GO" version -m "$OUT" 2>/dev/null | awk -v m="$MODULE" -v v="$VERSION" \
    '$1 == "mod" && $2 == m && $3 == v { found = 1 } END { exit !found }'
}

if have_version; then
  echo "$OUT"
  exit 0
fi

mkdir -p "$BIN_DIR"
echo "$TAG: building $TARGET@$VERSION with $("$GO" version) into $BIN_DIR" >&2
start=$(date +%s)
# CGO off: static binary, no C toolchain needed. -trimpath keeps the build reproducible.
CGO_ENABLED=0 GOBIN="$BIN_DIR" GOFLAGS="${GOFLAGS:-} -buildvcs=false" "$GO" install -trimpath \
  "$TARGET@$VERSION" >&2 || {
  echo "$TAG: go install $TARGET@$VERSION failed (read the go output above;" \
    "a network failure means the module proxy, GOPROXY, is unreachable)" >&2
  exit 1
}
echo "$TAG: done in $(( $(date +%s) - start ))s" >&2

if ! have_version; then
  echo "$TAG: $OUT is not $MODULE $VERSION:" >&2
  "$GO" version -m "$OUT" >&2 || true
  exit 1
fi
echo "$OUT"
