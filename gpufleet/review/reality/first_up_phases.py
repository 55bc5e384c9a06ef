"""The first `up` of a site whose API the deployer reaches only over a Site-to-Site VPN the stack creates: two
phases, because that path carries nothing until the on-prem device is configured.

- The VPN connection, and so its tunnels' outside addresses and keys, exist only once `up` has created it. The
  device is then configured from them (AWS Site-to-Site VPN user guide, SetUpVPNConnections.html: "Download the
  configuration file" and "Configure the customer gateway device").
- Phase 1 is `pulumi up --exclude <URN> --exclude-dependents` with the site's Kubernetes provider: every object
  inside the cluster uses that provider, so it is a dependent; the VPC, VPN, cluster and node groups are not
  (Pulumi docs, "Targeted updates": `--exclude`, `--exclude-dependents`).
- Phase 2, once the device is configured and the tunnels are up, is a plain `pulumi up`. The first-up simulation
  judges the in-cluster objects as phase 2 creates them.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.engine.plan import Plan
from model import kinds
from model.cni import K8S_PROVIDER_TYPE, k8s_provider_name
from model.spec import EstateSpec, VpnInterconnect

TUNNEL_DOCS = "https://docs.aws.amazon.com/vpn/latest/s2svpn/SetUpVPNConnections.html"


@dataclass(frozen=True)
class VpnPhase:
    site: str
    vpn_from: str  # the on-prem site on the VPN's other side
    provider_urn: str  # what phase 1 excludes, with its dependents
    deferred: frozenset[str]  # plan keys phase 2 creates

    def note(self) -> str:
        return (
            f"site {self.site}: the deployer reaches its API only over the Site-to-Site VPN from {self.vpn_from}, "
            "which carries nothing until the on-prem device is configured from the tunnels' details, and those exist "
            f"only once `up` has created the VPN ({TUNNEL_DOCS}). The first `up` is two: "
            f"`pulumi up --exclude '{self.provider_urn}' --exclude-dependents` ({len(self.deferred)} in-cluster "
            "resources wait), then configure the device and run `pulumi up`."
        )


def vpn_phases(spec: EstateSpec, plan: Plan) -> list[VpnPhase]:
    """Each AWS site the stack connects by a VPN it creates, and that the deployer reaches only through it."""
    out = []
    for site in spec.sites:
        aws = kinds.of(site).aws_site
        if aws is None or aws.vpc.vpc_id is not None:
            continue  # an adopted VPC gets no VPN from the stack (components.aws.site)
        ic = aws.interconnect
        if not isinstance(ic, VpnInterconnect) or spec.deployer.network != ic.site:
            continue
        provider = next(iter(plan.find(K8S_PROVIDER_TYPE, k8s_provider_name(site.name))), None)
        if provider is None:
            continue
        urn = f"urn:pulumi:{plan.stack}::{plan.project}::{provider.key}"
        out.append(VpnPhase(site.name, ic.site, urn, dependents(plan, provider.key)))
    return out


def dependents(plan: Plan, key: str) -> frozenset[str]:
    """Every resource that depends on `key`: through its dependencies, its provider or a parent that does (what
    `--exclude-dependents` leaves out with it)."""
    users: dict[str, list[str]] = {}
    for r in plan.resources:
        for used in {*r.dependencies, *([r.provider] if r.provider else []), *([r.parent] if r.parent else [])}:
            users.setdefault(used, []).append(r.key)
    out: set[str] = set()
    frontier = [key]
    while frontier:
        found = [u for k in frontier for u in users.get(k, []) if u not in out and u != key]
        out.update(found)
        frontier = found
    return frozenset(out)
