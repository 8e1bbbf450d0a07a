#!/usr/bin/env bash
# Measures (does not assert) how long a client waits for the SERVFAIL of a query through `forward`
# when one upstream is silent (a UDP socket on 127.0.0.1 that never answers) and the other refuses
# (a closed UDP port on 127.0.0.1: ICMP port unreachable). Each server gets the same Corefile and
# answers RUNS queries (distinct names, no cache) one after the other, each asked with
# `dig +tries=1 +time=10`, so the client does not give up before the server does; the time is
# dig's "Query time". Only loopback is used. docs/operations.md ("Upstream failures: time to
# SERVFAIL") quotes the output.
#
# Usage: scripts/measure-servfail-time.sh            (clusterdns, then the real CoreDNS if built)
#        RUNS=9 SERVERS=clusterdns scripts/measure-servfail-time.sh
# Needs dist/ (npm run build), dig; .bin/coredns (scripts/install-coredns.sh) for the CoreDNS row.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs="${RUNS:-5}"
servers="${SERVERS:-clusterdns coredns}"
tmp="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

[ -f dist/src/main.js ] || { echo "measure-servfail-time: dist/ is not built; run \`npm run build\`" >&2; exit 1; }
command -v dig >/dev/null || { echo "measure-servfail-time: dig is not installed (apt-get install dnsutils)" >&2; exit 1; }

# A free UDP port on 127.0.0.1 (bound, then released).
free_udp_port() {
  node -e 'const s=require("dgram").createSocket("udp4");s.bind(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# The silent upstream: reads every datagram, answers none.
node -e 'const s=require("dgram").createSocket("udp4");s.on("message",()=>{});s.bind(0,"127.0.0.1",()=>console.log(s.address().port))' >"$tmp/silent.port" &
pids+=("$!")
for _ in $(seq 100); do [ -s "$tmp/silent.port" ] && break; sleep 0.1; done
silent="$(cat "$tmp/silent.port")"
dead="$(free_udp_port)"
port="$(free_udp_port)"

cat >"$tmp/Corefile" <<EOF
.:$port {
    errors
    forward . 127.0.0.1:$silent 127.0.0.1:$dead
}
EOF
echo "Corefile (silent upstream 127.0.0.1:$silent, refusing 127.0.0.1:$dead):"
sed 's/^/    /' "$tmp/Corefile"
echo "query: dig @127.0.0.1 -p $port +tries=1 +time=10 servfail-N.example.org A   ($runs runs per server)"

for server in $servers; do
  case "$server" in
    clusterdns) cmd=(node bin/clusterdns -quiet -conf "$tmp/Corefile" -pidfile "$tmp/$server.pid") ;;
    coredns)
      if [ ! -x .bin/coredns ]; then echo "$server: skipped, .bin/coredns is not built (scripts/install-coredns.sh)"; continue; fi
      cmd=(.bin/coredns -quiet -conf "$tmp/Corefile" -pidfile "$tmp/$server.pid") ;;
    *) echo "measure-servfail-time: unknown server $server" >&2; exit 2 ;;
  esac
  "${cmd[@]}" >"$tmp/$server.log" 2>&1 &
  spid=$!
  pids+=("$spid")
  for _ in $(seq 300); do [ -s "$tmp/$server.pid" ] && break; sleep 0.1; done
  [ -s "$tmp/$server.pid" ] || { echo "$server did not start:" >&2; cat "$tmp/$server.log" >&2; exit 1; }
  times=()
  for i in $(seq "$runs"); do
    out="$(dig @127.0.0.1 -p "$port" +tries=1 +time=10 "servfail-$i.example.org" A)"
    status="$(sed -n 's/.*status: \([A-Z]*\),.*/\1/p' <<<"$out")"
    ms="$(sed -n 's/^;; Query time: \([0-9]*\) msec.*/\1/p' <<<"$out")"
    [ "$status" = SERVFAIL ] && [ -n "$ms" ] || { echo "$server run $i: no SERVFAIL (status '${status:-none}'):" >&2; echo "$out" >&2; exit 1; }
    times+=("$ms")
  done
  kill "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || true
  sorted=($(printf '%s\n' "${times[@]}" | sort -n))
  n=${#sorted[@]}
  if (( n % 2 )); then median=${sorted[n / 2]}; else median=$(( (sorted[n / 2 - 1] + sorted[n / 2]) / 2 )); fi
  printf '%-10s runs (ms): %s   min %s  median %s  max %s\n' "$server" "${times[*]}" "${sorted[0]}" "$median" "${sorted[n - 1]}"
done
