"""Site kinds are dispatched exhaustively: add a kind to the schema and mypy lists every place that must handle it.

A copy of the tree (components/, gpufleet/, model/, policies/) gets a `gcp` site model in the `Site` union
(model/spec/sites.py) and `gcp` in `SiteKind` (model/conventions.py); mypy must then fail with an assert_never
error at each `match` on a site or site kind, and with nothing else. The kinds seam (model/kinds/) holds the one
match that picks a site's facts; components/estate.py holds the other, which picks the component folder that
builds the site. The Pulumi SDKs are not followed (their types become Any):
that keeps the run to seconds, and no site-kind dispatch is typed through them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

MYPY_INI = """\
[mypy]
python_version = 3.11
ignore_missing_imports = True
check_untyped_defs = True

[mypy-pulumi.*,pulumi_aws.*,pulumi_kubernetes.*,pulumi_command.*,pulumi_policy.*]
follow_imports = skip
"""
PACKAGES = ("components", "gpufleet", "model", "policies")
SITE_UNION = 'Site = Annotated[AwsSite | BaremetalSite, Field(discriminator="kind")]'
FAKE_SITE = """class GcpSite(SiteBase):
    kind: Literal["gcp"]
    node_pools: list[AwsNodePool] = Field(default_factory=list)


Site = Annotated[AwsSite | BaremetalSite | GcpSite, Field(discriminator="kind")]"""
SITE_KIND = 'SiteKind = Literal["aws", "baremetal"]'

# Every place that dispatches on a site or its kind; a new kind is one schema module, one component folder and these.
DISPATCH = {
    "model/kinds/__init__.py",  # the kinds seam: a site's facts
    "components/estate.py",  # which site component to build
    "components/kubernetes/gpu_driver.py",  # driver: image-provided or operator-installed
    "components/kubernetes/gpu_operator.py",  # toolkit: image-provided or operator-installed
    "components/kubernetes/gpu_stack.py",  # EFA plugins or Network Operator
    "components/kubernetes/tenancy.py",  # storage egress
    "gpufleet/review/cost.py",  # node pools' cost
    "gpufleet/review/storage_cost.py",  # storage tiers' cost
    "gpufleet/review/usage.py",  # what a usage profile may price
    "policies/gpu_guardrails/rules.py",  # operator driver settings per site kind
}


def mypy(tree: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            "mypy.ini",
            "--cache-dir",
            str(cache),
            *PACKAGES,
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def copy_tree(tmp: Path) -> Path:
    tree = tmp / "tree"
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "mypy.ini").write_text(MYPY_INI)
    return tree


def replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def test_a_new_site_kind_fails_type_checking_at_every_dispatch_and_nowhere_else(tmp_path: Path) -> None:
    tree = copy_tree(tmp_path)
    cache = tmp_path / "cache"
    control = mypy(tree, cache)
    assert control.returncode == 0, control.stdout  # the unmodified tree passes under the same settings

    replace(tree / "model/spec/sites.py", SITE_UNION, FAKE_SITE)
    replace(tree / "model/conventions.py", SITE_KIND, 'SiteKind = Literal["aws", "baremetal", "gcp"]')
    result = mypy(tree, cache)

    errors = [line for line in result.stdout.splitlines() if ": error: " in line]
    assert result.returncode == 1 and errors, result.stdout
    not_dispatch = [e for e in errors if 'to "assert_never" has incompatible type' not in e]
    assert not_dispatch == [], "the new kind broke something other than a match on the site kind"
    flagged = {re.sub(r":\d+:.*", "", e) for e in errors}
    assert flagged == DISPATCH, sorted(flagged)
