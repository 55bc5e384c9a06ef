"""Tenant bundles, queues and priorities as the example stacks synthesize them (Pulumi mocks)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import yaml

from components.kubernetes.admission import VOLUME_VALIDATIONS, grandfathered
from components.kubernetes.priorities import PRIORITY_LEVELS
from gpufleet.engine.plan import Plan
from model import conventions, versions
from model.cni import skips_standalone_pods
from model.load import read_stack
from tests.charts import chart_dir
from tests.conftest import ROOT, example_config
from tests.kubernetes.tenancy.conftest import in_namespace, k8s_object, k8s_objects

PlanOf = Callable[[str], Plan]
ESCALATION_VERBS = {"bind", "escalate", "impersonate", "*"}
GUARDED = {"resourcequotas", "limitranges", "networkpolicies"}


def _tenants(plan: Plan) -> set[str]:
    return {
        r.inputs["metadata"]["name"]
        for r in k8s_objects(plan, "Namespace")
        if "tenant" in r.inputs["metadata"].get("labels", {})
    }


def test_every_example_tenant_with_quota_gets_a_bundle_and_queues(plan_of: PlanOf) -> None:
    expected = {
        "aws-train": {"research", "product", "agents"},
        "onprem": {"research", "product"},
        "hybrid": {"research", "product"},
    }
    for stack, tenants in expected.items():
        plan = plan_of(stack)
        assert _tenants(plan) == tenants, stack
        bundles = [b for b in plan.find("gpufleet:kubernetes:TenantBundle") if b.parent and "ClusterStack" in b.parent]
        assert len(bundles) == len(tenants), stack
        for t in tenants:
            assert k8s_object(plan, "ClusterQueue", t)
            assert k8s_object(plan, "LocalQueue", t, t).inputs["spec"] == {"clusterQueue": t}
            # unlabelled jobs and pods land in the tenant's queue too
            assert k8s_object(plan, "LocalQueue", "default", t).inputs["spec"] == {"clusterQueue": t}
            for kind in ("ResourceQuota", "LimitRange", "Role", "RoleBinding"):
                assert len(in_namespace(plan, kind, t)) == 1, (stack, t, kind)


def test_namespace_labels_tenant_cost_and_pod_security(plan_of: PlanOf) -> None:
    ns = k8s_object(plan_of("aws-train"), "Namespace", "product")
    labels = ns.inputs["metadata"]["labels"]
    assert labels["tenant"] == "product"
    assert labels["gpufleet.io/tenant"] == "product" and labels["gpufleet.io/cost-center"] == "cc-4100"
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"
    assert "gpufleet.io/rdma" not in labels
    assert ns.retain_on_delete  # its PVCs outlive a tenant's removal from the spec
    assert not [r for r in k8s_objects(plan_of("aws-train"), "ValidatingAdmissionPolicy") if "product" in r.name]


def test_rdma_namespace_moves_enforcement_to_its_admission_policy(plan_of: PlanOf) -> None:
    plan = plan_of("aws-train")
    labels = k8s_object(plan, "Namespace", "research").inputs["metadata"]["labels"]
    assert labels["gpufleet.io/rdma"] == "true"
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
    assert labels["pod-security.kubernetes.io/audit"] == labels["pod-security.kubernetes.io/warn"] == "restricted"
    vap = k8s_object(plan, "ValidatingAdmissionPolicy", "gpufleet-rdma-research").inputs["spec"]
    assert vap["failurePolicy"] == "Fail" and "IPC_LOCK" in " ".join(v["expression"] for v in vap["validations"])
    binding = k8s_object(plan, "ValidatingAdmissionPolicyBinding", "gpufleet-rdma-research").inputs["spec"]
    assert binding["validationActions"] == ["Deny"]
    assert binding["matchResources"]["namespaceSelector"] == {
        "matchLabels": {"kubernetes.io/metadata.name": "research"}
    }


def test_resource_quota_counts_gpus_by_advertised_resource(plan_of: PlanOf) -> None:
    hard = k8s_object(plan_of("onprem"), "ResourceQuota", "tenant-quota", "product").inputs["spec"]["hard"]
    # product: train 16 whole GPUs, dev 56 MIG slices (mixed strategy), no borrowing
    assert hard["requests.nvidia.com/gpu"] == "16"
    assert hard["requests.nvidia.com/mig-1g.10gb"] == "56"
    assert hard["requests.cpu"] == hard["limits.cpu"] == "256"
    assert hard["requests.memory"] == "2048Gi"
    for key in ("pods", "count/jobs.batch", "services", "persistentvolumeclaims", "configmaps", "secrets"):
        assert int(hard[key]) > 0
    assert hard["services.loadbalancers"] == hard["services.nodeports"] == "0"


def test_resource_quota_leaves_room_for_what_kueue_lets_a_tenant_borrow(plan_of: PlanOf) -> None:
    hard = k8s_object(plan_of("aws-train"), "ResourceQuota", "tenant-quota", "research").inputs["spec"]["hard"]
    assert hard["requests.nvidia.com/gpu"] == str(24 + 8 + 8 + 8)  # h100 24 + l40s 8, borrowing 8 on each


def test_no_quota_anywhere_sets_limits_on_gpus(plan_of: PlanOf) -> None:
    for stack in ("aws-train", "onprem", "hybrid"):
        for rq in k8s_objects(plan_of(stack), "ResourceQuota", anywhere=True):
            keys = rq.inputs["spec"]["hard"]
            assert not [k for k in keys if k.startswith("limits.nvidia.com/")], rq.name
            assert any(k.startswith("requests.nvidia.com/") for k in keys), rq.name


def test_tenant_rbac_has_no_wildcards_escalation_or_writes_to_guardrails(plan_of: PlanOf) -> None:
    plan = plan_of("aws-train")
    roles = k8s_objects(plan, "Role")
    assert {r.inputs["metadata"]["namespace"] for r in roles} >= {"research", "product", "agents"}
    for role in roles:
        for rule in role.inputs["rules"]:
            assert "*" not in rule["resources"] and "*" not in rule["apiGroups"]
            assert not ESCALATION_VERBS & set(rule["verbs"])
            assert not {"pods/exec", "pods/attach", "nodes/proxy", "roles", "rolebindings"} & set(rule["resources"])
            if GUARDED & set(rule["resources"]):
                assert set(rule["verbs"]) <= {"get", "list", "watch"}, rule


def test_role_binding_binds_the_member_groups(plan_of: PlanOf) -> None:
    rb = k8s_object(plan_of("aws-train"), "RoleBinding", "tenant-member", "agents").inputs
    assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "tenant-member"}
    assert rb["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "oidc:agent-runners"}]


def test_default_service_account_does_not_mount_a_token(plan_of: PlanOf) -> None:
    plan = plan_of("aws-train")
    patches = plan.find("kubernetes:core/v1:ServiceAccountPatch")
    by_ns = {p.inputs["metadata"]["namespace"]: p.inputs for p in patches if p.inputs["metadata"]["name"] == "default"}
    assert set(by_ns) >= {"research", "product", "agents"}
    assert all(sa["automountServiceAccountToken"] is False for sa in by_ns.values())


def _policies(plan: Plan, ns: str) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in in_namespace(plan, "NetworkPolicy", ns)}


def test_network_policies_default_deny_then_dns_namespace_and_storage(plan_of: PlanOf) -> None:
    pols = _policies(plan_of("aws-train"), "research")
    assert pols["default-deny"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    dns = pols["allow-dns"]["egress"][0]
    assert dns["to"][0]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}
    assert dns["to"][0]["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
    assert {p["port"] for p in dns["ports"]} == {53}
    assert pols["allow-same-namespace"]["ingress"] == [{"from": [{"podSelector": {}}]}]
    storage = pols["allow-storage"]["egress"]
    assert {b["ipBlock"]["cidr"] for rule in storage for b in rule["to"]} == {"10.40.0.0/16"}  # the site's VPC
    # Lustre and EFS/NFS only: S3 is not in the VPC (its gateway endpoint routes to S3's ranges: allow-s3).
    assert {p["port"] for rule in storage for p in rule["ports"]} == {988, 1018, 2049}


def test_untrusted_tenant_egress_only_dns_namespace_and_its_cidrs(plan_of: PlanOf) -> None:
    pols = _policies(plan_of("aws-train"), "agents")
    assert set(pols) == {"default-deny", "allow-dns", "allow-same-namespace", "allow-egress-cidrs"}
    assert pols["allow-egress-cidrs"]["egress"] == [{"to": [{"ipBlock": {"cidr": "198.51.100.10/32"}}]}]


def test_onprem_storage_endpoints_get_egress_rules_and_no_warning(plan_of: PlanOf) -> None:
    plan = plan_of("onprem")
    egress = _policies(plan, "research")["allow-storage"]["egress"]
    cidrs = {peer["ipBlock"]["cidr"] for rule in egress for peer in rule["to"]}
    assert cidrs == {"10.10.0.20/32", "10.10.0.32/29"}  # the NFS filer's address, the S3 tier's cidr
    assert not [w for w in plan.warnings if "egress_cidrs" in w]


def test_storage_by_host_name_without_cidr_gets_no_storage_policy_but_a_warning(
    synth_config: Callable[[dict[str, Any]], Plan],
) -> None:
    config = example_config("onprem")
    storage = config["gpufleet:estate"]["sites"][0]["storage"]
    storage[0]["server"] = "nfs.dc1.example.com"
    del storage[2]["cidr"]
    plan = synth_config(config)
    assert "allow-storage" not in _policies(plan, "research")
    assert any("nfs.dc1.example.com" in w and "egress_cidrs" in w for w in plan.warnings)


def test_untrusted_tenant_pods_pinned_by_flavor_and_admission_policy(plan_of: PlanOf) -> None:
    plan = plan_of("aws-train")
    flavor = k8s_object(plan, "ResourceFlavor", "agents-l40s").inputs["spec"]
    assert flavor["nodeLabels"][conventions.DEDICATED_TENANT_LABEL] == "agents"
    assert {"key": "tenant", "operator": "Equal", "value": "agents", "effect": "NoSchedule"} in flavor["tolerations"]
    cq = k8s_object(plan, "ClusterQueue", "agents").inputs["spec"]
    assert [f["name"] for f in cq["resourceGroups"][0]["flavors"]] == ["agents-l40s"]
    vap = k8s_object(plan, "ValidatingAdmissionPolicy", "gpufleet-untrusted-agents").inputs["spec"]
    rules = " ".join(v["expression"] for v in vap["validations"])
    assert f"object.spec.nodeSelector['{conventions.DEDICATED_TENANT_LABEL}'] == 'agents'" in rules
    assert "runtimeClassName" not in rules  # the site names no sandbox runtime
    binding = k8s_object(plan, "ValidatingAdmissionPolicyBinding", "gpufleet-untrusted-agents").inputs["spec"]
    assert binding["validationActions"] == ["Deny"]
    assert binding["matchResources"]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "agents"}}
    assert not [
        r
        for r in k8s_objects(plan, "ValidatingAdmissionPolicy")
        if "untrusted-research" in r.inputs["metadata"]["name"]
    ]


def test_untrusted_tenant_must_use_the_sites_sandbox_runtime(synth_config: Callable[[dict[str, Any]], Plan]) -> None:
    config = example_config("aws-train")
    config["gpufleet:estate"]["sites"][0]["kubernetes"]["sandbox_runtime_class"] = "kata"
    plan = synth_config(config)
    vap = k8s_object(plan, "ValidatingAdmissionPolicy", "gpufleet-untrusted-agents").inputs["spec"]
    assert any(
        "(has(object.spec.runtimeClassName) && object.spec.runtimeClassName == 'kata')" in v["expression"]
        for v in vap["validations"]
    )


def test_kueue_release_pinned_and_configured(plan_of: PlanOf) -> None:
    for stack in ("aws-train", "onprem", "hybrid"):
        releases = [r for r in plan_of(stack).helm_releases() if r.inputs.get("name") == "kueue"]
        estate = example_config(stack)["gpufleet:estate"]
        clusters = len(estate["sites"]) + (1 if "burst" in estate else 0)  # every site, and a hybrid's manager
        assert len(releases) == clusters, stack
        for r in releases:
            assert r.inputs["chart"] == f"{versions.KUEUE.repository}/{versions.KUEUE.name}"
            assert r.inputs["version"] == versions.KUEUE.version
            config = yaml.safe_load(r.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
            assert config["manageJobsWithoutQueueName"] is True
            assert "fairSharing" in config
            # gangs are all-or-nothing where pods run; a MultiKueue manager runs none
            assert ("waitForPodsReady" in config) != ("multiKueue" in config)


def test_kueue_namespace_is_pod_security_restricted_and_not_managed_by_kueue(plan_of: PlanOf) -> None:
    labels = k8s_object(plan_of("aws-train"), "Namespace", "kueue-system").inputs["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert "tenant" not in labels  # outside managedJobsNamespaceSelector


def test_flavor_per_scheduled_pool_and_the_topologies_they_name(plan_of: PlanOf) -> None:
    def names(plan: Plan, kind: str) -> list[str]:  # objects of the cluster's Kueue component only
        return sorted(
            r.inputs["metadata"]["name"] for r in k8s_objects(plan, kind) if "gpufleet:kubernetes:Kueue$" in r.key
        )

    assert names(plan_of("aws-train"), "ResourceFlavor") == ["agents-l40s", "h100", "l40s"]
    assert names(plan_of("onprem"), "ResourceFlavor") == ["dev", "train"]
    assert names(plan_of("onprem"), "Topology") == ["gpufleet-hosts", "ib"]  # pools off the fabric: single hosts
    # EKS: a Topology of EKS's network-node layers for the EFA fabric, and single hosts for the pools off it, so every
    # ClusterQueue is TAS-only and Kueue implies a request for a job that makes none (model.queues.flavor_topology)
    assert names(plan_of("aws-train"), "Topology") == ["gpufleet-hosts", "train-efa"]
    assert "burst-h100" not in names(plan_of("hybrid"), "ResourceFlavor")  # the MultiKueue wiring's concern


def test_a_topology_flavor_is_replaced_with_its_cluster_queues_where_the_api_server_refuses_a_change(
    plan_of: PlanOf,
) -> None:
    """A TAS ResourceFlavor's topologyName, nodeLabels and tolerations are immutable (the CRD's
    x-kubernetes-validations, kueue apis/kueue/v1beta2/resourceflavor_types.go at versions.KUEUE): Pulumi must
    replace the flavor, deleting it first (fixed name), and the ClusterQueues naming it with it, since Kueue keeps a
    flavor a ClusterQueue names (its resource-in-use finalizer)."""
    plan = plan_of("onprem")
    flavors = {r.inputs["metadata"]["name"]: r for r in k8s_objects(plan, "ResourceFlavor")}
    for flavor in flavors.values():
        assert flavor.inputs["spec"]["topologyName"]
        assert flavor.replace_on_changes == ["spec.topologyName", "spec.nodeLabels", "spec.tolerations"]
        assert flavor.delete_before_replace
    assert {f.inputs["spec"]["topologyName"] for f in flavors.values()} == {"ib", "gpufleet-hosts"}
    for cq in k8s_objects(plan, "ClusterQueue"):
        listed = {f["name"] for f in cq.inputs["spec"]["resourceGroups"][0]["flavors"]}
        assert set(cq.replace_with) == {flavors[n].key for n in listed} and cq.delete_before_replace
    # Off a topology site a flavor stays mutable: every rule starts `!has(oldSelf.topologyName) ||` (the CRD in
    # the pinned chart). Pulumi replaces on an added key of a listed path too, so a flavor gaining a topologyName is
    # replaced, though the API server would take it in place (tests/kubernetes/tenancy/test_flavor_day_two.py).
    # Topology levels are immutable (the CRD's `self == oldSelf`): new levels replace the Topology, deleted first,
    # and with it the flavors naming it, since Kueue keeps a Topology a flavor names (topology_controller.go).
    topologies = {r.inputs["metadata"]["name"]: r for r in k8s_objects(plan, "Topology")}
    for t in topologies.values():
        assert t.replace_on_changes == ["spec.levels"] and t.delete_before_replace, t.key
    for flavor in flavors.values():
        assert flavor.replace_with == [topologies[flavor.inputs["spec"]["topologyName"]].key], flavor.key
    # On EKS too (model.queues.flavor_replaced_on): the EFA flavor names EKS's layers, the others single hosts, and
    # the site's losing its last such pool drops every flavor's topologyName.
    for flavor in k8s_objects(plan_of("aws-train"), "ResourceFlavor"):
        assert flavor.replace_on_changes == ["spec.topologyName", "spec.nodeLabels", "spec.tolerations"], flavor.key
        want = "train-efa" if flavor.inputs["metadata"]["name"] == "h100" else "gpufleet-hosts"
        assert flavor.inputs["spec"]["topologyName"] == want, flavor.key
    text = (chart_dir(versions.KUEUE) / "templates/crd/kueue.x-k8s.io_resourceflavors.yaml").read_text()
    rules = re.findall(r"message: \w+ (?:are|is) immutable when topologyName is set\n\s+rule: '([^']+)", text)
    assert len(rules) == 6 and all(r.startswith("!has(oldSelf.topologyName) ||") for r in rules)  # 2 versions


def test_gpu_quota_per_flavor_never_exceeds_the_pool(plan_of: PlanOf) -> None:
    plan = plan_of("onprem")
    nominal: dict[tuple[str, str], int] = {}
    for cq in k8s_objects(plan, "ClusterQueue"):
        for f in cq.inputs["spec"]["resourceGroups"][0]["flavors"]:
            for r in f["resources"]:
                if r["name"].startswith("nvidia.com/"):
                    nominal[(f["name"], r["name"])] = nominal.get((f["name"], r["name"]), 0) + r["nominalQuota"]
    assert nominal[("train", "nvidia.com/gpu")] == 48  # 6 servers x 8 GPUs
    assert nominal[("dev", "nvidia.com/mig-1g.10gb")] == 112  # 2 servers x 8 GPUs x 7 slices


def test_priority_and_workload_priority_classes_agree(plan_of: PlanOf) -> None:
    plan = plan_of("aws-train")
    pcs = {r.inputs["metadata"]["name"]: r.inputs for r in k8s_objects(plan, "PriorityClass")}
    wpcs = {r.inputs["metadata"]["name"]: r.inputs for r in k8s_objects(plan, "WorkloadPriorityClass")}
    assert set(pcs) == set(wpcs) == {lv.name for lv in PRIORITY_LEVELS}
    for name, pc in pcs.items():
        assert pc["value"] == wpcs[name]["value"]
        assert pc["globalDefault"] is False
    assert pcs["inference"]["value"] > pcs["training"]["value"] > pcs["interactive"]["value"] > pcs["batch"]["value"]
    assert pcs["batch"]["preemptionPolicy"] == "Never"


def test_every_cluster_with_tenants_refuses_foreign_and_keyless_tolerations(plan_of: PlanOf) -> None:
    for stack, clusters in {"aws-train": 1, "onprem": 1, "hybrid": 2}.items():
        plan = plan_of(stack)
        bindings = k8s_objects(plan, "ValidatingAdmissionPolicyBinding", anywhere=True)
        guards = [b for b in bindings if b.inputs["metadata"]["name"] == "gpufleet-tenant-tolerations"]
        assert len(guards) == clusters, stack  # the hybrid worker's burst namespaces are covered too
        for b in guards:
            spec = b.inputs["spec"]
            assert spec["validationActions"] == ["Deny"]
            assert spec["matchResources"]["namespaceSelector"] == {
                "matchExpressions": [{"key": "tenant", "operator": "Exists"}]
            }


def test_rdma_admission_policy_also_judges_ephemeral_containers(plan_of: PlanOf) -> None:
    """The RDMA policy's CEL reads `spec.ephemeralContainers`, but `kubectl debug` adds them through the
    `pods/ephemeralcontainers` subresource (an UPDATE of the subresource), which a rule on `pods` does not match
    (kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#matching-requests-rules,
    kubernetes.io/docs/concepts/workloads/pods/ephemeral-containers/): the rule must list the subresource."""
    for stack, tenant in (("aws-train", "research"), ("onprem", "research")):
        vap = k8s_object(plan_of(stack), "ValidatingAdmissionPolicy", f"gpufleet-rdma-{tenant}").inputs["spec"]
        rules = vap["matchConstraints"]["resourceRules"]
        matched = {(r, op) for rule in rules for r in rule["resources"] for op in rule["operations"]}
        assert ("pods/ephemeralcontainers", "UPDATE") in matched, stack
        assert ("pods", "CREATE") in matched and ("pods", "UPDATE") in matched, stack


def test_untrusted_tenant_on_eks_must_run_pods_a_controller_owns(plan_of: PlanOf) -> None:
    """The EKS VPC CNI applies no NetworkPolicy to a standalone pod (model.cni.SKIPS_STANDALONE_PODS); a CNI like
    calico does, so there standalone pods stay allowed."""
    vap = k8s_object(plan_of("aws-train"), "ValidatingAdmissionPolicy", "gpufleet-untrusted-agents").inputs["spec"]
    assert any("object.metadata.ownerReferences" in v["expression"] for v in vap["validations"])
    by_name = {s.name: s for stack in ("aws-train", "onprem") for s in read_stack(ROOT, stack).estate().sites}
    assert skips_standalone_pods(by_name["use1"])
    assert not skips_standalone_pods(by_name["dc1"])


def test_every_cluster_with_tenants_refuses_inline_network_volumes(plan_of: PlanOf) -> None:
    for stack, clusters in {"aws-train": 1, "onprem": 1, "hybrid": 2}.items():
        plan = plan_of(stack)
        bindings = k8s_objects(plan, "ValidatingAdmissionPolicyBinding", anywhere=True)
        guards = [b for b in bindings if b.inputs["metadata"]["name"] == "gpufleet-tenant-volumes"]
        assert len(guards) == clusters, stack
        for b in guards:
            assert b.inputs["spec"]["validationActions"] == ["Deny"]
            assert b.inputs["spec"]["matchResources"]["namespaceSelector"] == {
                "matchExpressions": [{"key": "tenant", "operator": "Exists"}]
            }
        policies = [p for p in k8s_objects(plan, "ValidatingAdmissionPolicy", anywhere=True)
                    if p.inputs["metadata"]["name"] == "gpufleet-tenant-volumes"]  # fmt: skip
        assert [p.inputs["spec"]["validations"] for p in policies] == [grandfathered(VOLUME_VALIDATIONS)] * clusters, (
            stack
        )


def test_aws_train_guards_its_tas_flavor_with_a_provisioning_check_after_the_crd(plan_of: PlanOf) -> None:
    """h100 (p5.48xlarge, EFA, min 0 < max 4) is topology-aware; Kueue places TAS pod sets on Ready nodes only, so
    its flavor gets a ProvisioningRequest check (kueue v0.19.2 site/content/en/docs/concepts/
    topology_aware_scheduling.md "ClusterAutoscaler support"), on that flavor alone (`onFlavors`,
    admission_check/_index.md), with the autoscaler's ProvisioningRequest support on (cluster-autoscaler FAQ.md at
    cluster-autoscaler-1.34.2, "Enabling ProvisioningRequest Support") and its CRD before Kueue."""
    plan = plan_of("aws-train")
    (topology,) = [t for t in k8s_objects(plan, "Topology") if t.inputs["metadata"]["name"] == "train-efa"]
    levels = [lv["nodeLabel"] for lv in topology.inputs["spec"]["levels"]]
    assert levels == [*(f"topology.k8s.aws/network-node-layer-{n}" for n in (1, 2, 3)), "kubernetes.io/hostname"]
    check = k8s_object(plan, "AdmissionCheck", "gpufleet-topology-capacity")
    assert check.inputs["spec"] == {
        "controllerName": "kueue.x-k8s.io/provisioning-request",
        "parameters": {
            "apiGroup": "kueue.x-k8s.io",
            "kind": "ProvisioningRequestConfig",
            "name": "gpufleet-topology-capacity",
        },
    }
    config = k8s_object(plan, "ProvisioningRequestConfig", "gpufleet-topology-capacity")
    # no managedResources: every pod set gets a request, a CPU-only one too (controller.go reqIsNeeded)
    assert "managedResources" not in config.inputs["spec"]
    assert config.key in check.dependencies
    queues = {r.inputs["metadata"]["name"]: r for r in k8s_objects(plan, "ClusterQueue")}
    for name, flavors in (("research", ["h100", "l40s"]), ("product", ["h100", "l40s"]), ("agents", ["agents-l40s"])):
        # every flavor is TAS and every pool autoscaled: the check guards each flavor of each queue
        rules = queues[name].inputs["spec"]["admissionChecksStrategy"]["admissionChecks"]
        assert rules == [{"name": "gpufleet-topology-capacity", "onFlavors": flavors}], name
        assert check.key in queues[name].dependencies
    (ca,) = [
        r
        for r in plan.resources
        if r.type == "kubernetes:helm.sh/v3:Release" and r.inputs.get("name") == "cluster-autoscaler"
    ]
    assert ca.inputs["values"]["extraArgs"]["enable-provisioning-requests"] == "true"
    (crd,) = [r for r in plan.resources if r.name.endswith("-autoscaler-provisioning-request-crd")]
    (kueue,) = [r for r in plan.resources if r.name == "use1-k8s-kueue-release"]
    assert crd.key in kueue.dependencies and kueue.key in config.dependencies
