#!/usr/bin/env bash
# npm run cluster:status — what is running of the real-node cluster: the namespace, each node
# component (up or exited, with its log), the node and pods, and one lookup through 10.96.0.10.
# Exits 0 when the cluster is up and answers, 1 otherwise.
set -uo pipefail
SCRIPT_NAME=cluster:status
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ok=1
if ! ip netns list 2>/dev/null | grep -qw "^$NETNS"; then
  echo "netns $NETNS: absent (npm run cluster:up starts the cluster)"
  exit 1
fi
echo "netns $NETNS: $(in_netns ip -br addr | awk '{print $1"="$3}' | tr '\n' ' ')"
if pid="$(node_pid)"; then echo "supervisor (node.sh): pid $pid"; else echo "supervisor (node.sh): not running"; ok=0; fi
for c in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy; do
  p="$(ip netns pids "$NETNS" 2>/dev/null | while read -r x; do
    [ "$(basename "$(readlink "/proc/$x/exe" 2>/dev/null)")" = "$c" ] && echo "$x"; done | head -n1)"
  if [ -n "$p" ]; then printf '  %-24s pid %-8s log %s\n' "$c" "$p" "$LOG_DIR/$c.log"
  else printf '  %-24s NOT RUNNING  log %s\n' "$c" "$LOG_DIR/$c.log"; ok=0; fi
done
if [ "$ok" = 1 ]; then
  kubectl_node get nodes -o wide 2>&1
  kubectl_node get pods -A -o wide 2>&1
  ans="$(in_netns dig +time=2 +tries=1 +short @"$DNS_IP" kubernetes.default.svc.cluster.local A 2>&1)"
  echo "dig @$DNS_IP kubernetes.default.svc.cluster.local: ${ans:-no answer}"
  [ -n "$ans" ] && [[ "$ans" != *";;"* ]] || ok=0
fi
[ -f "$CLUSTER_DIR/env" ] && echo "env: $CLUSTER_DIR/env"
[ "$ok" = 1 ]
