"""The whole estate of one environment, its lookups, and the JSON Schema of a stack file's estate value."""

from __future__ import annotations

from functools import cached_property
from typing import Literal

from pydantic import Field

# capacity and kinds import the spec's models; by module (not by name) so either may be imported first.
from model import capacity, catalog, kinds
from model.spec.access import AwsAccount, Deployer
from model.spec.baremetal import BaremetalNodePool, Server
from model.spec.base import Metadata, Model, Name
from model.spec.burst import BurstPolicy
from model.spec.net import MAX_USD
from model.spec.sites import BaremetalSite, NodePool, Site
from model.spec.tenancy import Tenant


class PolicySettings(Model):
    """Policy-pack settings shared by `pulumi preview --policy-pack` and `gpufleet check`."""

    enforcement: dict[str, Literal["mandatory", "advisory", "disabled"]] = Field(
        default_factory=dict, description="Override a rule's enforcement level by rule id."
    )
    budget_usd_per_hour: float | None = Field(
        default=None,
        gt=0,
        le=MAX_USD,
        description="Cap on the estate's hourly cost at max size (cost-tags budget rule).",
    )
    allowed_instance_types: list[str] = Field(
        default_factory=list, description="GPU instance types allowed; empty allows every catalog type."
    )
    imds_hop_limit_exceptions: list[Name] = Field(default_factory=list, description="Pools allowed IMDS hop limit 2.")


class EstateSpec(Model):
    """A whole GPU estate for one environment."""

    metadata: Metadata
    deployer: Deployer = Field(description="Where `pulumi up` runs: it must reach every site's Kubernetes API.")
    sites: list[Site] = Field(min_length=1)
    tenants: list[Tenant] = Field(default_factory=list)
    burst: BurstPolicy | None = Field(default=None, description="Burst policy of a hybrid estate.")
    policies: PolicySettings = Field(default_factory=PolicySettings)
    aws_account: AwsAccount = Field(default_factory=AwsAccount, description="AWS account facts (aws sites).")

    # -- lookups used by components and tools (indexes built once per spec) -----------------------------
    @cached_property
    def _pool_index(self) -> dict[str, tuple[Site, NodePool]]:
        return {p.name: (s, p) for s in self.sites for p in s.node_pools}

    @cached_property
    def _servers_index(self) -> dict[str, list[Server]]:
        return {p.name: kinds.of(s).selected_servers(p.name) for s in self.sites for p in s.node_pools}

    def pools(self) -> list[tuple[Site, NodePool]]:
        return list(self._pool_index.values())

    def pool(self, name: str) -> NodePool:
        return self._pool_index[name][1]

    def site_of_pool(self, name: str) -> Site:
        return self._pool_index[name][0]

    def site(self, name: str) -> Site:
        return next(s for s in self.sites if s.name == name)

    def tenant(self, name: str) -> Tenant:
        return next(t for t in self.tenants if t.name == name)

    def pool_servers(self, site: BaremetalSite, pool: BaremetalNodePool) -> list[Server]:
        """Inventory servers whose labels match the pool's selector."""
        return self._servers_index.get(pool.name, [])

    # -- capacity (facts of the pool's site kind, model.kinds; units: model.capacity) --------------
    def pool_gpus_per_node(self, name: str) -> int:
        return kinds.of(self.site_of_pool(name)).pool_gpus_per_node(self, name)

    def pool_gpu_capacity(self, name: str) -> int:
        """GPUs a pool offers at max size."""
        return kinds.of(self.site_of_pool(name)).pool_gpu_capacity(self, name)

    def pool_gpu_units(self, name: str) -> int:
        """Schedulable GPU units of a pool at max size: MIG slices or time-sliced replicas count apiece."""
        return capacity.pool_gpu_units(self, name)

    def pool_gpu_model(self, name: str) -> catalog.GpuModel:
        return kinds.of(self.site_of_pool(name)).pool_gpu_model(self, name)


def json_schema() -> dict[str, object]:
    """JSON Schema of a stack file's `gpufleet:estate` value, for editors."""
    schema = EstateSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "gpufleet estate (config key gpufleet:estate)"
    return schema
