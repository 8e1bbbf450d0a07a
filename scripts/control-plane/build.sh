#!/usr/bin/env bash
# Builds the control plane the end-to-end tests run (test/controlplane/): etcd, kube-apiserver,
# kube-controller-manager and kubectl, into $REPO/.bin/, through the Go module proxy from the wrapper
# module in this folder (go.mod/go.sum pin k8s.io/kubernetes v1.35.4, its staging modules at v0.35.4
# and etcd 3.6.5, the version Kubernetes 1.35.4 itself requires). With --with-node it also builds
# what a real node needs (the real-node cluster, scripts/cluster/): kubelet, kube-proxy and
# kube-scheduler; go.mod lists the 8 indirect requirements only those need (cold: ~2-5 min more on
# 2 cores, ~1 min with the control plane's build cache warm).
# Idempotent: when every binary asked for already reports its release, a second run only checks
# versions and exits (about a second).
# Usage: scripts/control-plane/build.sh [--with-node]   (prints the bin directory)
# Env:   GO (path to the go binary), GOBIN_DIR (default $REPO/.bin), CONTROL_PLANE_FORCE_BUILD=1
set -euo pipefail

K8S_VERSION=v1.35.4
ETCD_VERSION=3.6.5
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$HERE/../.." && pwd)"
BIN_DIR="${GOBIN_DIR:-$REPO_ROOT/.bin}"

# What each binary prints for its version (first line), and what it must contain.
version_of() {
  case "$1" in
    etcd) "$BIN_DIR/etcd" --version 2>/dev/null | head -n1 ;;          # etcd Version: 3.6.5
    kubectl) "$BIN_DIR/kubectl" version --client 2>/dev/null | head -n1 ;; # Client Version: v1.35.4
    *) "$BIN_DIR/$1" --version 2>/dev/null | head -n1 ;;               # Kubernetes v1.35.4
  esac
}
expected_of() {
  case "$1" in
    etcd) echo "etcd Version: $ETCD_VERSION" ;;
    kubectl) echo "Client Version: $K8S_VERSION" ;;
    *) echo "Kubernetes $K8S_VERSION" ;;
  esac
}
BINARIES=(etcd kube-apiserver kube-controller-manager kubectl)
if [ "${1:-}" = "--with-node" ]; then BINARIES+=(kubelet kube-proxy kube-scheduler); fi
missing=()
for b in "${BINARIES[@]}"; do
  if [ "${CONTROL_PLANE_FORCE_BUILD:-0}" = "1" ] || [ ! -x "$BIN_DIR/$b" ] ||
    [ "$(version_of "$b" || true)" != "$(expected_of "$b")" ]; then
    missing+=("$b")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "control-plane: ${BINARIES[*]} (etcd $ETCD_VERSION, Kubernetes $K8S_VERSION) already in $BIN_DIR" >&2
  echo "$BIN_DIR"
  exit 0
fi

GO="${GO:-}"
if [ -z "$GO" ]; then
  if command -v go >/dev/null 2>&1; then GO="$(command -v go)"
  elif [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go
  else echo "control-plane: go not found (set GO=/path/to/go)" >&2; exit 1
  fi
fi

mkdir -p "$BIN_DIR"
echo "control-plane: building ${missing[*]} with $("$GO" version) into $BIN_DIR" >&2
start=$(date +%s)
# The version ldflags make each binary report its release (not v0.0.0-master), which the API
# server also uses for its emulated version. etcd's version is a constant in its api module.
minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
ver="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
ver="$ver -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
ver="$ver -X k8s.io/component-base/version.gitTreeState=clean"
ver="$ver -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
ver="$ver -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
pkgs=()
for b in "${missing[@]}"; do pkgs+=("./cmd/$b"); done
# One `go build` for all of them: the packages they share compile once. -mod=readonly: go.sum is
# committed, so the build never rewrites it. CGO off: static binaries, no C toolchain needed.
# Into a temp dir first, so that an interrupted build never leaves a half-written binary.
tmp="$(mktemp -d "$BIN_DIR/.control-plane.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
(cd "$HERE" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -buildvcs=false -mod=readonly" \
  "$GO" build -trimpath -ldflags "-s -w $ver" -o "$tmp/" "${pkgs[@]}") >&2
for b in "${missing[@]}"; do mv -f "$tmp/$b" "$BIN_DIR/$b"; done
echo "control-plane: built ${missing[*]} in $(( $(date +%s) - start ))s" >&2

for b in "${BINARIES[@]}"; do
  got="$(version_of "$b" || true)"
  if [ "$got" != "$(expected_of "$b")" ]; then
    echo "control-plane: $BIN_DIR/$b reports '$got', expected '$(expected_of "$b")'" >&2
    exit 1
  fi
done
echo "$BIN_DIR"
