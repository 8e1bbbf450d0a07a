#!/usr/bin/env bash
# Installs h2spec (the HTTP/2 conformance tester the DoH listener's HTTP/2 layer is checked with,
# src/server/h2session.test.ts) into $REPO/.bin/h2spec through the Go module proxy when it is missing.
# Idempotent (scripts/install-go-command.sh). Prints the absolute path of the h2spec binary.
# Env:   H2SPEC_VERSION (default below: the newest version the module proxy serves), GO, GOBIN_DIR
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/install-go-command.sh" h2spec github.com/summerwind/h2spec cmd/h2spec \
  "${H2SPEC_VERSION:-v2.2.1+incompatible}"
