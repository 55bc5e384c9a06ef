"""Temporary git repositories for `gpufleet diff`: two revisions of a small project.

The repository holds a copy of the project's `components` and `gpufleet` packages and a small program that
registers one node group per AWS pool and one protected FSx file system per Lustre tier (so expectations are
exact whatever the real components grow into).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import yaml

from gpufleet.review.findings import Finding
from tests.conftest import ROOT
from tests.review.estates import small

PROGRAM = textwrap.dedent(
    '''
    """Test program: one node group per AWS pool, one protected FSx per Lustre tier."""
    import pulumi

    from model.load import parse_estate
    from model.spec import AwsSite, FsxLustreTier

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
    for pkg in ("components", "gpufleet", "model"):
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
    path = repo / "model" / "catalog" / "aws_prices.json"
    doc = json.loads(path.read_text())
    doc["regions"]["us-east-1"][instance] = usd
    path.write_text(json.dumps(doc, indent=1))


def stack_config(estate: dict[str, Any]) -> dict[str, Any]:
    """The estate with a placeholder for every secret the small estates read (every command refuses a missing one)."""
    secrets = {f"gpufleet:{k}": {"secure": "v1:abc"} for k in ("kubeconfig", "caCertHash", "sshKey")}
    return {"gpufleet:estate": estate, **secrets}


VIOLATION = Finding(
    pack="cost-tags",
    rule="budget-at-max-size",
    enforcement="mandatory",
    message="at max size the estate costs $249.49/h, over the $200/h budget",
    remediation="lower node_pools[].scaling.max or raise policies.budget_usd_per_hour",
)


FAKE_CHECK = f"""
from gpufleet.review.findings import Finding, Findings


def check_overrides(spec, stack_file):
    pass


def scope():
    return "1 rule in 1 pack"


def evaluate(plan, spec, max_usd_per_hour=None):
    return Findings([Finding(**{dataclasses.asdict(VIOLATION)!r})])
"""


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
