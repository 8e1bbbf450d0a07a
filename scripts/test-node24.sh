#!/usr/bin/env bash
# Runs the test suite (vitest, on the already built dist/) on Node 24, the runtime the image
# ships, after installing it with scripts/install-node24.sh. Node 24 comes first in PATH and runs
# vitest itself, so every process the tests start — bin/clusterdns (spawned with
# process.execPath), the sandbox API server, helpers run as `node` — runs on Node 24 too.
# The JSON report goes to dist/test-report-node24.json (the Node 20 run writes dist/test-report.json).
# Usage: npm run test:node24   (or scripts/test-node24.sh [vitest arguments…])
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

node24="$(bash scripts/install-node24.sh)"
export PATH="$(dirname "$node24"):$PATH"
# The runtime test (test/e2e/runtime.test.ts) checks that the tests really run on this one.
export CLUSTERDNS_TEST_NODE="$("$node24" --version)"
if [ ! -f dist/src/main.js ]; then
  echo "test-node24: dist/ is not built; run \`npm run build\` first" >&2
  exit 1
fi
echo "test-node24: running vitest on $(command -v node) ($CLUSTERDNS_TEST_NODE)"
exec node node_modules/vitest/vitest.mjs run --outputFile.json=dist/test-report-node24.json "$@"
