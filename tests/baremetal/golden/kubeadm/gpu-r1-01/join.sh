#!/usr/bin/env bash
# gpufleet join for the server named in `node` below: kubeadm join the API server `api_server`.
# The bootstrap token and the CA cert hash arrive on stdin (one line each), never in this text.
# Idempotent: a server whose kubelet already runs with a kubelet.conf is left alone.
# Rendered from components/baremetal/templates/join-kubeadm.sh.j2. Every value from the stack arrives quoted, in
# the assignments below; the script refers to them by name only.
set -euo pipefail

node=gpu-r1-01
api_server=k8s-api.dc1.example.com:6443
kubelet_kubeconfig=/etc/kubernetes/kubelet.conf

# Labels and taints the kubelet registers the node with (the NodePatch keeps them afterwards). Labels under
# kubernetes.io / k8s.io are left to the NodePatch: the NodeRestriction admission plugin refuses them from kubelets.
extra_args='--node-labels=gpufleet.io/fabric=ib,gpufleet.io/gpu-model=H100-80GB,gpufleet.io/pool=train,gpufleet.io/remediator=none,gpufleet.io/role=training,nvidia.com/gpu.present=true,nvidia.com/mig.config=all-disabled,topology.gpufleet.io/leaf=leaf-1,topology.gpufleet.io/rack=r1,topology.gpufleet.io/rail=0 --register-with-taints=nvidia.com/gpu=present:NoSchedule'
extra_args_file=/etc/default/kubelet
if [ -d /etc/sysconfig ]; then extra_args_file=/etc/sysconfig/kubelet; fi
if [ "$(cat "$extra_args_file" 2>/dev/null || true)" != "KUBELET_EXTRA_ARGS=$extra_args" ]; then
  printf 'KUBELET_EXTRA_ARGS=%s\n' "$extra_args" > "$extra_args_file"
fi

if [ -f "$kubelet_kubeconfig" ] && systemctl is-active --quiet kubelet; then
  printf 'join %s: already a node of the cluster (kubelet.conf present, kubelet active); nothing to do\n' "$node"
  exit 0
fi

token=""
ca_hash=""
expires=""
IFS= read -r token || true
IFS= read -r ca_hash || true
IFS= read -r expires || true  # a token minted for this join: its expiry (RFC 3339, UTC)
if [ -z "$token" ] || [ -z "$ca_hash" ]; then
  printf 'join %s: expected the join token and the CA cert hash on stdin, one line each\n' "$node" >&2
  exit 2
fi
if [ -n "$expires" ] && [ "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \> "$expires" ]; then
  printf 'join %s: the bootstrap token minted for this server expired at %s, before its join ran. ' "$node" "$expires" >&2
  printf 'Run pulumi up again: a server not yet joined gets a fresh token on every up\n' >&2
  exit 2
fi

kubeadm join "$api_server" \
  --token "$token" \
  --discovery-token-ca-cert-hash "$ca_hash" \
  --node-name "$node"
printf 'join %s: joined %s\n' "$node" "$api_server"
