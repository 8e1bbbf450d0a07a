#!/usr/bin/env bash
# Builds the Zipkin v2 collector the trace plugin's tests export to (the Zipkin HTTP API on
# zipkin-go's span model) from tools/zipkin-collector into $REPO/.bin/zipkin-collector, cached
# and idempotent: scripts/install-go-tool.sh.
# Usage: scripts/install-zipkin-collector.sh   (prints the absolute path of the binary)
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/install-go-tool.sh" zipkin-collector
