#!/usr/bin/env bash
# Installs helm into $REPO/.bin/helm through the Go module proxy when it is missing.
# Idempotent: a second run only checks the version and prints the path.
# Usage: scripts/install-helm.sh            (prints the absolute path of the helm binary)
# Env:   HELM_VERSION (default below), GO (path to the go binary), GOBIN_DIR (default $REPO/.bin)
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN_DIR="${GOBIN_DIR:-$REPO_ROOT/.bin}"
HELM="$BIN_DIR/helm"

have_version() {
  # `helm version --template` prints e.g. v3.22.0
  [ -x "$1" ] && [ "$("$1" version --template '{{.Version}}' 2>/dev/null || true)" = "$HELM_VERSION" ]
}

if have_version "$HELM"; then
  echo "$HELM"
  exit 0
fi

# A helm 3.18+ already on PATH is good enough (the tests look in .bin/ first, then on PATH),
# unless HELM_FORCE_INSTALL=1.
if [ "${HELM_FORCE_INSTALL:-0}" != "1" ] && command -v helm >/dev/null 2>&1; then
  path_helm="$(command -v helm)"
  v="$("$path_helm" version --template '{{.Version}}' 2>/dev/null || true)"
  if [[ "$v" =~ ^v3\.([0-9]+)\. ]] && [ "${BASH_REMATCH[1]}" -ge 18 ]; then
    echo "install-helm: using $path_helm ($v) from PATH" >&2
    echo "$path_helm"
    exit 0
  fi
fi

GO="${GO:-}"
if [ -z "$GO" ]; then
  if command -v go >/dev/null 2>&1; then GO="$(command -v go)"
  elif [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go
  else echo "install-helm: go not found (set GO=/path/to/go)" >&2; exit 1
  fi
fi

mkdir -p "$BIN_DIR"
echo "install-helm: building helm $HELM_VERSION with $("$GO" version) into $BIN_DIR" >&2
start=$(date +%s)
# CGO off: static binary, no C toolchain needed. -trimpath keeps the build reproducible.
# Version ldflags make `helm version` report the real release instead of "v3.x-dev".
CGO_ENABLED=0 GOBIN="$BIN_DIR" GOFLAGS="${GOFLAGS:-} -buildvcs=false" "$GO" install -trimpath \
  -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
  "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
echo "install-helm: done in $(( $(date +%s) - start ))s" >&2

if ! have_version "$HELM"; then
  echo "install-helm: $HELM does not report $HELM_VERSION:" >&2
  "$HELM" version >&2 || true
  exit 1
fi
echo "$HELM"
