"""Objects that no chart renders, kept as dated, sourced data: CRDs an operator applies at run time, and the
manifest files the program applies itself from a URL.

- The NVIDIA Network Operator applies nv-ipam's `IPPool` and `CIDRPool` CRDs when it reconciles a NicClusterPolicy
  whose `spec.nvIpam` is set (Mellanox/network-operator, manifests/state-nv-ipam-cni/ at the release tag). They live
  in `operator_crds/<chart>-<version>.json`.
- A `kubernetes:yaml/v2:ConfigFile` applies every object of the file its URL names: the ProvisioningRequest CRD of
  burst sites (components/aws/autoscaler.py, versions.PROVISIONING_REQUEST_CRD_URL). `pulumi up` reads the URL; the
  offline checks and `gpufleet export` read `operator_crds/<file stem>-<tag>.json`.

Each data file's name carries the pinned version or tag, so a bump without regenerating fails loudly. Regenerate:

    python -m gpufleet.charts.operator_crds                             # from the upstream tags over HTTPS
    python -m gpufleet.charts.operator_crds --source OWNER/REPO=DIR     # one repository from a checkout at its tag
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model.versions import NETWORK_OPERATOR, PROVISIONING_REQUEST_CRD_URL
from model.yaml_text import safe_load_all

DATA_DIR = Path(__file__).with_name("operator_crds")
RAW_PREFIX = "https://raw.githubusercontent.com/"
RAW = RAW_PREFIX + "{repo}/{tag}/{path}"
CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"


@dataclass(frozen=True)
class OperatorSource:
    chart: str  # the chart whose operator applies the CRDs
    version: str  # its pinned version
    repo: str
    tag: str
    paths: tuple[str, ...]
    trigger_kind: str  # the object whose reconciliation applies them
    trigger_field: str  # dotted path that must be set on it


SOURCES = (
    OperatorSource(
        chart=NETWORK_OPERATOR.name,
        version=NETWORK_OPERATOR.version,
        repo="Mellanox/network-operator",
        tag=f"v{NETWORK_OPERATOR.version}",
        paths=(
            "manifests/state-nv-ipam-cni/005-nv-ipam.nvidia.com_ippools.yaml",
            "manifests/state-nv-ipam-cni/005-nv-ipam.nvidia.com_cidrpools.yaml",
        ),
        trigger_kind="NicClusterPolicy",
        trigger_field="spec.nvIpam",
    ),
)


@dataclass(frozen=True)
class AppliedFile:
    """A manifest file the program applies from a URL: a file of an upstream repository at a tag."""

    url: str

    def _parts(self) -> list[str]:
        if not self.url.startswith(RAW_PREFIX) or self.url.count("/") < 6:
            raise ValueError(f"{self.url} is not a {RAW_PREFIX}<owner>/<repo>/<tag>/<path> URL")
        return self.url.removeprefix(RAW_PREFIX).split("/", 3)

    @property
    def repo(self) -> str:
        owner, name, _, _ = self._parts()
        return f"{owner}/{name}"

    @property
    def tag(self) -> str:
        return self._parts()[2]

    @property
    def path(self) -> str:
        return self._parts()[3]


# Every URL a ConfigFile of the program applies (tests check each example plan's ConfigFiles are among them).
APPLIED_FILES = (AppliedFile(PROVISIONING_REQUEST_CRD_URL),)


class UnknownFile(KeyError):
    """A ConfigFile names a URL whose objects gpufleet holds no copy of."""


@dataclass(frozen=True)
class OperatorCrd:
    chart: str
    version: str
    trigger_kind: str
    trigger_field: str
    source: str  # repo@tag:path
    crd: dict[str, Any]


def _read(repo: str, tag: str, path: str, checkout: Path | None) -> str:
    if checkout is not None:
        return (checkout / path).read_text()
    url = RAW.format(repo=repo, tag=tag, path=path)
    with urllib.request.urlopen(url, timeout=60) as resp:
        return str(resp.read().decode())


def _documents(text: str) -> list[dict[str, Any]]:
    return [d for d in safe_load_all(text) if isinstance(d, dict)]


def data_file(src: OperatorSource | AppliedFile) -> Path:
    if isinstance(src, AppliedFile):
        return DATA_DIR / f"{Path(src.path).stem}-{src.tag}.json"
    return DATA_DIR / f"{src.chart}-{src.version}.json"


def generate_applied(src: AppliedFile, checkout: Path | None = None) -> dict[str, Any]:
    """The data file of one applied URL: every object of the upstream file at the tag (which the file name carries,
    so no pinned version is written twice)."""
    return {
        "generated": dt.date.today().isoformat(),
        "repo": src.repo,
        "path": src.path,
        "objects": _documents(_read(src.repo, src.tag, src.path, checkout)),
    }


def generate(src: OperatorSource, checkout: Path | None = None) -> dict[str, Any]:
    """The data file of one operator: its CRDs as the upstream files at the tag hold them."""
    entries = []
    for path in src.paths:
        for d in _documents(_read(src.repo, src.tag, path, checkout)):
            if d.get("kind") != "CustomResourceDefinition":
                raise ValueError(f"{src.repo} {path} holds a {d.get('kind')}, not a CRD")
            entries.append({"path": path, "crd": d})
    return {
        "generated": dt.date.today().isoformat(),
        "repo": src.repo,
        "chart": src.chart,
        "trigger_kind": src.trigger_kind,
        "trigger_field": src.trigger_field,
        "crds": entries,
    }


@functools.cache
def operator_crds() -> tuple[OperatorCrd, ...]:
    out = []
    for src in SOURCES:
        doc = json.loads(data_file(src).read_text())
        for e in doc["crds"]:
            out.append(
                OperatorCrd(
                    src.chart,
                    src.version,
                    src.trigger_kind,
                    src.trigger_field,
                    f"{src.repo}@{src.tag}:{e['path']}",
                    e["crd"],
                )
            )
    return tuple(out)


@functools.cache
def applied_objects(url: str) -> tuple[dict[str, Any], ...]:
    """Every object the file at `url` holds, as a ConfigFile applies it; UnknownFile if gpufleet holds no copy."""
    src = next((f for f in APPLIED_FILES if f.url == url), None)
    if src is None:
        raise UnknownFile(f"no offline copy of {url}: add it to APPLIED_FILES in {__name__} and regenerate")
    return tuple(json.loads(data_file(src).read_text())["objects"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="OWNER/REPO=DIR",
        help="a checkout of that upstream repository at the pinned tag (repeatable); the others come over HTTPS",
    )
    args = parser.parse_args(argv)
    if bad := [s for s in args.source if "=" not in s or not all(s.partition("=")[::2])]:
        parser.error(f"--source {bad[0]}: give OWNER/REPO=DIR (the repository and its checkout at the pinned tag)")
    checkouts = {repo: Path(folder) for repo, _, folder in (s.partition("=") for s in args.source)}
    DATA_DIR.mkdir(exist_ok=True)
    for src in SOURCES:
        doc = generate(src, checkouts.get(src.repo))
        data_file(src).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(doc['crds'])} CRDs of {src.repo} at {src.tag} to {data_file(src)}")
    for applied in APPLIED_FILES:
        doc = generate_applied(applied, checkouts.get(applied.repo))
        data_file(applied).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(doc['objects'])} objects of {applied.url} to {data_file(applied)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
