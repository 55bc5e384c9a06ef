"""A newcomer's first commands: `gpufleet init`, `--version`, `validate` and shell completion."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.engine.synth import synth
from tests.conftest import ROOT, example_config, write_project

runner = CliRunner()


def empty_project(tmp: Path) -> Path:
    shutil.copy(ROOT / "Pulumi.yaml", tmp / "Pulumi.yaml")
    shutil.copy(ROOT / "__main__.py", tmp / "__main__.py")
    return tmp


def fill_in(project: Path, kind: str) -> None:
    """What a user does next: replace each `change-me` init wrote with their own value."""
    path = project / "stacks" / f"Pulumi.{kind}.yaml"
    text = path.read_text().replace("iam::change-me:role/change-me", "iam::210987654321:role/platform-admin")
    text = text.replace("cidrs: [change-me]", "cidrs: [198.18.0.0/24]")
    path.write_text(text.replace("name: change-me", "name: acme-ml"))


@pytest.mark.parametrize("kind", ["aws", "hybrid"])
def test_init_placeholders_that_would_fail_up_are_refused_by_every_command_until_replaced(
    tmp_path: Path, kind: str
) -> None:
    # Before: the stack file validated and previewed as written, and `up` failed on a bucket name another
    # account holds (train-dev-datasets) or an admin role that is not the user's.
    project = empty_project(tmp_path)
    result = runner.invoke(app, ["init", kind, "--gpu", "H100-80GB", "-C", str(project)])
    assert result.exit_code == 0 and "replace each `change-me`" in result.output, result.output
    for command in ("validate", "preview", "cost"):
        refused = runner.invoke(app, [command, "-s", kind, "-C", str(project)])
        assert refused.exit_code == 2, refused.output
        assert "estate.metadata.name: 'change-me' is a placeholder" in refused.stderr
        assert "S3 bucket names derive from it" in refused.stderr
        assert ".cluster.admin_role_arns[0]: 'arn:aws:iam::change-me:role/change-me'" in refused.stderr
        assert "aws iam get-role" in refused.stderr
    out = project / "out"  # export judges the file as every command does (before: it wrote the plan)
    refused = runner.invoke(app, ["export", "-s", kind, "-C", str(project), "-o", str(out)])
    assert refused.exit_code == 2 and "'change-me' is a placeholder" in refused.stderr and not out.exists()
    fill_in(project, kind)
    assert runner.invoke(app, ["validate", "-s", kind, "-C", str(project)]).exit_code == 0


def test_init_writes_no_documentation_account_or_range_a_real_up_would_keep(tmp_path: Path) -> None:
    """Issue 29: init wrote AWS's documentation account 123456789012 in the admin ARN and the RFC 5737 range
    203.0.113.0/24 as the deployer's egress and the public endpoint's CIDRs, and none was refused."""
    project = empty_project(tmp_path)
    assert runner.invoke(app, ["init", "aws", "--gpu", "H100-80GB", "-C", str(project)]).exit_code == 0
    path = project / "stacks" / "Pulumi.aws.yaml"
    text = path.read_text()
    assert "123456789012" not in text and "203.0.113." not in text
    path.write_text(text.replace("role/change-me", "role/platform-admin").replace("name: change-me", "name: acme"))
    refused = runner.invoke(app, ["validate", "-s", "aws", "-C", str(project)])
    assert refused.exit_code == 2, refused.output
    for where in ("deployer.cidrs[0]", "cluster.endpoint_public_cidrs[0]", "cluster.admin_role_arns[0]"):
        assert f"{where}: " in refused.stderr and "is a placeholder" in refused.stderr, refused.stderr
    assert "fixed public egress of the runner" in refused.stderr


@pytest.mark.parametrize(("kind", "region"), [("aws", "us-west-2"), ("baremetal", None), ("hybrid", "us-west-2")])
def test_init_writes_a_commented_stack_file_that_previews_with_no_findings(
    tmp_path: Path, kind: str, region: str | None
) -> None:
    project = empty_project(tmp_path)
    args = ["init", kind, "--gpu", "H100-80GB", "-C", str(project)] + (["--region", region] if region else [])
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    text = (project / "stacks" / f"Pulumi.{kind}.yaml").read_text()
    assert text.startswith(f"# {kind}: written by `gpufleet init {kind}`") and "CHANGE" in text
    estate = yaml.safe_load(text)["config"]["gpufleet:estate"]
    if region:
        assert yaml.safe_load(text)["config"]["aws:region"] == region
        assert any(s.get("region") == region for s in estate["sites"])
    if kind != "aws":
        assert "pulumi config set --secret" in text and "secure: v1:" in text

    fill_in(project, kind)
    preview = runner.invoke(app, ["preview", "-s", kind, "-C", str(project), "-f", "json"])
    assert preview.exit_code == 0, preview.output
    findings = json.loads(preview.stdout)["findings"]
    assert (findings["mandatory"], findings["advisory"]) == (0, 0), findings
    # The scaffold's own canonical journeys answer as promised (issue 28: init scaffolds pass their journeys).
    journeys = json.loads(preview.stdout)["journeys"]
    assert journeys and all(j["verdict"] == j["expected"] for j in journeys), journeys
    if kind == "aws":  # p5.48xlarge has EFA: research may run a gang across the pool's two nodes
        gang = next(j for j in journeys if j["workload"] == "Job/research/gang-train")
        assert gang["verdict"] == "runs" and gang["placement"]["nodes"] == 2


@pytest.mark.parametrize(
    ("kind", "gpu", "region"),
    [("aws", "H200-141GB", "us-east-1"), ("aws", "B200-180GB", "us-west-2"), ("hybrid", "H200-141GB", "us-east-1")],
)
def test_init_puts_a_training_pool_on_an_efa_type_on_a_fabric(tmp_path: Path, kind: str, gpu: str, region: str) -> None:
    """p5en and p6 have EFA (catalog); a training pool there without a fabric gets no EFA interfaces, which the
    advisory rule efa-training-pool-fabric reports. The scaffold writes the fabric instead."""
    project = empty_project(tmp_path)
    result = runner.invoke(app, ["init", kind, "--gpu", gpu, "--region", region, "-C", str(project)])
    assert result.exit_code == 0, result.output
    estate = yaml.safe_load((project / "stacks" / f"Pulumi.{kind}.yaml").read_text())["config"]["gpufleet:estate"]
    (cloud,) = [s for s in estate["sites"] if s["kind"] == "aws"]
    (pool,) = cloud["node_pools"]
    (fabric,) = cloud["fabrics"]
    assert pool["fabric"] == fabric["name"] and fabric["kind"] == "efa"
    assert fabric["availability_zone"] in cloud["availability_zones"]
    fill_in(project, kind)
    preview = runner.invoke(app, ["preview", "-s", kind, "-C", str(project), "-f", "json"])
    assert preview.exit_code == 0, preview.output
    findings = json.loads(preview.stdout)["findings"]
    assert (findings["mandatory"], findings["advisory"]) == (0, 0), findings


def test_init_refuses_to_overwrite_a_stack_file(tmp_path: Path) -> None:
    project = empty_project(tmp_path)
    (project / "stacks").mkdir()
    (project / "stacks" / "Pulumi.aws.yaml").write_text("keep me\n")
    result = runner.invoke(app, ["init", "aws", "--gpu", "H100-80GB", "-C", str(project)])
    assert result.exit_code == 2 and "already exists" in result.output
    assert (project / "stacks" / "Pulumi.aws.yaml").read_text() == "keep me\n"


def test_init_refuses_an_unknown_gpu_model_naming_the_known_ones(tmp_path: Path) -> None:
    result = runner.invoke(app, ["init", "aws", "--gpu", "H999", "-C", str(empty_project(tmp_path))])
    assert result.exit_code == 2, result.output
    assert "H999" in result.output and "H100-80GB" in result.output
    assert not (tmp_path / "stacks").exists()


def test_version_prints_the_installed_package_version() -> None:
    from importlib.metadata import version

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"gpufleet {version('gpufleet')}"


def test_validate_accepts_every_example_stack() -> None:
    for stack in ("aws-train", "onprem", "hybrid"):
        result = runner.invoke(app, ["validate", "-s", stack, "-C", str(ROOT)])
        assert result.exit_code == 0, result.output
        assert "valid" in result.stdout


def test_validate_reports_a_cross_field_problem_without_synthesizing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpufleet.engine.synth as synth

    def no_synth(*args: object, **kwargs: object) -> None:
        raise AssertionError("validate synthesized the program")

    monkeypatch.setattr(synth, "synth", no_synth)
    monkeypatch.setattr(synth, "run_program", no_synth)
    config = example_config("hybrid")
    config["gpufleet:estate"]["tenants"][0]["gpu_quota"] = {"no-such-pool": 8}
    result = runner.invoke(app, ["validate", "-s", "test", "-C", str(write_project(tmp_path, config))])
    assert result.exit_code == 2, result.output
    assert "Pulumi.test.yaml: config.gpufleet:estate.tenants[0]" in result.output
    assert "Traceback" not in result.output


def test_shell_completion_is_offered() -> None:
    result = runner.invoke(app, ["--help"])
    assert "--install-completion" in result.output and "--show-completion" in result.output


def test_every_local_queue_an_init_hybrid_comment_names_exists_in_its_plan(tmp_path: Path) -> None:
    # A comment that names a queue a tenant submits to must name one the stack creates (it once named a
    # `research-burst` queue that nothing created).
    project = empty_project(tmp_path)
    assert runner.invoke(app, ["init", "hybrid", "--gpu", "H100-80GB", "-C", str(project)]).exit_code == 0
    fill_in(project, "hybrid")
    text = (project / "stacks" / "Pulumi.hybrid.yaml").read_text()
    named = {m for line in text.splitlines() if "#" in line for m in re.findall(r"LocalQueue ([\w.-]+)", line)}
    assert named, "the hybrid starter explains where a tenant's jobs go"
    plan = synth(project, "hybrid")
    created = {r.inputs["metadata"]["name"] for r in plan.resources if r.type.endswith(":LocalQueue")}
    assert named <= created, f"comments name queues the plan lacks: {sorted(named - created)}"


# Every region whose offerings include p5.48xlarge also prices it, so the gap is in the rest of the bill; a region
# that does not offer p5 at all (eu-west-1) is refused by init instead (tests/model/test_offerings.py).
@pytest.mark.parametrize(("kind", "region", "keys"), [("aws", "us-east-2", ["ebs-gp3"]),
                                                      ("hybrid", "us-east-2", ["ebs-gp3"])])  # fmt: skip
def test_init_in_a_region_the_catalog_cannot_price_writes_the_prices_to_fill_in(
    tmp_path: Path, kind: str, region: str, keys: list[str]
) -> None:
    project = empty_project(tmp_path)
    result = runner.invoke(app, ["init", kind, "--gpu", "H100-80GB", "--region", region, "-C", str(project)])
    assert result.exit_code == 0, result.output
    assert "fill in the commented `prices` entries" in result.output
    fill_in(project, kind)
    path = project / "stacks" / f"Pulumi.{kind}.yaml"
    text = path.read_text()
    entries = [ln.split("#   - ", 1)[1] for ln in text.splitlines() if "#   - {" in ln]
    assert [next(k for k in keys if k in e) for e in entries] == keys  # one entry per unpriced line, in order
    refused = runner.invoke(app, ["validate", "-s", kind, "-C", str(project)])
    assert refused.exit_code == 2 and all(f"({k}) has no {region} price" in refused.output for k in keys)
    # Filled in and uncommented, the stack validates.
    filled = [e.replace("<USD>", "40.0").replace("<USD per GB-month>", "0.09") for e in entries]
    filled = [e.replace("YYYY-MM-DD", "2026-11-01").replace("<where from>", "quote") for e in filled]
    site_indent = next(ln for ln in text.splitlines() if "# prices:" in ln).split("#")[0]
    block = f"{site_indent}prices:\n" + "".join(f"{site_indent}  - {e}\n" for e in filled)
    path.write_text(text.replace(f"{site_indent}# prices:\n", block))
    again = runner.invoke(app, ["validate", "-s", kind, "-C", str(project)])
    assert again.exit_code == 0, again.output


@pytest.mark.parametrize(
    ("value", "placeholder"),
    [
        ("exchange-metrics-team", False),
        ("change-mediator", False),
        ("xchange-me", False),
        ("change-me", True),
        ("CHANGE-ME", True),
        ("arn:aws:iam::change-me:role/ops", True),
        ("team-change-me-2", True),
    ],
)
def test_a_placeholder_is_the_token_not_a_part_of_a_longer_word(value: str, placeholder: bool) -> None:
    """Issue 29: `owner: exchange-metrics-team` was refused as a placeholder (a substring test)."""
    from model.placeholders import placeholder_problems

    assert bool(placeholder_problems({"metadata": {"owner": value}})) is placeholder
