#!/usr/bin/env bash
# gpufleet node-delete: delete the Node object $GPUFLEET_NODE through the Kubernetes API, the last step of a
# server leaving (after drain and reset). Idempotent: a missing node is fine.
# Rendered from components/baremetal/templates/node-delete.sh.j2.
set -euo pipefail
: "${GPUFLEET_NODE:?node name}" "${GPUFLEET_KUBECONFIG:?kubeconfig}"
umask 077
kubeconfig="$(mktemp)"
trap 'rm -f "$kubeconfig"' EXIT
printf '%s\n' "$GPUFLEET_KUBECONFIG" > "$kubeconfig"
kubectl --kubeconfig "$kubeconfig" delete node "$GPUFLEET_NODE" --ignore-not-found
