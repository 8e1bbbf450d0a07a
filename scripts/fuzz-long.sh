#!/bin/sh
# Long fuzz run of src/server/fuzz.test.ts against an in-process server (UDP and TCP, loopback only).
# Usage: scripts/fuzz-long.sh [SEED] [SECONDS]   (default: a random seed, 600 s)
# The seed is printed first and in every failure message; rerun with it to reproduce.
set -eu
cd "$(dirname "$0")/.."
seed=${1:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
secs=${2:-600}
echo "fuzz: seed $seed, $secs s"
FUZZ_SEED=$seed FUZZ_DURATION_MS=$((secs * 1000)) exec npx vitest run src/server/fuzz.test.ts
