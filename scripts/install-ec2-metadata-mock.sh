#!/usr/bin/env bash
# Builds AWS's EC2 instance metadata mock (github.com/aws/amazon-ec2-metadata-mock, IMDSv1 and v2,
# region and instance-role credentials) through the Go module proxy into
# $REPO/.bin/ec2-metadata-mock, for the route53 tests of instance-role credentials and the region
# lookup (test/helpers/ec2metadata.ts). Idempotent: when the binary at the pinned version is there
# it only prints the path.
# Usage: scripts/install-ec2-metadata-mock.sh   (prints the absolute path of the binary)
# Env:   GO (path to the go binary), GOBIN_DIR (default $REPO/.bin)
set -euo pipefail

VERSION=v1.13.0
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN_DIR="${GOBIN_DIR:-$REPO_ROOT/.bin}"
OUT="$BIN_DIR/ec2-metadata-mock"

GO="${GO:-}"
if [ -z "$GO" ]; then
  if command -v go >/dev/null 2>&1; then GO="$(command -v go)"
  elif [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go
  else echo "install-ec2-metadata-mock: go not found (set GO=/path/to/go)" >&2; exit 1
  fi
fi

# The binary prints its module version on --version.
if [ -x "$OUT" ] && "$OUT" --version 2>/dev/null | grep -q -- "$VERSION"; then
  echo "$OUT"
  exit 0
fi

mkdir -p "$BIN_DIR"
echo "install-ec2-metadata-mock: step 1/1: go install amazon-ec2-metadata-mock@$VERSION ($("$GO" version)) into $OUT" >&2
start=$(date +%s)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# `go install pkg@version` records the module version, which --version prints (the check above).
GOBIN="$tmp" CGO_ENABLED=0 "$GO" install -trimpath \
  "github.com/aws/amazon-ec2-metadata-mock/cmd/ec2-metadata-mock@$VERSION" >&2 || {
  echo "install-ec2-metadata-mock: go install failed (read the go output above; a download error" \
    "means the Go module proxy, GOPROXY, is unreachable)" >&2
  exit 1
}
mv -f "$tmp/ec2-metadata-mock" "$OUT"
echo "install-ec2-metadata-mock: done in $(( $(date +%s) - start ))s" >&2
echo "$OUT"
