#!/usr/bin/env bash
# gpufleet join-token for node $GPUFLEET_NODE: mint a kubeadm bootstrap token, valid for `ttl_minutes`,
# just before the node joins, and print it (`<id>.<secret>`, for the join step's stdin) and its expiry (RFC 3339,
# UTC), one line each, as all of stdout. The node-ready step deletes it once the node is Ready. It runs again
# (a fresh token) whenever the join-attempt probe answers a new attempt: the server has not joined.
# A bootstrap token is a Secret `bootstrap-token-<id>` of type bootstrap.kubernetes.io/token in kube-system
# (kubernetes.io/docs/reference/access-authn-authz/bootstrap-tokens/), what `kubeadm token create` writes; its
# extra group is the one kubeadm binds node bootstrap and CSR auto-approval to. The controller manager's token
# cleaner deletes it once expired, so no standing join credential outlives the join.
# Runs where `pulumi up` runs; needs kubectl. Rendered from components/baremetal/templates/join-token.sh.j2.
set -euo pipefail
: "${GPUFLEET_NODE:?node name}" "${GPUFLEET_KUBECONFIG:?kubeconfig}"
ttl_minutes=60
umask 077
kubeconfig="$(mktemp)"
trap 'rm -f "$kubeconfig"' EXIT
printf '%s\n' "$GPUFLEET_KUBECONFIG" > "$kubeconfig"

random() { # random N: N characters of [a-z0-9] (the token format: [a-z0-9]{6}.[a-z0-9]{16})
  LC_ALL=C tr -dc 'a-z0-9' < /dev/urandom | head -c "$1" || true
}
id="$(random 6)"
secret="$(random 16)"
# RFC 3339 in UTC; GNU date (-d) or BSD date (-v)
expiration="$(date -u -d "+$ttl_minutes minutes" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -v+"$ttl_minutes"M +%Y-%m-%dT%H:%M:%SZ)"
kubectl --kubeconfig "$kubeconfig" --namespace kube-system create secret generic "bootstrap-token-$id" \
  --type bootstrap.kubernetes.io/token \
  --from-literal=token-id="$id" \
  --from-literal=token-secret="$secret" \
  --from-literal=expiration="$expiration" \
  --from-literal=usage-bootstrap-authentication=true \
  --from-literal=usage-bootstrap-signing=true \
  --from-literal=auth-extra-groups=system:bootstrappers:kubeadm:default-node-token \
  --from-literal=description="gpufleet join of $GPUFLEET_NODE" >/dev/null
printf 'join-token %s: minted bootstrap token %s, expires %s\n' "$GPUFLEET_NODE" "$id" "$expiration" >&2
printf '%s.%s\n%s\n' "$id" "$secret" "$expiration"
