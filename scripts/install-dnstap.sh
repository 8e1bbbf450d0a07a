#!/usr/bin/env bash
# Installs golang-dnstap's `dnstap` command (the real dnstap reader the dnstap plugin's tests read
# clusterdns's frames with) into $REPO/.bin/dnstap through the Go module proxy when it is missing.
# Idempotent (scripts/install-go-command.sh). Prints the absolute path of the dnstap binary.
# Env:   DNSTAP_VERSION (default below), GO (path to the go binary), GOBIN_DIR (default $REPO/.bin)
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/install-go-command.sh" dnstap github.com/dnstap/golang-dnstap dnstap \
  "${DNSTAP_VERSION:-v0.4.0}"
