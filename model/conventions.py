"""Every key components and policies share: node labels and taints, namespace labels, tag keys, component type
tokens and the privileged-namespace register. One home, so what the components write is what the policies read.

Pure data (no Pulumi); `model.nodes` derives a pool's labels and taints from these keys,
`model.tags` its cost tags and labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, cast, get_args

# ------------------------------------------------------------------------------------------- gpufleet keys

LABEL_PREFIX = "gpufleet.io/"  # gpufleet's own label namespace (nodes, namespaces, cost labels)
SHARED = "shared"  # the `tenant` tag / label value of resources no single tenant owns

# `tenant` is three keys in one: the label every tenant namespace carries (tenant=<id>), the taint key of nodes
# dedicated to a tenant (tenant=<id>:NoSchedule) and the AWS cost tag (tenant=<id> or `shared`).
TENANT_LABEL = "tenant"

POOL_LABEL = f"{LABEL_PREFIX}pool"
ROLE_LABEL = f"{LABEL_PREFIX}role"
GPU_PRODUCT_LABEL = f"{LABEL_PREFIX}gpu-model"
FABRIC_LABEL = f"{LABEL_PREFIX}fabric"
TRUST_LABEL = f"{LABEL_PREFIX}trust"  # a tenant namespace's trust level
RDMA_LABEL = f"{LABEL_PREFIX}rdma"  # a tenant namespace marked for RDMA / EFA jobs (IPC_LOCK; check P6)
# The tenant a node is dedicated to, as Kueue flavors and admission policies select it. It is also the tenant
# cost label (`shared` on shared nodes). EKS node groups cannot carry TENANT_NODE_LABEL (reserved kubernetes.io/
# prefix), so this label is the one tenant selector that exists on every site.
DEDICATED_TENANT_LABEL = f"{LABEL_PREFIX}tenant"
# Kubelets cannot set labels under node-restriction.kubernetes.io/, so a node cannot claim a tenant itself
# (https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#noderestriction).
TENANT_NODE_LABEL = "node-restriction.kubernetes.io/tenant"

# The one remediator that may reboot or replace the node (model.spec.health); policy `one-remediator` reads it.
REMEDIATOR_LABEL = f"{LABEL_PREFIX}remediator"

RACK_LABEL = "topology.gpufleet.io/rack"
LEAF_LABEL = "topology.gpufleet.io/leaf"
RAIL_LABEL = "topology.gpufleet.io/rail"
HOSTNAME_LABEL = "kubernetes.io/hostname"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every namespace
TOPOLOGY_LEVELS = (RACK_LABEL, LEAF_LABEL, HOSTNAME_LABEL)  # Kueue Topology levels, widest first
# EKS labels each node of an instance type EC2 describes the topology of, in a Region it describes it in, with the
# network nodes above it, layer 1 widest (https://docs.aws.amazon.com/eks/latest/userguide/ml-workload-topology.html;
# layer 4 only on types whose topology has four layers). The types, Regions and layer counts: model/catalog/topology.py.
EKS_NETWORK_LAYER_LABELS = tuple(f"topology.k8s.aws/network-node-layer-{n}" for n in (1, 2, 3, 4))
# The NVLink clique of a node on a multi-node NVLink system (`<ClusterUUID>.<CliqueID>` of its fabric-attached
# GPUs), set by GPU Feature Discovery (NVIDIA/k8s-device-plugin, internal/lm/imex.go newImexLabeler; GFD runs with
# the GPU Operator, and with the standalone plugin where components.kubernetes.device_plugin.gfd_needed): nodes
# sharing it share NVLink.
GPU_CLIQUE_LABEL = "nvidia.com/gpu.clique"
# The NVLink domain the inventory puts a server in (`inventory[].nvlink_domain`), beside the clique GFD finds, so
# `verify` can compare the two.
NVLINK_DOMAIN_LABEL = f"{LABEL_PREFIX}nvlink-domain"

# AWS tag keys components set besides the required ones, which policies read back.
# The service account in a tenant namespace that EKS Pod Identity binds to the tenant's S3 role (tenant `s3`).
TENANT_S3_SERVICE_ACCOUNT = "s3-access"
# The ServiceAccount a tenant's own pods run as: the namespace's `default`, which tenancy keeps without a token.
TENANT_SERVICE_ACCOUNT = "default"
POOL_TAG = "pool"  # launch templates: the pool they launch
FABRIC_TAG = "fabric"  # an EFA fabric's subnet and security group
# A burst pool's launch template, node group and the instances and volumes it launches: the burst site's EKS
# cluster name. The cost-allocation tag the burst AWS Budgets alert filters on (components/aws/burst_budget.py).
BURST_TAG = "gpufleet-burst"

# Tag keys every taggable AWS resource carries (metadata.required_tags defaults to these).
REQUIRED_TAGS = ("owner", "cost-center", "env", "cluster", TENANT_LABEL)
# Every tag key gpufleet sets itself: model.tags.Tags and the keys components add per resource (AWS's own
# `kubernetes.io/role/*` subnet keys for load balancers among them). A user tag under one of these keys would be
# overwritten by gpufleet's value or overwrite it, so `metadata.tags` may not use one.
GPUFLEET_TAG_KEYS = frozenset(
    {
        *REQUIRED_TAGS, "managed-by", "Name", POOL_TAG, FABRIC_TAG, BURST_TAG, "tier", "purpose",
        "kubernetes.io/role/elb", "kubernetes.io/role/internal-elb",
    }
)  # fmt: skip

# ---------------------------------------------------------------------------------- NVIDIA and AWS keys

GPU_RESOURCE = "nvidia.com/gpu"  # the device plugin's extended resource (whole GPUs, time-sliced replicas)
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"  # mig-strategy mixed: one resource per profile, e.g. nvidia.com/mig-1g.10gb
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"  # read by the MIG manager
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"  # selects a named device-plugin config
EFA_LABEL = "vpc.amazonaws.com/efa.present"


# EKS managed node groups spell taint effects the AWS API's way (eks CreateNodegroup, Taint.effect).
AWS_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
EKS_EFFECTS = {k8s: eks for eks, k8s in AWS_EFFECTS.items()}


@dataclass(frozen=True)
class Taint:
    """A node taint, its effect spelt as Kubernetes spells it."""

    key: str
    value: str
    effect: str  # NoSchedule | NoExecute | PreferNoSchedule

    @classmethod
    def of(cls, taint: Mapping[str, object]) -> Taint:
        """A taint from a Kubernetes or an EKS node-group taint (`NO_SCHEDULE` read as `NoSchedule`)."""
        effect = str(taint.get("effect") or "")
        return cls(str(taint.get("key") or ""), str(taint.get("value") or ""), AWS_EFFECTS.get(effect, effect))

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}"

    def as_k8s(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value, "effect": self.effect}

    def toleration(self) -> dict[str, str]:
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}

    def as_eks(self) -> dict[str, str]:
        """The taint as the EKS API spells it (`NoSchedule` as `NO_SCHEDULE`; botocore eks service-2.json,
        TaintEffect)."""
        return {"key": self.key, "value": self.value, "effect": EKS_EFFECTS[self.effect]}


GPU_TAINT = Taint(GPU_RESOURCE, "present", "NoSchedule")  # on every GPU node
# A node taken out of service by `gpufleet verify` (gpufleet/verify/quarantine.py); the value says why: `verify`
# (a failed probe), `health` (a detector's node condition) or `drill` (the degraded drill, removed after it).
QUARANTINE_KEY = f"{LABEL_PREFIX}quarantine"
# Tolerated whatever the reason by the node daemons (components/kubernetes/placement.py) and the verify re-probe.
QUARANTINE_TOLERATION = {"key": QUARANTINE_KEY, "operator": "Exists", "effect": "NoSchedule"}


# Set on a burst node group by its AWS-side stop, with the idle bounds (components/aws/backstop.py), and declared by
# the program on every stopped burst group (components/aws/node_pool.py, mng_taints), so no later `up` removes it.
# EKS requires a max of at least 1, so a stopped group could still grow one node for a pod left pending. The
# autoscaler builds a never-used empty managed group's node with the group's taints (kubernetes/autoscaler
# cluster-autoscaler/cloudprovider/aws/aws_manager.go, buildNodeFromTemplate; EKS's answer cached up to 7 minutes,
# managed_nodegroup_cache.go), so no pod without this toleration fits it. A group that has had nodes is built from
# its copy of its last node, untainted, until the autoscaler restarts (cloudprovider/aws/README.md: DescribeNodegroup
# is called only for a group that "has never had any nodes"); so the program's next `up` also takes the group out of
# the autoscaler's reach (AUTOSCALED_TAG, node_pool.py `_autoscaler_tags`). A window's first scale-up can wait up
# to 7 minutes after its `up` removes the taint.
BURST_STOPPED_TAINT = Taint(f"{LABEL_PREFIX}burst-stopped", "backstop", "NoSchedule")


def quarantine_taint(reason: str) -> Taint:
    return Taint(QUARANTINE_KEY, reason, "NoSchedule")


def tenant_taint(tenant: str) -> Taint:
    """The taint of nodes dedicated to `tenant`."""
    return Taint(TENANT_LABEL, tenant, "NoSchedule")


# The taint of a time-sliced pool trusted tenants share (`sharing.shared_by`): only Kueue, admitting a named tenant's
# workload on the pool's flavor, adds its toleration, and the tenant-tolerations admission policy refuses it in any
# other tenant's pods. Without it, a pod of another tenant tolerating the GPU taint could land on the shared GPUs.
SHARED_POOL_TAINT_KEY = f"{LABEL_PREFIX}shared-pool"


def shared_pool_taint(pool: str) -> Taint:
    """The taint of the shared time-sliced pool `pool`."""
    return Taint(SHARED_POOL_TAINT_KEY, pool, "NoSchedule")


# The EKS node-group API refuses labels and taints that contain these ("Label cannot contain reserved prefixes
# [kubernetes.io/, k8s.io/, eks.amazonaws.com/]", https://github.com/aws/containers-roadmap/issues/1451).
EKS_RESERVED_LABEL_PREFIXES = ("kubernetes.io/", "k8s.io/", "eks.amazonaws.com/")


def eks_rejects_label(key: str) -> bool:
    """True if an EKS managed node group would refuse a label with this key."""
    return any(prefix in key for prefix in EKS_RESERVED_LABEL_PREFIXES)


# ------------------------------------------------------------------------------------------ Pod Security

# https://kubernetes.io/docs/concepts/security/pod-security-admission/#pod-security-admission-labels-for-namespaces
POD_SECURITY_PREFIX = "pod-security.kubernetes.io/"
POD_SECURITY_MODES = ("enforce", "audit", "warn")
PodSecurityLevel = Literal["privileged", "baseline", "restricted"]


def pod_security_labels(level: PodSecurityLevel, modes: tuple[str, ...] = POD_SECURITY_MODES) -> dict[str, str]:
    """Namespace labels setting Pod Security `level` in each of `modes`."""
    return {f"{POD_SECURITY_PREFIX}{mode}": level for mode in modes}


# ---------------------------------------------------------------------------- privileged-namespace register

GPU_OPERATOR_NAMESPACE = "gpu-operator"
NETWORK_OPERATOR_NAMESPACE = "network-operator"
DRA_DRIVER_NAMESPACE = "nvidia-dra-driver-gpu"  # NVIDIA's DRA driver; its chart refuses `default`
MONITORING_NAMESPACE = "monitoring"  # kube-prometheus-stack, where a site has `prometheus_operator: install`
KUBE_SYSTEM = "kube-system"

# The only namespaces whose Pod Security level may be `privileged` (checks T6, P5): the system namespaces gpufleet
# installs privileged operands into, and nothing else. Adding one is a security decision; say why next to it.
PRIVILEGED_NAMESPACES: frozenset[str] = frozenset(
    {
        GPU_OPERATOR_NAMESPACE,  # GPU Operator operands: privileged, hostPID (driver, toolkit, MIG manager)
        NETWORK_OPERATOR_NAMESPACE,  # DOCA driver, RDMA / SR-IOV device plugins, multus, CNI installers
        KUBE_SYSTEM,  # standalone NVIDIA device plugin, AWS EFA device plugin, the cluster's own CNI/proxy
        DRA_DRIVER_NAMESPACE,  # NVIDIA DRA driver kubelet plugin and IMEX daemons: privileged, host paths
        MONITORING_NAMESPACE,  # prometheus-node-exporter: hostNetwork, hostPID, the host's root mounted
    }
)

# ------------------------------------------------------------------------------------------------- metrics

# The Helm release of kube-prometheus-stack where gpufleet installs it. Its Prometheus selects ServiceMonitors and
# PrometheusRules carrying `release: <release>`, as the chart's own do (`kube-prometheus-stack.labels` in
# charts/kube-prometheus-stack/templates/_helpers.tpl at versions.KUBE_PROMETHEUS_STACK's tag).
METRICS_RELEASE = "kube-prometheus-stack"
METRICS_SELECTOR = {"release": METRICS_RELEASE}
# The label the Grafana sidecar loads dashboard ConfigMaps by (`grafana.sidecar.dashboards.label` / `labelValue`
# in the same chart's values.yaml).
GRAFANA_DASHBOARD_LABEL = {"grafana_dashboard": "1"}
# The gp3 StorageClass gpufleet makes on an EKS cluster it creates, with the EBS CSI driver add-on, for Prometheus's
# volume: such a cluster has neither a default StorageClass nor an EBS CSI driver otherwise.
EBS_GP3_CLASS = "gpufleet-gp3"


# -------------------------------------------------------------------------------------------- type tokens

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"  # pulumi-kubernetes Helm Release resources
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"  # pulumi-aws 7 EKS managed node groups

SiteKind = Literal["aws", "baremetal"]  # the `kind` of every site model in model.spec


def site_type(kind: SiteKind) -> str:
    """The component type token of a site of `kind`; it names the site kind in every URN below the site."""
    return f"gpufleet:{kind}:Site"


AWS_SITE_TYPE = site_type("aws")
BAREMETAL_SITE_TYPE = site_type("baremetal")


def site_kind_of_urn(urn: str) -> SiteKind | None:
    """The kind of the site a resource is (or sits under), from the type chain in its URN; None: under no site."""
    for kind in get_args(SiteKind):
        token = site_type(kind)
        if f"{token}$" in urn or f"{token}::" in urn:
            return cast(SiteKind, kind)
    return None


def gpu_operator_release_name(site_name: str) -> str:
    """Logical name of a site's GPU Operator release: estate `{site}-k8s` -> ClusterStack `-gpu` -> GpuStack
    `-gpu-operator` -> `-release`. The operator-driver-site policy config names host-driver releases by it."""
    return f"{site_name}-k8s-gpu-gpu-operator-release"
