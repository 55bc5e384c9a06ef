"""Bursting a hybrid estate to its cloud site: the policy, an open window, and the ledger of past windows."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field, field_validator, model_validator

from model import catalog
from model.spec.base import SYSTEM_NODES_HELP, CapacityType, Model, Name, SystemNodes
from model.spec.net import MAX_GPUS, MAX_NODES, MAX_USD, Timestamp


class KueueManager(Model):
    """The MultiKueue manager of a hybrid estate: a small existing cluster that runs no work of its own.

    Tenants submit their jobs here; Kueue reserves quota and dispatches each job to a worker (every site with
    tenant quota, then the burst site), on-prem first. Kueue does not support a manager that is also one of its
    own workers (MultiKueue concept docs, "Limitations"), so it is a cluster of its own; it needs no GPUs
    (a few CPU nodes for Kueue's controller)."""

    kind: Literal["existing"] = Field(
        default="existing", description="existing: a cluster the platform team runs, reached by a kubeconfig."
    )
    name: Name = Field(description="What gpufleet calls the manager cluster (resource names); not a site name.")
    kubeconfig_config: str = Field(
        default="managerKubeconfig", description="Config key holding the manager's kubeconfig (secret)."
    )
    network: Name = Field(
        description=(
            "The site whose network the manager sits in: it reaches that site's API directly and the other "
            "sites' APIs over the paths they declare."
        )
    )
    system_nodes: list[SystemNodes] = Field(default_factory=list, max_length=16, description=SYSTEM_NODES_HELP)


# How far behind AWS's clock the machine running an `up` may be, in minutes. AWS denies a signed request that does not
# reach it "within five minutes of the time stamp in the request" (IAM user guide, reference_aws-signing.html); SDKs
# retry with a corrected time, so this is a margin, not a bound. The program applies a stop this much early
# (model.burst.stop_phase), so a grace must be longer.
CLOCK_SKEW_MINUTES = 5


class BurstPolicy(Model):
    """Limits on bursting a hybrid estate to its cloud site."""

    cloud_site: Name = Field(description="The AWS site that bursts.")
    manager: KueueManager = Field(description="The MultiKueue manager tenants submit to.")
    grace_minutes: int = Field(
        default=30,
        ge=0,
        le=24 * 60,
        description=(
            "After a window closes or expires: minutes running cloud work may still finish or checkpoint (no new "
            "work is admitted) before it is evicted back to the queue and the burst pools shrink to zero. 0, or "
            "more than 5: a stop may be applied up to 5 minutes early."
        ),
    )
    node_boot_minutes: int = Field(
        default=15,
        ge=1,
        le=120,
        description=(
            "How long a cold burst node may take from launch until its pods can start. The cloud worker's Kueue "
            "waits this long on top of its usual waitForPodsReady timeout before it evicts a gang. Default: "
            "cluster-autoscaler's --max-node-provision-time (15 minutes), after which the autoscaler gives up "
            "on the node; no sourced boot time per instance type exists."
        ),
    )
    budget_usd: float = Field(gt=0, le=MAX_USD, description="Spend allowed on burst windows per calendar month.")
    max_window_hours: int = Field(default=72, ge=1, le=24 * 14, description="Longest window allowed.")
    allowed_instance_types: list[str] = Field(min_length=1, description="Instance types a window may use.")
    allow_spot: bool = Field(default=False, description="Windows may use spot capacity.")
    allow_capacity_blocks: bool = Field(default=False, description="Windows may use capacity blocks.")
    alert_emails: list[str] = Field(
        default_factory=list,
        max_length=10,  # AWS Budgets: at most 10 email subscribers per notification (Budgets quotas)
        description=(
            "Who AWS Budgets emails when burst spend reaches 80% or 100% of budget_usd, actual or forecast (the "
            "burst tag's budget). Without any, the budget is created and shows in the console, and nobody is "
            "told."
        ),
    )

    @field_validator("grace_minutes")
    @classmethod
    def _grace_outlasts_the_clock_margin(cls, v: int) -> int:
        if 0 < v <= CLOCK_SKEW_MINUTES:
            raise ValueError(
                f"a grace of {v} minutes is no grace: the program stops the burst pools up to {CLOCK_SKEW_MINUTES} "
                f"minutes early, so a window's nodes would stop at its close; use 0 or at least "
                f"{CLOCK_SKEW_MINUTES + 1}"
            )
        return v

    @field_validator("alert_emails")
    @classmethod
    def _emails(cls, v: list[str]) -> list[str]:
        for address in v:
            local, at, domain = address.partition("@")
            if not (local and at and "." in domain) or any(c.isspace() for c in address):
                raise ValueError(f"{address!r} is not an email address (name@example.com)")
        return v

    @field_validator("allowed_instance_types")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        for t in v:
            catalog.instance_type(t)
        return v


class BurstWindow(Model):
    """A burst window: a cap on cloud capacity until `expires`. Written by `gpufleet burst open`.

    The window does not start nodes: it lets the cluster autoscaler grow the pool up to `nodes` for work that is
    waiting, and lets Kueue admit up to the nodes' GPUs, CPUs and memory on the cloud worker."""

    pool: Name = Field(description="The burst pool that may grow.")
    nodes: int = Field(
        ge=1, le=MAX_NODES, description="Most nodes the pool may grow to while the window is open (the cap)."
    )
    instance_type: str
    availability_zone: str
    start: Timestamp
    expires: Timestamp
    opened_by: str = Field(default="gpufleet burst")
    gpus: int | None = Field(default=None, ge=1, le=MAX_GPUS, description="GPUs asked for when the window was opened.")
    usd_per_hour: float | None = Field(
        default=None, ge=0, le=MAX_USD, description="Catalog price of one node-hour when the window was opened."
    )
    draining_nodes: int | None = Field(
        default=None,
        ge=1,
        le=MAX_NODES,
        description=(
            "Nodes of the window this one replaced on the same pool, still in their grace when it opened: the node "
            "group keeps room for them for this window's life and is never sent a smaller desired size meanwhile."
        ),
    )
    draining_until: Timestamp | None = Field(
        default=None, description="When the replaced window's capacity stops at the latest (its backstop time)."
    )
    capacity_type: CapacityType | None = Field(
        default=None, description="The pool's capacity.type when the window opened (a change replaces its node group)."
    )
    overrun_since: Timestamp | None = Field(
        default=None,
        description=(
            "Set once the window is booked while its node group still held instances after the backstop time "
            "(status overrun): booked until this moment. The window stays until a reconcile sees the group at zero."
        ),
    )

    @model_validator(mode="after")
    def _order(self) -> BurstWindow:
        if self.expires <= self.start:
            raise ValueError("expires must be after start")
        return self

    def is_open(self, now: dt.datetime) -> bool:
        return self.start <= now < self.expires


class BurstLedgerEntry(Model):
    """One past burst window, kept in the stack file (`gpufleet:burstLedger`) for spend so far."""

    pool: Name = Field(description="The burst pool the window grew.")
    instance_type: str = Field(description="EC2 instance type of the window's nodes.")
    nodes: int = Field(ge=1, le=MAX_NODES, description="Nodes the window held.")
    start: Timestamp = Field(description="When the window opened.")
    end: Timestamp = Field(description="When it closed, or expired if nobody closed it earlier.")
    usd: float = Field(
        ge=0, le=MAX_USD, description="Spend booked for the window: node-hour price x nodes x hours open."
    )
    closed_by: str = Field(default="gpufleet burst close", description="What ended it (close or reconcile).")

    @model_validator(mode="after")
    def _order(self) -> BurstLedgerEntry:
        if self.end < self.start:
            raise ValueError("end must not be before start")
        return self
