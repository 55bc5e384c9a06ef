#!/usr/bin/env bash
# gpufleet leave for the server named in `node` below: kubeadm reset after the node was drained through the API.
# Runs as the join command's delete step; the drain runs before it and the Node object is deleted after it.
# Idempotent: a server that is not (or no longer) a node is left alone.
# Rendered from components/baremetal/templates/leave-kubeadm.sh.j2.
set -euo pipefail

node=gpu-r1-01
kubelet_kubeconfig=/etc/kubernetes/kubelet.conf
if [ ! -f "$kubelet_kubeconfig" ] && ! systemctl is-active --quiet kubelet; then
  printf 'leave %s: not a node of any cluster; nothing to do\n' "$node"
  exit 0
fi
kubeadm reset --force
# kubeadm reset leaves the CNI configuration behind; remove it so a later join starts clean.
rm -rf /etc/cni/net.d
printf 'leave %s: reset; the Node object is deleted through the API next\n' "$node"
