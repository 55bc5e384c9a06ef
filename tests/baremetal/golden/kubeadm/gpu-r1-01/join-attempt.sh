#!/usr/bin/env bash
# gpufleet join-attempt for node $GPUFLEET_NODE: print (one line, all of stdout) the attempt whose token the node
# joined with, or a fresh attempt if it has not joined. Runs on every preview and up (a pulumi-command invoke), so
# a failed join retried by a plain `pulumi up` mints a fresh token: the join-token step re-runs when this changes.
# - The Node exists: the attempt node-ready recorded on it (annotation `annotation` below), else `joined`.
#   Unchanged from the last up, so a joined server's token step, join and node-ready stay as they are.
# - No Node (or the API does not answer): a fresh value, so the token step mints again.
# Reads only. Runs where `pulumi up` runs; needs kubectl. Rendered from components/baremetal/templates/join-attempt.sh.j2.
set -uo pipefail
: "${GPUFLEET_NODE:?node name}" "${GPUFLEET_KUBECONFIG:?kubeconfig}"
annotation=gpufleet.io/join-attempt
umask 077
kubeconfig="$(mktemp)"
trap 'rm -f "$kubeconfig"' EXIT
printf '%s\n' "$GPUFLEET_KUBECONFIG" > "$kubeconfig"
if kubectl --kubeconfig "$kubeconfig" get node "$GPUFLEET_NODE" >/dev/null 2>&1; then
  jsonpath="{.metadata.annotations.${annotation//./\\.}}"
  attempt="$(kubectl --kubeconfig "$kubeconfig" get node "$GPUFLEET_NODE" -o jsonpath="$jsonpath" 2>/dev/null || true)"
  printf '%s\n' "${attempt:-joined}"
else
  printf '%s-%s\n' "$(date -u +%Y%m%dT%H%M%SZ)" "$(LC_ALL=C tr -dc 'a-z0-9' < /dev/urandom | head -c 8 || true)"
fi
