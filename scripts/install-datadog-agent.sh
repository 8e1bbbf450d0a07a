#!/usr/bin/env bash
# Builds the stand-in Datadog agent the trace plugin's datadog tests export to (the agent's
# /v0.4/traces intake, decoding with the agent's own pbgo/trace msgpack code) from
# tools/datadog-agent into $REPO/.bin/datadog-agent, cached and idempotent:
# scripts/install-go-tool.sh.
# Usage: scripts/install-datadog-agent.sh   (prints the absolute path of the binary)
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/install-go-tool.sh" datadog-agent
