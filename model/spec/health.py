"""How a pool's nodes are watched and repaired: its detectors and its one remediator.

- A detector reports a node's faults: the EKS node monitoring agent's node conditions on AWS, and DCGM (the GPU
  Operator's DCGM exporter: XID, ECC, thermal and NVLink counters) wherever the GPU Operator runs.
- A remediator acts on them. On AWS it is EKS node repair, with thresholds and per-condition overrides set here
  rather than left to AWS's defaults. On bare metal gpufleet installs none: a pool names the one the site runs.
- One remediator per node: two that both reboot or replace a node fight over it. The schema has one field, and
  the gpu-guardrails policy `one-remediator` checks the node groups and nodes the plan makes.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from model.spec.base import Model

Detector = Literal["node-monitoring-agent", "dcgm"]
EKS_NODE_REPAIR = "eks-node-repair"
NO_REMEDIATOR = "none"
# The node conditions the EKS node monitoring agent sets and node repair acts on (EKS user guide, node-repair:
# https://docs.aws.amazon.com/eks/latest/userguide/node-repair.html).
NodeCondition = Literal[
    "AcceleratedHardwareReady", "ContainerRuntimeReady", "KernelReady", "NetworkingReady", "StorageReady"
]
# NodeRepairConfigOverrides.repairAction (https://docs.aws.amazon.com/eks/latest/APIReference/API_NodeRepairConfigOverrides.html).
RepairAction = Literal["Replace", "Reboot", "NoAction"]
# The reasons the agent sets a condition False with (DefaultSeverity Fatal; a Warning reason is only an event, so a
# repair override on it never fires): aws/eks-node-monitoring-agent pkg/reasons/reasons.yaml at v1.7.0. XIDs come
# as NvidiaXID<n>Error only for WellKnownXidCodes (monitors/nvidia/dcgm/dcgm_policies.go at v1.7.0); any other XID
# is the event NvidiaXID<n>Warning.
WELL_KNOWN_XIDS = (46, 48, 54, 62, 63, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 142, 143, 151, 155, 156, 158)
AGENT_REASONS: dict[str, tuple[str, ...]] = {
    "AcceleratedHardwareReady": (
        "DCGMDiagnosticFailure", "DCGMError", "FabricManagerNotRunning", "NeuronDMAError",
        "NeuronHBMUncorrectableError", "NeuronNCUncorrectableError", "NeuronSRAMUncorrectableError",
        "NvidiaDeviceCountMismatch", "NvidiaDoubleBitError", "NvidiaFabricError", "NvidiaNVLinkError",
        *(f"NvidiaXID{x}Error" for x in WELL_KNOWN_XIDS),
    ),
    "ContainerRuntimeReady": ("PodStuckTerminating",),
    "KernelReady": ("ForkFailedOutOfPIDs",),
    "NetworkingReady": (
        "IPAMDNotReady", "IPAMDNotRunning", "InterfaceNotRunning", "InterfaceNotUp", "MissingLoopbackInterface",
        "NPANotRunning",
    ),
    "StorageReady": (),
}  # fmt: skip
DCGM_HEALTH_CODE = re.compile(r"^DCGMHealthCode[0-9]+$")  # DCGMHealthCode%d on AcceleratedHardwareReady


def agent_sets(condition: str, reason: str) -> bool:
    """Whether the node monitoring agent sets `condition` False with `reason`."""
    if condition == "AcceleratedHardwareReady" and DCGM_HEALTH_CODE.match(reason):
        return True
    return reason in AGENT_REASONS.get(condition, ())


REMEDIATOR_NAME = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"  # a label value: it goes on every node of the pool
PERCENT = r"^([1-9][0-9]?|100)%$"


class RepairOverride(Model):
    """What EKS node repair does for one condition and reason of the node monitoring agent (its
    nodeRepairConfigOverrides entry; AWS wants all four values set)."""

    condition: NodeCondition = Field(description="The node condition the agent reports, e.g. AcceleratedHardwareReady.")
    reason: str = Field(
        pattern=r"^[A-Za-z0-9]{1,128}$",
        description=(
            "The condition's reason as the agent reports it (the node condition's `reason`), e.g. "
            "`NvidiaXID79Error` (XID 79, the GPU fell off the bus) or `NvidiaDoubleBitError`."
        ),
    )
    action: RepairAction = Field(description="Replace, Reboot or NoAction (leave the node to a person).")
    wait_minutes: int = Field(ge=1, le=10080, description="Minutes the condition must hold before the repair.")

    @model_validator(mode="after")
    def _agent_reason(self) -> RepairOverride:
        if not agent_sets(self.condition, self.reason):
            choices = [r for r in AGENT_REASONS[self.condition] if not r.startswith("NvidiaXID")]
            if self.condition == "AcceleratedHardwareReady":
                xids = ", ".join(map(str, WELL_KNOWN_XIDS))
                choices += [f"NvidiaXID<n>Error for XID {xids}", "DCGMHealthCode<n>"]
            raise ValueError(
                f"the node monitoring agent never sets {self.condition} with reason {self.reason}, so the override "
                f"would never act; {self.condition} reasons: {', '.join(choices) or 'none (it only warns)'}"
            )
        return self


class EksNodeRepair(Model):
    """EKS node repair's limits (NodeRepairConfig, https://docs.aws.amazon.com/eks/latest/APIReference/API_NodeRepairConfig.html).

    One repair at a time by default keeps a gang's other nodes running while one is replaced. The unhealthy
    threshold is sent only when set: repair stops once unhealthy nodes are *above* it, so a default percentage
    would stop repair at a small pool's first bad node (20% of a 2-node pool is under one node). Unset, EKS's
    own default applies."""

    max_unhealthy: int | str | None = Field(
        default=None,
        description=(
            "Above this many unhealthy nodes (a count, or a percentage of the pool such as `20%`) repair stops "
            "(maxUnhealthyNodeThresholdCount / Percentage). Unset: EKS's default."
        ),
    )
    max_parallel: int | str = Field(
        default=1,
        description=(
            "How many unhealthy nodes are repaired at once (a count, or a percentage of the unhealthy nodes) "
            "(maxParallelNodesRepairedCount / Percentage)."
        ),
    )
    overrides: list[RepairOverride] = Field(
        default_factory=list,
        max_length=64,
        description="Per condition and reason: the action and the wait (nodeRepairConfigOverrides).",
    )

    @field_validator("max_unhealthy", "max_parallel")
    @classmethod
    def _count_or_percent(cls, v: int | str | None) -> int | str | None:
        if v is None:
            return v
        if isinstance(v, int):
            if v < 1:
                raise ValueError("a count is 1 or more")
            return v
        if not re.match(PERCENT, v):
            raise ValueError(f"{v!r} is neither a count nor a percentage from 1% to 100%")
        return v

    @field_validator("overrides")
    @classmethod
    def _one_override_each(cls, v: list[RepairOverride]) -> list[RepairOverride]:
        seen = set()
        for o in v:
            if (o.condition, o.reason) in seen:
                raise ValueError(f"two overrides for {o.condition} reason {o.reason}; keep one")
            seen.add((o.condition, o.reason))
        return v


class AwsHealth(Model):
    """Health of an EKS node group."""

    detectors: list[Detector] | None = Field(
        default=None,
        description=(
            "What watches the nodes: `node-monitoring-agent` (the EKS add-on's node conditions) and `dcgm` (the GPU "
            "Operator's DCGM exporter). Unset: both, or the agent alone where the site runs the device plugin."
        ),
    )

    remediator: str = Field(
        default=EKS_NODE_REPAIR,
        pattern=REMEDIATOR_NAME,
        description=(
            "`eks-node-repair` (the default), `none`, or the name of another remediator the cluster runs (e.g. "
            "NVSentinel's janitor); then EKS node repair is off, so only that one acts."
        ),
    )
    repair: EksNodeRepair = Field(default_factory=EksNodeRepair, description="EKS node repair's limits and overrides.")

    def detectors_with(self, gpu_operator: bool) -> list[Detector]:
        """The pool's detectors: as set, else the agent (an EKS add-on gpufleet installs) and DCGM with the GPU
        Operator."""
        if self.detectors is not None:
            return list(self.detectors)
        return ["node-monitoring-agent", "dcgm"] if gpu_operator else ["node-monitoring-agent"]

    @model_validator(mode="after")
    def _repair_needs_agent(self) -> AwsHealth:
        agent = self.detectors is None or "node-monitoring-agent" in self.detectors
        if self.remediator == EKS_NODE_REPAIR and not agent:
            raise ValueError(
                "remediator eks-node-repair acts on the node monitoring agent's conditions: keep "
                "node-monitoring-agent in detectors"
            )
        if self.remediator != EKS_NODE_REPAIR and "repair" in self.model_fields_set:
            raise ValueError("repair is only allowed with remediator eks-node-repair")
        return self


class BaremetalHealth(Model):
    """Health of a bare-metal pool. gpufleet installs no remediator on bare metal."""

    detectors: list[Literal["dcgm"]] | None = Field(
        default=None,
        description="`dcgm` (the GPU Operator's DCGM exporter) or nothing. Unset: dcgm where the GPU Operator runs.",
    )
    remediator: str = Field(
        default=NO_REMEDIATOR,
        pattern=REMEDIATOR_NAME,
        description=(
            "`none` (the default: a person drains and repairs), or the name of the one remediator the site runs "
            "on these nodes (e.g. NVSentinel's janitor). Its name is set as a node label."
        ),
    )

    def detectors_with(self, gpu_operator: bool) -> list[Detector]:
        """The pool's detectors: as set, else DCGM with the GPU Operator."""
        if self.detectors is not None:
            return list(self.detectors)
        return ["dcgm"] if gpu_operator else []

    @field_validator("remediator")
    @classmethod
    def _not_eks(cls, v: str) -> str:
        if v == EKS_NODE_REPAIR:
            raise ValueError("eks-node-repair exists only on EKS node groups")
        return v
