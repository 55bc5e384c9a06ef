"""GPUDirect RDMA only where the InfiniBand driver is: the onprem example's `dev` pool is off the fabric, so its
driver pods must not get nvidia-peermem, which waits forever for the DOCA-OFED driver the Network Operator installs
only on fabric nodes. Checked against NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator (values.yaml,
templates/nvidiadriver.yaml, crds/nvidia.com_nvidiadrivers.yaml) and the onprem / hybrid plans."""

from __future__ import annotations

from typing import Any

import jsonschema
import yaml

from components.kubernetes.gpu_driver import fabric_driver_specs
from components.kubernetes.network_operator import nic_cluster_policy_spec
from gpufleet.engine.plan import HELM_RELEASE, Plan
from model import versions
from model.conventions import gpu_operator_release_name as release_name
from model.nodes import FABRIC_LABEL
from tests.charts import chart_dir, crd
from tests.kubernetes.helpers import estate

NVIDIA_DRIVER = "kubernetes:nvidia.com/v1alpha1:NVIDIADriver"


def _crd_schema() -> dict[str, Any]:
    doc = crd(chart_dir(versions.GPU_OPERATOR) / "crds" / "nvidia.com_nvidiadrivers.yaml")
    (version,) = doc["spec"]["versions"]
    assert version["name"] == "v1alpha1"
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def _operator(plan: Plan, site: str) -> Any:
    return plan.one(HELM_RELEASE, release_name(site))


def test_peermem_runs_only_on_nodes_that_get_the_infiniband_driver(example_plans: dict[str, Plan]) -> None:
    for stack, site in (("onprem", "dc1"), ("hybrid", "onprem")):
        plan = example_plans[stack]
        values = _operator(plan, site).inputs["values"]["driver"]
        # driver management by NVIDIADriver resources; the chart's default one (every GPU node no other
        # NVIDIADriver selects) without RDMA
        assert values["nvidiaDriverCRD"] == {"enabled": True, "deployDefaultCR": True}, stack
        assert values["rdma"]["enabled"] is False, stack
        drivers = plan.find(NVIDIA_DRIVER)
        assert drivers, stack
        ofed_nodes = nic_cluster_policy_spec(estate(stack).site(site))["nodeAffinity"]
        (term,) = ofed_nodes["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        (expr,) = term["matchExpressions"]
        assert expr["key"] == FABRIC_LABEL and expr["operator"] == "In"
        for d in drivers:
            spec = d.inputs["spec"]
            assert spec["rdma"] == {"enabled": True, "useHostMofed": False}
            # selects exactly nodes on which the NicClusterPolicy installs DOCA-OFED
            (key, fabric), *rest = spec["nodeSelector"].items()
            assert not rest and key == FABRIC_LABEL and fabric in expr["values"]
            assert spec["default"] is False
            assert _operator(plan, site).key in d.dependencies  # the CRD comes with the chart


def test_the_charts_default_driver_is_the_fallback_for_nodes_no_other_driver_selects() -> None:
    folder = chart_dir(versions.GPU_OPERATOR)
    template = (folder / "templates" / "nvidiadriver.yaml").read_text()
    assert "and .Values.driver.nvidiaDriverCRD.enabled .Values.driver.nvidiaDriverCRD.deployDefaultCR" in template
    assert "default: true" in template and "enabled: {{ .Values.driver.rdma.enabled }}" in template
    assert "nodeSelector" not in template  # covers every GPU node not otherwise selected
    schema = _crd_schema()["properties"]["spec"]
    assert "fallback" in schema["properties"]["default"]["description"]
    assert "do not match any non-default NVIDIADriver nodeSelector" in schema["properties"]["default"]["description"]


def test_fabric_drivers_are_valid_nvidiadrivers_with_the_charts_images() -> None:
    schema = _crd_schema()
    values = yaml.safe_load((chart_dir(versions.GPU_OPERATOR) / "values.yaml").read_text())

    def with_lustre(raw: dict[str, Any]) -> None:
        raw["sites"][0]["storage"].append(
            {"kind": "parallel-fs", "name": "lustre", "csi_driver": "lustre.csi.k8s.io", "throughput_gbps": 200}
        )

    for spec_estate in (estate("onprem"), estate("onprem", with_lustre)):
        for name, spec in fabric_driver_specs(spec_estate.sites[0]).items():
            obj = {
                "apiVersion": "nvidia.com/v1alpha1",
                "kind": "NVIDIADriver",
                "metadata": {"name": name},
                "spec": spec,
            }
            jsonschema.validate(obj, schema)
            assert (spec["repository"], spec["image"]) == (values["driver"]["repository"], values["driver"]["image"])
            manager = values["driver"]["manager"]
            assert spec["manager"] == {k: manager[k] for k in ("repository", "image", "version")}
            if "gds" in spec:
                assert spec["gds"] == {
                    "enabled": True,
                    **{k: values["gds"][k] for k in ("repository", "image", "version")},
                }
    assert "gds" in next(iter(fabric_driver_specs(estate("onprem", with_lustre).sites[0]).values()))
