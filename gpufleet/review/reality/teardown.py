"""The teardown, simulated: what `pulumi destroy --exclude-protected` deletes and leaves, and whether AWS lets each
deletion happen while something left behind still uses it.

- `pulumi destroy` stops at the first protected resource: it never finishes a stack that protects its data.
- `--exclude-protected` leaves every protected resource in the stack with everything it depends on: parents,
  providers, `depends_on`, the resources whose outputs it takes (`separateProtected`, pulumi/pulumi
  pkg/cmd/pulumi/operations/destroy.go). It deletes the rest, dependents first.
- A resource retained on delete (`retainOnDelete`) is dropped from the stack and left in the cloud.
- AWS refuses with `DependencyViolation` to delete a security group or subnet that network interfaces use, and
  a VPC that still holds subnets or groups (EC2 API reference). An FSx for Lustre file system holds
  interfaces in its subnet with its security groups, as EFS mount targets do. So what a resource left behind
  depends on stays too.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from gpufleet.engine.plan import Plan, PlanResource

Mode = Literal["exclude-protected", "unprotected"]
COMMANDS: dict[Mode, str] = {
    "exclude-protected": "pulumi destroy --exclude-protected",
    "unprotected": "pulumi state unprotect --all, then pulumi destroy",
}
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SUBNET = "aws:ec2/subnet:Subnet"
VPC = "aws:ec2/vpc:Vpc"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
EC2_API = "https://docs.aws.amazon.com/AWSEC2/latest/APIReference"
# A deleted resource of this type fails while a resource left in the cloud depends on it: why. Whatever depends on
# a subnet or security group has interfaces there (an FSx file system: FSx API reference, FileSystem
# NetworkInterfaceIds, https://docs.aws.amazon.com/fsx/latest/APIReference/API_FileSystem.html), except the group's
# own rules (GROUP_RULES).
IN_USE = {
    SECURITY_GROUP: f"a network interface or another group still uses it ({EC2_API}/API_DeleteSecurityGroup.html)",
    SUBNET: f"network interfaces are still in it ({EC2_API}/API_DeleteSubnet.html)",
    VPC: f"subnets, security groups or gateways are still in it ({EC2_API}/API_DeleteVpc.html)",
}
# A group's own rules go with it: a rule left behind does not keep its group in use.
GROUP_RULES = frozenset(
    {
        "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
        "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
        "aws:ec2/securityGroupRule:SecurityGroupRule",
    }
)
# EKS deletes the cluster security group it made with the cluster; a group left behind whose rules name it
# makes that deletion fail (DeleteSecurityGroup: "referenced by another security group").
CLUSTER_GROUP = (
    f"its cluster security group is still referenced by a group left behind ({EC2_API}/API_DeleteSecurityGroup.html)"
)


@dataclass(frozen=True)
class Failure:
    resource: str  # logical key of the resource whose deletion fails
    needed_by: str  # logical key of the resource left behind that still uses it
    message: str


@dataclass
class Teardown:
    """One teardown of a plan: custom resources by what happens to them (logical keys), and what fails."""

    mode: Mode
    deleted: list[str] = field(default_factory=list)  # in the order Pulumi deletes them
    kept: list[str] = field(default_factory=list)  # left in the stack and the cloud
    retained: list[str] = field(default_factory=list)  # dropped from the stack, left in the cloud
    failures: list[Failure] = field(default_factory=list)

    @property
    def command(self) -> str:
        return COMMANDS[self.mode]

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "deleted": list(self.deleted),
            "kept": list(self.kept),
            "retained": list(self.retained),
            "failures": [asdict(f) for f in self.failures],
        }


def physical(r: PlanResource) -> bool:
    """A custom resource that exists outside Pulumi's state (not a provider, not a stack reference)."""
    return r.custom and not r.type.startswith("pulumi:")


class _Graph:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    @functools.cache  # noqa: B019 (one graph per simulation)
    def needs(self, key: str) -> tuple[str, ...]:
        """What `key` depends on directly: its parent, provider and dependencies, a component standing for
        everything it registered."""
        r = self.plan.get(key)
        out: set[str] = set()
        for d in [*r.dependencies, *([r.provider] if r.provider else []), *([r.parent] if r.parent else [])]:
            if d not in self.plan._by_key:
                continue
            out.add(d)
            if not self.plan.get(d).custom and d != r.parent:
                out |= {c.key for c in self.plan.descendants(d)}
        out.discard(key)
        return tuple(sorted(out))

    def closure(self, keys: list[str]) -> set[str]:
        seen: set[str] = set()
        todo = list(keys)
        while todo:
            k = todo.pop()
            if k not in seen:
                seen.add(k)
                todo.extend(self.needs(k))
        return seen

    def deletion_order(self, keys: set[str]) -> list[str]:
        """`keys`, each before everything it depends on (reverse creation order; ties by key)."""
        order: list[str] = []
        done: set[str] = set()

        def visit(k: str, path: frozenset[str]) -> None:
            if k in done or k in path:
                return
            for d in self.needs(k):
                visit(d, path | {k})
            done.add(k)
            order.append(k)

        for k in sorted(self.plan._by_key):
            visit(k, frozenset())
        return [k for k in reversed(order) if k in keys]


def simulate(plan: Plan, mode: Mode = "exclude-protected") -> Teardown:
    """Tear `plan` down as `mode` does: every problem found, none raised."""
    graph = _Graph(plan)
    protected = [r.key for r in plan.resources if r.protect] if mode == "exclude-protected" else []
    kept = graph.closure(protected)
    leaving = {r.key for r in plan.resources if physical(r) and r.key not in kept}
    retained = {k for k in leaving if plan.get(k).retain_on_delete}
    deleted = graph.deletion_order(leaving - retained)
    result = Teardown(
        mode,
        deleted=deleted,
        kept=sorted(k for k in kept if physical(plan.get(k))),
        retained=sorted(retained),
    )
    gone = set(deleted)
    for left in [*result.kept, *result.retained]:
        for d in graph.needs(left):
            if d in gone and (why := _in_use(plan.get(d), plan.get(left))) is not None:
                result.failures.append(Failure(d, left, why))
    return result


def _in_use(deleted: PlanResource, left: PlanResource) -> str | None:
    """Why AWS refuses to delete `deleted` while `left`, which depends on it, stays (None: it does not)."""
    what = f"deleting {deleted.type.split(':')[-1]} {deleted.name} fails"
    by = f"{left.type.split(':')[-1]} {left.name}, left behind, depends on it"
    if left.type in GROUP_RULES:
        return None
    if deleted.type in IN_USE:
        return f"{what}: {by}, and {IN_USE[deleted.type]}"
    if deleted.type == EKS_CLUSTER and left.type == SECURITY_GROUP:
        return f"{what}: {by}, and {CLUSTER_GROUP}"
    return None
