#!/usr/bin/env bash
# scripts/cluster/apiserver.sh stop|start — stops the real-node cluster's kube-apiserver (SIGTERM,
# waiting until the process is gone) or starts it again with the command line node.sh used, in the
# node's network and mount namespaces. test/cluster/apiserver.test.ts uses it for an API outage:
# what clusterdns answers and what its /ready says while the API is away, and that it recovers.
# Each action prints what it did; a failure names the log to read (.cluster/logs/kube-apiserver.log).
set -uo pipefail
SCRIPT_NAME=cluster:apiserver
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "$SCRIPT_NAME: needs root" >&2; exit 1; }
node_pid >/dev/null || { echo "$SCRIPT_NAME: the node is not running (npm run cluster:up)" >&2; exit 1; }
log() { echo "$(date -u +%H:%M:%S) node: $*" >>"$LOG_DIR/node.log"; echo "[$SCRIPT_NAME] $*" >&2; }

case "${1:-}" in
stop)
  pid="$(netns_proc kube-apiserver)"
  if [ -z "$pid" ]; then echo "[$SCRIPT_NAME] kube-apiserver is not running" >&2; exit 0; fi
  # node.sh's log then says "kube-apiserver exited": this line says why.
  log "kube-apiserver (pid $pid) stopped by apiserver.sh"
  kill -TERM "$pid"
  for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    log "kube-apiserver (pid $pid) did not exit within 60 s of SIGTERM: killed"
  fi
  ;;
start)
  if [ -n "$(netns_proc kube-apiserver)" ]; then echo "[$SCRIPT_NAME] kube-apiserver is already running" >&2; exit 0; fi
  apiserver_argv
  log "kube-apiserver started again by apiserver.sh (log: $LOG_DIR/kube-apiserver.log)"
  nsenter -t "$(node_pid)" -m -n -- setsid "${APISERVER_ARGV[@]}" </dev/null >>"$LOG_DIR/kube-apiserver.log" 2>&1 &
  SCRIPT_NAME=$SCRIPT_NAME wait_until 120 "kube-apiserver /readyz" kubectl_node get --raw /readyz ||
    { echo "[$SCRIPT_NAME] kube-apiserver not ready after 120 s: read $LOG_DIR/kube-apiserver.log" >&2; exit 1; }
  echo "[$SCRIPT_NAME] kube-apiserver ready" >&2
  ;;
*)
  echo "usage: scripts/cluster/apiserver.sh stop|start" >&2
  exit 2
  ;;
esac
