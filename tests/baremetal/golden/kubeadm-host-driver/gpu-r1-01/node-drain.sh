#!/usr/bin/env bash
# gpufleet drain: cordon and drain node $GPUFLEET_NODE through the Kubernetes API before the server leaves the
# cluster (the delete step of node-ready; the join command's delete then resets the server). Pods that no
# controller manages stop the drain rather than being deleted: move them, then destroy again.
# Idempotent: a node that is not in the cluster needs no drain.
# Rendered from components/baremetal/templates/node-drain.sh.j2.
set -euo pipefail
: "${GPUFLEET_NODE:?node name}" "${GPUFLEET_KUBECONFIG:?kubeconfig}"
umask 077
kubeconfig="$(mktemp)"
trap 'rm -f "$kubeconfig"' EXIT
printf '%s\n' "$GPUFLEET_KUBECONFIG" > "$kubeconfig"
if ! kubectl --kubeconfig "$kubeconfig" get node "$GPUFLEET_NODE" >/dev/null 2>&1; then
  printf 'drain %s: not in the cluster; nothing to drain\n' "$GPUFLEET_NODE"
  exit 0
fi
kubectl --kubeconfig "$kubeconfig" drain "$GPUFLEET_NODE" --ignore-daemonsets --delete-emptydir-data --timeout=30m
