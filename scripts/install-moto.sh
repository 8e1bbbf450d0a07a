#!/usr/bin/env bash
# Makes sure `moto_server` (moto's stand-alone server mode, which speaks the AWS APIs on a local
# port) is there for the route53 plugin's tests (test/helpers/moto.ts). moto is a Python package:
# Debian 12 has no python3-moto, so it comes from PyPI (`pip install 'moto[server]'`). Idempotent:
# with moto_server on PATH (or in ~/.pyenv/shims) it only prints its path and version.
# Usage: scripts/install-moto.sh      Env: MOTO_VERSION (default below), PYTHON (default python3)
set -euo pipefail

MOTO_VERSION="${MOTO_VERSION:-5.2.1}"
PYTHON="${PYTHON:-python3}"

find_moto() {
  if [ -n "${MOTO_SERVER:-}" ] && [ -x "$MOTO_SERVER" ]; then echo "$MOTO_SERVER"; return 0; fi
  for c in "$(command -v moto_server 2>/dev/null || true)" "$HOME/.pyenv/shims/moto_server" "$HOME/.local/bin/moto_server"; do
    [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
  done
  return 1
}

if m="$(find_moto)"; then
  echo "install-moto: $m" >&2
  echo "$m"
  exit 0
fi

echo "install-moto: step 1/1: pip install --user 'moto[server]==$MOTO_VERSION' with $PYTHON (PyPI)" >&2
if ! "$PYTHON" -m pip install --user --quiet "moto[server]==$MOTO_VERSION" >&2; then
  echo "install-moto: pip could not install moto $MOTO_VERSION (read pip's output above: without a" \
    "route to pypi.org, install it from a wheel mirror, or set MOTO_SERVER=/path/to/moto_server)." \
    "The route53 tests need it and fail saying so." >&2
  exit 1
fi
m="$(find_moto)" || { echo "install-moto: installed, but moto_server is not on PATH (add ~/.local/bin)" >&2; exit 1; }
echo "$m"
