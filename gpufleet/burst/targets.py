"""What a burst command's `up` targets: only the resources a window changes.

- A window changes the burst node groups' bounds, the burst Cohort's quota and the burst ClusterQueues'
  stopPolicy (model/burst.py). Their URNs come from the program, synthesized offline with no window: they exist in
  every phase. A URN is `urn:pulumi:<stack>::<project>::<qualified type>::<name>`
  (https://www.pulumi.com/docs/iac/concepts/resources/names/#urns).
- A window adds its backstop's schedule and CronJobs, which those resources depend on, and the burst groups'
  discovery tag (AUTOSCALED_TAG). They exist only inside windows, so they are targeted by globs. The engine checks only literal targets for existence
  (pulumi/pulumi pkg/resource/deploy/deployment.go `NewUrnTargets`, deployment_executor.go `checkTargets`).
- The StackReference is read in a targeted `up` too: the step generator filters registrations by target, not
  reads (pkg/resource/deploy/step_generator.go, `GenerateReadSteps`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from gpufleet.engine.plan import Plan, PlanResource
from model.burst import burst_pools
from model.conventions import AWS_SITE_TYPE, NODE_GROUP, POOL_LABEL
from model.kinds.aws import AUTOSCALED_TAG, asg_tag_name
from model.load import read_stack
from model.spec import EstateSpec

BURST_QUEUES = "gpufleet:hybrid:BurstQueues"
ASG_TAG = "aws:autoscaling/tag:Tag"
BACKSTOPS = ("gpufleet:aws:NodeGroupBackstop", "gpufleet:hybrid:BurstStop")
KUEUE_KINDS = ("kubernetes:kueue.x-k8s.io/v1beta2:Cohort", "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")


def urn(stack: str, project: str, key: str) -> str:
    return f"urn:pulumi:{stack}::{project}::{key}"


def backstop_globs(stack: str, project: str) -> list[str]:
    """Every backstop component of the stack and its children, present or not (`**` matches any characters)."""
    return [urn(stack, project, f"**${kind}**") for kind in BACKSTOPS]


def _site_of(plan: Plan, r: PlanResource) -> str | None:
    parent = r.parent
    while parent is not None:
        p = plan.get(parent)
        if p.type == AWS_SITE_TYPE:
            return p.name
        parent = p.parent
    return None


def window_resources(plan: Plan, spec: EstateSpec) -> list[PlanResource]:
    """The resources whose inputs a window decides: burst node groups of the cloud site, and the Cohort and
    ClusterQueues of its BurstQueues component."""
    assert spec.burst is not None
    pools = {p.name for p in burst_pools(spec)}
    out = [
        r
        for r in plan.find(NODE_GROUP)
        if (r.inputs.get("labels") or {}).get(POOL_LABEL) in pools and _site_of(plan, r) == spec.burst.cloud_site
    ]
    for kind in KUEUE_KINDS:
        out += [r for r in plan.find(kind) if r.parent is not None and plan.get(r.parent).type == BURST_QUEUES]
    return sorted(out, key=lambda r: r.key)


_CACHE: dict[tuple[str, str, str], list[str]] = {}


def burst_targets(project_dir: Path, stack: str) -> list[str]:
    """The URNs a burst command's `up` targets (memoised per stack file content: one synthesis per estate)."""
    from gpufleet.engine.synth import synth_stack

    sf = read_stack(project_dir, stack)
    digest = hashlib.sha256(sf.path.read_bytes()).hexdigest()
    cached = _CACHE.get((sf.project, stack, digest))
    if cached is None:
        spec = sf.estate()
        plan = synth_stack(project_dir, stack, sf, burst_state={})
        found = window_resources(plan, spec)
        cached = [urn(stack, sf.project, r.key) for r in found]
        cached += backstop_globs(stack, sf.project)
        cached += [  # a stopped burst group has no discovery tag; an open one does
            urn(stack, sf.project, f"**{ASG_TAG}::{asg_tag_name(plan.get(r.parent).name, AUTOSCALED_TAG)}")
            for r in found
            if r.type == NODE_GROUP and r.parent is not None  # the group's pool component names its tags
        ]
        _CACHE[(sf.project, stack, digest)] = cached
    return list(cached)
