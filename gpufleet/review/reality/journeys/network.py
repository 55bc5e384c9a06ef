"""Network: the tenant namespace's NetworkPolicies let through what the job needs, and nothing it must not have.

NetworkPolicy semantics (https://kubernetes.io/docs/concepts/services-networking/network-policies/): a policy
that selects a pod and lists a policyType isolates it in that direction; then any selecting policy's rule may
allow a connection. A rule's peers are ORed: a podSelector (the policy's namespace), a namespaceSelector, both,
or an ipBlock minus its `except`. No ports: every port. Pod to pod needs egress at one end and ingress at the
other.

The job needs DNS (kube-dns, UDP and TCP 53), every port between its pods (NCCL), the object store and the
internet where it names them. On EKS the VPC CNI applies no policy to a standalone Pod without ownerReferences:
an untrusted tenant's bare Pod is blocked.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gpufleet.review.reality.journeys.core import Cite, ClusterView, Stage, Walk, ref
from model import catalog, kinds
from model.conventions import KUBE_SYSTEM, NAMESPACE_NAME_LABEL, TRUST_LABEL

NP_DOC = "https://kubernetes.io/docs/concepts/services-networking/network-policies/"
EKS_NP_DOC = "https://docs.aws.amazon.com/eks/latest/userguide/cni-network-policy.html"
CITES = (
    Cite("policies select pods, isolate them per policyType and add up; peers, ports and ipBlock except", NP_DOC),
    Cite(
        "the VPC CNI applies network policies only to pods with ownerReferences, not to standalone pods",
        EKS_NP_DOC + " (Considerations)",
    ),
)
KUBE_DNS = {"k8s-app": "kube-dns"}  # CoreDNS pods on EKS and kubeadm clusters
PUBLIC_PROBE = "0.0.0.0/0"
# Ranges that are not the internet: private, shared, this-network, loopback, link-local, multicast and reserved
# (RFC 1918, 6598, 1122, 3927, 5771, 1112).
NOT_INTERNET = (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "0.0.0.0/8", "127.0.0.0/8",
    "169.254.0.0/16", "224.0.0.0/3",
)  # fmt: skip
_URL = re.compile(r"\b(https?|s3)://([A-Za-z0-9.\-]+)(?::(\d+))?")
DEFAULT_PORTS = {"https": 443, "http": 80, "s3": 443}
Net = ipaddress.IPv4Network


@dataclass(frozen=True)
class Pod:
    """One end of a connection inside the cluster."""

    namespace: str
    labels: dict[str, str]


@dataclass(frozen=True)
class Flow:
    """A connection the job needs: to pods, or to addresses (`nets`, all of which must be allowed)."""

    what: str
    protocol: str = "TCP"
    port: int | None = None  # None: every port
    pods: Pod | None = None
    nets: tuple[Net, ...] = ()


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A LabelSelector: matchLabels and matchExpressions ANDed; an empty selector matches everything."""
    selector = selector or {}
    if any(labels.get(k) != str(v) for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), [str(v) for v in e.get("values") or []]
        present = key in labels
        ok = {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(str(op), False)
        if not ok:
            return False
    return True


class Policies:
    """The NetworkPolicies of a cluster, evaluated for connections."""

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self.policies = view.of("NetworkPolicy")

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        obj = self.view.get("Namespace", namespace) or {}
        return {**((obj.get("metadata") or {}).get("labels") or {}), NAMESPACE_NAME_LABEL: namespace}

    def _selecting(self, pod: Pod, direction: str) -> list[dict[str, Any]]:
        out = []
        for p in self.view.in_namespace("NetworkPolicy", pod.namespace):
            spec = p.get("spec") or {}
            if not selector_matches(spec.get("podSelector"), pod.labels):
                continue
            types = spec.get("policyTypes") or (["Ingress"] + (["Egress"] if "egress" in spec else []))
            if direction in types:
                out.append(p)
        return out

    def _peer_matches(self, peer: dict[str, Any], policy_ns: str, flow: Flow, net: Net | None) -> bool:
        if "ipBlock" in peer:
            if net is None:
                return False  # pod addresses are not for ipBlock to select (implementation-defined)
            block = peer["ipBlock"]
            cidr = ipaddress.ip_network(str(block.get("cidr")), strict=False)
            if not isinstance(cidr, Net):
                return False  # an IPv6 block never holds the IPv4 addresses walked here
            inside = net.subnet_of(cidr)
            excepted = any(net.overlaps(ipaddress.ip_network(str(c), strict=False)) for c in block.get("except") or [])
            return inside and not excepted
        if flow.pods is None:
            return False
        if "namespaceSelector" in peer:
            if not selector_matches(peer["namespaceSelector"], self.namespace_labels(flow.pods.namespace)):
                return False
        elif flow.pods.namespace != policy_ns:
            return False
        return "podSelector" not in peer or selector_matches(peer["podSelector"], flow.pods.labels)

    @staticmethod
    def _port_matches(ports: list[dict[str, Any]] | None, flow: Flow) -> bool:
        if not ports:
            return True
        if flow.port is None:
            return False
        for p in ports:
            if str(p.get("protocol") or "TCP") != flow.protocol:
                continue
            if "port" not in p:
                return True
            start = p["port"]
            if isinstance(start, int) and start <= flow.port <= int(p.get("endPort") or start):
                return True
        return False

    def allows(self, pod: Pod, direction: str, flow: Flow, net: Net | None = None) -> tuple[bool, str]:
        """Whether `pod`'s policies let `flow` out (Egress) or in (Ingress), and the policies that decided."""
        selecting = self._selecting(pod, direction)
        if not selecting:
            return True, "not isolated"
        rules_key = "egress" if direction == "Egress" else "ingress"
        peers_key = "to" if direction == "Egress" else "from"
        for p in selecting:
            ns = (p.get("metadata") or {}).get("namespace") or ""
            for rule in (p.get("spec") or {}).get(rules_key) or []:
                peers = rule.get(peers_key)
                if not self._port_matches(rule.get("ports"), flow):
                    continue
                if not peers or any(self._peer_matches(peer, ns, flow, net) for peer in peers):
                    return True, ref(p)
        return False, ", ".join(ref(p) for p in selecting)


def _texts(walk: Walk) -> Iterator[str]:
    for ps in walk.pod_sets:
        for c in ps.containers():
            yield from (str(x) for x in (c.get("command") or []) + (c.get("args") or []))
            yield from (str(e.get("value") or "") for e in c.get("env") or [])


def _internet() -> tuple[Net, ...]:
    left: list[Net] = [ipaddress.IPv4Network(PUBLIC_PROBE)]
    for private in NOT_INTERNET:
        p = ipaddress.IPv4Network(private)
        left = [piece for net in left for piece in (net.address_exclude(p) if p.subnet_of(net) else [net])]
    return tuple(left)


def _address(host: str) -> ipaddress.IPv4Address | None:
    try:
        return ipaddress.IPv4Address(host)
    except ValueError:
        return None


def needed(walk: Walk) -> list[Flow]:
    """The connections the job needs: DNS, its own pods, the object store and the internet where it names them."""
    flows = [
        Flow("DNS (UDP 53) to kube-dns", "UDP", 53, Pod(KUBE_SYSTEM, KUBE_DNS)),
        Flow("DNS (TCP 53) to kube-dns", "TCP", 53, Pod(KUBE_SYSTEM, KUBE_DNS)),
    ]
    ns = walk.workload.namespace
    if walk.workload.pods > 1:
        flows += [Flow(f"every port to the job's pods of {ps.name}", pods=Pod(ns, ps.labels)) for ps in walk.pod_sets]
    site = walk.spec.site(walk.cluster.site) if walk.cluster.site else None
    facts = kinds.of(site) if site is not None else None
    hosts = {
        m.group(2).lower(): (m.group(1), int(m.group(3) or DEFAULT_PORTS[m.group(1)]))
        for t in _texts(walk)
        for m in _URL.finditer(t)
    }
    store = [e for e in (facts.storage_egress() if facts else []) if e.address and e.cidr and e.address in hosts]
    for e in store:
        port = next((int(p["port"]) for p in e.ports), 443)
        flows.append(Flow(f"the object store {e.address}", "TCP", port, nets=(ipaddress.IPv4Network(e.cidr),)))
    region = facts.region if facts is not None else None
    s3 = {h for h, (scheme, _) in hosts.items() if region and (scheme == "s3" or h.endswith(".amazonaws.com"))}
    if region and s3:
        ranges = tuple(ipaddress.IPv4Network(c) for c in catalog.s3_ranges(region))
        flows.append(Flow(f"S3 in {region} (its published ranges)", "TCP", 443, nets=ranges))
    skip = s3 | {e.address for e in store}
    outside = {
        h: port
        for h, (scheme, port) in hosts.items()
        if h not in skip and scheme != "s3" and not h.endswith((".svc", ".cluster.local"))
    }
    for host, port in sorted(outside.items()):
        if _address(host) is not None:
            flows.append(Flow(f"{host} (TCP {port})", "TCP", port, nets=(ipaddress.IPv4Network(host),)))
        else:
            flows.append(Flow(f"the internet ({host}, TCP {port})", "TCP", port, nets=_internet()))
    return flows


def _bare_pod_unguarded(walk: Walk, policies: Policies) -> str | None:
    """Why the VPC CNI leaves an untrusted tenant's standalone pod unisolated, or None."""
    w = walk.workload
    site = walk.spec.site(walk.cluster.site) if walk.cluster.site else None
    if w.kind != "Pod" or (w.manifest.get("metadata") or {}).get("ownerReferences") or site is None:
        return None
    if not kinds.of(site).runs_on_ec2:
        return None
    if policies.namespace_labels(w.namespace).get(TRUST_LABEL) != "untrusted":
        return None
    return (
        f"a standalone Pod of untrusted namespace {w.namespace} on EKS site {site.name}: the VPC CNI does not apply "
        "NetworkPolicies to pods without ownerReferences, so its default-deny and egress limits do not hold"
    )


def _deny(policies: Policies, selecting: str) -> str:
    """The policy to name as blocking: the one that only isolates (a default deny), else the first selecting."""
    refs = selecting.split(", ")
    for p in policies.policies:
        spec = p.get("spec") or {}
        if ref(p) in refs and not spec.get("egress") and not spec.get("ingress"):
            return ref(p)
    return refs[0]


def check(walk: Walk) -> Stage:
    """Every connection the job needs is allowed, both ways, by the cluster's NetworkPolicies."""
    policies = Policies(walk.cluster)
    why = _bare_pod_unguarded(walk, policies)
    if why:
        unblock = "run it as a Job or Deployment, or refuse bare Pods of untrusted tenants at admission"
        return Stage("network", False, why, f"Namespace/{walk.workload.namespace}", unblock, CITES)
    said: list[str] = []
    for flow in needed(walk):
        for ps in walk.pod_sets:
            me = Pod(walk.workload.namespace, ps.labels)
            for net in flow.nets or (None,):
                ok, by = policies.allows(me, "Egress", flow, net)
                if ok and flow.pods is not None:
                    ok, by = policies.allows(flow.pods, "Ingress", Flow(flow.what, flow.protocol, flow.port, me))
                if not ok:
                    where = f" ({net})" if net is not None and len(flow.nets) < len(_internet()) else ""
                    return Stage(
                        "network",
                        False,
                        f"pod set {ps.name}: no NetworkPolicy allows {flow.what}{where}; selected by {by}",
                        _deny(policies, by),
                        f"allow {flow.what} in the namespace's policies, or do without it",
                        CITES,
                    )
        said.append(flow.what)
    return Stage("network", True, "allowed: " + "; ".join(said), cites=CITES)
