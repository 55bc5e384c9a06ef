"""Site kinds are dispatched exhaustively: add a kind to the schema and mypy lists every place that must handle it.

A copy of the tree (components/, gpufleet/, model/, policies/) gets a `gcp` site model in the `Site` union
(model/spec/sites.py) and `gcp` in `SiteKind` (model/conventions.py); mypy must then fail with an assert_never
error at each `match` on a site or site kind, and with nothing else. The kinds seam (model/kinds/) holds the one
match that picks a site's facts; components/estate.py picks the component folder that builds the site, and
gpufleet/review/cost/kinds.py what the cost review prices there: one module per layer. The Pulumi SDKs are not
followed (their types become Any): that keeps the run to seconds, and no site-kind dispatch is typed through them.
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

# Every `match` on a site or its kind. A new kind is one schema module, one kinds module, one component folder and
# a case in each of these.
DISPATCH = {
    "model/kinds/__init__.py",  # the kinds seam: a site's facts, and the one fact a policy asks of a kind
    "components/estate.py",  # which component folder builds the site
    "gpufleet/review/cost/kinds.py",  # what the cost review prices on a site (it builds the review's own results)
}
# Lines that test a site's class without dispatching on its kind, each with why (none today). Outside DISPATCH,
# code asks model.kinds.
ALLOWED: dict[str, str] = {}
# A test of a site's class: isinstance against a site model, a `case` on one, or an assert that narrows a site.
SITE_CLASS = r"\b(AwsSite|BaremetalSite)\b"
SITE_TEST = re.compile(
    rf"isinstance\([^)]*{SITE_CLASS}|case {SITE_CLASS}\(|assert isinstance\(\w*(site|cloud)\w*, ", re.IGNORECASE
)


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


def test_no_code_tests_a_sites_class_outside_the_seam() -> None:
    found = sorted(
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if str(path.relative_to(ROOT)) not in DISPATCH
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if SITE_TEST.search(line) and line.strip() not in ALLOWED
    )
    assert found == [], "ask model.kinds for the fact instead"
