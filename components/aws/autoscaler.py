"""ClusterAutoscaler: cluster-autoscaler on every AWS site with an autoscaled pool, so node counts follow demand.

- It scales every pool whose min is below its max (AwsNodePool.autoscaled). Kueue admits up to the quota, sized
  at max, and the pending pods make it add nodes.
- On burst and topology-aware pools Kueue asks for nodes with a ProvisioningRequest (model.provisioning).
- Nodes without work are removed after SCALE_DOWN_UNNEEDED, never below the pool's min.
- It finds groups by their Auto Scaling group tags. Only autoscaled pools carry AUTOSCALED_TAG, so it leaves
  the system nodes and fixed-size pools alone.
- It gets AWS permissions through EKS Pod Identity, and may scale only this cluster's autoscaled groups.

The flags, RBAC, CRD and IAM policy follow the cluster-autoscaler FAQ and cloudprovider/aws/README.md at the
pinned tag (versions.CLUSTER_AUTOSCALER_APP); each is cited where it is set.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.aws import iam
from components.kubernetes import helm
from model import versions
from model.conventions import QUARANTINE_KEY
from model.kinds.aws import AUTOSCALED_TAG, CA_TAG_PREFIX, discovery_keys
from model.nodes import ROLE_LABEL
from model.spec import AwsSite, EstateSpec
from model.tags import Tags

NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "cluster-autoscaler"
# The AWS provider knows GPU nodes by this label (cloudprovider/aws/aws_cloud_provider.go, GPULabel). While a new
# node's GPUs are not yet advertised, it waits for the device plugin instead of launching more nodes. Autoscaled
# pools carry it.
GPU_LABEL = "k8s.amazonaws.com/accelerator"
SCALE_DOWN_UNNEEDED = "10m"
PROVISIONING_REQUEST_API_GROUP = "autoscaling.x-k8s.io"


def iam_policy(cluster: str) -> str:
    """What the autoscaler may do in AWS: read Auto Scaling, EC2 and EKS facts; change only this cluster's
    autoscaled groups.

    It is the "full features" policy of cloudprovider/aws/README.md, with SetDesiredCapacity and
    TerminateInstanceInAutoScalingGroup limited by tag conditions, as that README advises for auto-discovery: the
    group is this cluster's and carries AUTOSCALED_TAG. EKS tags every managed group of the cluster as its own,
    the system nodes' too, so the cluster tag alone would allow more than the autoscaler discovers.
    """
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "Describe",
                    "Effect": "Allow",
                    "Action": [
                        "autoscaling:DescribeAutoScalingGroups",
                        "autoscaling:DescribeAutoScalingInstances",
                        "autoscaling:DescribeLaunchConfigurations",
                        "autoscaling:DescribeScalingActivities",
                        "ec2:DescribeImages",
                        "ec2:DescribeInstanceTypes",
                        "ec2:DescribeLaunchTemplateVersions",
                        "ec2:GetInstanceTypesFromInstanceRequirements",
                        "eks:DescribeNodegroup",
                    ],
                    "Resource": "*",
                },
                {
                    "Sid": "ScaleThisClustersGroups",
                    "Effect": "Allow",
                    "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
                    "Resource": "*",
                    "Condition": {
                        "StringEquals": {f"aws:ResourceTag/{CA_TAG_PREFIX}/{cluster}": "owned"},
                        "Null": {f"aws:ResourceTag/{AUTOSCALED_TAG}": "false"},
                    },
                },
            ],
        }
    )


def chart_values(cluster: str, region: str, app: str) -> dict[str, Any]:
    """Values of the cluster-autoscaler chart (charts/cluster-autoscaler/values.yaml at the pinned chart), running
    cluster-autoscaler `app`."""
    return {
        # The image is named, not left to the chart: the chart pinned for 1.35 declares appVersion 1.35 but its
        # values.yaml still runs the 1.34 image (`image.tag`; kubernetes/autoscaler moved the default in a later
        # chart, commit 3dd933cf64). model/versions.py names both.
        "image": {"tag": f"v{app}"},
        "cloudProvider": "aws",
        "awsRegion": region,
        "autoDiscovery": {"clusterName": cluster, "tags": discovery_keys(cluster)},
        # ProvisioningRequest support needs these flags and RBAC on provisioningrequests(/status) and podtemplates
        # (cluster-autoscaler FAQ, "Enabling ProvisioningRequest Support"). The chart's ClusterRole has neither.
        "rbac": {
            "serviceAccount": {"name": SERVICE_ACCOUNT},
            "additionalRules": [
                {
                    "apiGroups": [PROVISIONING_REQUEST_API_GROUP],
                    "resources": ["provisioningrequests", "provisioningrequests/status"],
                    "verbs": ["watch", "list", "get", "create", "update", "patch", "delete"],
                },
                {"apiGroups": [""], "resources": ["podtemplates"], "verbs": ["watch", "list", "get"]},
            ],
        },
        "extraArgs": {
            "enable-provisioning-requests": "true",
            "kube-api-content-type": "application/json",
            "scale-down-unneeded-time": SCALE_DOWN_UNNEEDED,
            # Training pods use emptyDir scratch; by default such pods pin their node forever.
            "skip-nodes-with-local-storage": "false",
            "expander": "least-waste",
            # A node template is built from a live node of the group; its taints stay in the template unless
            # sanitized (utils/taints/taints.go SanitizeTaints: only the autoscaler's own, startup and status
            # taints). A quarantined node as template would make the group look unable to run any pod and stop
            # its scale-up. A status taint is stripped from templates and does not mark the node unready
            # (--status-taint, cluster-autoscaler FAQ "What are the parameters to CA?" at the pinned tag, versions.CLUSTER_AUTOSCALER_APP).
            "status-taint": QUARANTINE_KEY,
        },
        "nodeSelector": {ROLE_LABEL: "system"},
        # Requests, limits and the non-root user of the AWS example manifest
        # (cluster-autoscaler/cloudprovider/aws/examples/cluster-autoscaler-autodiscover.yaml); the rest of the
        # hardening is what the chart's values.yaml suggests in its comments at the pinned chart. The image is
        # distroless and writes nothing to its root file system.
        # No CPU limit: a throttled autoscaler opens a burst window late (CKV_K8S_11 registered with why).
        "resources": {"requests": {"cpu": "100m", "memory": "600Mi"}, "limits": {"memory": "600Mi"}},
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65534,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containerSecurityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
        },
    }


@dataclass(frozen=True)
class ClusterAutoscalerArgs:
    spec: EstateSpec
    site: AwsSite
    tags: Tags
    cluster_name: str
    k8s_provider: k8s.Provider
    # The cluster and every node group: an `up` moves the autoscaler (its minor matches the control plane's) last.
    depends_on: list[pulumi.Resource]


class ClusterAutoscaler(pulumi.ComponentResource):
    """Creates the autoscaler's IAM role and Pod Identity association, the ProvisioningRequest CRD (from the
    autoscaler repository at the pinned tag) and the cluster-autoscaler release (pinned chart)."""

    crd: pulumi.Resource

    def __init__(self, name: str, args: ClusterAutoscalerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:ClusterAutoscaler", name, None, opts)
        a, aws_tags = args, args.tags.aws()
        role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=iam.assume_role_policy("pods.eks.amazonaws.com", tag_session=True),
            description=f"cluster-autoscaler of {a.cluster_name} (EKS Pod Identity)",
            tags=aws_tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        policy = aws.iam.RolePolicy(
            f"{name}-policy", role=role.id, policy=iam_policy(a.cluster_name), opts=pulumi.ResourceOptions(parent=self)
        )
        identity = aws.eks.PodIdentityAssociation(
            f"{name}-identity",
            cluster_name=a.cluster_name,
            namespace=NAMESPACE,
            service_account=SERVICE_ACCOUNT,
            role_arn=role.arn,
            tags=aws_tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=a.depends_on),
        )
        on_cluster = pulumi.ResourceOptions(parent=self, provider=a.k8s_provider, depends_on=a.depends_on)
        # The chart does not ship the ProvisioningRequest CRD. Kueue enables its ProvisioningRequest admission check
        # only if that CRD exists when Kueue starts (kueue cmd/kueue/main.go, ServerSupportsProvisioningRequest).
        # So the site's Kueue waits for `crd` and restarts when it first appears (a pod annotation in its values).
        self.crd = k8s.yaml.v2.ConfigFile(
            f"{name}-provisioning-request-crd", file=versions.PROVISIONING_REQUEST_CRD_URL, opts=on_cluster
        )
        pinned = versions.eks_minor(a.site.cluster.version)
        assert pinned is not None, "the schema refuses an EKS minor gpufleet does not pin"
        self.release = helm.release(
            f"{name}-release",
            pinned.cluster_autoscaler,
            name="cluster-autoscaler",
            namespace=NAMESPACE,
            values=chart_values(a.cluster_name, a.site.region, pinned.cluster_autoscaler_app),
            opts=pulumi.ResourceOptions.merge(
                on_cluster, pulumi.ResourceOptions(depends_on=[identity, policy, self.crd])
            ),
        )
        self.register_outputs({})
