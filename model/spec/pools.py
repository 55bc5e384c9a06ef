"""What every node pool has, whatever its site kind: role, GPU sharing, scaling bounds and capacity buying."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field, field_validator, model_validator

from model import catalog
from model.spec.base import CapacityType, Model, Name, Role
from model.spec.host import Labels
from model.spec.net import MAX_NODES, Timestamp, Usd

# NVIDIA GPU Operator, "Time-Slicing GPUs in Kubernetes": time-sliced workloads share one GPU's memory and faults.
TIME_SLICING_DOC = "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-sharing.html"


def _modes_by_model() -> str:
    """Which sharing modes each catalog GPU allows (gpus.yaml), for the schema's descriptions."""
    models = catalog.gpu_models().values()
    mig = ", ".join(m.id for m in models if m.mig_profiles)
    no_mig = ", ".join(m.id for m in models if not m.mig_profiles)
    no_ts = ", ".join(m.id for m in models if not m.time_slicing)
    time_slicing = f"time-slicing on every catalog GPU but {no_ts}" if no_ts else "time-slicing on every catalog GPU"
    return f"whole on every GPU; mig on {mig} only (not {no_mig}); {time_slicing}"


class Sharing(Model):
    """How the GPUs of a pool are handed out."""

    mode: Literal["whole", "mig", "time-slicing"] = Field(
        default="whole",
        description=(
            "whole GPUs, MIG slices (hardware isolated) or time-slicing (no memory or fault isolation: "
            f"{TIME_SLICING_DOC}). By GPU model: {_modes_by_model()}."
        ),
    )
    mig_profile: str | None = Field(
        default=None,
        description=(
            "MIG profile applied to every GPU of the pool (mode mig), e.g. `1g.10gb`; each slice is one unit of "
            "tenant quota."
        ),
    )
    replicas: int | None = Field(
        default=None,
        ge=2,
        le=48,
        description=(
            "Time-slicing replicas per GPU (mode time-slicing): each GPU is advertised as `replicas` "
            "nvidia.com/gpu, and tenant quotas (gpu_quota, the namespace ResourceQuota, Kueue) count those units, "
            "so a pool of N GPUs offers N x replicas."
        ),
    )
    shared_by: list[Name] = Field(
        default_factory=list,
        description=(
            "Mode time-slicing on a pool not dedicated_to one tenant: the trusted tenants (two or more) that "
            "share its GPUs; only they get quota on it, and its nodes are tainted gpufleet.io/shared-pool=<pool> "
            "(only their pods may tolerate it). Time-slicing gives them no memory or fault isolation from "
            "each other, so this needs accept_no_isolation: true; untrusted tenants never share."
        ),
    )
    accept_no_isolation: bool = Field(
        default=False,
        description=(
            "With shared_by: the tenants accept that a time-sliced GPU isolates neither their memory nor their "
            f"faults ({TIME_SLICING_DOC})."
        ),
    )

    @model_validator(mode="after")
    def _mode_fields(self) -> Sharing:
        if self.shared_by and self.mode != "time-slicing":
            raise ValueError("shared_by is only allowed with mode time-slicing (whole GPUs and MIG slices are "
                             "shared through tenant quotas)")  # fmt: skip
        if self.shared_by and len(set(self.shared_by)) < 2:
            raise ValueError("shared_by names two or more distinct tenants; for one tenant use dedicated_to")
        if self.accept_no_isolation and not self.shared_by:
            raise ValueError("accept_no_isolation is only allowed with shared_by")
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


# EC2 user guide, capacity-blocks-purchase (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html):
# "reservation durations in 1-day increments up to 14 days, and in 7-day increments up to 182 days".
BLOCK_DAYS = (*range(1, 15), *range(21, 183, 7))
# EC2 API reference, DescribeCapacityBlockOfferings: "instance count 1, 2, 4, 8, 16, 32, or 64 instances".
BLOCK_INSTANCES = (1, 2, 4, 8, 16, 32, 64)


class CapacityBlock(Model):
    """The EC2 Capacity Block a pool runs on, as bought. AWS charges the whole block up front, whether or not
    nodes run in it, so its cost is every hour of it at the block's rate; after it ends the pool has no capacity."""

    days: int = Field(
        description=(
            "The block's length in days, as purchased: 1 to 14, or 21 to 182 in steps of 7 (EC2 user guide, "
            "capacity-blocks-purchase). Cost counts its hours for the block's instances (capacity.instances, else the pool's max)."
        )
    )
    start: Timestamp | None = Field(
        default=None, description="When the block starts (its startDate); cost then says when it ends."
    )
    end: Timestamp | None = Field(
        default=None,
        description=(
            "When the block ends (its EndDate). EC2 blocks end at 11:30 UTC and an offering may start at any time "
            "(its duration is capacityBlockDurationHours + capacityBlockDurationMinutes), so give it unless start "
            "+ days x 24 h lands on 11:30 UTC (EC2 user guide, ec2-capacity-blocks, Considerations)."
        ),
    )
    upfront_usd: Usd | None = Field(
        default=None,
        description=(
            "What AWS charged for the whole block, up front (its offering's upfrontFee). Cost uses it before the "
            "catalog's capacity-block rate, which is the published rate on its date, not a quote."
        ),
    )
    offering_id: str | None = Field(
        default=None,
        pattern=r"^cb-[0-9a-z]{8,17}$",
        description=(
            "Buy the block: the CapacityBlockOfferingId that `aws ec2 describe-capacity-block-offerings` (or "
            "`gpufleet check --aws`) shows. `up` purchases it (aws.ec2.CapacityBlockReservation), which AWS never "
            "refunds; then reservation_id is not given, and start, upfront_usd, capacity.instances and "
            "capacity.availability_zone are the offering's."
        ),
    )

    @field_validator("days")
    @classmethod
    def _a_length_aws_sells(cls, days: int) -> int:
        if days not in BLOCK_DAYS:
            raise ValueError(
                f"{days} days is not a length AWS sells: 1 to 14 days, or 21 to 182 in steps of 7 (21, 28, ... 182)"
            )
        return days

    @model_validator(mode="after")
    def _ends_at_half_past_eleven(self) -> CapacityBlock:
        if self.end is not None and self.start is None:
            raise ValueError("block.end needs block.start")
        end = self.end_at()
        if self.start is not None and end is not None:
            utc = end.astimezone(dt.UTC)
            if (utc.hour, utc.minute, utc.second) != (11, 30, 0) or end <= self.start:
                raise ValueError(
                    f"the block ends {utc:%Y-%m-%d %H:%M} UTC, but Capacity Blocks end at 11:30 UTC after they start "
                    "(EC2 user guide, ec2-capacity-blocks): give block.end, the offering's or reservation's EndDate"
                )
        return self

    @property
    def hours(self) -> float:
        """The block's paid hours: start to end when both are known, else days x 24 h."""
        end = self.end_at()
        if self.start is None or end is None:
            return float(self.days * 24)
        return (end - self.start).total_seconds() / 3600

    def end_at(self) -> dt.datetime | None:
        """The block's end: block.end, else start + days x 24 h; None without a start."""
        if self.start is None:
            return None
        return self.end if self.end is not None else self.start + dt.timedelta(days=self.days)


CommitmentTerm = Literal["1y", "3y"]
CommitmentPayment = Literal["no-upfront", "partial-upfront", "all-upfront"]
TERM_YEARS: dict[str, int] = {"1y": 1, "3y": 3}


class Commitment(Model):
    """A Savings Plan or Reserved Instances covering some of a pool's nodes, as bought. It is paid every hour of
    its term whether or not the nodes run; nodes above it pay the on-demand rate
    (https://docs.aws.amazon.com/savingsplans/latest/userguide/what-is-savings-plans.html)."""

    kind: Literal["savings-plan", "reserved"] = Field(description="A Savings Plan or Reserved Instances.")
    term: CommitmentTerm = Field(description="1y or 3y.")
    payment: CommitmentPayment = Field(description="no-upfront, partial-upfront or all-upfront.")
    nodes: int = Field(ge=1, le=MAX_NODES, description="Nodes of the pool the commitment covers.")
    usd_per_hour: Usd = Field(
        description="The commitment's hourly rate for one node of the pool's type (0 when all upfront)."
    )
    upfront_usd: Usd = Field(default=0.0, description="What was paid up front for one node, spread over the term.")
    date: dt.date = Field(description="When it was bought or quoted (YYYY-MM-DD).")
    source: str = Field(min_length=3, max_length=200, description="Where the rate comes from, e.g. a quote.")

    @model_validator(mode="after")
    def _payment_matches(self) -> Commitment:
        if self.payment == "no-upfront" and self.upfront_usd:
            raise ValueError("payment no-upfront has no upfront_usd")
        if self.payment != "no-upfront" and not self.upfront_usd:
            raise ValueError(f"payment {self.payment} needs upfront_usd (what one node's commitment cost up front)")
        if self.payment == "all-upfront" and self.usd_per_hour:
            raise ValueError("payment all-upfront has no hourly rate: set usd_per_hour: 0")
        if self.payment != "all-upfront" and not self.usd_per_hour:
            raise ValueError(f"payment {self.payment} needs usd_per_hour (the commitment's hourly rate)")
        return self


class Capacity(Model):
    """How cloud capacity is bought."""

    type: CapacityType = Field(
        default="on-demand", description="on-demand, spot, capacity-reservation or capacity-block."
    )
    reservation_id: str | None = Field(
        default=None,
        pattern=r"^cr-[0-9a-f]{8,17}$",
        description=(
            "EC2 capacity reservation id to adopt (types capacity-reservation and capacity-block; a block bought "
            "with block.offering_id has none yet)."
        ),
    )
    instances: int | None = Field(
        default=None,
        ge=1,
        le=MAX_NODES,
        description=(
            "The reservation's instance count (its TotalInstanceCount, or the offering's InstanceCount). The "
            "pools on the reservation may not reach more nodes than it holds."
        ),
    )
    availability_zone: str | None = Field(
        default=None,
        description=(
            "The reservation's AZ. Instances launch into it only from a subnet in that AZ (EC2 user guide, "
            "capacity-blocks-launch), so the pool's AZ must be this one."
        ),
    )
    checkpointing: bool = Field(
        default=False, description="The pool's jobs checkpoint; required for spot training pools."
    )
    block: CapacityBlock | None = Field(
        default=None,
        description=(
            "Type capacity-block: the block's length (and start), which cost needs; unset, the pool is unpriced "
            "(a block is neither billed monthly nor at the on-demand rate)."
        ),
    )
    spot_discount: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description=(
            "Type spot: the share off the on-demand rate the stack expects (0.6 = 60 % off). Cost uses it before "
            "the catalog's dated spot figure; a spot pool neither prices is refused, never priced at on-demand."
        ),
    )
    commitment: Commitment | None = Field(
        default=None,
        description="Types on-demand and capacity-reservation: a Savings Plan or Reserved Instances on the pool.",
    )

    @model_validator(mode="after")
    def _reservation(self) -> Capacity:
        reserved = self.type in ("capacity-reservation", "capacity-block")
        buying = self.offering_id is not None
        if buying and self.reservation_id:
            raise ValueError("a block bought with block.offering_id has no reservation_id yet; give one or the other")
        if reserved and not self.reservation_id and not buying:
            raise ValueError(
                f"type {self.type} needs reservation_id (cr-...)"
                + (" or block.offering_id (cb-...) to buy one" if self.type == "capacity-block" else "")
            )
        if not reserved and (self.reservation_id or self.instances or self.availability_zone):
            raise ValueError(
                "reservation_id, instances and availability_zone are only allowed with type capacity-reservation "
                "or capacity-block"
            )
        if self.block is not None and self.type != "capacity-block":
            raise ValueError("block is only allowed with type capacity-block")
        if self.spot_discount is not None and self.type != "spot":
            raise ValueError("spot_discount is only allowed with type spot")
        if self.commitment is not None and self.type not in ("on-demand", "capacity-reservation"):
            raise ValueError("commitment is only allowed with type on-demand or capacity-reservation")
        if self.block is not None and self.instances is not None and self.instances not in BLOCK_INSTANCES:
            raise ValueError(f"instances {self.instances}: a capacity block holds 1, 2, 4, 8, 16, 32 or 64 instances")
        if buying:
            missing = [f for f, v in self._offering_fields().items() if v is None]
            if missing:
                raise ValueError(
                    f"buying offering {self.offering_id} needs {', '.join(missing)}: the offering's StartDate, "
                    "UpfrontFee, InstanceCount and AvailabilityZone (`gpufleet check --aws` prints them)"
                )
        return self

    def _offering_fields(self) -> dict[str, object]:
        block = self.block
        return {
            "block.start": block.start if block else None,
            "block.upfront_usd": block.upfront_usd if block else None,
            "instances": self.instances,
            "availability_zone": self.availability_zone,
        }

    @property
    def offering_id(self) -> str | None:
        """The Capacity Block offering the stack buys, or None (on-demand, spot, or an adopted reservation)."""
        return self.block.offering_id if self.block is not None else None

    @property
    def reservation(self) -> str:
        """How notes name the reservation: its id, or the offering it is bought from."""
        return self.reservation_id or f"(bought from offering {self.offering_id})"


class PoolBase(Model):
    name: Name = Field(description="Pool name, unique in the estate; becomes the Kueue ResourceFlavor name.")
    role: Role = Field(description="What the pool runs: training, inference, interactive or batch.")
    sharing: Sharing = Field(default_factory=Sharing, description="How GPUs are shared.")
    fabric: Name | None = Field(default=None, description="Name of the site fabric the pool's nodes join.")
    dedicated_to: Name | None = Field(
        default=None, description="Tenant that owns the pool alone (tainted and labelled for that tenant)."
    )
    labels: Labels = Field(default_factory=dict, description="Extra node labels.")
