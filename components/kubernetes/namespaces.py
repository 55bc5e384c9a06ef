"""System namespaces of the GPU software stack, labelled Pod Security `privileged`.

Every operand of the GPU Operator (driver, toolkit, device plugin, GFD, MIG manager, DCGM exporter, validator),
the Network Operator's DOCA driver and device plugins, the standalone NVIDIA device plugin and the AWS EFA
device plugin run privileged or mount host paths, which Pod Security `baseline` forbids. Their namespaces are
therefore labelled `pod-security.kubernetes.io/{enforce,audit,warn}=privileged` — and no other namespace may
be: `model.conventions.PRIVILEGED_NAMESPACES` is the one exemption register, which the policy packs
read too (check T6 in docs/checklist.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from model.conventions import KUBE_SYSTEM, PRIVILEGED_NAMESPACES, pod_security_labels
from model.tags import Tags

# The standalone device plugin and the EFA device plugin run where their upstream charts document them
# (kube-system): one privileged system namespace fewer than giving each its own.
DEVICE_PLUGIN_NAMESPACE = KUBE_SYSTEM
EFA_PLUGIN_NAMESPACE = KUBE_SYSTEM


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
        self._labels = {**args.tags.labels(), **pod_security_labels("privileged")}
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
