#!/bin/bash
# What a query thread costs (docs/multicore.md §2): RSS of clusterdns with -workers W against the
# sandbox API server with a synthetic cluster (10,000 Services, 30,000 pods), kubeadm's Corefile
# shape, after sync and after 30,000 queries (every Service three times, dnsperf, 16 clients).
# Everything listens on 127.0.0.1.
#
#   bash scripts/measure-thread-memory.sh W [CHECKOUT]    # CHECKOUT: another built checkout (A/B)
#
# Needs a build (npm run build) and dnsperf. Runs clusterdns on the Node 24 that npm ci installed
# (node_modules/.bin/node; NODE=... to choose another).
set -u
W=${1:?usage: measure-thread-memory.sh WORKERS [CHECKOUT]}
ROOT=${2:-.}
NODE=${NODE:-$PWD/node_modules/.bin/node}
D=$(mktemp -d)
trap 'kill $DNS $SB 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
"$NODE" dist/sandbox/main.js --port 0 --synthetic-services 10000 --synthetic-pods 30000 > "$D/sb.log" 2>&1 &
SB=$!
for _ in $(seq 100); do grep -q "listening on" "$D/sb.log" && break; sleep 0.2; done
URL=$(grep -o "listening on http://[^ ]*" "$D/sb.log" | awk '{print $3}')
P=$((20000 + RANDOM % 20000))
cat > "$D/Corefile" <<EOC
.:$P {
    errors
    ready 127.0.0.1:$((P + 1))
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       endpoint $URL
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus 127.0.0.1:$((P + 2))
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loadbalance
}
EOC
"$NODE" --max-semi-space-size=2 "$ROOT/bin/clusterdns" -conf "$D/Corefile" -workers "$W" > "$D/dns.log" 2>&1 &
DNS=$!
for _ in $(seq 300); do curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((P + 1))/ready" 2>/dev/null | grep -q 200 && break; sleep 0.2; done
# Every thread is up and has the index (the scrape counts the threads serving).
if [ "$W" -gt 1 ]; then
  for _ in $(seq 100); do curl -s "http://127.0.0.1:$((P + 2))/metrics" | grep -q "^clusterdns_query_threads $W" && break; sleep 0.2; done
fi
# The same settling time for every W: V8 returns the list's garbage some seconds after sync.
sleep 20
rss() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$DNS/status"; }
AFTER_SYNC=$(rss)
curl -s "$URL/api/v1/services" | node -e 'let s="";process.stdin.on("data",(d)=>(s+=d)).on("end",()=>{for(const i of JSON.parse(s).items)console.log(`${i.metadata.name}.${i.metadata.namespace}.svc.cluster.local A`)})' > "$D/q.txt"
dnsperf -s 127.0.0.1 -p "$P" -d "$D/q.txt" -n 3 -c 16 -q 200 > "$D/perf.log" 2>&1
sleep 10
echo "workers=$W checkout=$ROOT rss_after_sync_mib=$AFTER_SYNC rss_after_queries_mib=$(rss)"
