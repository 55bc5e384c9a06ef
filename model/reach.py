"""Who must reach each site's Kubernetes API, and whether the estate gives them a path.

One judgement, used by the schema (a site whose API someone who must reach it cannot reach is refused) and by
the first-up simulation. Who must reach an API: the deployer (`pulumi up` runs the Kubernetes providers) for every
site, and in a hybrid estate the MultiKueue manager (`burst.manager`) for every worker's API (it holds a
kubeconfig of each).

What a path is, from the EKS user guide, "Cluster API server endpoint" (cluster-endpoint):
- a private endpoint is reached "from within your cluster's VPC or a connected network", and "you must ensure
  that your Amazon EKS control plane security group contains rules to allow ingress traffic on port 443 from your
  connected network" (`private_api_sources` lists what the cluster's API security group admits);
- with public access disabled, the endpoint name "is resolved by public DNS servers to a private IP address from
  the VPC", so a connected network needs only the route, no DNS forwarding;
- a public endpoint admits only its publicAccessCidrs (`cluster.endpoint_public_cidrs`).
A bare-metal site's API is reached from inside its own network, or from an AWS site's VPC whose private
interconnect routes to it. The data centre's own firewalls are outside the estate's knowledge. An adopted EKS
cluster is judged by what the site declares about it (its endpoint CIDRs and interconnect).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, assert_never

from model import dispatch
from model.spec.access import PrivateInterconnect, PublicInterconnect
from model.spec.base import Problem
from model.spec.sites import AwsSite, BaremetalSite, Site

if TYPE_CHECKING:
    from model.spec.estate import EstateSpec

ClientRole = Literal["deployer", "multikueue-manager"]


@dataclass(frozen=True)
class ApiClient:
    """Someone who must reach a site's Kubernetes API."""

    role: ClientRole
    name: str  # how messages call it
    path: str  # YAML path (relative to the estate value) of what places it
    network: str | None  # the site whose network it sits in; None: outside every site network
    cidrs: tuple[str, ...]  # its source addresses; empty: anywhere in its network


@dataclass(frozen=True)
class Reach:
    """Whether a client reaches an API: `via` says through which path, or why not and what to declare."""

    ok: bool
    via: str

    def __bool__(self) -> bool:
        return self.ok


def _nets(cidrs: Iterable[str]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(c, strict=False) for c in cidrs]


def outside(cidrs: Iterable[str], allowed: Iterable[str]) -> list[str]:
    """The CIDRs of `cidrs` not inside any network of `allowed`."""
    nets = _nets(allowed)
    return [
        c
        for c, n in zip(cidrs, _nets(cidrs), strict=True)
        if not any(n.version == a.version and n.subnet_of(a) for a in nets)  # type: ignore[arg-type]
    ]


def manager_client(spec: EstateSpec) -> ApiClient | None:
    """The MultiKueue manager of a hybrid estate (`burst.manager`), as a client of its workers' APIs."""
    if spec.burst is None:
        return None
    m = spec.burst.manager
    return ApiClient(
        "multikueue-manager", f"the MultiKueue manager {m.name} (in site {m.network}'s network)",
        "burst.manager.network", m.network, (),
    )  # fmt: skip


def api_clients(spec: EstateSpec, site: Site) -> list[ApiClient]:
    """Everyone who must reach `site`'s API: the MultiKueue manager for each of its workers, and the deployer.

    The deployer also reaches the manager's own API; that API sits in the network of the site `burst.manager.network`
    names, so the deployer's path to that site's API is the judgement for it too."""
    clients = []
    manager = manager_client(spec)
    if manager is not None and site.name in {w.name for w in dispatch.workers(spec)}:
        clients.append(manager)
    d = spec.deployer
    where = f"inside site {d.network}'s network" if d.network else "outside every site network"
    clients.append(
        ApiClient("deployer", f"the deployer ({where}, from {', '.join(d.cidrs)})", "deployer", d.network,
                  tuple(d.cidrs))
    )  # fmt: skip
    return clients


def api_reachable_from(spec: EstateSpec, site: Site, client: ApiClient) -> Reach:
    """Whether `client` reaches `site`'s Kubernetes API through a path the estate declares."""
    match site:
        case AwsSite():
            return _aws(spec, site, client)
        case BaremetalSite():
            return _baremetal(spec, site, client)
        case _:
            assert_never(site)


def _aws(spec: EstateSpec, site: AwsSite, client: ApiClient) -> Reach:
    ic = site.interconnect
    public = site.cluster.endpoint_public_cidrs
    if client.network == site.name:
        if client.role == "multikueue-manager" and not _vpc_range(site):
            return Reach(
                False,
                f"{client.name} sits in the VPC of site {site.name}, but the API security group admits it by the "
                "VPC's range and vpc.cidr is not declared; declare the adopted VPC's CIDR in vpc.cidr",
            )
        return Reach(True, f"the private endpoint, from inside the VPC of site {site.name}")
    if client.network is not None:
        if isinstance(ic, PrivateInterconnect) and ic.site == client.network:
            stray = outside(client.cidrs, ic.onprem_cidrs)
            if stray:
                return Reach(
                    False,
                    f"{client.name} sends from {', '.join(stray)}, which the {ic.kind} interconnect of site "
                    f"{site.name} does not route (interconnect.onprem_cidrs: {', '.join(ic.onprem_cidrs)})",
                )
            return Reach(True, f"the private endpoint, through the {ic.kind} interconnect from {ic.site}")
        if isinstance(ic, PublicInterconnect) and ic.site == client.network:
            stray = outside(ic.egress_cidrs, public)
            if stray:
                admits = ", ".join(public) if public else "nothing (private only)"
                return Reach(
                    False,
                    f"{client.name} leaves {ic.site} from {', '.join(stray)} (interconnect.egress_cidrs), but the "
                    f"public endpoint of site {site.name} admits {admits}; add them to cluster.endpoint_public_cidrs",
                )
            return Reach(True, f"the public endpoint, from {ic.site}'s egress addresses")
        return Reach(
            False,
            f"{client.name} sits in site {client.network}'s network, which the VPC of site {site.name} is not "
            f"connected to; declare interconnect (vpn, transit-gateway, existing or public) with site: "
            f"{client.network} on site {site.name}",
        )
    if not public:
        return Reach(
            False,
            f"the API of site {site.name} is private (cluster.endpoint_public_cidrs is empty) and {client.name} sits "
            f"outside every network connected to it; run it inside the VPC or a connected network (deployer.network), "
            f"or admit its addresses in cluster.endpoint_public_cidrs",
        )
    stray = outside(client.cidrs, public)
    if stray:
        return Reach(
            False,
            f"the public endpoint of site {site.name} admits only {', '.join(public)} "
            f"(cluster.endpoint_public_cidrs); {client.name} sends from {', '.join(stray)}",
        )
    return Reach(True, "the public endpoint, which admits its addresses")


def _baremetal(spec: EstateSpec, site: BaremetalSite, client: ApiClient) -> Reach:
    if client.network == site.name:
        return Reach(True, f"{site.join.api_server}, from inside the network of site {site.name}")
    network = next((s for s in spec.sites if s.name == client.network), None)
    if isinstance(network, AwsSite):
        ic = network.interconnect
        if isinstance(ic, PrivateInterconnect) and ic.site == site.name:
            return Reach(True, f"{site.join.api_server}, from the VPC of site {network.name} through its {ic.kind}")
    return Reach(
        False,
        f"the API of site {site.name} ({site.join.api_server}) is reached only from inside its network or from a VPC "
        f"privately connected to it, and {client.name} is neither; set deployer.network: {site.name} (a runner in "
        "the data centre, or routed into it)",
    )


def private_api_sources(spec: EstateSpec, site: AwsSite) -> list[str]:
    """CIDRs the API security group of a cluster gpufleet creates admits on 443: the on-prem ranges of a private
    interconnect (a manager or deployer on-prem comes from there), the deployer's addresses when it runs inside
    this VPC, and the VPC's range when the MultiKueue manager of a worker site sits inside it (`burst.manager`
    declares no addresses, and a cluster in the VPC is not covered by this cluster's own security group). Every
    client `api_reachable_from` lets reach the private endpoint is admitted here."""
    out: list[str] = []
    if isinstance(site.interconnect, PrivateInterconnect):
        out += site.interconnect.onprem_cidrs
    if spec.deployer.network == site.name:
        out += spec.deployer.cidrs
    manager = manager_client(spec)
    vpc_range = _vpc_range(site)
    workers = {w.name for w in dispatch.workers(spec)}
    if manager is not None and manager.network == site.name and vpc_range and site.name in workers:
        out.append(vpc_range)
    return list(dict.fromkeys(out))


def _vpc_range(site: AwsSite) -> str | None:
    """The VPC's CIDR when it is known: the one the stack creates it with, or one declared for an adopted VPC
    (`vpc.cidr` has a default that describes only a VPC the stack creates)."""
    if site.vpc.vpc_id is None or "cidr" in site.vpc.model_fields_set:
        return site.vpc.cidr
    return None


# ------------------------------------------------------------------------------------------------ schema rules


def access_problems(spec: EstateSpec) -> Iterator[Problem]:
    """Declarations that name what exists, then every API someone who must reach it cannot reach."""
    declared = list(_declarations(spec))
    yield from declared
    if declared:
        return  # reachability is judged only over declarations that resolve
    for i, site in enumerate(spec.sites):
        failed: set[str] = set()  # networks whose path to this API is already reported
        for client in api_clients(spec, site):
            if client.network is not None and client.network in failed:
                continue  # a second client in a network that has no path: the same mistake, one message
            reach = api_reachable_from(spec, site, client)
            if not reach:
                if client.network is not None:
                    failed.add(client.network)
                path = "deployer" if client.role == "deployer" else f"sites[{i}].interconnect"
                yield Problem(path, f"{client.name} cannot reach the Kubernetes API of site {site.name}: {reach.via}")


def _declarations(spec: EstateSpec) -> Iterator[Problem]:
    sites = {s.name: s for s in spec.sites}
    d = spec.deployer
    if d.network is not None and d.network not in sites:
        yield Problem("deployer.network", f"{d.network} is not a site of the estate (sites: {', '.join(sites)})")
    net = sites.get(d.network or "")
    if isinstance(net, AwsSite) and net.vpc.cidr and not net.vpc.vpc_id:
        stray = outside(d.cidrs, [net.vpc.cidr])
        if stray:
            yield Problem(
                "deployer.cidrs",
                f"the deployer sits in the VPC of site {net.name} ({net.vpc.cidr}) but sends from {', '.join(stray)}",
            )
    for i, s in enumerate(spec.sites):
        if isinstance(s, AwsSite) and s.interconnect is not None:
            yield from _interconnect(f"sites[{i}].interconnect", s, sites)


def _interconnect(path: str, s: AwsSite, sites: dict[str, Site]) -> Iterator[Problem]:
    ic = s.interconnect
    assert ic is not None
    if not isinstance(sites.get(ic.site), BaremetalSite):
        bare = [n for n, x in sites.items() if isinstance(x, BaremetalSite)]
        yield Problem(f"{path}.site", f"{ic.site} is not a baremetal site of the estate ({', '.join(bare) or 'none'})")
    adopted = s.vpc.vpc_id is not None
    if ic.kind in ("vpn", "transit-gateway") and adopted:
        yield Problem(
            f"{path}.kind",
            f"site {s.name} adopts VPC {s.vpc.vpc_id}, whose route tables gpufleet does not manage; a {ic.kind} "
            "interconnect needs a VPC the stack creates (use kind existing for a VPC already routed to on-prem)",
        )
    if ic.kind == "existing" and not adopted:
        yield Problem(
            f"{path}.kind",
            f"site {s.name} creates its VPC, which nothing routes to on-prem yet; connect it with vpn or "
            "transit-gateway (existing is for an adopted VPC already routed)",
        )
    if isinstance(ic, PrivateInterconnect) and s.vpc.cidr and not adopted:
        vpc = ipaddress.ip_network(s.vpc.cidr, strict=False)
        clash = [c for c, n in zip(ic.onprem_cidrs, _nets(ic.onprem_cidrs), strict=True) if n.overlaps(vpc)]
        if clash:
            yield Problem(
                f"{path}.onprem_cidrs",
                f"{', '.join(clash)} overlaps the VPC of site {s.name} ({s.vpc.cidr}); routed ranges must not overlap",
            )
