#!/usr/bin/env bash
# gpufleet node-ready: wait (through the Kubernetes API) until node $GPUFLEET_NODE is Ready, so the NodePatch
# that follows finds it registered. Runs where `pulumi up` runs; needs kubectl.
# The kubeconfig arrives in $GPUFLEET_KUBECONFIG (a secret) and lives in a 0600 temp file for the run.
# Rendered from components/baremetal/templates/node-ready.sh.j2.
set -euo pipefail
: "${GPUFLEET_NODE:?node name}" "${GPUFLEET_KUBECONFIG:?kubeconfig}"
umask 077
kubeconfig="$(mktemp)"
trap 'rm -f "$kubeconfig"' EXIT
printf '%s\n' "$GPUFLEET_KUBECONFIG" > "$kubeconfig"
kubectl --kubeconfig "$kubeconfig" wait --for=condition=Ready "node/$GPUFLEET_NODE" --timeout=15m
