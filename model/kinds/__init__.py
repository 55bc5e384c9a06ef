"""One module per site kind: the pure facts the rest of gpufleet asks of a site of that kind.

`of(site)` is the one `match` on a site's kind; `image_ships_driver(kind)` answers the one fact a policy asks
knowing only the kind from a resource's URN. Everything else asks the `SiteKindFacts` it returns (capacity, CNI,
API reach, driver and toolkit, topology labels, storage egress, secrets, kubeconfig access, network rate, what
the bill excludes, the diagram's words, the kind's schema rules) and never tests a site's class. A new kind adds
its module here and a `case` below; mypy then checks its facts against the protocol.
"""

from __future__ import annotations

from typing import assert_never

from model.conventions import SiteKind
from model.kinds import aws, baremetal
from model.kinds.aws import AwsKind
from model.kinds.baremetal import BaremetalKind
from model.kinds.facts import SiteKindFacts
from model.spec.sites import AwsSite, BaremetalSite, Site


def of(site: Site) -> SiteKindFacts:
    """The facts of `site`, answered by its kind's module."""
    match site:
        case AwsSite():
            return AwsKind(site)
        case BaremetalSite():
            return BaremetalKind(site)
        case _:
            assert_never(site)


def image_ships_driver(kind: SiteKind) -> bool:
    """Sites of `kind` get the NVIDIA driver and container toolkit from the node image."""
    match kind:
        case "aws":
            return aws.IMAGE_SHIPS_DRIVER
        case "baremetal":
            return baremetal.IMAGE_SHIPS_DRIVER
        case _:
            assert_never(kind)
