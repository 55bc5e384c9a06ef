"""Reaching a cluster: a kubeconfig that is not valid YAML is reported like every YAML file, with line and column."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.verify.access import AccessError, load_kubeconfig, manager_kubeconfig, parse_kubeconfig_options
from model.load import read_stack
from tests.conftest import ROOT


def test_broken_kubeconfig_names_where_it_came_from_and_the_line() -> None:
    with pytest.raises(AccessError) as e:
        load_kubeconfig("apiVersion: v1\nclusters: [\n", "--kubeconfig dc=/tmp/dc.yaml")
    assert str(e.value).startswith("--kubeconfig dc=/tmp/dc.yaml: not valid YAML (line 3, column 1): ")


def test_the_multikueue_managers_kubeconfig_is_given_by_its_name_or_read_from_its_pulumi_secret(
    tmp_path: Path,
) -> None:
    spec = read_stack(ROOT, "hybrid").estate()
    path = tmp_path / "manager.yaml"
    path.write_text("apiVersion: v1\nclusters: []\n")
    given = parse_kubeconfig_options([f"kueue-manager={path}#admin"], spec)
    assert manager_kubeconfig(spec, "hybrid", given, project=ROOT, pulumi_secrets=False) == (
        {"apiVersion": "v1", "clusters": []},
        "admin",
    )
    asked: list[str] = []

    def secret(who: str, key: str, stack: str, project: Path) -> str:
        asked.append(key)
        return "clusters: []\n"

    manager_kubeconfig(spec, "hybrid", {}, project=ROOT, pulumi_secrets=True, read_secret=secret)
    assert asked == ["managerKubeconfig"]  # burst.manager.kubeconfig_config
    with pytest.raises(AccessError) as e:
        manager_kubeconfig(spec, "hybrid", {}, project=ROOT, pulumi_secrets=False)
    assert "--kubeconfig kueue-manager=PATH" in str(e.value) and "managerKubeconfig" in str(e.value)
