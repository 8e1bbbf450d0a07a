#!/bin/bash
# RSS of `clusterdns node-cache` (docs/node-cache.md, "Memory") on a node of its own: a network
# namespace with the upstream DaemonSet's Corefile.base (test/fixtures/node-cache/upstream/),
# `-localip 169.254.20.10`, and CoreDNS 1.15.0 (.bin/coredns) inside the namespace as the cluster
# DNS it forwards to (answering every A name with one address). Prints VmRSS after start-up and
# 20 s idle, then after 9,984 distinct cluster.local names (the cache's `success 9984`), sampled
# every 10 s for a minute: V8's memory reducer gives the burst's garbage back some tens of seconds
# after the load, so the last sample is the settled figure. Then the CPU cost: the same names again
# (cache hits) at a fixed 2,000 queries/s for 10 s, answers divided by the process's CPU seconds
# (utime + stime of every thread, /proc/PID/stat) — a flag that saves memory by spending CPU shows
# there. Last, where the RSS is (smaps_rollup: file-backed pages, mostly the node binary's own
# text and data, against anonymous memory: the heaps, malloc, stacks).
#
#   sudo bash scripts/measure-node-cache-memory.sh [CHECKOUT]   # CHECKOUT: another built checkout (A/B)
#   sudo NODE_FLAGS="--max-semi-space-size=2 --v8-pool-size=0" bash scripts/measure-node-cache-memory.sh
#
# NODE_FLAGS: node's options, as the image's ENTRYPOINT passes them (default: the Dockerfile's,
# --max-semi-space-size=2). MALLOC_ARENA_MAX in the environment is passed on (the launcher sets 2
# when it is unset, as the image does).
# Needs root (ip netns), nft, dnsperf, curl, a build (npm run build) and .bin/coredns.
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
ROOT=$(cd "${1:-$HERE}" && pwd)
NODE=${NODE:-$HERE/node_modules/.bin/node}
NODE_FLAGS=${NODE_FLAGS---max-semi-space-size=2}
NS=cdns-ncmem-$$
D=$(mktemp -d)
UP=
NC=
step() { echo "measure-node-cache-memory: [$1/5] $2" >&2; }
fail() {
  echo "measure-node-cache-memory: step $1 failed: $2" >&2
  exit 1
}
cleanup() {
  [ -n "$NC" ] && kill "$NC" 2>/dev/null
  [ -n "$UP" ] && kill "$UP" 2>/dev/null
  wait 2>/dev/null
  ip netns delete "$NS" 2>/dev/null
  rm -rf "$D"
}
trap cleanup EXIT

step 1 "network namespace $NS and the upstream (CoreDNS 1.15.0 on 127.0.0.2:53)"
ip netns add "$NS" || fail 1 "ip netns add (needs root and iproute2)"
ip netns exec "$NS" ip link set lo up
ip netns exec "$NS" ip addr add 127.0.0.2/8 dev lo 2>/dev/null
cat > "$D/upstream" <<C
.:53 {
  bind 127.0.0.2
  template IN A {
    answer "{{ .Name }} 30 IN A 10.1.2.3"
  }
  template IN AAAA {
    rcode NOERROR
  }
}
C
[ -x "$HERE/.bin/coredns" ] || fail 1 ".bin/coredns is missing: run scripts/install-coredns.sh"
ip netns exec "$NS" "$HERE/.bin/coredns" -conf "$D/upstream" > "$D/upstream.log" 2>&1 &
UP=$!

step 2 "starting $ROOT/bin/clusterdns node-cache and waiting for its health endpoint"
# The kube-dns Service's address comes from the variable when the API (-kubeapi) cannot be reached.
# shellcheck disable=SC2086 # NODE_FLAGS is a list of options
(cd "$D" && exec ip netns exec "$NS" env KUBE_DNS_SERVICE_HOST=127.0.0.2 "$NODE" $NODE_FLAGS "$ROOT/bin/clusterdns" node-cache \
  -localip 169.254.20.10 -basecorefile "$HERE/test/fixtures/node-cache/upstream/Corefile.base" \
  -conf "$D/Corefile" -metrics-listen-address 127.0.0.1:9353 -kubeapi http://127.0.0.1:1) > "$D/nc.log" 2>&1 &
NC=$!
ok=
for _ in $(seq 300); do
  ip netns exec "$NS" curl -s -o /dev/null -w '%{http_code}' http://169.254.20.10:8080/health 2>/dev/null | grep -q 200 && ok=1 && break
  sleep 0.2
done
[ -n "$ok" ] || fail 2 "node-cache did not become healthy; its log: $(tail -20 "$D/nc.log")"
# `ip netns exec` execs node, and the launcher re-executes node in place: one process, this pid.
rss() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$NC/status"; }
sleep 20
IDLE=$(rss)

step 3 "9,984 distinct names (dnsperf, 4 clients) into the cache"
for i in $(seq 0 9983); do echo "n$i.svc-x.default.svc.cluster.local A"; done > "$D/q.txt"
ip netns exec "$NS" dnsperf -s 169.254.20.10 -p 53 -d "$D/q.txt" -n 1 -c 4 -q 100 > "$D/perf.log" 2>&1 ||
  fail 3 "dnsperf failed; its log: $(cat "$D/perf.log")"
ENTRIES=$(ip netns exec "$NS" curl -s http://127.0.0.1:9253/metrics | awk '/^coredns_cache_entries.*success/ {s += $2} END {print s + 0}')

step 4 "RSS every 10 s for a minute"
SERIES=
for _ in 1 2 3 4 5 6; do
  sleep 10
  kill -0 "$NC" 2>/dev/null || fail 4 "node-cache exited; its log: $(tail -20 "$D/nc.log")"
  SERIES="$SERIES $(rss)"
done
step 5 "CPU per answer: the same names (cache hits) at 2,000 queries/s for 10 s"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$NC/stat"; }
T0=$(cpu_ticks)
ip netns exec "$NS" dnsperf -s 169.254.20.10 -p 53 -d "$D/q.txt" -l 10 -Q 2000 -c 4 -q 100 > "$D/perf2.log" 2>&1 ||
  fail 5 "dnsperf failed; its log: $(cat "$D/perf2.log")"
T1=$(cpu_ticks)
ANSWERED=$(awk '/Queries completed:/ {print $3}' "$D/perf2.log")
HZ=$(getconf CLK_TCK)
PER_CPU_S=$(awk -v n="$ANSWERED" -v t=$((T1 - T0)) -v hz="$HZ" 'BEGIN {printf "%.0f", (t > 0 ? n * hz / t : 0)}')
BREAKDOWN=$(awk '/^(Rss|Anonymous|Shared_Clean|Private_Clean):/ {printf "%s%s=%.1f", sep, tolower($1), $2 / 1024; sep = " "}' "/proc/$NC/smaps_rollup" | tr -d ':')
THREADS=$(ls "/proc/$NC/task" | wc -l)
echo "checkout=$ROOT node_flags=\"$NODE_FLAGS\" malloc_arena_max=${MALLOC_ARENA_MAX:-2} rss_idle_mib=$IDLE cache_success_entries=$ENTRIES rss_after_cache_every_10s_mib=${SERIES# } hits_answered=$ANSWERED answers_per_cpu_second=$PER_CPU_S smaps_mib=\"$BREAKDOWN\" threads=$THREADS"
