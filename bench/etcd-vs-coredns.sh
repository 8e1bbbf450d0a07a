#!/usr/bin/env bash
# The etcd plugin's answer rate beside CoreDNS 1.15.0's, both reading one etcd (.bin/etcd) that
# holds test/fixtures/etcd/externaldns.ts's keys: clusterdns answers from its watched index,
# CoreDNS reads etcd for every query. dnsperf (the host's) sends the same mix of names to each
# server in alternation, ROUNDS times, for SECONDS each; every server has one CPU thread
# (clusterdns -workers 1, CoreDNS GOMAXPROCS=1). Needs `npm run build` and .bin/{etcd,coredns}.
# Usage: bash bench/etcd-vs-coredns.sh [SECONDS] [ROUNDS]
set -euo pipefail
SECONDS_EACH=${1:-10}
ROUNDS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/etcd-bench-XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "etcd-vs-coredns: step '$1' failed; read $2 ($3)" >&2; exit 1; }
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

echo "[1/4] starting etcd"
EP=$(port); PP=$(port)
"$ROOT/.bin/etcd" --name b --data-dir "$WORK/etcd" --listen-client-urls "http://127.0.0.1:$EP" \
  --advertise-client-urls "http://127.0.0.1:$EP" --listen-peer-urls "http://127.0.0.1:$PP" \
  --initial-advertise-peer-urls "http://127.0.0.1:$PP" --initial-cluster "b=http://127.0.0.1:$PP" \
  --unsafe-no-fsync --log-level warn >"$WORK/etcd.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$EP/health" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$EP/health" >/dev/null || fail 'starting etcd' "$WORK/etcd.log" 'is .bin/etcd built? bash scripts/control-plane/build.sh'

echo "[2/4] writing the fixture's keys"
"$ROOT/node_modules/.bin/node" --input-type=module -e "
  const { EXTERNAL_DNS_KEYS } = await import('$ROOT/test/fixtures/etcd/externaldns.ts');
  for (const [k, v] of Object.entries(EXTERNAL_DNS_KEYS)) {
    const b = (s) => Buffer.from(s).toString('base64');
    const r = await fetch('http://127.0.0.1:$EP/v3/kv/put', { method: 'POST', body: JSON.stringify({ key: b(k), value: b(JSON.stringify(v)) }) });
    if (!r.ok) throw new Error('put ' + k + ': ' + r.status);
  }" || fail 'writing keys' "$WORK/etcd.log" 'needs node_modules/.bin/node (Node 24, type stripping)'

echo "[3/4] starting CoreDNS and clusterdns"
COREFILE="skydns.test {
  etcd {
    endpoint http://127.0.0.1:$EP
  }
}"
printf '%s\n' "$COREFILE" >"$WORK/Corefile"
CP=$(port); KP=$(port)
(cd "$WORK" && GOMAXPROCS=1 exec "$ROOT/.bin/coredns" -conf "$WORK/Corefile" -dns.port "$CP" >"$WORK/coredns.log" 2>&1) &
PIDS+=($!)
(cd "$WORK" && exec "$ROOT/bin/clusterdns" -conf "$WORK/Corefile" -dns.port "$KP" -workers 1 >"$WORK/clusterdns.log" 2>&1) &
PIDS+=($!)
for p in "$CP" "$KP"; do
  for _ in $(seq 100); do dig +short +time=1 +tries=1 -p "$p" @127.0.0.1 www.skydns.test A | grep -q 10.0.0 && break; sleep 0.2; done
  dig +short +time=1 +tries=1 -p "$p" @127.0.0.1 www.skydns.test A | grep -q 10.0.0 || fail 'starting servers' "$WORK/coredns.log and $WORK/clusterdns.log" 'see the logs'
done
cat >"$WORK/queries" <<Q
www.skydns.test A
alias.skydns.test A
svc._tcp._http.skydns.test SRV
mail.skydns.test MX
txt.skydns.test TXT
grp.skydns.test A
nosuch.skydns.test A
v6.skydns.test AAAA
Q

echo "[4/4] dnsperf, $ROUNDS rounds of ${SECONDS_EACH}s per server (alternating)"
for r in $(seq "$ROUNDS"); do
  for s in coredns:$CP clusterdns:$KP; do
    name=${s%%:*}; p=${s##*:}
    qps=$(dnsperf -s 127.0.0.1 -p "$p" -d "$WORK/queries" -l "$SECONDS_EACH" -c 8 -q 100 2>&1 | awk '/Queries per second/ {print $4}')
    echo "round $r/$ROUNDS $name: ${qps:-?} queries/s"
  done
done
