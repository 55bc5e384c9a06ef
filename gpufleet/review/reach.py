"""Who can reach which Kubernetes API: one question, asked of the spec.

`can_reach_api(spec, source, site)` answers "can SOURCE reach the Kubernetes API of site SITE", where SOURCE is
`DEPLOYER` (wherever `pulumi up` runs) or another site's name (e.g. a MultiKueue manager reaching its worker). It
decides from today's fields; a declared network path (VPN, peering, a runner inside the VPC) plugs in here.

Today's rules:
- an AWS site the stack creates: its API is public only for `cluster.endpoint_public_cidrs` (empty = private
  endpoint only, reachable from inside the site's VPC). From outside the VPC it is reachable only through the
  public endpoint; the stack does not say from which address the deployer or another site connects, so a
  non-empty list is taken to include it (the check cannot prove that part).
- an adopted EKS cluster (`cluster.adopt_name`): its endpoint settings are not in the stack; assumed reachable.
- a bare-metal site: its API is whatever the kubeconfig secret names; the deployer holding that kubeconfig is
  assumed to reach it; another site reaches it only if a path is declared (none can be today).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from components.model.spec import AwsSite, BaremetalSite, EstateSpec

DEPLOYER = "deployer"


@dataclass(frozen=True)
class Reach:
    ok: bool
    why: str


def can_reach_api(spec: EstateSpec, source: str, site_name: str) -> Reach:
    site = spec.site(site_name)
    if source == site_name:
        return Reach(True, f"{source} is inside site {site_name}")
    who = "the deployer" if source == DEPLOYER else f"site {source}"
    match site:
        case AwsSite():
            if site.cluster.adopt_name:
                return Reach(True, f"adopted cluster {site.cluster.adopt_name}: endpoint access not in the stack")
            if site.cluster.endpoint_public_cidrs:
                cidrs = ", ".join(site.cluster.endpoint_public_cidrs)
                return Reach(True, f"public endpoint open to {cidrs} (assumed to include {who})")
            return Reach(
                False,
                f"the EKS API of site {site_name} is private (sites[{_index(spec, site_name)}].cluster."
                f"endpoint_public_cidrs is empty) and the stack declares no network path from {who} into its VPC",
            )
        case BaremetalSite():
            if source == DEPLOYER:
                return Reach(True, "the deployer holds the site's kubeconfig (assumed on its network)")
            return Reach(False, f"no network path is declared from {who} to the API of bare-metal site {site_name}")
        case _:
            assert_never(site)


def _index(spec: EstateSpec, site_name: str) -> int:
    return next(i for i, s in enumerate(spec.sites) if s.name == site_name)
