"""What every node pool has, whatever its site kind: role, GPU sharing, scaling bounds and capacity buying."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from components.model.spec.base import CapacityType, Model, Name, Role
from components.model.spec.net import MAX_NODES


class Sharing(Model):
    """How the GPUs of a pool are handed out."""

    mode: Literal["whole", "mig", "time-slicing"] = Field(
        default="whole",
        description="whole GPUs, MIG slices (hardware isolated) or time-slicing (no isolation).",
    )
    mig_profile: str | None = Field(
        default=None, description="MIG profile applied to every GPU of the pool (mode mig), e.g. `1g.10gb`."
    )
    replicas: int | None = Field(
        default=None, ge=2, le=48, description="Time-slicing replicas per GPU (mode time-slicing)."
    )

    @model_validator(mode="after")
    def _mode_fields(self) -> Sharing:
        if self.mode == "mig" and not self.mig_profile:
            raise ValueError("mode mig needs mig_profile (for example `1g.10gb`)")
        if self.mode != "mig" and self.mig_profile:
            raise ValueError("mig_profile is only allowed with mode mig")
        if self.mode == "time-slicing" and self.replicas is None:
            raise ValueError("mode time-slicing needs replicas (2 to 48)")
        if self.mode != "time-slicing" and self.replicas is not None:
            raise ValueError("replicas is only allowed with mode time-slicing")
        return self


class Scaling(Model):
    """Node-count bounds of a pool."""

    min: int = Field(default=0, ge=0, le=MAX_NODES, description="Minimum nodes.")
    desired: int | None = Field(default=None, ge=0, le=MAX_NODES, description="Desired nodes (defaults to min).")
    max: int = Field(ge=0, le=MAX_NODES, description="Maximum nodes.")

    @model_validator(mode="after")
    def _ordered(self) -> Scaling:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must not exceed max ({self.max})")
        if self.desired is not None and not self.min <= self.desired <= self.max:
            raise ValueError(f"desired ({self.desired}) must lie between min ({self.min}) and max ({self.max})")
        return self

    @property
    def desired_nodes(self) -> int:
        return self.min if self.desired is None else self.desired


class Capacity(Model):
    """How cloud capacity is bought."""

    type: CapacityType = Field(
        default="on-demand", description="on-demand, spot, capacity-reservation or capacity-block."
    )
    reservation_id: str | None = Field(
        default=None,
        pattern=r"^cr-[0-9a-f]{8,17}$",
        description="EC2 capacity reservation id (types capacity-reservation and capacity-block).",
    )
    checkpointing: bool = Field(
        default=False, description="The pool's jobs checkpoint; required for spot training pools."
    )

    @model_validator(mode="after")
    def _reservation(self) -> Capacity:
        reserved = self.type in ("capacity-reservation", "capacity-block")
        if reserved and not self.reservation_id:
            raise ValueError(f"type {self.type} needs reservation_id (cr-...)")
        if not reserved and self.reservation_id:
            raise ValueError("reservation_id is only allowed with type capacity-reservation or capacity-block")
        return self


class PoolBase(Model):
    name: Name = Field(description="Pool name, unique in the estate; becomes the Kueue ResourceFlavor name.")
    role: Role = Field(description="What the pool runs: training, inference, interactive or batch.")
    sharing: Sharing = Field(default_factory=Sharing, description="How GPUs are shared.")
    fabric: Name | None = Field(default=None, description="Name of the site fabric the pool's nodes join.")
    dedicated_to: Name | None = Field(
        default=None, description="Tenant that owns the pool alone (tainted and labelled for that tenant)."
    )
    labels: dict[str, str] = Field(default_factory=dict, description="Extra node labels.")
