"""Helm releases of the charts pinned in versions.py: the one way gpufleet installs a chart."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from model.versions import Chart


def release(
    resource_name: str,
    chart: Chart,
    *,
    name: str,
    namespace: str,
    values: dict[str, Any],
    opts: pulumi.ResourceOptions,
    **options: Any,
) -> k8s.helm.v3.Release:
    """A `helm.v3.Release` of `chart` at its pinned version (one resource whose values policies and tests see).

    OCI charts (`oci://...`) are named by their full reference; others by name in their repository. `options`
    are further Release arguments (max_history, timeout, create_namespace, ...).
    """
    if chart.repository.startswith("oci://"):
        source: dict[str, Any] = {"chart": f"{chart.repository}/{chart.name}"}
    else:
        source = {"chart": chart.name, "repository_opts": k8s.helm.v3.RepositoryOptsArgs(repo=chart.repository)}
    return k8s.helm.v3.Release(
        resource_name,
        name=name,
        version=chart.version,
        namespace=namespace,
        values=values,
        opts=opts,
        **source,
        **options,
    )
