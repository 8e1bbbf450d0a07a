#!/usr/bin/env bash
# npm run cluster:up — a single-node Kubernetes v1.35.4 with clusterdns installed from
# charts/clusterdns as the kube-dns Service at 10.96.0.10, wholly inside a network namespace this
# script creates (etcd, the API server, kubelet, containerd, kube-proxy and every pod): the
# machine's own namespace gets no address, bridge, route or iptables rule, and the namespace has no
# route out (a veth pair with both ends inside holds the node's address; only the node's /24 and
# the Service range route to it).
# Writes .cluster/env (KUBECONFIG, NETNS, KUBECTL, ...) and prints how to reach the cluster.
# Running it again while the cluster is up only checks it; after a failed run it starts over
# (down.sh first). Every step prints its progress; a failure names the step, its log and the
# likely fix. docs/testing.md ("The real-node cluster") has the layout and how to debug.
# Env: CLUSTER_NETNS (namespace name, default clusterdns), CLUSTER_SKIP_CHART=1 (boot only).
# --node-local: NodeLocal DNSCache as well (issue 26): the chart's nodeLocalDNS DaemonSet
# (`clusterdns node-cache` from the node-cache image) answering on 169.254.20.10, and kubelet's
# clusterDNS pointing pods at that address, as upstream's install instructions do.
set -euo pipefail
NODE_LOCAL=0
for arg in "$@"; do
  case "$arg" in
  --node-local) NODE_LOCAL=1 ;;
  *) echo "cluster:up: unknown argument $arg (usage: npm run cluster:up [-- --node-local])" >&2; exit 2 ;;
  esac
done
SCRIPT_NAME=cluster:up
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
HERE="$REPO_ROOT/scripts/cluster"
TOTAL=9
T_START=$(date +%s)

[ "$(id -u)" = 0 ] || { echo "cluster:up: needs root (network namespace, mounts, cgroups, containerd)" >&2; exit 1; }

if node_pid >/dev/null && [ -f "$CLUSTER_DIR/env" ] &&
  kubectl_node get --raw /readyz >/dev/null 2>&1; then
  echo "[$SCRIPT_NAME] the cluster is already up (netns $NETNS); npm run cluster:status shows it" >&2
  cat "$CLUSTER_DIR/env"
  exit 0
fi
if [ -e "$NODE_DIR" ] || ip netns list | grep -qw "^$NETNS"; then
  echo "[$SCRIPT_NAME] a previous cluster's leftovers exist: cleaning them up first (cluster:down)" >&2
  bash "$HERE/down.sh"
fi
rm -rf "$LOG_DIR"
mkdir -p "$NODE_DIR" "$LOG_DIR"

# ---- 1. packages and binaries -------------------------------------------------------------------
step 1 $TOTAL "Debian packages"
run_logged bash "$HERE/install-packages.sh" || fail "install the packages listed in the log by hand (apt-get install ...)"
step_done
step 2 $TOTAL "Kubernetes binaries (kubelet, kube-proxy, kube-scheduler; cold ~5 min) and coredns"
run_with_heartbeat "building (go build)" bash "$REPO_ROOT/scripts/control-plane/build.sh" --with-node ||
  fail "the Go module proxy must be reachable, and go >= 1.25 installed (GO=/path/to/go)"
# The reference CoreDNS for its image (usually there already: the differential tests use it).
run_with_heartbeat "building coredns (go install)" bash "$REPO_ROOT/scripts/install-coredns.sh" ||
  fail "scripts/install-coredns.sh failed: the Go module proxy must be reachable"
step_done
step 3 $TOTAL "images (clusterdns, coredns, pause, client-glibc, client-musl, node-cache; cold ~2 min)"
bash "$HERE/images.sh" 2>&1 | tee -a "$STEP_LOG" >&2 || fail "see $LOG_DIR/images.log"
[ "${PIPESTATUS[0]}" = 0 ] || fail "see $LOG_DIR/images.log"
step_done

# ---- 2. the namespace ---------------------------------------------------------------------------
step 4 $TOTAL "network namespace $NETNS"
# Host sysctls the node's components may touch (kubelet's kernel tunables, conntrack), restored by
# down.sh. Only those readable here are recorded.
: >"$NODE_DIR/sysctl.before"
for k in "${HOST_SYSCTLS[@]}"; do
  v="$(sysctl -n "$k" 2>/dev/null)" && printf '%s\t%s\n' "$k" "$v" >>"$NODE_DIR/sysctl.before"
done
{
  ip netns add "$NETNS"
  in_netns ip link set lo up
  # A veth pair with both ends inside: an interface with carrier for the node's address (the dummy
  # module may be missing), connected to nothing outside.
  in_netns ip link add node0 type veth peer name node0-peer
  in_netns ip addr add "$NODE_IP/24" dev node0
  in_netns ip link set node0-peer up
  in_netns ip link set node0 up
  # ClusterIPs are virtual: a packet to one needs a route before kube-proxy's DNAT rewrites it.
  in_netns ip route add "$SERVICE_CIDR" dev node0
} >>"$STEP_LOG" 2>&1 || fail "ip netns/ip link failed: iproute2 installed? a stale namespace? (npm run cluster:down)"
step_done "$(in_netns ip -br addr | tr '\n' ' ')"

# ---- 3. credentials and configuration -----------------------------------------------------------
step 5 $TOTAL "credentials and configuration"
N="$NODE_DIR"
{
  ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -keyout "$N/ca.key" -out "$N/ca.crt" -days 30 -subj /CN=clusterdns-cluster-ca
  openssl req -x509 "${ec[@]}" -keyout "$N/apiserver.key" -out "$N/apiserver.crt" -days 30 \
    -subj /CN=kube-apiserver -CA "$N/ca.crt" -CAkey "$N/ca.key" \
    -addext "subjectAltName=IP:$NODE_IP,IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" \
    -addext basicConstraints=critical,CA:FALSE -addext extendedKeyUsage=serverAuth
  openssl ecparam -name prime256v1 -genkey -noout -out "$N/sa.key"
  openssl ec -in "$N/sa.key" -pubout -out "$N/sa.pub"
} >>"$STEP_LOG" 2>&1 || fail "openssl failed"
token="$(openssl rand -hex 16)"
# One admin identity (system:masters) for the components and users: a test node, not a hardened one.
echo "$token,admin,uid-admin,\"system:masters\"" >"$N/tokens.csv"
cat >"$N/admin.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: clusterdns
  cluster:
    server: https://$NODE_IP:6443
    certificate-authority: $N/ca.crt
users:
- name: admin
  user:
    token: $token
contexts:
- name: clusterdns
  context: {cluster: clusterdns, user: admin}
current-context: clusterdns
KC
# dnsPolicy: Default pods (clusterdns itself) get this: a resolver address nothing answers, in
# TEST-NET-1, so that `forward . /etc/resolv.conf` never reaches the machine's resolver.
echo "nameserver 192.0.2.53" >"$N/resolv.conf"
mkdir -p "$N/cni-conf"
cat >"$N/cni-conf/10-clusterdns.conflist" <<CNI
{
  "cniVersion": "0.4.0",
  "name": "clusterdns",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$POD_CIDR" }]],
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    }
  ]
}
CNI
cat >"$N/containerd.toml" <<TOML
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$IMAGE_PAUSE:$IMAGE_TAG"
  # Root here lacks CAP_SYS_RESOURCE: without this runc fails to write oom_score_adj.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$N/cni-conf"
TOML
POD_DNS_IP=$DNS_IP
[ "$NODE_LOCAL" = 1 ] && POD_DNS_IP=$NODE_LOCAL_IP
cgroup_v1=false
[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || cgroup_v1=true
cat >"$N/kubelet.yaml" <<KUBELET
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
# Kubernetes 1.35 refuses cgroup v1 unless told otherwise; these machines have v1.
failCgroupV1: $( $cgroup_v1 && echo false || echo true )
failSwapOn: false
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
# --node-local: pods ask the node's cache (upstream's NodeLocal DNSCache setting).
clusterDNS: [$POD_DNS_IP]
clusterDomain: cluster.local
resolvConf: $N/resolv.conf
podCIDR: $POD_CIDR
# A shared disk: never evict the test pods for disk or memory pressure, never GC their images.
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
# How often kubelet syncs each pod, which is when it rewrites a ConfigMap volume after an edit
# (default 1m; the ConfigMap itself is watched): a Corefile edit reaches the pods within about
# 10 s instead of up to a minute, what config.test.ts waits for on each of its three edits.
syncFrequency: 10s
KUBELET
cat >"$N/kube-proxy.yaml" <<PROXY
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $N/admin.kubeconfig}
mode: iptables
hostnameOverride: $NODE_NAME
clusterCIDR: $POD_CIDR
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# 0: leave the machine-wide conntrack settings alone (nf_conntrack_max is global).
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
PROXY
# The kubectl wrapper: the API server is reachable only inside the namespace.
cat >"$CLUSTER_DIR/kubectl" <<WRAP
#!/bin/sh
# kubectl for the clusterdns real-node cluster (its API server lives in netns $NETNS only).
exec nsenter --net=/run/netns/$NETNS -- "$BIN_DIR/kubectl" --kubeconfig "$N/admin.kubeconfig" "\$@"
WRAP
chmod +x "$CLUSTER_DIR/kubectl"
# The same for helm (the tests turn the chart's nodeLocalDNS on and off with it).
cat >"$CLUSTER_DIR/helm" <<WRAP
#!/bin/sh
# helm for the clusterdns real-node cluster (its API server lives in netns $NETNS only).
exec nsenter --net=/run/netns/$NETNS -- env KUBECONFIG="$N/admin.kubeconfig" HELM_CACHE_HOME="$N/helm/cache" \
  HELM_CONFIG_HOME="$N/helm/config" HELM_DATA_HOME="$N/helm/data" "$BIN_DIR/helm" "\$@"
WRAP
chmod +x "$CLUSTER_DIR/helm"
step_done

# ---- 4. the node --------------------------------------------------------------------------------
step 6 $TOTAL "node processes (etcd, kube-apiserver, controller-manager, scheduler, containerd, kubelet, kube-proxy)" "$LOG_DIR/node.log"
# setsid: the node outlives this script; unshare --mount: its mounts stay private (node.sh).
setsid nsenter --net="/run/netns/$NETNS" -- unshare --mount --propagation private -- \
  bash "$HERE/node.sh" </dev/null >>"$LOG_DIR/node.log" 2>&1 &
echo $! >"$N/node.pid"
wait_until_up 120 "kube-apiserver /readyz" kube-apiserver kubectl_node get --raw /readyz ||
  { STEP_LOG="$LOG_DIR/kube-apiserver.log"; fail "etcd or kube-apiserver did not start: read $LOG_DIR/etcd.log and $LOG_DIR/kube-apiserver.log"; }
echo "[$SCRIPT_NAME]   kube-apiserver ready after $(($(date +%s) - STEP_START))s" >&2
wait_until_up 60 "containerd" containerd in_node ctr --address /run/containerd/containerd.sock version ||
  { STEP_LOG="$LOG_DIR/containerd.log"; fail "containerd did not start"; }
step_done

step 7 $TOTAL "import images into containerd"
for img in pause client-glibc client-musl clusterdns coredns node-cache; do
  case "$img" in pause) name=$IMAGE_PAUSE ;; clusterdns) name=$IMAGE_CLUSTERDNS ;; coredns) name=$IMAGE_COREDNS ;;
    node-cache) name=$IMAGE_NODE_CACHE ;;
    client-glibc) name=$IMAGE_CLIENT_GLIBC ;; client-musl) name=$IMAGE_CLIENT_MUSL ;; esac
  run_logged in_node ctr --address /run/containerd/containerd.sock -n k8s.io images import \
    --base-name "$name" "$IMAGE_DIR/$img.tar" || fail "ctr import of $IMAGE_DIR/$img.tar failed"
done
run_logged in_node ctr --address /run/containerd/containerd.sock -n k8s.io images ls -q
step_done

step 8 $TOTAL "node $NODE_NAME Ready"
wait_until_up 120 "node $NODE_NAME Ready" kubelet kubectl_node wait --for=condition=Ready "node/$NODE_NAME" --timeout=2s ||
  { STEP_LOG="$LOG_DIR/kubelet.log"; fail "kubelet did not register or is not Ready: read $LOG_DIR/kubelet.log and $LOG_DIR/containerd.log"; }
step_done

# ---- 5. clusterdns -------------------------------------------------------------------------------
if [ "${CLUSTER_SKIP_CHART:-0}" != 1 ]; then
  step 9 $TOTAL "helm install charts/clusterdns as kube-dns at $DNS_IP, and CoreDNS 1.15.0 beside it at $COREDNS_IP"
  helm_node() {
    in_netns env KUBECONFIG="$N/admin.kubeconfig" HELM_CACHE_HOME="$N/helm/cache" \
      HELM_CONFIG_HOME="$N/helm/config" HELM_DATA_HOME="$N/helm/data" "$BIN_DIR/helm" "$@"
  }
  node_local_values=()
  [ "$NODE_LOCAL" = 1 ] && node_local_values=(--set nodeLocalDNS.enabled=true
    --set nodeLocalDNS.image.repository="$IMAGE_NODE_CACHE" --set nodeLocalDNS.image.tag="$IMAGE_TAG")
  run_logged helm_node upgrade --install clusterdns "$REPO_ROOT/charts/clusterdns" --namespace kube-system \
    --set image.repository="$IMAGE_CLUSTERDNS" --set image.tag="$IMAGE_TAG" --set image.pullPolicy=Never \
    "${node_local_values[@]}" ||
    fail "helm install failed (chart values? run: .bin/helm template charts/clusterdns)"
  # The reference: the real CoreDNS 1.15.0 from the same chart and Corefile (the chart's defaults
  # too: same rollout settings), as its own release, Service, ConfigMap and ClusterRole, so that
  # the tests can compare answers and rollouts side by side.
  run_logged helm_node upgrade --install coredns-ref "$REPO_ROOT/charts/clusterdns" --namespace kube-system \
    --set image.repository="$IMAGE_COREDNS" --set image.tag="$IMAGE_TAG" --set image.pullPolicy=Never \
    --set fullnameOverride=coredns-ref --set service.name=coredns-ref --set service.clusterIP="$COREDNS_IP" \
    --set configmap.name=coredns-ref --set clusterRole.nameOverride=system:coredns-ref \
    --set isClusterService=false --set k8sAppLabelOverride=coredns-ref ||
    fail "helm install of the CoreDNS reference failed (run: .bin/helm template charts/clusterdns)"
  for release in clusterdns coredns-ref; do
    wait_until_up 180 "the $release Deployment" kube-controller-manager kubectl_node -n kube-system rollout status deployment \
      -l app.kubernetes.io/instance=$release --timeout=2s ||
      fail "$release pods not ready: $CLUSTER_DIR/kubectl -n kube-system describe pods; logs in $LOG_DIR/pods/"
  done
  for ip in "$DNS_IP" "$COREDNS_IP"; do
    wait_until_up 60 "an answer from $ip" kube-proxy in_netns dig +time=1 +tries=1 +short @"$ip" \
      kubernetes.default.svc.cluster.local A ||
      fail "no DNS answer through the Service $ip: check kube-proxy ($LOG_DIR/kube-proxy.log) and the pods' logs"
  done
  if [ "$NODE_LOCAL" = 1 ]; then
    wait_until_up 180 "the node-local-dns DaemonSet" kubelet kubectl_node -n kube-system rollout status daemonset/node-local-dns --timeout=2s ||
      fail "node-local-dns not ready: $CLUSTER_DIR/kubectl -n kube-system logs ds/node-local-dns; docs/node-cache.md"
    wait_until_up 60 "an answer from the node cache at $NODE_LOCAL_IP" kube-proxy in_netns dig +time=1 +tries=1 +short @"$NODE_LOCAL_IP" \
      kubernetes.default.svc.cluster.local A ||
      fail "no DNS answer from $NODE_LOCAL_IP: $CLUSTER_DIR/kubectl -n kube-system logs ds/node-local-dns"
  fi
  step_done "kubernetes.default.svc.cluster.local = $(in_netns dig +short @"$DNS_IP" kubernetes.default.svc.cluster.local A)"
fi

cat >"$CLUSTER_DIR/env" <<ENV
# Written by npm run cluster:up ($(date -u +%FT%TZ)); source it.
KUBECONFIG=$N/admin.kubeconfig
NETNS=$NETNS
# kubectl wrapper that enters the namespace: \$KUBECTL get pods -A
KUBECTL=$CLUSTER_DIR/kubectl
KUBECTL_BIN=$BIN_DIR/kubectl
HELM=$BIN_DIR/helm
DNS_IP=$DNS_IP
# The reference CoreDNS 1.15.0 (release coredns-ref, same chart and Corefile)
COREDNS_IP=$COREDNS_IP
# What kubelet writes as pods' nameserver: DNS_IP, or NODE_LOCAL_IP with --node-local
POD_DNS_IP=$POD_DNS_IP
NODE_LOCAL=$NODE_LOCAL
NODE_LOCAL_IP=$NODE_LOCAL_IP
# helm wrapper that enters the namespace (release clusterdns in kube-system)
HELM_WRAPPER=$CLUSTER_DIR/helm
NODE_IP=$NODE_IP
NODE_NAME=$NODE_NAME
CLUSTER_LOGS=$LOG_DIR
IMAGE_CLUSTERDNS=$IMAGE_CLUSTERDNS:$IMAGE_TAG
IMAGE_CLIENT_GLIBC=$IMAGE_CLIENT_GLIBC:$IMAGE_TAG
IMAGE_CLIENT_MUSL=$IMAGE_CLIENT_MUSL:$IMAGE_TAG
IMAGE_NODE_CACHE=$IMAGE_NODE_CACHE:$IMAGE_TAG
export KUBECONFIG NETNS KUBECTL
ENV
cat >&2 <<MSG
[$SCRIPT_NAME] cluster up in $(($(date +%s) - T_START))s. Reach it with:
  . $CLUSTER_DIR/env
  ip netns exec \$NETNS dig @$DNS_IP kubernetes.default.svc.cluster.local
  \$KUBECTL get pods -A
  \$KUBECTL run -it --rm c --image \$IMAGE_CLIENT_GLIBC --image-pull-policy Never -- getent hosts kubernetes
Logs: $LOG_DIR/ (one per component; pods' in pods/). Stop: npm run cluster:down
MSG
