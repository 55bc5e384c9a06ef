"""Small hand-built plans for the first-up simulation: one site, its Kubernetes provider, and what a test adds."""

from __future__ import annotations

from typing import Any

from gpufleet.engine.plan import HELM_RELEASE, Plan, PlanResource
from model.versions import Chart

ESTATE = "gpufleet:index:Estate"


class PlanBuilder:
    def __init__(self, site: str = "dc1", kind: str = "baremetal") -> None:
        self.site_key = f"{ESTATE}$gpufleet:{kind}:Site::{site}"
        self.site_type = f"{ESTATE}$gpufleet:{kind}:Site"
        self.provider = f"{self.site_type}$pulumi:providers:kubernetes::{site}-k8s"
        self.resources = [
            PlanResource(key=f"::{ESTATE}", type=ESTATE, name="e", parent=None, custom=False, inputs={}),
            PlanResource(
                key=self.site_key, type=f"gpufleet:{kind}:Site", name=site, parent=None, custom=False, inputs={}
            ),
            PlanResource(
                key=self.provider,
                type="pulumi:providers:kubernetes",
                name=f"{site}-k8s",
                parent=self.site_key,
                custom=True,
                inputs={},
            ),
        ]

    def add(self, type_: str, name: str, inputs: dict[str, Any], deps: list[str] | None = None) -> str:
        key = f"{self.site_type}${type_}::{name}"
        self.resources.append(
            PlanResource(
                key=key,
                type=type_,
                name=name,
                parent=self.site_key,
                custom=True,
                inputs=inputs,
                dependencies=list(deps or []),
                provider=self.provider,
            )
        )
        return key

    def obj(self, manifest: dict[str, Any], deps: list[str] | None = None, name: str | None = None) -> str:
        api, kind = manifest["apiVersion"], manifest["kind"]
        group = api if "/" in api else f"core/{api}"
        return self.add(f"kubernetes:{group}:{kind}", name or manifest["metadata"]["name"], manifest, deps)

    def namespace(self, ns: str) -> str:
        return self.obj({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, name=f"ns-{ns}")

    def release(
        self,
        chart: Chart,
        namespace: str,
        values: dict[str, Any],
        deps: list[str] | None = None,
        create_namespace: bool = True,
    ) -> str:
        ref = f"{chart.repository}/{chart.name}" if chart.repository.startswith("oci://") else chart.name
        return self.add(
            HELM_RELEASE,
            f"{chart.name}-release",
            {
                "chart": ref,
                "version": chart.version,
                "name": chart.name,
                "namespace": namespace,
                "values": values,
                "createNamespace": create_namespace,
            },
            deps,
        )

    def node_group(
        self,
        name: str,
        desired: int = 1,
        labels: dict[str, str] | None = None,
        taints: list[dict[str, str]] | None = None,
    ) -> str:
        return self.add(
            "aws:eks/nodeGroup:NodeGroup",
            name,
            {
                "scalingConfig": {"desiredSize": desired, "minSize": 0, "maxSize": 4},
                "instanceTypes": ["m7i.xlarge"],
                "labels": labels or {},
                "taints": taints or [],
            },
        )

    def plan(self) -> Plan:
        return Plan(project="gpufleet", stack="test", resources=list(self.resources))
