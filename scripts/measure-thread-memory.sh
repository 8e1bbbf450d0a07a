#!/bin/bash
# What a query thread costs (docs/multicore.md §2): RSS of clusterdns with -workers W against the
# sandbox API server with a synthetic cluster (10,000 Services, 30,000 pods), kubeadm's Corefile
# shape, after sync and after 30,000 queries (every Service three times, dnsperf, 16 clients),
# and the number of glibc malloc arenas the server has then. Everything listens on 127.0.0.1.
#
#   bash scripts/measure-thread-memory.sh W [CHECKOUT]    # CHECKOUT: another built checkout (A/B)
#   MEMORY_LIMIT=256M bash scripts/measure-thread-memory.sh W   # in a memory cgroup of that limit
#   MALLOC_ARENA_MAX=2 bash scripts/measure-thread-memory.sh W  # the image's setting (Dockerfile)
#
# MEMORY_LIMIT runs the server in a new memory cgroup below this shell's own (cgroup v2, or the v1
# memory controller), as a pod's container: the launcher then sizes the heap from that limit, and
# the peak the cgroup saw is printed. It needs write access to this shell's cgroup (root in a
# container or VM; with systemd, run the script under `systemd-run --user --scope -p Delegate=yes`).
#
# Needs a build (npm run build) and dnsperf. Runs clusterdns on the Node 24 that npm ci installed
# (node_modules/.bin/node; NODE=... to choose another).
set -u
W=${1:?usage: measure-thread-memory.sh WORKERS [CHECKOUT]}
ROOT=${2:-.}
NODE=${NODE:-$PWD/node_modules/.bin/node}
D=$(mktemp -d)
CG=
DNS=
SB=
cleanup() {
  kill $DNS $SB 2>/dev/null
  wait 2>/dev/null
  [ -n "$CG" ] && rmdir "$CG" 2>/dev/null
  rm -rf "$D"
}
trap cleanup EXIT
step() { echo "measure-thread-memory: [$1/5] $2" >&2; }
fail() {
  echo "measure-thread-memory: step $1 failed: $2" >&2
  exit 1
}

# Glibc arenas besides the main one: each is a heap mapped at a 64 MiB boundary, 64 MiB long
# (its used part read-write, the rest PROT_NONE), anonymous. The main arena (brk) is counted too.
arenas() {
  awk '
    function hex(s,  i, c, n) { n = 0; for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; n = n * 16 + c } return n }
    {
      split($1, r, "-"); lo = hex(r[1]); hi = hex(r[2]); anon = (NF == 5)
      if (!anon) { run = 0; next }
      if (run && lo == end) { end = hi; size = end - start }
      else if (lo % 67108864 == 0 && $2 ~ /^rw/) { run = 1; start = lo; end = hi; size = end - start }
      else { run = 0; next }
      if (size == 67108864) { n++; run = 0 } else if (size > 67108864) run = 0
    }
    END { print n + 1 }' "/proc/$1/maps"
}

if [ -n "${MEMORY_LIMIT:-}" ]; then
  step 0 "creating a memory cgroup of $MEMORY_LIMIT"
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    CG=/sys/fs/cgroup$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)/clusterdns-measure-$$
    LIMIT_FILE=memory.max PEAK_FILE=memory.peak
  else
    CG=/sys/fs/cgroup/memory$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' /proc/self/cgroup)/clusterdns-measure-$$
    LIMIT_FILE=memory.limit_in_bytes PEAK_FILE=memory.max_usage_in_bytes
  fi
  mkdir "$CG" || fail 0 "cannot create $CG (needs write access to this shell's cgroup; see the header)"
  echo "$MEMORY_LIMIT" > "$CG/$LIMIT_FILE" || fail 0 "cannot set $CG/$LIMIT_FILE"
fi

step 1 "starting the sandbox API server (10,000 Services, 30,000 pods)"
"$NODE" dist/sandbox/main.js --port 0 --synthetic-services 10000 --synthetic-pods 30000 > "$D/sb.log" 2>&1 &
SB=$!
for _ in $(seq 100); do grep -q "listening on" "$D/sb.log" && break; sleep 0.2; done
URL=$(grep -o "listening on http://[^ ]*" "$D/sb.log" | awk '{print $3}')
[ -n "$URL" ] || fail 1 "the sandbox did not start; its log: $(cat "$D/sb.log") (run npm run build first)"
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
step 2 "starting clusterdns -workers $W (MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-unset}) and waiting for /ready"
if [ -n "$CG" ]; then
  # Into the cgroup before node starts, as a container's process is.
  sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$CG" \
    "$NODE" --max-semi-space-size=2 "$ROOT/bin/clusterdns" -conf "$D/Corefile" -workers "$W" > "$D/dns.log" 2>&1 &
else
  "$NODE" --max-semi-space-size=2 "$ROOT/bin/clusterdns" -conf "$D/Corefile" -workers "$W" > "$D/dns.log" 2>&1 &
fi
DNS=$!
for _ in $(seq 300); do curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((P + 1))/ready" 2>/dev/null | grep -q 200 && break; sleep 0.2; done
kill -0 "$DNS" 2>/dev/null || fail 2 "clusterdns exited; its log: $(cat "$D/dns.log")"
# Every thread is up and has the index (the scrape counts the threads serving).
if [ "$W" -gt 1 ]; then
  for _ in $(seq 100); do curl -s "http://127.0.0.1:$((P + 2))/metrics" | grep -q "^clusterdns_query_threads $W" && break; sleep 0.2; done
fi
# The same settling time for every W: V8 returns the list's garbage some seconds after sync.
step 3 "settling for 20 s after sync"
sleep 20
rss() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$DNS/status"; }
AFTER_SYNC=$(rss)
step 4 "30,000 queries (dnsperf, 16 clients)"
curl -s "$URL/api/v1/services" | "$NODE" -e 'let s="";process.stdin.on("data",(d)=>(s+=d)).on("end",()=>{for(const i of JSON.parse(s).items)console.log(`${i.metadata.name}.${i.metadata.namespace}.svc.cluster.local A`)})' > "$D/q.txt"
dnsperf -s 127.0.0.1 -p "$P" -d "$D/q.txt" -n 3 -c 16 -q 200 > "$D/perf.log" 2>&1 || fail 4 "dnsperf failed; its log: $(cat "$D/perf.log")"
step 5 "settling for 10 s after the queries"
sleep 10
kill -0 "$DNS" 2>/dev/null || fail 5 "clusterdns exited (out of memory?); its log: $(tail -20 "$D/dns.log")"
PEAK=
[ -n "$CG" ] && PEAK=" cgroup_limit=$MEMORY_LIMIT cgroup_peak_mib=$(awk '{printf "%.1f", $1 / 1048576}' "$CG/$PEAK_FILE")"
echo "workers=$W checkout=$ROOT malloc_arena_max=${MALLOC_ARENA_MAX:-unset} rss_after_sync_mib=$AFTER_SYNC rss_after_queries_mib=$(rss) arenas=$(arenas "$DNS")$PEAK"
