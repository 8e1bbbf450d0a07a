# Shared by the real-node cluster scripts (up.sh, down.sh, status.sh, images.sh, node.sh): where
# things live, and how steps report progress and failures. Sourced, never run.
#
# Layout (all inside the checkout, nothing elsewhere on the machine):
#   .cluster/env        shell variables for users and tests (KUBECONFIG, NETNS, KUBECTL, ...)
#   .cluster/kubectl    kubectl wrapper that enters the namespace (the API server lives only there)
#   .cluster/helm       the same for helm (the tests switch the chart's nodeLocalDNS with it)
#   .cluster/node/      the node's state: etcd data, credentials, configs, kubelet and containerd
#                       roots (removed by down.sh)
#   .cluster/logs/      one log per component and per step (kept by down.sh for post-mortems,
#                       replaced by the next up.sh)
#   .cluster/images/    OCI archives of the images, rebuilt only when their inputs change (kept)

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CLUSTER_DIR="${CLUSTER_DIR:-$REPO_ROOT/.cluster}"
NODE_DIR="$CLUSTER_DIR/node"
LOG_DIR="$CLUSTER_DIR/logs"
IMAGE_DIR="$CLUSTER_DIR/images"
BIN_DIR="${GOBIN_DIR:-$REPO_ROOT/.bin}"
NODE_BIN="$REPO_ROOT/node_modules/.bin/node"
# The namespace's name; one cluster per machine (the node's addresses are fixed).
NETNS="${CLUSTER_NETNS:-clusterdns}"
# The node's one address, on a veth inside the namespace whose peer is inside too: nothing routes
# beyond it.
NODE_IP=10.255.0.1
NODE_NAME=node0
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/16
DNS_IP=10.96.0.10
# The reference CoreDNS 1.15.0's Service (release coredns-ref).
COREDNS_IP=10.96.0.11
# NodeLocal DNSCache's address on the node (the chart's nodeLocalDNS.localIP, upstream's default):
# kubelet's clusterDNS with cluster:up --node-local.
NODE_LOCAL_IP=169.254.20.10
# The cgroup subtree (in every v1 controller, or under the v2 root) that holds every pod.
CGROUP_ROOT=/clusterdns-node
# Host sysctls kubelet and kube-proxy may change; up.sh records them, down.sh restores them.
HOST_SYSCTLS=(kernel.panic kernel.panic_on_oops vm.overcommit_memory vm.panic_on_oom
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.netfilter.nf_conntrack_max
  net.nf_conntrack_max net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables
  net.ipv4.ip_forward)
IMAGE_TAG=test
IMAGE_CLUSTERDNS=localhost/clusterdns/clusterdns
IMAGE_PAUSE=localhost/clusterdns/pause
IMAGE_CLIENT_GLIBC=localhost/clusterdns/client-glibc
IMAGE_CLIENT_MUSL=localhost/clusterdns/client-musl
IMAGE_COREDNS=localhost/clusterdns/coredns
IMAGE_NODE_CACHE=localhost/clusterdns/node-cache

SCRIPT_NAME="${SCRIPT_NAME:-cluster}"
STEP_NAME=""
STEP_LOG=""
STEP_START=0

# step N TOTAL NAME [LOG]: announce a step; its output goes to LOG (default logs/step-N-NAME.log).
step() {
  STEP_NAME="$3"
  local slug
  slug="$(printf '%s' "$3" | tr -cs 'A-Za-z0-9' '-' | cut -c1-40)"
  STEP_LOG="${4:-$LOG_DIR/step-$1-${slug%-}.log}"
  STEP_START=$(date +%s)
  mkdir -p "$(dirname "$STEP_LOG")"
  echo "[$SCRIPT_NAME $1/$2] $3 ..." >&2
}
step_done() {
  echo "[$SCRIPT_NAME] $STEP_NAME: done in $(($(date +%s) - STEP_START))s${1:+ ($1)}" >&2
}
# fail HINT: the step failed; name it, its log and the likely fix, show the log's tail, exit 1.
fail() {
  echo "[$SCRIPT_NAME] FAILED at step '$STEP_NAME'${STEP_LOG:+ (log: $STEP_LOG)}" >&2
  [ -n "$1" ] && echo "[$SCRIPT_NAME] likely fix: $1" >&2
  if [ -n "$STEP_LOG" ] && [ -s "$STEP_LOG" ]; then
    echo "---- last lines of $STEP_LOG ----" >&2
    tail -n 25 "$STEP_LOG" >&2
    echo "----" >&2
  fi
  exit 1
}
# run_logged CMD...: run CMD with its output appended to the step's log.
run_logged() {
  "$@" >>"$STEP_LOG" 2>&1
}
# run_with_heartbeat WHAT CMD...: run_logged, printing "still WHAT (Ns)" every 30 s meanwhile.
run_with_heartbeat() {
  local what="$1" pid t0 rc
  shift
  t0=$(date +%s)
  "$@" >>"$STEP_LOG" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    for _ in $(seq 1 30); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 1
    done
    kill -0 "$pid" 2>/dev/null && echo "[$SCRIPT_NAME]   still $what ($(($(date +%s) - t0))s)" >&2
  done
  wait "$pid"
  rc=$?
  return "$rc"
}
# wait_until SECONDS WHAT CMD...: poll CMD every second, printing progress every 10 s.
wait_until() {
  local limit="$1" what="$2" t0 now
  shift 2
  t0=$(date +%s)
  while ! "$@" >/dev/null 2>&1; do
    now=$(date +%s)
    if [ $((now - t0)) -ge "$limit" ]; then return 1; fi
    if [ $(((now - t0) % 10)) -eq 0 ] && [ $((now - t0)) -gt 0 ]; then
      echo "[$SCRIPT_NAME]   still waiting for $what ($((now - t0))s of ${limit}s)" >&2
    fi
    sleep 1
  done
}

# exited NAME: node.sh reported that component NAME exited (waits stop early instead of timing out).
exited() {
  grep -q "node: $1 exited" "$LOG_DIR/node.log" 2>/dev/null
}
# wait_until_up SECONDS WHAT COMPONENT CMD...: wait_until, but give up at once if COMPONENT exited.
wait_until_up() {
  local limit="$1" what="$2" comp="$3" t0 now
  shift 3
  t0=$(date +%s)
  while ! "$@" >/dev/null 2>&1; do
    if exited "$comp"; then
      echo "[$SCRIPT_NAME]   $comp exited while waiting for $what" >&2
      return 1
    fi
    now=$(date +%s)
    if [ $((now - t0)) -ge "$limit" ]; then return 1; fi
    if [ $(((now - t0) % 10)) -eq 0 ] && [ $((now - t0)) -gt 0 ]; then
      echo "[$SCRIPT_NAME]   still waiting for $what ($((now - t0))s of ${limit}s)" >&2
    fi
    sleep 1
  done
}

# The supervisor's pid (node.sh), whose mount namespace holds the node's mounts.
# The pid file outlives a reboot or the supervisor's own exit, and its number may since belong to
# an unrelated process: only a process running node.sh counts, so down.sh never signals (or
# enters the namespaces of) anything else on the machine.
node_pid() {
  local pid
  pid="$(cat "$NODE_DIR/node.pid" 2>/dev/null)" || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'scripts/cluster/node\.sh' || return 1
  echo "$pid"
}
# in_node CMD...: run CMD in the node's network and mount namespaces (ctr, crictl, mount).
in_node() {
  local pid
  pid="$(node_pid)" || { echo "$SCRIPT_NAME: the node is not running" >&2; return 1; }
  nsenter -t "$pid" -m -n -- "$@"
}
# in_netns CMD...: run CMD in the node's network namespace only (kubectl, helm, dig).
in_netns() {
  nsenter --net="/run/netns/$NETNS" -- "$@"
}
kubectl_node() {
  in_netns "$BIN_DIR/kubectl" --kubeconfig "$NODE_DIR/admin.kubeconfig" "$@"
}

# apiserver_argv: kube-apiserver's command line into APISERVER_ARGV, shared by node.sh (which
# starts it) and apiserver.sh (which stops and restarts it for the test of an API outage).
apiserver_argv() {
  APISERVER_ARGV=("$BIN_DIR/kube-apiserver" --etcd-servers http://127.0.0.1:2379
    --bind-address 0.0.0.0 --secure-port 6443 --advertise-address "$NODE_IP"
    --cert-dir "$NODE_DIR/apiserver-certs" --tls-cert-file "$NODE_DIR/apiserver.crt"
    --tls-private-key-file "$NODE_DIR/apiserver.key"
    --client-ca-file "$NODE_DIR/ca.crt" --token-auth-file "$NODE_DIR/tokens.csv"
    --service-account-issuer https://kubernetes.default.svc.cluster.local
    --service-account-key-file "$NODE_DIR/sa.pub" --service-account-signing-key-file "$NODE_DIR/sa.key"
    --authorization-mode Node,RBAC --service-cluster-ip-range "$SERVICE_CIDR" --allow-privileged
    --kubelet-preferred-address-types InternalIP --profiling=false)
}
# netns_proc NAME: the pid of the process in the namespace whose executable is NAME (first one).
netns_proc() {
  ip netns pids "$NETNS" 2>/dev/null | while read -r x; do
    [ "$(basename "$(readlink "/proc/$x/exe" 2>/dev/null)")" = "$1" ] && echo "$x"
  done | head -n1
}
