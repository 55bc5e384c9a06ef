"""A pod's effective requests as Kubernetes sums them: sidecars (init containers with restartPolicy Always) run
beside the main containers and are added to them; a plain init container counts with the sidecars started before it
(https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/#resource-sharing-within-containers)."""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from gpufleet.review.reality.journeys import nodes, resources
from tests.review.reality.journeys.conftest import Estate
from tests.review.reality.journeys.test_walk import job


def _c(name: str, cpu: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "resources": {"requests": {"cpu": cpu}}, **extra}


SPEC = {
    "initContainers": [
        _c("proxy", "2", restartPolicy="Always"),
        _c("setup", "3"),
        _c("log", "1", restartPolicy="Always"),
    ],
    "containers": [_c("main", "4")],
}


def test_sidecars_are_summed_with_the_main_containers() -> None:
    # main 4 + sidecars 2 + 1 = 7; setup 3 + the proxy before it 2 = 5
    assert resources.pod_amounts(SPEC, "requests")["cpu"] == Decimal(7)
    assert nodes.pod_requests(SPEC)["cpu"] == Fraction(7)


def test_a_plain_init_container_counts_with_the_sidecars_started_before_it() -> None:
    spec = copy.deepcopy(SPEC)
    spec["initContainers"][1]["resources"]["requests"]["cpu"] = "9"
    assert resources.pod_requests(spec)["cpu"] == Decimal(11)  # setup 9 + proxy 2


def test_a_sidecar_counts_against_the_namespace_quota(estate: Callable[[str], Estate]) -> None:
    # research: requests.cpu 256 in its ResourceQuota; 2 pods of 100 CPUs fit, with a 40-CPU sidecar each they do not
    doc = job("research", "research", 2, {"nvidia.com/gpu": 8, "cpu": "100", "memory": "64Gi"})
    pod = doc["spec"]["template"]["spec"]
    sidecar = copy.deepcopy(pod["containers"][0])
    sidecar.update(name="proxy", restartPolicy="Always", resources={"limits": {"cpu": "40", "memory": "1Gi"}})
    pod["initContainers"] = [sidecar]
    (j,) = estate("aws-train").walk(doc)
    stop = j.blocked_at
    assert stop is not None and stop.name == "admission" and "ResourceQuota" in stop.blocker, j.to_dict()
    assert "cpu 280" in stop.detail


def test_quantities_read_as_the_api_server_reads_them_without_loading_the_kubernetes_client() -> None:
    # apimachinery pkg/api/resource/quantity.go: binary (Ki..Ei) and decimal SI (n..E) suffixes, exponents.
    cases = {"500m": "0.5", "16Gi": str(16 * 2**30), "2k": "2000", "1e3": "1000", "3n": "3e-9", "1.5": "1.5"}
    for text, number in cases.items():
        assert resources.quantity(text) == Decimal(number), text
    assert resources.quantity(8) == 8
    for bad in ("", "Gi", "1x", "1.2.3"):
        with pytest.raises(ValueError):
            resources.quantity(bad)
    # A preview of an estate imports this module; the kubernetes client would add hundreds of modules to it.
    probe = "import sys, gpufleet.review.reality.journeys.resources; print('kubernetes' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
