"""Which CNI enforces a site's NetworkPolicies, and which sites host tenants that rely on them.

A NetworkPolicy "is implemented by the network plugin ... creating a NetworkPolicy resource without a controller
that implements it will have no effect" (https://kubernetes.io/docs/concepts/services-networking/network-policies/).
Every tenant namespace gets a default-deny policy, so a site hosting tenants needs a CNI that enforces them.
The schema rule (spec.rules) and the policy rule (policies/segmentation `tenant-networkpolicy-enforced`) both
read the facts here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from model import kinds
from model.spec.base import Problem
from model.spec.sites import Site

if TYPE_CHECKING:
    from model.spec.estate import EstateSpec

# CNIs that enforce Kubernetes NetworkPolicy: the network policy providers of the Kubernetes task pages
# (https://kubernetes.io/docs/tasks/administer-cluster/network-policy-provider/), and the EKS vpc-cni add-on.
_PROVIDERS = "https://kubernetes.io/docs/tasks/administer-cluster/network-policy-provider/"
ENFORCING: dict[str, str] = {
    "calico": f"{_PROVIDERS}calico-network-policy/",
    "cilium": f"{_PROVIDERS}cilium-network-policy/",
    "antrea": f"{_PROVIDERS}antrea-network-policy/",
    "kube-router": f"{_PROVIDERS}kube-router-network-policy/",
    # Only with the add-on's configuration value enableNetworkPolicy "true" (EKS user guide,
    # cni-network-policy-configure, "Enable the network policy parameter for the add-on").
    "vpc-cni": "https://docs.aws.amazon.com/eks/latest/userguide/cni-network-policy-configure.html",
}
# The configuration value of the EKS vpc-cni add-on that turns NetworkPolicy enforcement on (same page).
VPC_CNI_NETWORK_POLICY = {"enableNetworkPolicy": "true"}
K8S_PROVIDER_TYPE = "pulumi:providers:kubernetes"  # the type token of every site's Kubernetes provider
K8S_PROVIDER_SUFFIX = "-k8s"

# CNIs that leave standalone pods (no ownerReferences) outside every NetworkPolicy. The EKS user guide,
# cni-network-policy, "Considerations" (https://docs.aws.amazon.com/eks/latest/userguide/cni-network-policy.html;
# awsdocs/amazon-eks-user-guide latest/ug/networking/cni-network-policy.adoc): "Standalone Pods that don't have a
# `metadata.ownerReferences` set can't have network policies applied to them."
SKIPS_STANDALONE_PODS: dict[str, str] = {
    "vpc-cni": "https://docs.aws.amazon.com/eks/latest/userguide/cni-network-policy.html#cni-network-policy-considerations",
}


def k8s_provider_name(site_name: str) -> str:
    """The logical name of a site's Kubernetes provider (the policy rule finds a cluster's declared CNI by it)."""
    return f"{site_name}{K8S_PROVIDER_SUFFIX}"


def site_cni(site: Site) -> str | None:
    """The CNI a site's cluster runs: vpc-cni where gpufleet manages it, else what the site declares (None:
    undeclared; "none": a CNI that enforces no NetworkPolicy)."""
    return "vpc-cni" if kinds.of(site).manages_cni else site.kubernetes.network_policy_cni


def enforces_network_policy(site: Site) -> bool:
    return site_cni(site) in ENFORCING


def skips_standalone_pods(site: Site) -> bool:
    """The site's CNI applies no NetworkPolicy to a pod without ownerReferences (SKIPS_STANDALONE_PODS)."""
    return site_cni(site) in SKIPS_STANDALONE_PODS


def hosts_tenants(spec: EstateSpec, site: Site) -> bool:
    """Tenants have namespaces here: GPU quota on one of the site's pools, or burst queues on the cloud site."""
    pools = {p.name for p in site.node_pools}
    if any(pools & set(t.gpu_quota) for t in spec.tenants):
        return True
    return spec.burst is not None and spec.burst.cloud_site == site.name and any(t.burst for t in spec.tenants)


def network_policy_problems(spec: EstateSpec) -> Iterator[Problem]:
    """A site hosting tenants runs a CNI that enforces NetworkPolicy; a declaration fits the site's kind."""
    for i, s in enumerate(spec.sites):
        path = f"sites[{i}].kubernetes.network_policy_cni"
        declared = s.kubernetes.network_policy_cni
        kind = kinds.of(s)
        if kind.manages_cni:
            if declared is not None:
                yield Problem(
                    path,
                    f"site {s.name} creates its EKS cluster, whose vpc-cni add-on gpufleet manages with network "
                    "policy on; leave network_policy_cni unset",
                )
            continue
        if not kind.runs_on_ec2 and declared == "vpc-cni":
            yield Problem(path, "the Amazon VPC CNI runs only on EC2 nodes; name the CNI of the bare-metal cluster")
            continue
        if not hosts_tenants(spec, s):
            continue
        choices = ", ".join(n for n in ENFORCING if kind.runs_on_ec2 or n != "vpc-cni")
        if declared is None:
            yield Problem(
                path,
                f"site {s.name} hosts tenants, whose isolation relies on their default-deny NetworkPolicies; declare "
                f"the cluster's CNI ({choices}, or none)",
            )
        elif declared not in ENFORCING:
            yield Problem(
                path,
                f"site {s.name}'s CNI enforces no NetworkPolicy, so its tenants' default-deny policies would have no "
                f"effect; run a CNI that does ({choices}) or host no tenants there",
            )
