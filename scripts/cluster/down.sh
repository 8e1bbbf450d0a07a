#!/usr/bin/env bash
# npm run cluster:down — stops the real-node cluster and returns the machine to its state before
# cluster:up: every process in the namespace and in the pods' cgroups ends, the cgroups are
# removed, the namespace is deleted (its interfaces, routes and iptables rules go with it), the
# host sysctls the node touched get their recorded values back, and .cluster/node/ is removed. The
# node's mounts lived in its own mount namespace and went with its last process. Logs
# (.cluster/logs/) and the built images (.cluster/images/) stay. Safe to run twice, or after a
# failed or interrupted cluster:up.
set -uo pipefail
SCRIPT_NAME=cluster:down
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "cluster:down: needs root" >&2; exit 1; }
TOTAL=6

# Every cgroup directory of the node's subtree, deepest first (v1: one tree per controller).
node_cgroups() {
  local top
  for top in /sys/fs/cgroup/*/"${CGROUP_ROOT#/}" /sys/fs/cgroup/"${CGROUP_ROOT#/}"; do
    [ -d "$top" ] && find "$top" -depth -type d
  done
}
# One cat for all of them: a cat per directory (about 160 with the test pods, on cgroup v1) made
# each look take about 2 s, and the stop step looks every half second.
cgroup_pids() {
  node_cgroups | sed 's|$|/cgroup.procs|' | xargs -r -d '\n' cat 2>/dev/null | sort -u
}
netns_pids() {
  ip netns list 2>/dev/null | grep -qw "^$NETNS" && ip netns pids "$NETNS" 2>/dev/null
}
# kill_all SIGNAL: signal the supervisor, everything in the namespace and in the node's cgroups.
kill_all() {
  local sig="$1" pids
  pids="$( { node_pid; netns_pids; cgroup_pids; } 2>/dev/null | sort -u | tr '\n' ' ')"
  [ -n "${pids// /}" ] && kill "-$sig" $pids 2>/dev/null
  return 0
}
alive() {
  [ -n "$( { node_pid; netns_pids; cgroup_pids; } 2>/dev/null | tr -d '[:space:]')" ]
}

step 1 $TOTAL "stop the node's processes" "$LOG_DIR/down.log"
# Everything at once: the supervisor (it stops kubelet and kube-proxy first, then the rest), the
# pods' processes and the shims. A test node has nothing to drain, and the DNS servers in its pods
# run their lameduck on SIGTERM (5 s and more): 3 s later whatever is left is killed, again each
# half second in case something was started in between.
kill_all TERM
for _ in $(seq 1 6); do alive || break; sleep 0.5; done
if alive; then
  echo "still alive 3 s after SIGTERM: $( { node_pid; netns_pids; cgroup_pids; } 2>/dev/null | sort -u |
    while read -r p; do printf '%s(%s) ' "$p" "$(cat "/proc/$p/comm" 2>/dev/null)"; done)" >>"$STEP_LOG"
  for _ in $(seq 1 20); do
    alive || break
    kill_all KILL
    sleep 0.5
  done
fi
if alive; then
  echo "[$SCRIPT_NAME] processes still alive: $( { node_pid; netns_pids; cgroup_pids; } 2>/dev/null | sort -u | tr '\n' ' ')" >&2
fi
step_done

step 2 $TOTAL "remove the node's cgroups ($CGROUP_ROOT)" "$LOG_DIR/down.log"
left=0
while read -r d; do rmdir "$d" 2>/dev/null || { left=1; echo "cannot remove $d" >>"$STEP_LOG"; }; done < <(node_cgroups)
[ "$left" = 0 ] || echo "[$SCRIPT_NAME] some cgroups remain (see $STEP_LOG)" >&2
step_done

step 3 $TOTAL "delete network namespace $NETNS" "$LOG_DIR/down.log"
if ip netns list | grep -qw "^$NETNS"; then
  ip netns del "$NETNS" >>"$STEP_LOG" 2>&1 || echo "[$SCRIPT_NAME] ip netns del $NETNS failed (see $STEP_LOG)" >&2
fi
step_done

step 4 $TOTAL "restore host sysctls" "$LOG_DIR/down.log"
if [ -f "$NODE_DIR/sysctl.before" ]; then
  while IFS=$'\t' read -r k v; do
    now="$(sysctl -n "$k" 2>/dev/null)" || continue
    if [ "$now" != "$v" ]; then
      sysctl -qw "$k=$v" >>"$STEP_LOG" 2>&1 && echo "[$SCRIPT_NAME]   $k: $now -> $v (restored)" >&2
    fi
  done <"$NODE_DIR/sysctl.before"
fi
step_done

step 5 $TOTAL "remove .cluster/node" "$LOG_DIR/down.log"
# Nothing of the node is mounted in the machine's namespace; if something is (a leak), unmount it
# rather than delete through it.
if findmnt -rn -o TARGET | grep -q "^$CLUSTER_DIR/"; then
  findmnt -rn -o TARGET | grep "^$CLUSTER_DIR/" | sort -r | while read -r m; do umount -l "$m"; done
  echo "[$SCRIPT_NAME]   unmounted leftovers under $CLUSTER_DIR" >&2
fi
rm -rf "$NODE_DIR" "$CLUSTER_DIR/env" "$CLUSTER_DIR/kubectl" "$CLUSTER_DIR/helm"
step_done

step 6 $TOTAL "check the machine's own namespace for node-cache leftovers" "$LOG_DIR/down.log"
# NodeLocal DNSCache (--node-local) puts an interface, the address 169.254.20.10 and rules on the
# node, i.e. in the cluster's namespace, which step 3 deleted with everything in it. Say so if any
# of it is in the machine's own namespace (a node-cache run outside the namespace by hand).
leftovers=""
ip -o addr show 2>/dev/null | grep -qw "$NODE_LOCAL_IP" && leftovers+=" address $NODE_LOCAL_IP;"
ip link show nodelocaldns >/dev/null 2>&1 && leftovers+=" interface nodelocaldns;"
command -v nft >/dev/null && nft list tables 2>/dev/null | grep -q clusterdns-nodelocaldns && leftovers+=" nft table clusterdns-nodelocaldns;"
for ipt in iptables-nft-save iptables-legacy-save; do
  command -v "$ipt" >/dev/null && "$ipt" 2>/dev/null | grep -q "NodeLocal DNS Cache" && leftovers+=" $ipt rules 'NodeLocal DNS Cache';"
done
if [ -n "$leftovers" ]; then
  echo "[$SCRIPT_NAME]   left in the machine's namespace (not the cluster's):$leftovers" >&2
else
  echo "machine namespace: no $NODE_LOCAL_IP, no nodelocaldns link, no node-cache rules" >>"$STEP_LOG"
fi
step_done
echo "[$SCRIPT_NAME] the cluster is down" >&2
