"""Kueue objects as pure data: flavors, ClusterQueue specs, controller configuration (no Pulumi)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from components.kubernetes.priorities import PRIORITY_LEVELS
from gpufleet.engine.plan import Plan
from model import conventions, nodes, pricing, provisioning, queues
from model.load import ESTATE_KEY
from model.spec.sites import AwsSite
from tests.conftest import example_config
from tests.kubernetes.tenancy.conftest import estate, k8s_objects


def _flavor(cq: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    flavors = cq["resourceGroups"][0]["flavors"]
    f = next(f for f in flavors if f["name"] == name)
    return {r["name"]: r for r in f["resources"]}


def test_dedicated_pool_flavor_pins_to_tenant_nodes_and_tolerates_its_taint() -> None:
    spec = estate("aws-train")
    site = spec.sites[0]
    flavor = queues.resource_flavor_spec(site, spec.pool("agents-l40s"))
    assert flavor["nodeLabels"] == {conventions.POOL_LABEL: "agents-l40s", conventions.DEDICATED_TENANT_LABEL: "agents"}
    assert {"key": "tenant", "operator": "Equal", "value": "agents", "effect": "NoSchedule"} in flavor["tolerations"]
    assert conventions.GPU_TAINT.toleration() in flavor["tolerations"]
    # the flavor's labels and tolerations match what the nodes carry
    pool = spec.pool("agents-l40s")
    assert flavor["nodeLabels"].items() <= nodes.pool_labels(spec, pool).items()
    assert flavor["tolerations"] == [t.toleration() for t in nodes.pool_taints(pool)]


def test_shared_pool_flavor_has_no_tenant_label_or_toleration() -> None:
    spec = estate("aws-train")
    flavor = queues.resource_flavor_spec(spec.sites[0], spec.pool("l40s"))
    assert flavor["nodeLabels"] == {conventions.POOL_LABEL: "l40s"}
    assert flavor["tolerations"] == [conventions.GPU_TAINT.toleration()]
    # aws-train schedules by topology (its EFA pool's nodes carry EKS's layers): off the fabric, single hosts
    assert flavor["topologyName"] == queues.HOSTS_TOPOLOGY


def test_baremetal_fabric_pool_flavor_uses_the_fabric_topology() -> None:
    spec = estate("onprem")
    site = spec.sites[0]
    assert queues.topology_fabrics(site) == ["ib"]
    assert queues.resource_flavor_spec(site, spec.pool("train"))["topologyName"] == "ib"
    levels = [lv["nodeLabel"] for lv in queues.topology_spec()["levels"]]
    assert levels == list(conventions.TOPOLOGY_LEVELS) and levels[-1] == conventions.HOSTNAME_LABEL


def test_every_flavor_of_a_site_with_a_fabric_topology_is_topology_aware() -> None:
    # A ClusterQueue with TAS and non-TAS flavors refuses a pod set without a topology request on its TAS flavor;
    # a TAS-only one implies an unconstrained request (kueue tas_flavorassigner.go isTASImplied at versions.KUEUE).
    spec = estate("onprem")
    site = spec.sites[0]
    dev = queues.resource_flavor_spec(site, spec.pool("dev"))  # not on a fabric
    assert dev["topologyName"] == queues.HOSTS_TOPOLOGY
    assert queues.site_topologies(site) == {"ib": queues.topology_spec(), queues.HOSTS_TOPOLOGY: {
        "levels": [{"nodeLabel": conventions.HOSTNAME_LABEL}]}}  # fmt: skip
    for p in queues.scheduled_pools(site):
        assert queues.resource_flavor_spec(site, p).get("topologyName")


def _off_every_fabric(raw: dict[str, Any]) -> None:
    for site in raw["sites"]:
        for pool in site["node_pools"]:
            pool.pop("fabric", None)


def test_a_bare_metal_site_off_every_fabric_keeps_topology_aware_flavors(
    synth_config: Callable[[dict[str, Any]], Plan],
) -> None:
    # The CRD refuses dropping a flavor's topologyName in place ("!has(oldSelf.topologyName) ||
    # (has(self.topologyName) && ...)", kubernetes-sigs/kueue v0.19.2 apis/kueue/v1beta2/resourceflavor_types.go),
    # so a site's flavors stay topology-aware when its last fabric pool leaves the fabric.
    spec = estate("onprem", _off_every_fabric)
    site = spec.sites[0]
    assert queues.topology_fabrics(site) == []
    for p in queues.scheduled_pools(site):
        assert queues.resource_flavor_spec(site, p)["topologyName"] == queues.HOSTS_TOPOLOGY
    assert queues.site_topologies(site) == {queues.HOSTS_TOPOLOGY: queues.hosts_topology_spec()}
    # and the component creates that Topology beside the flavors that name it
    config = example_config("onprem")
    _off_every_fabric(config[ESTATE_KEY])
    plan = synth_config(config)
    named = {r.inputs["spec"]["topologyName"] for r in k8s_objects(plan, "ResourceFlavor")}
    assert named == {queues.HOSTS_TOPOLOGY}
    assert {r.inputs["metadata"]["name"] for r in k8s_objects(plan, "Topology")} == named


def test_the_hybrid_managers_flavor_stays_topology_aware_when_the_workers_leave_their_fabric(
    synth_config: Callable[[dict[str, Any]], Plan],
) -> None:
    config = example_config("hybrid")
    _off_every_fabric(config[ESTATE_KEY])
    plan = synth_config(config)
    (flavor,) = [
        r for r in k8s_objects(plan, "ResourceFlavor", anywhere=True) if r.inputs["metadata"]["name"] == "dispatch"
    ]
    assert flavor.inputs["spec"]["topologyName"] == "dispatch"


EKS_LAYERS = [f"topology.k8s.aws/network-node-layer-{n}" for n in (1, 2, 3)]


def test_an_efa_pool_of_a_type_eks_labels_gets_a_topology_of_ekss_layers_and_the_rest_none() -> None:
    # p5.48xlarge: three network nodes (EC2 User Guide, ec2-instance-topology-prerequisites); EKS labels them
    # topology.k8s.aws/network-node-layer-1..3 (EKS User Guide, ml-workload-topology). Kueue's levels go broadest
    # first, kubernetes.io/hostname last (kueue v0.19.2 apis/kueue/v1beta2/topology_types.go).
    spec = estate("aws-train")
    site = spec.sites[0]
    # every flavor TAS, so Kueue implies a request for a job without one (tas_flavorassigner.go isTASImplied)
    assert queues.schedules_by_topology(site)
    assert queues.site_topologies(site) == {
        queues.HOSTS_TOPOLOGY: queues.hosts_topology_spec(),
        "train-efa": {"levels": [{"nodeLabel": lv} for lv in (*EKS_LAYERS, conventions.HOSTNAME_LABEL)]},
    }
    h100 = queues.resource_flavor_spec(site, spec.pool("h100"))
    assert h100["topologyName"] == "train-efa"
    # a change of topologyName (set, moved or dropped) replaces the flavor, on EKS as on bare metal
    assert queues.flavor_replaced_on(h100) == ["spec.topologyName", "spec.nodeLabels", "spec.tolerations"]
    # g6e carries EKS's layers too, but its pools are on no fabric: single hosts
    for name in ("l40s", "agents-l40s"):
        flavor = queues.resource_flavor_spec(site, spec.pool(name))
        assert flavor["topologyName"] == queues.HOSTS_TOPOLOGY, name
        assert queues.flavor_replaced_on(flavor) == ["spec.topologyName", "spec.nodeLabels", "spec.tolerations"]
    assert queues.topology_request(site, spec.pool("h100")) == {queues.PREFERRED_TOPOLOGY_ANNOTATION: EKS_LAYERS[-1]}
    assert queues.topology_request(site, spec.pool("l40s")) == {}


def test_the_tas_flavors_of_autoscaled_eks_pools_get_the_provisioning_check() -> None:
    # kueue v0.19.2 admission_check/_index.md: onFlavors limits a check to those flavors; tas_flavorassigner.go
    # podSetTopologyRequest delays the topology to after the ProvisioningRequest check on such a flavor.
    spec = estate("aws-train")
    site = spec.sites[0]
    assert [p.name for p in queues.provisioned_pools(site)] == ["h100", "l40s", "agents-l40s"]  # each min < max
    research = queues.tenant_cluster_queue_spec(spec, site, spec.tenant("research"))
    assert research["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": provisioning.TOPOLOGY_CHECK, "onFlavors": ["h100", "l40s"]}]
    }


def test_a_fixed_size_efa_pool_keeps_its_topology_without_the_check() -> None:
    def fixed(raw: dict[str, Any]) -> None:
        raw["sites"][0]["node_pools"][0]["scaling"] = {"min": 4, "desired": 4, "max": 4}

    spec = estate("aws-train", fixed)
    site = spec.sites[0]
    assert queues.resource_flavor_spec(site, spec.pool("h100"))["topologyName"] == "train-efa"
    assert "h100" not in [p.name for p in queues.provisioned_pools(site)]
    research = queues.tenant_cluster_queue_spec(spec, site, spec.tenant("research"))
    assert research["admissionChecksStrategy"]["admissionChecks"][0]["onFlavors"] == ["l40s"]


def test_a_four_layer_type_gets_layer_four_and_an_efa_pool_eks_does_not_label_gets_none() -> None:
    def b200(raw: dict[str, Any]) -> None:
        raw["sites"][0]["node_pools"][0]["instance_type"] = "p6-b200.48xlarge"

    spec = estate("aws-train", b200)
    found = queues.pool_topology(spec.sites[0], spec.pool("h100"))
    assert found == ("train-efa", (*EKS_LAYERS, "topology.k8s.aws/network-node-layer-4"))

    def g5(raw: dict[str, Any]) -> None:
        raw["sites"][0]["node_pools"][0]["instance_type"] = "g5.48xlarge"  # EFA, but EC2 describes no topology

    site = estate("aws-train", g5).sites[0]
    assert queues.topology_fabrics(site) == [] and queues.site_topologies(site) == {}
    assert all("topologyName" not in queues.resource_flavor_spec(site, p) for p in site.node_pools)


def _moved_to(region: str) -> Callable[[dict[str, Any]], None]:
    """aws-train's site moved to `region`, each line its bill needs priced by the stack at the catalog's us-east-1
    figure (the catalog holds no price for some of them there)."""
    home = estate("aws-train").sites[0]
    assert isinstance(home, AwsSite)
    prices: list[dict[str, Any]] = []
    for need in pricing.price_needs(home):
        when, source = "2026-12-04", "test: the catalog's us-east-1 figure"
        if need.kind == "gpu-instance":
            gpu = pricing.site_price(home, need.key)
            assert gpu is not None
            prices.append({"instance_type": need.key, "usd_per_hour": gpu.usd_per_hour, "date": when, "source": source})
        elif need.kind == "cpu-instance":
            cpu = pricing.site_cpu_price(home, need.key)
            assert cpu is not None
            prices.append({"instance_type": need.key, "usd_per_hour": cpu.usd, "date": when, "source": source})
        elif need.kind == "service" and (line := pricing.site_service_price(home, need.key)) is not None:
            prices.append({"service": need.key, "usd": line.usd, "date": when, "source": source})

    def move(raw: dict[str, Any]) -> None:
        site = raw["sites"][0]
        site["region"] = region
        site["availability_zones"] = [f"{region}{az}" for az in "abc"]
        for fabric in site["fabrics"]:
            fabric["availability_zone"] = f"{region}a"
        site["prices"] = [*site.get("prices", []), *prices]

    return move


def test_an_efa_pool_gets_ekss_layers_only_in_a_region_ec2_describes_its_topology_in() -> None:
    # The EC2 topology prerequisites page lists the Regions it describes topology in; where it does not, EKS labels
    # no network-node layer, and Kueue counts a node lacking a level as no capacity (v0.19.2, NodeMatchesFlavor).
    # Europe (Milan) is not listed; the catalog sells p5 in no unlisted Region, so the stack prices it itself.
    listed = estate("aws-train", _moved_to("us-west-2"))  # US West (Oregon): listed
    assert queues.pool_topology(listed.sites[0], listed.pool("h100")) == ("train-efa", tuple(EKS_LAYERS))
    spec = estate("aws-train", _moved_to("eu-south-1"))
    site = spec.sites[0]
    assert site.region == "eu-south-1"
    # what a pool of a type EKS does not label gets: no Topology, no topology request, no TAS-only queues
    assert queues.pool_topology(site, spec.pool("h100")) is None
    assert queues.topology_fabrics(site) == [] and queues.site_topologies(site) == {}
    assert not queues.schedules_by_topology(site)
    assert all("topologyName" not in queues.resource_flavor_spec(site, p) for p in site.node_pools)
    assert queues.topology_request(site, spec.pool("h100")) == {}


def test_an_nvlink_domain_over_one_server_adds_the_clique_level_under_the_rack() -> None:
    def nvl(raw: dict[str, Any]) -> None:
        train = next(p for p in raw["sites"][0]["node_pools"] if p["name"] == "train")
        train["nvlink_domain_nodes"] = 4
        for server in raw["sites"][0]["inventory"]:  # GB200 trays, each naming its NVLink domain (its rack's here)
            if server["labels"] == train["selector"]:
                server.update(gpu_model="GB200-185GB", gpu_count=4, nvlink_domain=f"{server['rack']}-nvl")
        for tenant in raw["tenants"]:  # 4 GPUs a tray, not 8
            if "train" in tenant["gpu_quota"]:
                tenant["gpu_quota"]["train"] //= 2

    spec = estate("onprem", nvl)
    site = spec.sites[0]
    name = queues.resource_flavor_spec(site, spec.pool("train"))["topologyName"]
    levels = [lv["nodeLabel"] for lv in queues.site_topologies(site)[name]["levels"]]
    assert levels == [
        conventions.RACK_LABEL,
        "nvidia.com/gpu.clique",
        conventions.LEAF_LABEL,
        conventions.HOSTNAME_LABEL,
    ]


def test_cluster_queue_quota_per_flavor_from_tenant() -> None:
    spec = estate("aws-train")
    cq = queues.tenant_cluster_queue_spec(spec, spec.sites[0], spec.tenant("research"))
    assert cq["cohortName"] == "train"
    assert cq["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "research"}}
    assert cq["resourceGroups"][0]["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    assert [f["name"] for f in cq["resourceGroups"][0]["flavors"]] == ["h100", "l40s"]
    assert _flavor(cq, "h100")["nvidia.com/gpu"] == {"name": "nvidia.com/gpu", "nominalQuota": 24, "borrowingLimit": 8}
    assert _flavor(cq, "l40s")["nvidia.com/gpu"]["nominalQuota"] == 8
    assert _flavor(cq, "h100")["cpu"] == {"name": "cpu", "nominalQuota": 256, "borrowingLimit": 0, "lendingLimit": 0}
    assert _flavor(cq, "h100")["memory"]["nominalQuota"] == "2048Gi"


def test_every_flavor_lists_the_covered_resources_in_order() -> None:
    spec = estate("onprem")
    cq = queues.tenant_cluster_queue_spec(spec, spec.sites[0], spec.tenant("research"))
    covered = cq["resourceGroups"][0]["coveredResources"]
    assert covered == ["cpu", "memory", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"]
    for f in cq["resourceGroups"][0]["flavors"]:
        assert [r["name"] for r in f["resources"]] == covered


def test_mixed_mig_pool_quota_is_counted_in_its_mig_resource() -> None:
    spec = estate("onprem")  # mig_strategy mixed, dev pool 1g.10gb
    site = spec.sites[0]
    assert queues.gpu_resource_name(site, spec.pool("dev")) == "nvidia.com/mig-1g.10gb"
    cq = queues.tenant_cluster_queue_spec(spec, site, spec.tenant("product"))
    assert _flavor(cq, "dev")["nvidia.com/mig-1g.10gb"]["nominalQuota"] == 56
    assert _flavor(cq, "dev")["nvidia.com/gpu"] == {"name": "nvidia.com/gpu", "nominalQuota": 0}
    assert _flavor(cq, "train")["nvidia.com/gpu"]["nominalQuota"] == 16


def test_single_mig_strategy_advertises_slices_as_nvidia_gpu() -> None:
    def single(raw: dict[str, Any]) -> None:
        raw["sites"][0]["kubernetes"]["mig_strategy"] = "single"

    spec = estate("onprem", single)
    site = spec.sites[0]
    assert queues.gpu_resource_name(site, spec.pool("dev")) == "nvidia.com/gpu"
    cq = queues.tenant_cluster_queue_spec(spec, site, spec.tenant("product"))
    assert cq["resourceGroups"][0]["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]


def test_untrusted_tenant_queue_lists_only_its_dedicated_pools() -> None:
    def borrow(raw: dict[str, Any]) -> None:
        agents = next(t for t in raw["tenants"] if t["name"] == "agents")
        agents["borrowing_limit"] = 4  # even with borrowing allowed, no shared flavor appears

    spec = estate("aws-train", borrow)
    site = spec.sites[0]
    assert [p.name for p in queues.tenant_flavors(site, spec.tenant("agents"))] == ["agents-l40s"]
    assert "agents-l40s" not in [p.name for p in queues.tenant_flavors(site, spec.tenant("research"))]


def test_lending_limit_is_capped_at_the_nominal_quota() -> None:
    def lend(raw: dict[str, Any]) -> None:
        next(t for t in raw["tenants"] if t["name"] == "product")["lending_limit"] = 12

    spec = estate("aws-train", lend)
    cq = queues.tenant_cluster_queue_spec(spec, spec.sites[0], spec.tenant("product"))
    assert _flavor(cq, "h100")["nvidia.com/gpu"]["lendingLimit"] == 8  # nominal 8 < 12
    assert _flavor(cq, "l40s")["nvidia.com/gpu"]["lendingLimit"] == 12


def test_preemption_reclaims_in_cohort_and_borrow_preemption_only_without_fair_sharing() -> None:
    flavors = [queues.FlavorQuotas("f", {"nvidia.com/gpu": queues.Quota(8)})]
    common = {"namespace": "t", "cohort": "c", "covered": ["nvidia.com/gpu"], "flavors": flavors}
    fair = queues.cluster_queue_spec(**common)  # type: ignore[arg-type]
    assert fair["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    classic = queues.cluster_queue_spec(
        **common,  # type: ignore[arg-type]
        fair_sharing=False,
        borrow_preempt_max_priority=next(p.value for p in PRIORITY_LEVELS if p.name == "batch"),
    )
    assert classic["preemption"]["borrowWithinCohort"] == {"policy": "LowerPriority", "maxPriorityThreshold": 1000}


def test_cluster_queue_builder_for_burst_queues() -> None:
    cq = queues.cluster_queue_spec(
        namespace=None,
        cohort="hyb",
        covered=["cpu", "nvidia.com/gpu"],
        flavors=[queues.FlavorQuotas("burst-h100", {"nvidia.com/gpu": queues.Quota(16)})],
        admission_checks={"multikueue": ()},
    )
    assert cq["namespaceSelector"] == {}
    assert cq["admissionChecksStrategy"] == {"admissionChecks": [{"name": "multikueue"}]}
    assert cq["resourceGroups"][0]["flavors"][0]["resources"][0] == {"name": "cpu", "nominalQuota": 0}


def test_burst_pools_get_no_flavor_and_cloud_site_no_tenants() -> None:
    spec = estate("hybrid")
    cloud = spec.site("cloud")
    assert queues.scheduled_pools(cloud) == []
    assert queues.tenants_on_site(spec, cloud) == []
    assert [t.name for t in queues.tenants_on_site(spec, spec.site("onprem"))] == ["research", "product"]


def test_controller_config_gates_unlabelled_jobs_and_admits_gangs_all_or_nothing() -> None:
    config = queues.controller_config()
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert config["manageJobsWithoutQueueName"] is True
    assert config["managedJobsNamespaceSelector"] == {
        "matchExpressions": [{"key": queues.MANAGED_NAMESPACE_LABEL, "operator": "Exists"}]
    }
    assert config["waitForPodsReady"]["timeout"] == queues.WAIT_FOR_PODS_READY_TIMEOUT
    assert config["fairSharing"]["preemptionStrategies"]
    assert "pod" in config["integrations"]["frameworks"]
    assert yaml.safe_load(yaml.safe_dump(config)) == config


def test_priority_levels_ordered_inference_first_batch_last_and_batch_never_preempts() -> None:
    values = [lv.value for lv in PRIORITY_LEVELS]
    assert [lv.name for lv in PRIORITY_LEVELS] == ["inference", "training", "interactive", "batch"]
    assert values == sorted(values, reverse=True) and len(set(values)) == len(values)
    assert all(0 < v <= 1_000_000_000 for v in values)
    policies = {lv.name: lv.preemption_policy for lv in PRIORITY_LEVELS}
    assert policies == {
        "inference": "PreemptLowerPriority",
        "training": "PreemptLowerPriority",
        "interactive": "PreemptLowerPriority",
        "batch": "Never",
    }
