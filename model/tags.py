"""Cost and ownership tags (AWS) and labels (Kubernetes), computed once from the spec.

Components set these explicitly on every taggable resource: transforms do not run under mocks, so a policy
would not see tags added by one, and `default_tags` on the AWS provider is invisible in a resource's inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from model.conventions import DEDICATED_TENANT_LABEL, LABEL_PREFIX, SHARED, TENANT_LABEL

if TYPE_CHECKING:
    from model.spec.estate import EstateSpec


@dataclass(frozen=True)
class Tags:
    base: dict[str, str]

    @classmethod
    def from_spec(cls, spec: EstateSpec) -> Tags:
        m = spec.metadata
        return cls(
            {
                **m.tags,
                "owner": m.owner,
                "cost-center": m.cost_center,
                "env": m.environment,
                "cluster": m.name,
                "managed-by": "gpufleet",
            }
        )

    def aws(self, *, tenant: str = SHARED, cost_center: str | None = None, **extra: str) -> dict[str, str]:
        """Tags for an AWS resource; `tenant` is `shared` unless one tenant owns it."""
        tags = {**self.base, TENANT_LABEL: tenant, **extra}
        if cost_center:
            tags["cost-center"] = cost_center
        return tags

    def labels(self, *, tenant: str = SHARED, cost_center: str | None = None, **extra: str) -> dict[str, str]:
        """Kubernetes cost labels (namespaces, nodes): the same facts under the gpufleet.io/ prefix."""
        return {
            f"{LABEL_PREFIX}owner": _label_value(self.base["owner"]),
            f"{LABEL_PREFIX}cost-center": _label_value(cost_center or self.base["cost-center"]),
            f"{LABEL_PREFIX}env": self.base["env"],
            f"{LABEL_PREFIX}cluster": self.base["cluster"],
            DEDICATED_TENANT_LABEL: tenant,
            **extra,
        }


def _label_value(value: str) -> str:
    """A Kubernetes label value: at most 63 of [A-Za-z0-9._-], starting and ending alphanumeric."""
    cleaned = "".join(c if (c.isascii() and c.isalnum()) or c in "._-" else "-" for c in value)[:63]
    return cleaned.strip("._-") or "unknown"
