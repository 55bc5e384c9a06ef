"""System namespaces of the GPU software stack, and the one register of namespaces allowed to run privileged pods.

Every operand of the GPU Operator (driver, toolkit, device plugin, GFD, MIG manager, DCGM exporter, validator),
the Network Operator's DOCA driver and device plugins, the standalone NVIDIA device plugin and the AWS EFA
device plugin run privileged or mount host paths, which Pod Security `baseline` forbids. Their namespaces are
therefore labelled `pod-security.kubernetes.io/{enforce,audit,warn}=privileged` — and no other namespace may
be: `PRIVILEGED_NAMESPACES` is the exemption register the policy packs read (check T6 / P5 in
shared/reference/gpu-facts.md). Adding a namespace here is a security decision; say why next to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.model.tags import Tags

GPU_OPERATOR_NAMESPACE = "gpu-operator"
NETWORK_OPERATOR_NAMESPACE = "network-operator"
KUBE_SYSTEM = "kube-system"
# The standalone device plugin and the EFA device plugin run where their upstream charts document them
# (kube-system): one privileged system namespace fewer than giving each its own.
DEVICE_PLUGIN_NAMESPACE = KUBE_SYSTEM
EFA_PLUGIN_NAMESPACE = KUBE_SYSTEM

PRIVILEGED_NAMESPACES: frozenset[str] = frozenset(
    {
        GPU_OPERATOR_NAMESPACE,  # GPU Operator operands: privileged, hostPID (driver, toolkit, MIG manager)
        NETWORK_OPERATOR_NAMESPACE,  # DOCA driver, RDMA / SR-IOV device plugins, multus, CNI installers
        KUBE_SYSTEM,  # standalone NVIDIA device plugin, AWS EFA device plugin, the cluster's own CNI/proxy
    }
)
"""The exemption register: the only namespaces whose Pod Security level may be `privileged`."""

PSA_MODES = ("enforce", "audit", "warn")


def privileged_labels() -> dict[str, str]:
    """Pod Security Admission labels of an exempted system namespace (all three modes, privileged)."""
    return {f"pod-security.kubernetes.io/{mode}": "privileged" for mode in PSA_MODES}


def check_registered(namespaces: Iterable[str]) -> None:
    """Refuse to label a namespace privileged unless it is in the register."""
    unknown = sorted(set(namespaces) - PRIVILEGED_NAMESPACES)
    if unknown:
        # A programming error, not user input: gpufleet's components fix the set of system namespaces.
        raise ValueError(f"{', '.join(unknown)} not in the privileged-namespace register PRIVILEGED_NAMESPACES")


@dataclass(frozen=True)
class SystemNamespacesArgs:
    tags: Tags
    namespaces: tuple[str, ...]  # each must be in PRIVILEGED_NAMESPACES


class SystemNamespaces(pulumi.ComponentResource):
    """The privileged system namespaces one cluster's GPU stack needs, with Pod Security and cost labels.

    Creates a Namespace for each namespace gpufleet owns; `kube-system` exists in every cluster and is
    labelled through a server-side-apply NamespacePatch instead (deleting the stack removes only our labels).
    """

    def __init__(self, name: str, args: SystemNamespacesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:kubernetes:SystemNamespaces", name, None, opts)
        check_registered(args.namespaces)
        self._name = name
        self._labels = {**args.tags.labels(), **privileged_labels()}
        self.resources: dict[str, pulumi.CustomResource] = {ns: self._namespace(ns) for ns in _unique(args.namespaces)}
        self.register_outputs({})

    def _namespace(self, namespace: str) -> pulumi.CustomResource:
        opts = pulumi.ResourceOptions(parent=self)
        if namespace == KUBE_SYSTEM:
            return k8s.core.v1.NamespacePatch(
                f"{self._name}-{namespace}",
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(name=namespace, labels=self._labels),
                opts=opts,
            )
        return k8s.core.v1.Namespace(
            f"{self._name}-{namespace}",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=namespace, labels=self._labels),
            opts=opts,
        )


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))
