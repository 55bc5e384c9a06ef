"""The bare-metal site in synthesized plans: bootstrap commands, node patches, fabric objects, storage classes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from components.baremetal.bootstrap import ssh_connection
from gpufleet.engine.plan import SECRET, Plan, PlanResource
from gpufleet.engine.synth import SECRET_PLACEHOLDER
from model import versions
from model.conventions import (
    FABRIC_LABEL,
    GPU_TAINT,
    LEAF_LABEL,
    MIG_CONFIG_LABEL,
    POOL_LABEL,
    RACK_LABEL,
    RAIL_LABEL,
    ROLE_LABEL,
    TENANT_NODE_LABEL,
    TOPOLOGY_LEVELS,
)
from model.spec import BaremetalSite
from tests.baremetal.helpers import onprem_spec, scripts_for
from tests.baremetal.test_hostile_values import Sandbox, needs_sandbox
from tests.conftest import example_config

REMOTE = "command:remote:Command"
LOCAL = "command:local:Command"
NODE_PATCH = "kubernetes:core/v1:NodePatch"
STORAGE_CLASS = "kubernetes:storage.k8s.io/v1:StorageClass"


def by_name(plan: Plan, type_: str) -> dict[str, PlanResource]:
    return {r.name: r for r in plan.find(type_)}


def short(key: str) -> str:
    return key.rsplit("::", 1)[1]


# -- bootstrap commands ------------------------------------------------------------------------------------


def test_onprem_bootstraps_every_pool_server_in_order(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["onprem"]
    remote, local = by_name(plan, REMOTE), by_name(plan, LOCAL)
    hosts = [f"gpu-r{r}-0{i}" for r in (1, 2) for i in (1, 2, 3, 4)]
    assert len(plan.find("gpufleet:baremetal:ServerBootstrap")) == 8
    for host in hosts:
        p = f"dc1-{host}"
        assert [short(d) for d in remote[f"{p}-preflight"].dependencies] == [f"{p}-node-delete"]
        assert [short(d) for d in remote[f"{p}-scratch"].dependencies] == [f"{p}-preflight"]
        assert [short(d) for d in local[f"{p}-join-token"].dependencies] == [f"{p}-scratch"]
        assert [short(d) for d in remote[f"{p}-join"].dependencies] == [f"{p}-join-token"]
        # node-ready also takes the minted token's id, to delete the token once the node is Ready
        assert sorted(short(d) for d in local[f"{p}-node-ready"].dependencies) == [f"{p}-join", f"{p}-join-token"]
        patch = by_name(plan, NODE_PATCH)[f"{p}-node"]
        assert [short(d) for d in patch.dependencies] == [f"{p}-node-ready"]


@needs_sandbox
def test_the_planned_join_and_leave_commands_join_and_reset_the_server(
    example_plans: dict[str, Plan], tmp_path: Path
) -> None:
    """What the plan's join step runs over SSH does what a join must: as root through non-interactive sudo (the
    site's SSH user is not root), kubeadm join the site's API server with the token and CA hash read from stdin and
    the server's hostname as node name; its delete resets the server. Run in the sandbox with stub tools."""
    join = by_name(example_plans["onprem"], REMOTE)["dc1-gpu-r1-01-join"]
    assert join.inputs["stdin"] == SECRET and join.inputs["connection"] == SECRET  # join secrets, SSH key
    assert join.inputs["update"] == join.inputs["create"]  # a changed script updates in place, never resets
    sandbox = Sandbox(tmp_path / "sandbox")
    sudo = sandbox.bin / "sudo"
    sudo.write_text(
        f'#!/bin/bash\nprintf "%s\\0" sudo "$@" > "{sandbox.log}/call.0.sudo"\n[ "$1" = -n ] && shift\nexec "$@"\n'
    )
    sudo.chmod(0o755)
    token, ca_hash = "abcdef.0123456789abcdef", "sha256:" + "0" * 64
    joined = sandbox.run(["/bin/sh", "-c", join.inputs["create"]], stdin=f"{token}\n{ca_hash}\n")
    assert joined.returncode == 0, joined.stderr
    calls = sandbox.calls()
    assert calls[0][:2] == ["sudo", "-n"]
    [kubeadm] = [c for c in calls if c[0] == "kubeadm"]
    assert kubeadm[1:] == [
        "join", "k8s-api.dc1.example.com:6443", "--token", token,
        "--discovery-token-ca-cert-hash", ca_hash, "--node-name", "gpu-r1-01",
    ]  # fmt: skip
    left = sandbox.run(["/bin/sh", "-c", join.inputs["delete"]])
    assert left.returncode == 0, left.stderr
    assert ["kubeadm", "reset", "--force"] in sandbox.calls()


def test_no_bootstrap_step_is_replaced_when_its_script_changes(example_plans: dict[str, Plan]) -> None:
    """pulumi-command replaces a Command whose `triggers` change, `update` or not: the SDK registers every Command
    with replace_on_changes=["triggers[*]"] (sdk/python/pulumi_command/remote/command.py and local/command.py at
    v1.2.1; pulumi/pulumi-command#855). A replacement runs the old Command's `delete`: `kubeadm reset` for the
    join, a drain for node-ready. So no step carries triggers, and every step that runs something on change has
    `update` equal to `create`: a changed script text is an in-place update."""
    for stack in ("onprem", "hybrid"):
        plan = example_plans[stack]
        steps = plan.find(REMOTE) + plan.find(LOCAL)
        assert steps, stack
        for step in steps:
            assert "triggers" not in step.inputs, step.name
            if "create" in step.inputs:
                assert step.inputs["update"] == step.inputs["create"], step.name
            assert "triggers[*]" not in step.ignore_changes


def test_api_steps_drain_before_reset_and_delete_the_node_last(example_plans: dict[str, Plan]) -> None:
    local = by_name(example_plans["onprem"], LOCAL)
    scripts = scripts_for(onprem_spec())
    ready, gone = local["dc1-gpu-r1-01-node-ready"], local["dc1-gpu-r1-01-node-delete"]
    assert ready.inputs["delete"] == scripts.node_drain.text
    assert "kubectl --kubeconfig" in ready.inputs["delete"] and " drain " in ready.inputs["delete"]
    assert gone.inputs["delete"] == scripts.node_delete.text
    assert "create" not in gone.inputs
    assert ready.inputs["environment"] == SECRET  # holds the kubeconfig


def test_no_secret_value_appears_in_any_plain_input(example_plans: dict[str, Plan]) -> None:
    for stack in ("onprem", "hybrid"):
        text = example_plans[stack].to_json()
        assert SECRET_PLACEHOLDER not in text, stack
        assert "REPLACEWITHPULUMICONFIGSETSECRET" not in text, stack


def test_hybrid_on_prem_site_bootstraps_its_servers(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["hybrid"]
    joins = sorted(n for n in by_name(plan, REMOTE) if n.endswith("-join"))
    assert joins == [f"onprem-gpu-0{i}-join" for i in (1, 2, 3, 4)]
    patches = by_name(plan, NODE_PATCH)
    assert patches["onprem-gpu-03-node"].inputs["metadata"]["labels"][LEAF_LABEL] == "leaf-2"


# -- node patches --------------------------------------------------------------------------------------------


def test_node_patches_carry_pool_topology_and_cost_labels(example_plans: dict[str, Plan]) -> None:
    patches = by_name(example_plans["onprem"], NODE_PATCH)
    train = patches["dc1-gpu-r1-02-node"].inputs
    dev = patches["dc1-gpu-r2-04-node"].inputs
    assert train["metadata"]["name"] == "gpu-r1-02"
    t = train["metadata"]["labels"]
    assert (t[POOL_LABEL], t[ROLE_LABEL], t[FABRIC_LABEL], t[MIG_CONFIG_LABEL]) == (
        "train",
        "training",
        "ib",
        "all-disabled",
    )
    assert (t[RACK_LABEL], t[LEAF_LABEL], t[RAIL_LABEL]) == ("r1", "leaf-1", "1")
    assert t["gpufleet.io/cost-center"] == "cc-4100" and t["gpufleet.io/tenant"] == "shared"
    d = dev["metadata"]["labels"]
    assert (d[POOL_LABEL], d[ROLE_LABEL], d[MIG_CONFIG_LABEL]) == ("dev", "interactive", "all-1g.10gb")
    assert FABRIC_LABEL not in d
    assert (d[RACK_LABEL], d[LEAF_LABEL]) == ("r2", "leaf-2")
    for inputs in (train, dev):
        assert inputs["spec"]["taints"] == [GPU_TAINT.as_k8s()]


def test_every_kueue_topology_level_is_a_label_the_nodes_carry(example_plans: dict[str, Plan]) -> None:
    for patch in example_plans["onprem"].find(NODE_PATCH):
        labels = patch.inputs["metadata"]["labels"]
        for level in TOPOLOGY_LEVELS:
            # kubernetes.io/hostname is set by the kubelet itself; gpufleet sets the others
            assert level in labels or level == "kubernetes.io/hostname", (patch.name, level)


def test_ipoib_networks_hang_off_the_interface_the_fabric_names(example_plans: dict[str, Plan]) -> None:
    (fabric,) = onprem_spec().sites[0].fabrics
    assert fabric.ipoib_interface == "ibp24s0"  # type: ignore[union-attr]
    networks = example_plans["onprem"].find("kubernetes:mellanox.com/v1alpha1:IPoIBNetwork")
    assert networks and {n.inputs["spec"]["master"] for n in networks} == {"ibp24s0"}


# -- a variant: dedicated pool, pkey partitions, RoCE, parallel FS --------------------------------------------


UFM = {
    "address": "ufm.dc1.example.com",
    "username_config": "ufmUser",
    "password_config": "ufmPassword",
    "ca_certificate_config": "ufmCa",
}


def _variant() -> dict[str, Any]:
    config = example_config("onprem")
    for key in ("ufmUser", "ufmPassword", "ufmCa"):
        config[f"gpufleet:{key}"] = {"secure": SECRET_PLACEHOLDER}
    estate = config["gpufleet:estate"]
    site = estate["sites"][0]
    site["fabrics"] = [
        {
            "kind": "infiniband",
            "name": "ib",
            "device_plugin": "sriov",
            "ipoib_interface": "ibp24s0",
            "partition_keys": {"research": "0x0010"},
            "ufm": UFM,
        },
        {"kind": "roce", "name": "eth", "interfaces": ["ens1f0np0", "ens1f1np1"], "cidr": "192.168.128.0/24"},
    ]
    site["node_pools"][1]["dedicated_to"] = "product"
    site["storage"].append(
        {
            "kind": "parallel-fs",
            "name": "lustre",
            "csi_driver": "lustre.csi.k8s.io",
            "parameters": {"mgsAddress": "10.0.0.5@o2ib", "fsName": "scratch"},
            "throughput_gbps": 200,
        }
    )
    estate["tenants"][0]["gpu_quota"] = {"train": 32}
    return config


@pytest.fixture(scope="module")
def variant(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    from gpufleet.engine.synth import synth
    from tests.conftest import write_project

    return synth(write_project(tmp_path_factory.mktemp("variant"), _variant()), "test")


def test_dedicated_pool_nodes_get_tenant_label_and_taint(variant: Plan) -> None:
    dev = by_name(variant, NODE_PATCH)["dc1-gpu-r2-03-node"].inputs
    assert dev["metadata"]["labels"][TENANT_NODE_LABEL] == "product"
    assert dev["metadata"]["labels"]["gpufleet.io/tenant"] == "product"
    assert dev["spec"]["taints"] == [GPU_TAINT.as_k8s(), {"key": "tenant", "value": "product", "effect": "NoSchedule"}]
    join = by_name(variant, REMOTE)["dc1-gpu-r2-03-join"].inputs["create"]
    assert "--register-with-taints=nvidia.com/gpu=present:NoSchedule,tenant=product:NoSchedule" in join
    assert TENANT_NODE_LABEL not in join  # NodeRestriction: only the NodePatch may set it


def test_tenant_with_partition_key_gets_an_isolated_ib_network(variant: Plan) -> None:
    nads = variant.find("kubernetes:k8s.cni.cncf.io/v1:NetworkAttachmentDefinition")
    assert [(n.inputs["metadata"]["namespace"], n.inputs["metadata"]["name"]) for n in nads] == [
        ("research", "ib-pkey")
    ]
    config = json.loads(nads[0].inputs["spec"]["config"])
    ib = config["plugins"][0]
    assert (ib["type"], ib["pkey"], ib["ibKubernetesEnabled"]) == ("ib-sriov", "0x0010", True)
    assert nads[0].inputs["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/resourceName": "nvidia.com/ib_ib"}
    ipoib = variant.find("kubernetes:mellanox.com/v1alpha1:IPoIBNetwork")
    # the partitioned tenant does not also get the shared default-partition network
    assert [n.inputs["spec"]["networkNamespace"] for n in ipoib] == ["product"]


def test_partitioned_fabric_deploys_ib_kubernetes_with_the_fabrics_ufm(variant: Plan) -> None:
    """ib-sriov-cni with ibKubernetesEnabled waits for ib-kubernetes to add the pod to its partition, so the
    NicClusterPolicy must run it, pointed at a Secret that holds what its Deployment reads."""
    from components.kubernetes.network_operator import GUID_POOL_END, GUID_POOL_START
    from gpufleet.review.reality.validate import crd_issues
    from tests.charts import chart_dir, crd

    (policy,) = variant.find("kubernetes:mellanox.com/v1alpha1:NicClusterPolicy")
    ib_kubernetes = policy.inputs["spec"]["ibKubernetes"]
    assert ib_kubernetes == {
        "image": "ib-kubernetes",
        "repository": versions.NETWORK_OPERATOR_REGISTRY,
        "version": versions.NETWORK_OPERATOR_COMPONENTS_TAG,
        "periodicUpdateSeconds": 5,
        "pKeyGUIDPoolRangeStart": GUID_POOL_START,
        "pKeyGUIDPoolRangeEnd": GUID_POOL_END,
        "ufmSecret": "ib-ufm",
    }
    # Mellanox/network-operator v26.4.1 deployment/network-operator/crds/mellanox.com_nicclusterpolicies.yaml
    schema = crd(chart_dir(versions.NETWORK_OPERATOR) / "crds" / "mellanox.com_nicclusterpolicies.yaml")
    assert crd_issues(policy.inputs, schema) == []
    secret = by_name(variant, "kubernetes:core/v1:Secret")["dc1-ib-ufm"]
    assert secret.inputs["metadata"]["name"] == "ib-ufm"
    assert secret.inputs["metadata"]["namespace"] == "network-operator"  # where the operator runs ib-kubernetes
    assert secret.inputs["stringData"] == SECRET  # the credentials never appear in plain inputs
    release = variant.one("kubernetes:helm.sh/v3:Release", "dc1-k8s-gpu-network-operator-release")
    assert release.key in secret.dependencies  # after the namespace the release waits for


def test_the_partitioned_variant_comes_up_first_time(variant: Plan) -> None:
    """The UFM Secret after its namespace, the policy's ibKubernetes against the CRD at the pinned tag, and every
    other object of the variant, through the same first-up simulation `gpufleet check` runs."""
    from gpufleet.review.reality.checks import first_up
    from model.load import parse_estate

    result = first_up(variant, parse_estate(_variant()["gpufleet:estate"], "stacks/Pulumi.test.yaml"))
    assert result.checked > 0 and result.problems == []


def test_the_ufm_secret_holds_what_ib_kubernetes_reads() -> None:
    from components.baremetal.fabric import ufm_secret_data
    from model.spec import Ufm

    ufm = Ufm.model_validate({**UFM, "port": 8443})
    # the keys of manifests/state-ib-kubernetes/0070-deployment.yaml (Mellanox/network-operator v26.4.1)
    assert ufm_secret_data(ufm, lambda key: f"<secret {key}>") == {
        "UFM_ADDRESS": "ufm.dc1.example.com",
        "UFM_USERNAME": "<secret ufmUser>",
        "UFM_PASSWORD": "<secret ufmPassword>",
        "UFM_PORT": "8443",
        "UFM_CERTIFICATE": "<secret ufmCa>",
    }


def test_an_estate_without_partition_keys_runs_no_ib_kubernetes(example_plans: dict[str, Plan]) -> None:
    for stack in ("onprem", "hybrid"):
        (policy,) = example_plans[stack].find("kubernetes:mellanox.com/v1alpha1:NicClusterPolicy")
        assert "ibKubernetes" not in policy.inputs["spec"]


def test_sriov_fabrics_get_node_policies_and_roce_networks_per_tenant(variant: Plan) -> None:
    policies = {
        p.inputs["metadata"]["name"]: p.inputs["spec"]
        for p in variant.find("kubernetes:sriovnetwork.openshift.io/v1:SriovNetworkNodePolicy")
    }
    assert sorted(policies) == ["eth-roce", "ib-ib-101b", "ib-ib-1021"]
    assert policies["eth-roce"]["nicSelector"] == {"vendor": "15b3", "pfNames": ["ens1f0np0", "ens1f1np1"]}
    assert (policies["eth-roce"]["linkType"], policies["ib-ib-1021"]["linkType"]) == ("ETH", "IB")
    assert policies["eth-roce"]["nodeSelector"] == {FABRIC_LABEL: "eth"}
    networks = variant.find("kubernetes:sriovnetwork.openshift.io/v1:SriovNetwork")
    assert sorted(n.inputs["spec"]["networkNamespace"] for n in networks) == ["product", "research"]
    pools = {
        p.inputs["metadata"]["name"]: p.inputs["spec"]
        for p in variant.find("kubernetes:nv-ipam.nvidia.com/v1alpha1:IPPool")
    }
    assert pools["eth"]["subnet"] == "192.168.128.0/24" and pools["ib"]["subnet"] == "192.168.64.0/18"


def test_parallel_fs_storage_class_uses_the_spec_driver_and_is_retained(variant: Plan) -> None:
    sc = by_name(variant, STORAGE_CLASS)["dc1-storage-lustre-sc"]
    assert sc.inputs["provisioner"] == "lustre.csi.k8s.io"
    assert sc.inputs["parameters"] == {"mgsAddress": "10.0.0.5@o2ib", "fsName": "scratch"}
    assert sc.inputs["reclaimPolicy"] == "Retain"
    assert sc.protect and sc.retain_on_delete


# -- storage -------------------------------------------------------------------------------------------------


def test_nfs_tier_is_a_retained_protected_class_on_the_pinned_csi_driver(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["onprem"]
    sc = by_name(plan, STORAGE_CLASS)["dc1-storage-home-sc"]
    assert sc.inputs["provisioner"] == "nfs.csi.k8s.io"
    assert sc.inputs["parameters"] == {"server": "10.10.0.20", "share": "/export/home"}
    assert sc.inputs["reclaimPolicy"] == "Retain"
    assert sc.protect and sc.retain_on_delete
    release = by_name(plan, "kubernetes:helm.sh/v3:Release")["dc1-storage-nfs-csi"]
    assert (release.inputs["chart"], release.inputs["version"]) == ("csi-driver-nfs", versions.NFS_CSI_DRIVER.version)
    assert [short(d) for d in sc.dependencies] == ["dc1-storage-nfs-csi"]


def test_scratch_tier_is_local_volumes_from_the_bootstrap_bind_mount(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["onprem"]
    sc = by_name(plan, STORAGE_CLASS)["dc1-storage-nvme-sc"]
    assert sc.inputs["provisioner"] == "kubernetes.io/no-provisioner"
    assert sc.inputs["volumeBindingMode"] == "WaitForFirstConsumer"
    release = by_name(plan, "kubernetes:helm.sh/v3:Release")["dc1-storage-nvme-local"]
    assert release.inputs["version"] == versions.LOCAL_STATIC_PROVISIONER.version
    [klass] = release.inputs["values"]["classes"]
    assert klass["name"] == "nvme" and klass["hostDir"] == "/mnt/gpufleet/nvme"
    assert GPU_TAINT.toleration() in release.inputs["values"]["tolerations"]
    scratch = scripts_for(onprem_spec()).scratch
    assert scratch is not None and "bind_path=/mnt/gpufleet/nvme/gpufleet-scratch" in scratch.text


def test_onprem_s3_credentials_are_a_protected_secret_and_the_endpoint_a_configmap(
    example_plans: dict[str, Plan],
) -> None:
    plan = example_plans["onprem"]
    secret = by_name(plan, "kubernetes:core/v1:Secret")["dc1-storage-objects-credentials"]
    assert secret.inputs["stringData"] == SECRET
    assert secret.inputs["metadata"]["namespace"] == "gpufleet-storage"
    endpoint = by_name(plan, "kubernetes:core/v1:ConfigMap")["dc1-storage-objects-endpoint"]
    assert endpoint.inputs["data"] == {"AWS_ENDPOINT_URL": "https://s3.dc1.example.com"}
    namespace = by_name(plan, "kubernetes:core/v1:Namespace")["dc1-storage-namespace"]
    for r in (secret, endpoint, namespace):
        assert r.protect and r.retain_on_delete, r.name


def test_site_objects_use_the_site_kubernetes_provider(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["onprem"]
    provider = by_name(plan, "pulumi:providers:kubernetes")["dc1-k8s"].key
    for type_ in (NODE_PATCH, STORAGE_CLASS, "kubernetes:mellanox.com/v1alpha1:IPoIBNetwork"):
        for r in plan.find(type_):
            assert r.provider == provider, r.name


# -- EKS Hybrid Nodes ----------------------------------------------------------------------------------------


def test_eks_hybrid_join_reads_the_ssm_activation_from_stdin_and_names_the_node_from_its_output(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from gpufleet.engine.synth import synth
    from tests.conftest import write_project

    config = example_config("onprem")
    config["gpufleet:ssmActivationId"] = {"secure": "v1:PLACEHOLDER"}
    config["gpufleet:joinToken"] = {"secure": "v1:PLACEHOLDER"}  # the SSM activation code
    config["gpufleet:estate"]["sites"][0]["join"] = {
        "method": "eks-hybrid",
        "api_server": "ABCDEF.gr7.us-east-1.eks.amazonaws.com:443",
        "cluster_name": "dc1-hybrid",
        "region": "us-east-1",
    }
    plan = synth(write_project(tmp_path_factory.mktemp("eks"), config), "test")
    join = by_name(plan, REMOTE)["dc1-gpu-r1-01-join"].inputs
    assert "nodeadm init" in join["create"] and "nodeadm uninstall" in join["delete"]
    assert join["stdin"] == SECRET
    # with SSM the node is named after its managed instance, known only once the join ran (unknown offline)
    patch = by_name(plan, NODE_PATCH)["dc1-gpu-r1-01-node"]
    assert patch.inputs["metadata"]["name"] != "gpu-r1-01"
    assert SECRET_PLACEHOLDER not in plan.to_json()


# -- SSH host keys ------------------------------------------------------------------------------------------


def test_every_ssh_connection_checks_the_inventory_host_key() -> None:
    """pulumi-command verifies a host only when `host_key` is set (connection.go at v1.2.1: otherwise
    ssh.InsecureIgnoreHostKey), and the join token travels over these connections."""
    spec = onprem_spec()
    site = spec.sites[0]
    assert isinstance(site, BaremetalSite) and site.ssh.bastion
    for server in site.inventory:
        conn = ssh_connection(site, server, "KEY")
        assert server.host_key and conn.host_key == server.host_key
        assert conn.proxy is not None and conn.proxy.host_key == site.ssh.bastion_host_key
        assert conn.proxy.host == "bastion.dc1.example.com" and conn.proxy.user == "ops"


def test_insecure_opt_out_is_warned_on_every_run(synth_config: Callable[[dict[str, Any]], Plan]) -> None:
    config = example_config("onprem")
    estate = config["gpufleet:estate"]
    site = estate["sites"][0]
    site["ssh"]["insecure_skip_host_key_check"] = True
    del site["ssh"]["bastion_host_key"]
    for server in site["inventory"]:
        del server["host_key"]
    plan = synth_config(config)
    assert any("insecure_skip_host_key_check" in w and "join token" in w for w in plan.warnings), plan.warnings


# -- join tokens -----------------------------------------------------------------------------------------------


def test_each_kubeadm_server_joins_with_a_token_minted_just_before(example_plans: dict[str, Plan]) -> None:
    """kubeadm tokens expire (24 h by default), so a token kept in config stops a server added later from
    joining; the stack mints one per server right before its join and passes it on stdin, never logged."""
    for stack, prefix in (("onprem", "dc1-gpu-r1-01"), ("hybrid", "onprem-gpu-01")):
        plan = example_plans[stack]
        token = by_name(plan, LOCAL)[f"{prefix}-join-token"]
        join = by_name(plan, REMOTE)[f"{prefix}-join"]
        assert token.key in join.dependencies, stack
        assert token.inputs["logging"] == "stderr", stack
        assert (
            "kubectl --kubeconfig" in token.inputs["create"]
            and "bootstrap.kubernetes.io/token" in token.inputs["create"]
        )
        assert join.inputs["stdin"] == SECRET
        # node-ready deletes the minted token once the node is Ready (templates/node-ready.sh.j2)
        ready = by_name(plan, LOCAL)[f"{prefix}-node-ready"]
        assert token.key in ready.dependencies, stack  # its environment (a secret here) takes the token's id
    config = example_config("onprem")["gpufleet:estate"]
    assert "token_config" not in config["sites"][0]["join"]
    assert "gpufleet:joinToken" not in example_config("onprem") and "gpufleet:joinToken" not in example_config("hybrid")


def test_a_token_from_config_is_still_possible(synth_config: Callable[[dict[str, Any]], Plan]) -> None:
    config = example_config("onprem")
    config["gpufleet:estate"]["sites"][0]["join"]["token"] = "config"
    config["gpufleet:joinToken"] = {"secure": "v1:REPLACEWITHPULUMICONFIGSETSECRET"}
    plan = synth_config(config)
    assert not [r for r in plan.find(LOCAL) if r.name.endswith("-join-token")]
