"""Reaching a cluster: a kubeconfig that is not valid YAML is reported like every YAML file, with line and column."""

from __future__ import annotations

import pytest

from gpufleet.verify.access import AccessError, load_kubeconfig


def test_broken_kubeconfig_names_where_it_came_from_and_the_line() -> None:
    with pytest.raises(AccessError) as e:
        load_kubeconfig("apiVersion: v1\nclusters: [\n", "--kubeconfig dc=/tmp/dc.yaml")
    assert str(e.value).startswith("--kubeconfig dc=/tmp/dc.yaml: not valid YAML (line 3, column 1): ")
