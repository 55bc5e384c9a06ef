"""`gpufleet diff`: two revisions of a temporary git repository, compared resource by resource.

The repository holds a copy of the project's `components` and `gpufleet` packages and a small program that
registers one node group per AWS pool and one protected FSx file system per Lustre tier (so expectations are
exact whatever the real components grow into); the last test runs the real program on an example stack.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.review.diff import MISSING, diff_findings, diff_plans, diff_revision, flatten
from gpufleet.review.findings import Finding
from tests.conftest import ROOT, example_config
from tests.review.estates import small

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"

PROGRAM = textwrap.dedent(
    '''
    """Test program: one node group per AWS pool, one protected FSx per Lustre tier."""
    import pulumi

    from components.model.load import parse_estate
    from components.model.spec import AwsSite, FsxLustreTier

    config = pulumi.Config()
    spec = parse_estate(config.get_object("estate"), "test")
    kubeconfig = config.get_secret("kubeconfig")
    for site in spec.sites:
        if not isinstance(site, AwsSite):
            continue
        for pool in site.node_pools:
            s = pool.scaling
            pulumi.CustomResource(
                "aws:eks/nodeGroup:NodeGroup",
                f"{site.name}-{pool.name}",
                {
                    "instanceTypes": [pool.instance_type],
                    "scalingConfig": {"minSize": s.min, "desiredSize": s.desired_nodes, "maxSize": s.max},
                    "labels": {"gpufleet.io/pool": pool.name},
                    "tags": {"Name": f"{spec.metadata.name}-{pool.name}", "env": spec.metadata.environment},
                    "userData": kubeconfig,
                },
            )
        for tier in site.storage:
            if isinstance(tier, FsxLustreTier):
                pulumi.CustomResource(
                    "aws:fsx/lustreFileSystem:LustreFileSystem",
                    f"{site.name}-{tier.name}",
                    {
                        "storageCapacity": tier.capacity_gib,
                        "deploymentType": "PERSISTENT_2",
                        "perUnitStorageThroughput": tier.throughput_per_tib,
                        "tags": {"Name": f"{spec.metadata.name}-{tier.name}", "env": spec.metadata.environment},
                    },
                    opts=pulumi.ResourceOptions(protect=True, retain_on_delete=True),
                )
    '''
)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def init_repo(tmp: Path, program: str | None) -> Path:
    """A git repository holding the project's packages (without policy checks) and the given program."""
    repo = tmp / "repo"
    repo.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "check.py")
    for pkg in ("components", "gpufleet"):
        shutil.copytree(ROOT / pkg, repo / pkg, ignore=ignore)
    if (ROOT / "policies").exists() and program is None:
        shutil.copytree(ROOT / "policies", repo / "policies", ignore=ignore)
    shutil.copy(ROOT / "Pulumi.yaml", repo / "Pulumi.yaml")
    (repo / "__main__.py").write_text(program if program is not None else (ROOT / "__main__.py").read_text())
    (repo / "stacks").mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "test@example.com")
    git(repo, "config", "user.name", "test")
    return repo


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def write_stack(repo: Path, stack: str, config: dict[str, Any]) -> None:
    (repo / "stacks" / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False))


def set_price(repo: Path, instance: str, usd: float) -> None:
    path = repo / "components" / "model" / "catalog" / "aws_prices.json"
    doc = json.loads(path.read_text())
    doc["regions"]["us-east-1"][instance] = usd
    path.write_text(json.dumps(doc, indent=1))


def stack_config(estate: dict[str, Any]) -> dict[str, Any]:
    return {"gpufleet:estate": estate, "gpufleet:kubeconfig": {"secure": "v1:abc"}}


VIOLATION = Finding(
    pack="cost-tags",
    rule="budget-at-max-size",
    enforcement="mandatory",
    message="at max size the estate costs $249.49/h, over the $200/h budget",
    remediation="lower node_pools[].scaling.max or raise policies.budget_usd_per_hour",
)


FAKE_CHECK = f"""
from gpufleet.review.findings import Finding


def evaluate(plan, spec):
    return [Finding(**{dataclasses.asdict(VIOLATION)!r})]
"""


@pytest.fixture
def two_revisions(tmp_path: Path) -> Path:
    """Base: the small estate with p5.48xlarge at $50/h. Working tree: a pool added (l40s), h100 max 3 -> 4,
    the Lustre tier renamed lustre -> hot, and the catalog's real p5.48xlarge price ($55.04/h)."""
    repo = init_repo(tmp_path, PROGRAM)
    write_stack(repo, "review", stack_config(small()))
    set_price(repo, "p5.48xlarge", 50.0)
    commit(repo, "base")
    set_price(repo, "p5.48xlarge", 55.04)
    estate = small()
    aws = estate["sites"][0]
    aws["node_pools"][0]["scaling"]["max"] = 4
    aws["node_pools"].append(
        {"name": "l40s", "role": "inference", "instance_type": "g6e.12xlarge", "scaling": {"min": 1, "max": 2}}
    )
    aws["storage"][0]["name"] = "hot"
    write_stack(repo, "review", stack_config(estate))
    # a policy check that exists only in the working tree and finds one violation (the base has none)
    (repo / "gpufleet" / "review" / "check.py").write_text(FAKE_CHECK)
    return repo


def keys(resources: list[PlanResource]) -> list[tuple[str, str]]:
    return [(r.type, r.name) for r in resources]


def test_diff_between_two_revisions_reports_added_changed_and_replaced(two_revisions: Path) -> None:
    d = diff_revision(two_revisions, "review", "main")

    assert keys(d.added) == [(NODE_GROUP, "use1-l40s")]
    assert d.removed == []
    assert [(r.removed.name, r.added.name, r.protected) for r in d.replaced] == [("use1-lustre", "use1-hot", True)]
    assert d.replaced[0].removed.type == FSX and d.replaced[0].similarity == 1.0
    assert [c.resource.name for c in d.changed] == ["use1-h100"]
    changes = {p.path: (p.before, p.after) for p in d.changed[0].changes}
    assert changes == {"scalingConfig.maxSize": (3, 4)}
    # secrets stay masked and unchanged: the node group's userData is a secret on both sides
    assert d.added[0].inputs["userData"] == "[secret]"

    # cost at base uses the base revision's own catalog ($50/h for p5.48xlarge), the working tree $55.04/h:
    # desired base = 2×50 + 1.861 + 2×7.70776 + 348/730 = 117.75324; head = 2×55.04 + 1.861 + 10.49264
    # (new l40s pool, desired = min = 1) + 15.41553 + 0.47671 = 138.32588; delta = +20.57264
    # max base = 3×50 + 2×1.861 + 15.41553 + 0.47671 = 169.61424; head = 4×55.04 + 3.722 + 2×10.49264
    # + 15.41553 + 0.47671 = 260.75952; delta = +91.14528
    assert d.cost_total is not None
    assert d.cost_total.base["desired"] == pytest.approx(117.75324, abs=1e-3)
    assert d.cost_total.delta("desired") == pytest.approx(20.57264, abs=1e-3)
    assert d.cost_total.delta("max") == pytest.approx(91.14528, abs=1e-3)
    assert {c.name for c in d.cost_pools} == {"h100", "l40s"}

    assert d.findings_new == [VIOLATION] and d.findings_fixed == []
    assert d.base_missing is False and d.base_label.startswith("main (")


def test_diff_removes_its_temporary_worktree(two_revisions: Path) -> None:
    diff_revision(two_revisions, "review", "main")
    assert git(two_revisions, "worktree", "list").count("\n") == 0  # only the main working tree


def test_stack_missing_at_base_means_everything_is_added(tmp_path: Path) -> None:
    repo = init_repo(tmp_path, PROGRAM)
    commit(repo, "no stacks yet")
    write_stack(repo, "review", stack_config(small()))
    d = diff_revision(repo, "review", "main")
    assert d.base_missing
    assert keys(d.added) == [(NODE_GROUP, "use1-agents-g6e"), (NODE_GROUP, "use1-h100"), (FSX, "use1-lustre")]
    assert d.removed == [] and d.changed == [] and d.replaced == []
    assert d.cost_total is not None and d.cost_total.delta("max") == pytest.approx(184.73424, abs=1e-3)


def test_unknown_base_revision_is_an_error_naming_it(two_revisions: Path) -> None:
    result = CliRunner().invoke(app, ["diff", "-s", "review", "--base", "no-such-rev", "-C", str(two_revisions)])
    assert result.exit_code == 2
    assert "no-such-rev" in result.stderr


def test_diff_cli_markdown_is_a_comment_a_reviewer_can_act_on(two_revisions: Path) -> None:
    result = CliRunner().invoke(
        app, ["diff", "-s", "review", "--base", "main", "-C", str(two_revisions), "-f", "markdown"]
    )
    assert result.exit_code == 0, result.output
    md = result.stdout
    assert md.startswith("<!-- gpufleet:plan:gpufleet/review -->\n")
    assert "**1 to add · 1 to change · 0 to delete · 1 to replace**" in md
    assert "**1 resource would be REPLACED (rename without alias)**" in md
    assert "`use1-lustre` → `use1-hot` — **protected: `pulumi up` will stop with an error" in md
    assert "<code>scalingConfig.maxSize</code> | <code>3</code> | <code>4</code>" in md
    assert "+$91.15/h" in md and "+$20.57/h" in md
    assert "❌ **1 mandatory policy violation(s)** (0 advisory). New: 1 (1 mandatory); fixed: 0." in md


def test_real_program_diff_on_an_example_stack_names_the_new_pool(tmp_path: Path) -> None:
    repo = init_repo(tmp_path, None)
    config = example_config("aws-train")
    write_stack(repo, "aws-train", config)
    commit(repo, "base")
    config["gpufleet:estate"]["sites"][0]["node_pools"].append(
        {"name": "batch-l4", "role": "batch", "instance_type": "g6.12xlarge", "scaling": {"min": 0, "max": 3}}
    )
    write_stack(repo, "aws-train", config)
    d = diff_revision(repo, "aws-train", "main")
    assert d.added and all("batch-l4" in r.name for r in d.added), [r.key for r in d.added]
    assert d.removed == [] and d.replaced == []
    # g6.12xlarge is $4.6016/h: 3 nodes at max, 0 at desired
    assert d.cost_total is not None and d.cost_total.delta("max") == pytest.approx(3 * 4.6016)
    assert d.cost_total.delta("desired") == pytest.approx(0.0)


# --------------------------------------------------------------------------------------- pure comparison


def res(name: str, inputs: dict[str, Any], type_: str = FSX, protect: bool = False) -> PlanResource:
    return PlanResource(
        key=f"{type_}::{name}", type=type_, name=name, parent=None, custom=True, inputs=inputs, protect=protect
    )


def test_flatten_quotes_keys_with_dots_and_indexes_lists() -> None:
    flat = flatten({"tags": {"kubernetes.io/role": "x", "env": "prod"}, "subnets": ["a", "b"], "empty": {}})
    assert flat == {
        'tags["kubernetes.io/role"]': "x",
        "tags.env": "prod",
        "subnets[0]": "a",
        "subnets[1]": "b",
        "empty": {},
    }


def test_rename_of_different_things_is_not_a_replacement() -> None:
    base = Plan("p", "s", [res("a-lustre", {"storageCapacity": 1200, "tags": {"Name": "a-lustre"}, "x": 1, "y": 2})])
    head = Plan("p", "s", [res("a-hot", {"storageCapacity": 9600, "tags": {"Name": "a-hot"}, "x": 5, "y": 6})])
    d = diff_plans(base, head)
    assert d.replaced == [] and len(d.added) == 1 and len(d.removed) == 1


def test_aliased_rename_is_a_change_not_a_replacement() -> None:
    old = res("a-lustre", {"storageCapacity": 1200})
    new = PlanResource(
        key=f"{FSX}::a-hot", type=FSX, name="a-hot", parent=None, custom=True, inputs={"storageCapacity": 1200},
        aliases=[f"urn:pulumi:s::p::{FSX}::a-lustre"],
    )  # fmt: skip
    d = diff_plans(Plan("p", "s", [old]), Plan("p", "s", [new]))
    assert d.replaced == [] and d.added == [] and d.removed == []
    assert [(c.resource.name, c.renamed_from) for c in d.changed] == [("a-hot", old.key)]


def test_removed_property_shows_as_absent() -> None:
    d = diff_plans(Plan("p", "s", [res("x", {"a": 1, "b": 2})]), Plan("p", "s", [res("x", {"a": 1})]))
    assert [(p.path, p.before, p.after) for p in d.changed[0].changes] == [("b", 2, MISSING)]


def finding(rule: str, resource: str | None = None, message: str = "m", enforcement: str = "mandatory") -> Finding:
    return Finding(pack="p", rule=rule, enforcement=enforcement, message=message, resource=resource)  # type: ignore[arg-type]


def test_findings_new_and_fixed_match_by_rule_and_resource() -> None:
    base = [finding("a", "r1"), finding("b", "r2", message="over by $10"), finding("c")]
    head = [finding("b", "r2", message="over by $20"), finding("c"), finding("d", "r3")]
    new, fixed = diff_findings(base, head)
    assert new == [finding("d", "r3")]  # b persists with a reworded message; c is unchanged
    assert fixed == [finding("a", "r1")]


def test_diff_without_policy_evaluation_says_so() -> None:
    d = diff_plans(None, Plan("p", "s", [res("x", {})]))
    assert d.findings is None and d.base_missing
