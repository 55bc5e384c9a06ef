#!/usr/bin/env bash
# gpufleet node-ready: wait (through the Kubernetes API) until node $GPUFLEET_NODE is registered and Ready, so the
# NodePatch that follows finds it. Runs where `pulumi up` runs; needs kubectl.
# The kubeconfig arrives in $GPUFLEET_KUBECONFIG (a secret) and lives in a 0600 temp file for the run.
# With $GPUFLEET_TOKEN_ID set (a bootstrap token minted for this join), the token is deleted once the node is
# Ready: no join credential outlives the join (kubeadm's `kubeadm token delete` does the same). With
# $GPUFLEET_JOIN_ATTEMPT set, the attempt the node joined with is recorded on it, for the join-attempt probe.
# Rendered from components/baremetal/templates/node-ready.sh.j2.
set -euo pipefail
: "${GPUFLEET_NODE:?node name}" "${GPUFLEET_KUBECONFIG:?kubeconfig}"
timeout_seconds=900
attempt_annotation=gpufleet.io/join-attempt
umask 077
kubeconfig="$(mktemp)"
trap 'rm -f "$kubeconfig"' EXIT
printf '%s\n' "$GPUFLEET_KUBECONFIG" > "$kubeconfig"
deadline=$(( $(date +%s) + timeout_seconds ))
# `kubectl wait` fails at once with NotFound while the Node object does not exist yet (kubernetes/kubectl#1516),
# and the kubelet registers it only some seconds after the join returns: wait for the object first.
# Each failure's stderr is kept (NotFound, or an unreachable API server, a refused credential) and the last one
# printed on timeout.
last_error=""
until last_error="$(kubectl --kubeconfig "$kubeconfig" get node "$GPUFLEET_NODE" 2>&1 >/dev/null)"; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    printf 'node-ready %s: the node did not register within %ss of the join; last error: %s\n' \
      "$GPUFLEET_NODE" "$timeout_seconds" "${last_error:-none}" >&2
    exit 1
  fi
  sleep 5
done
left=$(( deadline - $(date +%s) ))
if [ "$left" -lt 1 ]; then left=1; fi
kubectl --kubeconfig "$kubeconfig" wait --for=condition=Ready "node/$GPUFLEET_NODE" --timeout="${left}s"
if [ -n "${GPUFLEET_TOKEN_ID:-}" ]; then
  kubectl --kubeconfig "$kubeconfig" --namespace kube-system delete secret "bootstrap-token-$GPUFLEET_TOKEN_ID" \
    --ignore-not-found >/dev/null
  printf 'node-ready %s: deleted bootstrap token %s\n' "$GPUFLEET_NODE" "$GPUFLEET_TOKEN_ID" >&2
fi
if [ -n "${GPUFLEET_JOIN_ATTEMPT:-}" ]; then
  kubectl --kubeconfig "$kubeconfig" annotate --overwrite "node/$GPUFLEET_NODE" \
    "$attempt_annotation=$GPUFLEET_JOIN_ATTEMPT" >/dev/null
fi
