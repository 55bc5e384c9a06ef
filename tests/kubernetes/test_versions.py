"""Every chart and image version lives in model/versions.py and nowhere else."""

from __future__ import annotations

import re
from pathlib import Path

from gpufleet.engine.plan import Plan
from model import versions
from tests.conftest import EXAMPLES, ROOT

SCANNED = ("components", "gpufleet", "model", "policies")
VERSIONS_FILE = ROOT / "model" / "versions.py"
TEXT_SUFFIXES = {".py", ".yaml", ".yml", ".json", ".j2", ".jinja", ".toml", ".md", ".txt", ".sh", ".tmpl"}


def pinned_versions() -> set[str]:
    """Every version string versions.py defines: chart versions and the other string constants."""
    out: set[str] = set()
    for name, value in vars(versions).items():
        if not name.isupper():
            continue
        if isinstance(value, versions.Chart):
            out.add(value.version)
        elif isinstance(value, versions.Image):
            out.add(value.tag)
        elif isinstance(value, str) and re.search(r"\d+\.\d+", value) and "://" not in value:
            out.add(value)
    return out


def version_pattern(version: str) -> re.Pattern[str]:
    """The version as a whole token, with or without a leading `v` (v0.20.0 retypes 0.20.0)."""
    bare = version.removeprefix("v")
    return re.compile(rf"(?<![\w.])v?{re.escape(bare)}(?![\w.])")


def test_versions_module_pins_the_gpu_stack() -> None:
    pinned = pinned_versions()
    for chart in (
        versions.GPU_OPERATOR,
        versions.NVIDIA_DEVICE_PLUGIN,
        versions.NETWORK_OPERATOR,
        versions.AWS_EFA_DEVICE_PLUGIN,
    ):
        assert chart.version in pinned
    assert {versions.GPU_DRIVER, versions.DOCA_DRIVER, versions.NETWORK_OPERATOR_COMPONENTS_TAG} <= pinned


def test_version_strings_appear_only_in_versions_py() -> None:
    patterns = {v: version_pattern(v) for v in pinned_versions()}
    offenders: list[str] = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            if path == VERSIONS_FILE or not path.is_file() or path.suffix not in TEXT_SUFFIXES:
                continue
            if "__pycache__" in path.parts:
                continue
            text = path.read_text(errors="ignore")
            offenders += [f"{path.relative_to(ROOT)}: {v}" for v, rx in patterns.items() if rx.search(text)]
    # Comments count too: a cited tag goes stale on the next bump; write "at the pinned tag (versions.KUEUE)".
    assert offenders == [], "import these from model/versions.py instead: " + "; ".join(offenders)


def test_scan_would_catch_a_retyped_version(tmp_path: Path) -> None:
    retyped = tmp_path / "retyped.py"
    retyped.write_text(
        f'CHART = "{versions.NVIDIA_DEVICE_PLUGIN.version}"  # docs: v{versions.NVIDIA_DEVICE_PLUGIN.version}\n'
    )
    matches = version_pattern(versions.NVIDIA_DEVICE_PLUGIN.version).findall(retyped.read_text())
    assert len(matches) == 2
    assert not version_pattern("0.20.0").search("subnet 10.0.20.0/24")


def test_every_release_in_the_examples_uses_a_pinned_chart(example_plans: dict[str, Plan]) -> None:
    pinned = [c for c in vars(versions).values() if isinstance(c, versions.Chart)]
    charts: set[tuple[str, str, str | None]] = {(c.name, c.version, c.repository) for c in pinned}
    charts |= {(f"{c.repository}/{c.name}", c.version, None) for c in pinned if c.repository.startswith("oci://")}
    for stack in EXAMPLES:
        for r in example_plans[stack].helm_releases():
            key = (r.inputs["chart"], r.inputs["version"], (r.inputs.get("repositoryOpts") or {}).get("repo"))
            assert key in charts, f"{stack}: {r.name} uses an unpinned chart {key}"
