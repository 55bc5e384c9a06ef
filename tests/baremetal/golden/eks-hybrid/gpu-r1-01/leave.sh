#!/usr/bin/env bash
# gpufleet leave for the server named in `host` below: nodeadm uninstall after the node was drained through the API.
# Runs as the join command's delete step; the Node object is deleted after it.
# Idempotent: a server without a running kubelet is left alone.
# Rendered from components/baremetal/templates/leave-eks-hybrid.sh.j2.
set -euo pipefail

host=gpu-r1-01
kubelet_kubeconfig=/var/lib/kubelet/kubeconfig
if [ ! -f "$kubelet_kubeconfig" ] && ! systemctl is-active --quiet kubelet; then
  printf 'leave %s: not a hybrid node; nothing to do\n' "$host"
  exit 0
fi
nodeadm uninstall
printf 'leave %s: uninstalled; the Node object is deleted through the API next\n' "$host"
