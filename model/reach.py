"""Who must reach each site's Kubernetes API, and whether the estate gives them a path.

One judgement, used by the schema (it refuses a site whose API someone who must reach it cannot reach) and by the
first-up simulation.

- The deployer must reach every site's API: `pulumi up` runs the Kubernetes providers.
- In a hybrid estate, the MultiKueue manager (`burst.manager`) must reach every worker's API. It holds a
  kubeconfig of each.
- What a path is follows the EKS user guide (`api_reachable_from`).
- A bare-metal site's API is reached from inside its own network, or from an AWS site's VPC whose private
  interconnect routes to it. The data centre's own firewalls are outside the estate's knowledge.
- An adopted EKS cluster is judged by what the site declares about it: its endpoint CIDRs and interconnect.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from model import dispatch, kinds
from model.kinds import aws as aws_kind
from model.kinds.facts import ApiClient, Reach
from model.spec.access import PrivateInterconnect
from model.spec.base import Problem
from model.spec.sites import AwsSite, Site
from model.subnets import outside

if TYPE_CHECKING:
    from model.spec.estate import EstateSpec


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
    """Whether `client` reaches `site`'s Kubernetes API through a path the estate declares.

    What a path is, from the EKS user guide, "Cluster API server endpoint" (cluster-endpoint):
    - a private endpoint is reached "from within your cluster's VPC or a connected network", and "you must ensure
      that your Amazon EKS control plane security group contains rules to allow ingress traffic on port 443 from
      your connected network" (`private_api_sources`);
    - with public access disabled, the endpoint name "is resolved by public DNS servers to a private IP address
      from the VPC", so a connected network needs only the route, no DNS forwarding;
    - a public endpoint admits only its publicAccessCidrs (`cluster.endpoint_public_cidrs`).
    """
    network = next((s for s in spec.sites if s.name == client.network and s.name != site.name), None)
    routed = kinds.of(network).private_route_to(site.name) if network is not None else None
    return kinds.of(site).api_reach(spec, client, routed)


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
    vpc_range = aws_kind.vpc_range(site)
    workers = {w.name for w in dispatch.workers(spec)}
    if manager is not None and manager.network == site.name and vpc_range and site.name in workers:
        out.append(vpc_range)
    return list(dict.fromkeys(out))


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
    cidr = kinds.of(net).created_network_cidr if net is not None else None
    if net is not None and cidr:
        stray = outside(d.cidrs, [cidr])
        if stray:
            yield Problem(
                "deployer.cidrs",
                f"the deployer sits in the VPC of site {net.name} ({cidr}) but sends from {', '.join(stray)}",
            )
    onprem = [s.name for s in spec.sites if kinds.of(s).on_premises]
    for i, s in enumerate(spec.sites):
        yield from kinds.of(s).interconnect_problems(f"sites[{i}].interconnect", onprem)
