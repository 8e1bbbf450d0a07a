#!/usr/bin/env bash
# The node's supervisor, started by up.sh inside the cluster's network namespace and a private
# mount namespace of its own (nsenter --net + unshare --mount): every mount made here (sysfs,
# tmpfs, kubelet's volumes, containerd's snapshots, pods' network namespaces) exists only in this
# namespace and disappears with its last process, so the machine's own mount table never changes.
# Starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd, kubelet and
# kube-proxy, each logging to .cluster/logs/NAME.log, then waits. SIGTERM (down.sh) stops them in
# reverse order. Reads its settings from lib.sh and the files up.sh wrote in .cluster/node/.
set -uo pipefail
SCRIPT_NAME=node
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

log() { echo "$(date -u +%H:%M:%S) node: $*" >&2; }

# ---- mounts (private to this namespace) ----------------------------------------------------------
# A sysfs of this network namespace (what `ip netns exec` also does), keeping the cgroup mounts.
mkdir -p "$NODE_DIR/mnt/cgroup"
mount --rbind /sys/fs/cgroup "$NODE_DIR/mnt/cgroup"
mount -t sysfs sysfs /sys
mount --move "$NODE_DIR/mnt/cgroup" /sys/fs/cgroup
# /run, /var/lib and /var/log get fresh tmpfs: the components' default paths (containerd's shim
# sockets, pods' netns files under /run/netns, CNI's cache in /var/lib/cni, kubelet's
# /var/log/containers links) then never touch the machine's own directories. The state that should
# survive for debugging is bind-mounted from .cluster/ onto them.
mount -t tmpfs -o mode=755 tmpfs /run
mount -t tmpfs -o mode=755 tmpfs /var/lib
mount -t tmpfs -o mode=755 tmpfs /var/log
for d in kubelet containerd cni; do
  mkdir -p "/var/lib/$d" "$NODE_DIR/$d"
  mount --bind "$NODE_DIR/$d" "/var/lib/$d"
done
mount --make-rshared /var/lib/kubelet
mkdir -p /var/log/pods "$LOG_DIR/pods"
mount --bind "$LOG_DIR/pods" /var/log/pods

# ---- cgroups ------------------------------------------------------------------------------------
# kubelet wants its cgroupRoot to exist in every controller; everything of the node (pods,
# containers) goes below it, which is how down.sh finds and removes it.
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
  mkdir -p "/sys/fs/cgroup$CGROUP_ROOT"
else
  for c in /sys/fs/cgroup/*/; do
    [ -L "${c%/}" ] && continue
    mkdir -p "$c${CGROUP_ROOT#/}"
    # cpuset: a new v1 cpuset has no CPUs or memory nodes until given its parent's.
    if [ -f "$c/cpuset.cpus" ]; then
      cat "$c/cpuset.cpus" >"$c${CGROUP_ROOT#/}/cpuset.cpus"
      cat "$c/cpuset.mems" >"$c${CGROUP_ROOT#/}/cpuset.mems"
    fi
  done
fi

# ---- the namespace's network -------------------------------------------------------------------
sysctl -qw net.ipv4.ip_forward=1
# Pod -> Service -> pod on the same bridge needs the bridge's traffic to pass iptables.
sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || log "net.bridge.bridge-nf-call-iptables not settable"

# ---- components ----------------------------------------------------------------------------------
declare -A PIDS=()
ORDER=()
start() {
  local name="$1"
  shift
  log "starting $name (log: $LOG_DIR/$name.log)"
  "$@" >>"$LOG_DIR/$name.log" 2>&1 &
  PIDS[$name]=$!
  ORDER+=("$name")
}
stop_all() {
  log "stopping"
  local name pid pids=()
  # Kubelet and kube-proxy first (no new pods or rules), then the rest at once; down.sh kills
  # whatever is left in the namespace and the node's cgroups.
  for name in kubelet kube-proxy; do
    pid="${PIDS[$name]:-}"
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null
  done
  for name in "${ORDER[@]}"; do
    pid="${PIDS[$name]:-}"
    [ -n "$pid" ] || continue
    kill -TERM "$pid" 2>/dev/null
    pids+=("$pid")
  done
  for _ in $(seq 1 20); do
    kill -0 "${pids[@]}" 2>/dev/null || break
    sleep 0.5
  done
  kill -KILL "${pids[@]}" 2>/dev/null
  exit 0
}
trap stop_all TERM INT

B="$BIN_DIR"
N="$NODE_DIR"
start etcd "$B/etcd" --name node0 --data-dir "$N/etcd" \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster node0=http://127.0.0.1:2380 --unsafe-no-fsync --log-level warn
apiserver_argv
start kube-apiserver "${APISERVER_ARGV[@]}"
start containerd containerd --config "$N/containerd.toml"
# The controller manager exits when the API server is not healthy within 10 s of its start (seen
# on the loaded machine): everything that talks to the API starts once /readyz answers.
for i in $(seq 1 240); do
  "$B/kubectl" --kubeconfig "$N/admin.kubeconfig" get --raw /readyz >/dev/null 2>&1 && break
  [ $((i % 20)) = 0 ] && log "still waiting for kube-apiserver /readyz ($((i / 2))s)"
  sleep 0.5
done
start kube-controller-manager "$B/kube-controller-manager" --kubeconfig "$N/admin.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false --root-ca-file "$N/ca.crt" \
  --service-account-private-key-file "$N/sa.key" --use-service-account-credentials \
  --cluster-cidr 10.244.0.0/16 --service-cluster-ip-range "$SERVICE_CIDR" --profiling=false
start kube-scheduler "$B/kube-scheduler" --kubeconfig "$N/admin.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false --profiling=false
start kubelet "$B/kubelet" --config "$N/kubelet.yaml" --kubeconfig "$N/admin.kubeconfig" \
  --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" --v 1
start kube-proxy "$B/kube-proxy" --config "$N/kube-proxy.yaml"

# Wait for any component to exit; say which (status.sh shows it too), keep the others running so
# that their logs and the cluster stay inspectable.
while :; do
  wait -n
  for name in "${ORDER[@]}"; do
    if [ -n "${PIDS[$name]:-}" ] && ! kill -0 "${PIDS[$name]}" 2>/dev/null; then
      log "$name exited (see $LOG_DIR/$name.log)"
      unset "PIDS[$name]"
    fi
  done
  [ "${#PIDS[@]}" -eq 0 ] && exit 1
done
