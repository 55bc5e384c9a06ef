"""A chart's supported Kubernetes range (Chart.yaml `kubeVersion`) judged against the minor a site runs.

Helm refuses to install a chart whose `kubeVersion` constraint the cluster's version does not meet
(https://helm.sh/docs/topics/charts/#the-kubeversion-field). The constraint is a Masterminds semver range:
`||` joins alternatives, commas or spaces join comparisons that must all hold. Only the comparisons charts use
(`=`, `!=`, `>`, `>=`, `<`, `<=`) are judged; a range with any other operator is not judged, and says so.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

_COMPARISON = re.compile(r"^(>=|<=|!=|=|>|<)?\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-[0-9A-Za-z.-]+)?$")


def _triple(major: str, minor: str | None, patch: str | None) -> tuple[int, int, int]:
    return int(major), int(minor or 0), int(patch or 0)


def supports(constraint: str, version: str) -> bool | None:
    """Whether Kubernetes `version` (a minor or a patch release) meets `constraint`; None when it cannot be judged."""
    found = _COMPARISON.match(version.strip())
    if found is None:
        return None
    have = _triple(found.group(2), found.group(3), found.group(4))
    for alternative in constraint.split("||"):
        terms = [t for t in re.split(r"\s*,\s*|\s+(?=[<>=!])", alternative.strip()) if t]
        results = []
        for term in terms:
            m = _COMPARISON.match(term.replace(" ", ""))
            if m is None:
                return None
            want, op = _triple(m.group(2), m.group(3), m.group(4)), m.group(1) or "="
            results.append(
                {"=": have == want, "!=": have != want, ">": have > want, ">=": have >= want, "<": have < want,
                 "<=": have <= want}[op]
            )  # fmt: skip
        if results and all(results):
            return True
    return False


def kube_version(chart_folder: Path) -> str | None:
    """The `kubeVersion` a cached chart's Chart.yaml states (None: it states none)."""
    meta = yaml.safe_load((chart_folder / "Chart.yaml").read_text()) or {}
    value = meta.get("kubeVersion") if isinstance(meta, dict) else None
    return str(value) if value else None
