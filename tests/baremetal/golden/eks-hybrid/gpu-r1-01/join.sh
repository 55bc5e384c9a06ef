#!/usr/bin/env bash
# gpufleet join for the server named in `host` below: nodeadm init into the EKS cluster `node_config` names, as an
# EKS Hybrid Node with an SSM hybrid activation. nodeadm must already be installed
# (`nodeadm install <k8s-version> --credential-provider ssm`, usually baked into the OS image).
# The activation code and id arrive on stdin (one line each), never in this text.
# Idempotent: a server whose kubelet already runs with its kubeconfig is left alone.
# The last line printed is `node-name=<name>`: with SSM the node is named after the managed-instance id.
# Rendered from components/baremetal/templates/join-eks-hybrid.sh.j2. Every value from the stack arrives quoted, in
# the assignments below; the script refers to them by name only.
set -euo pipefail

host=gpu-r1-01
kubelet_kubeconfig=/var/lib/kubelet/kubeconfig
# The NodeConfig without its ssm block, which the activation from stdin completes (components/baremetal/bootstrap.py)
node_config='apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: "dc1-hybrid"
    region: "us-east-1"
  kubelet:
    flags:
      - "--node-labels=gpufleet.io/fabric=ib,gpufleet.io/gpu-model=H100-80GB,gpufleet.io/pool=train,gpufleet.io/remediator=none,gpufleet.io/role=training,nvidia.com/gpu.present=true,nvidia.com/mig.config=all-disabled,topology.gpufleet.io/leaf=leaf-1,topology.gpufleet.io/rack=r1,topology.gpufleet.io/rail=0"
      - "--register-with-taints=nvidia.com/gpu=present:NoSchedule"
  hybrid:
    ssm:'

node_name() {
  sed -n 's/.*"ManagedInstanceID":[[:space:]]*"\([^"]*\)".*/\1/p' /var/lib/amazon/ssm/registration 2>/dev/null | head -n 1
}

if [ -f "$kubelet_kubeconfig" ] && systemctl is-active --quiet kubelet; then
  printf 'join %s: already a hybrid node (kubelet active); nothing to do\n' "$host"
  printf 'node-name=%s\n' "$(node_name)"
  exit 0
fi
if ! command -v nodeadm >/dev/null 2>&1; then
  printf 'join %s: nodeadm is not installed; run `nodeadm install <k8s-version> --credential-provider ssm` first\n' "$host" >&2
  exit 2
fi

activation_code=""
activation_id=""
IFS= read -r activation_code || true
IFS= read -r activation_id || true
if [ -z "$activation_code" ] || [ -z "$activation_id" ]; then
  printf 'join %s: expected the SSM activation code and id on stdin, one line each\n' "$host" >&2
  exit 2
fi

umask 077
config="$(mktemp)"
trap 'rm -f "$config"' EXIT
{
  printf '%s\n' "$node_config"
  printf '      activationCode: "%s"\n      activationId: "%s"\n' "$activation_code" "$activation_id"
} > "$config"
nodeadm init --config-source "file://$config"
printf 'node-name=%s\n' "$(node_name)"
