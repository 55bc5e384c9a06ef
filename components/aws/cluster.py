"""EksClusterStack: the site's EKS cluster (created or adopted), its KMS key, IAM roles, access entries,
control-plane logs, the API security group, add-ons and the CPU system node group; hands out a kubeconfig."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.aws import iam
from components.aws.launch import (
    launch_template_args,
    mounts_lustre,
    nodeadm_user_data,
    template_version,
    update_config,
)
from model import clock
from model.cni import VPC_CNI_NETWORK_POLICY
from model.conventions import ROLE_LABEL
from model.kinds.aws import cluster_name, kubeconfig
from model.nodes import SYSTEM_POOL_DESIRED, SYSTEM_POOL_MAX, SYSTEM_POOL_MIN, SYSTEM_ROOT_VOLUME_GIB
from model.reach import private_api_sources
from model.spec import AwsSite, EstateSpec
from model.tags import Tags
from model.versions import EksMinor, eks_minor, support_warning

SYSTEM_AMI_TYPE = "AL2023_x86_64_STANDARD"
LOG_RETENTION_DAYS = 90
# The agent reads XIDs only through DCGM, from the add-on's dcgm-server DaemonSet (nv-hostengine on localhost:5555);
# without it the agent sets DCGMError on AcceleratedHardwareReady. That DaemonSet tolerates nothing by default
# (dcgmAgent.tolerations: [] in charts/eks-node-monitoring-agent/values.yaml of aws/eks-node-monitoring-agent at
# v1.7.0), so it never ran on GPU nodes (nvidia.com/gpu, tenant and quarantine taints). Tolerate every taint, as
# the node agent itself does (nodeAgent.tolerations; both keys in charts/configuration.schema.json since v1.6.0).
# The GPU Operator's dcgm-exporter runs its embedded host engine here (its standalone `dcgm` stays off), which
# binds no host port, so the two coexist.
NODE_MONITORING_AGENT_VALUES = {"dcgmAgent": {"tolerations": [{"operator": "Exists"}]}}
ADDON_VALUES = {"vpc-cni": VPC_CNI_NETWORK_POLICY, "eks-node-monitoring-agent": NODE_MONITORING_AGENT_VALUES}
# Add-ons that need running nodes to become ACTIVE (a Deployment): created after the system node group. The rest
# (DaemonSets and the CNI) come before every node group, so nodes join with them.
AFTER_NODES = frozenset({"coredns"})


@dataclass(frozen=True)
class EksClusterArgs:
    spec: EstateSpec
    site: AwsSite
    tags: Tags
    vpc_id: pulumi.Input[str]
    subnet_ids: list[pulumi.Output[str]]


class EksClusterStack(pulumi.ComponentResource):
    """Creates (or, with `cluster.adopt_name`, reads) the EKS cluster: private endpoint (public only to the
    spec's CIDRs) behind an API security group admitting 443 from the on-prem ranges and an in-VPC deployer,
    secrets encrypted with the site KMS key (rotating, protected), all five control-plane log types into a log
    group encrypted with that key, IAM roles for the control plane and the nodes, API-mode access entries with
    cluster-admin for the spec's admin roles, the add-ons (vpc-cni with NetworkPolicy enforced, kube-proxy and
    CoreDNS at the builds pinned for the minor, the node add-ons) and a CPU system node group at the minor's AMI
    release. The site key also encrypts node root volumes. An adopted cluster gets none of the
    add-ons, security group rules or system nodes: it is someone else's."""

    name: str
    kubeconfig: pulumi.Output[str]
    cluster_security_group_id: pulumi.Output[str]
    node_role_arn: pulumi.Output[str]
    key_arn: pulumi.Output[str]
    system_nodes: aws.eks.NodeGroup | None  # what in-cluster releases schedule on (None: an adopted cluster)
    version: pulumi.Output[str]  # the control plane's minor as the cluster resource reports it

    def __init__(self, name: str, args: EksClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:EksCluster", name, None, opts)
        self._n = name
        self._args = args
        site = args.site
        self.name = cluster_name(args.tags, site)
        node_role = self._node_role()
        self.node_role_arn = node_role.arn
        self.key = self._key(node_role)
        self.key_arn = self.key.arn
        cluster = self._adopted() if site.cluster.adopt_name else self._created()
        # An adopted cluster's read always reports its minor (EKS API_Cluster.html `version`); offline synth
        # answers a read with no outputs, so the stack file's pin stands in for it there.
        pin = site.cluster.version
        self.version = pulumi.Output.from_input(cluster.version).apply(lambda v: v or pin)
        if not site.cluster.adopt_name:
            warning = support_warning(self.name, site.cluster.version, site.cluster.support_type, clock.now().date())
            if warning:
                pulumi.log.warn(warning, resource=self)
        self.cluster_security_group_id = cluster.vpc_config.apply(
            lambda c: c.cluster_security_group_id if c is not None else None  # type: ignore[arg-type,return-value]
        )
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster.endpoint, cluster.certificate_authority).apply(
                lambda v: kubeconfig(self.name, v[0], v[1].data if v[1] is not None else None, site.region)
            )
        )
        self.system_nodes = None
        if not site.cluster.adopt_name:
            before = self._addons_before_nodes(cluster)
            self.system_nodes = self._system_node_group(cluster, before)
            self._addons_after_nodes(cluster, self.system_nodes)
        self.register_outputs({"name": self.name, "kubeconfig": self.kubeconfig})

    def _opts(self, **kw: object) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, **kw)  # type: ignore[arg-type]

    # -- identity and keys ---------------------------------------------------------------------------
    def _node_role(self) -> aws.iam.Role:
        region = self._args.site.region
        role = aws.iam.Role(
            f"{self._n}-node",
            assume_role_policy=iam.assume_role_policy("ec2.amazonaws.com"),
            description=f"EKS nodes of {self.name}",
            tags=self._args.tags.aws(),
            opts=self._opts(),
        )
        for policy in (
            "AmazonEKSWorkerNodePolicy",
            "AmazonEKS_CNI_Policy",
            "AmazonEC2ContainerRegistryPullOnly",
            "AmazonSSMManagedInstanceCore",  # Session Manager instead of SSH
        ):
            aws.iam.RolePolicyAttachment(
                f"{self._n}-node-{policy}",
                role=role.name,
                policy_arn=iam.managed_policy(region, policy),
                opts=self._opts(),
            )
        return role

    def _key(self, node_role: aws.iam.Role) -> aws.kms.Key:
        region, name = self._args.site.region, self.name
        return aws.kms.Key(
            f"{self._n}-key",
            description=f"{self.name}: EKS secrets envelope encryption, node root volumes, control-plane logs",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            policy=node_role.arn.apply(lambda arn: iam.site_key_policy(region, iam.account_of(arn), name)),
            tags=self._args.tags.aws(),
            # Protected: deleting it makes the cluster's secrets and every node volume unreadable.
            opts=self._opts(protect=True),
        )

    # -- the cluster -----------------------------------------------------------------------------------
    def _adopted(self) -> aws.eks.Cluster:
        # A read of existing state by id: no invoke, so offline synth needs no answer for it.
        return aws.eks.Cluster.get(f"{self._n}-eks", id=self.name, opts=self._opts())

    def _created(self) -> aws.eks.Cluster:
        site, tags = self._args.site, self._args.tags
        role = aws.iam.Role(
            f"{self._n}-control-plane",
            assume_role_policy=iam.assume_role_policy("eks.amazonaws.com", tag_session=True),
            description=f"EKS control plane of {self.name}",
            tags=tags.aws(),
            opts=self._opts(),
        )
        attachment = aws.iam.RolePolicyAttachment(
            f"{self._n}-control-plane",
            role=role.name,
            policy_arn=iam.managed_policy(site.region, "AmazonEKSClusterPolicy"),
            opts=self._opts(),
        )
        # EKS writes control-plane logs here; created first so retention, encryption and tags are ours.
        logs = aws.cloudwatch.LogGroup(
            f"{self._n}-logs",
            name=iam.control_plane_log_group(self.name),
            retention_in_days=LOG_RETENTION_DAYS,
            kms_key_id=self.key_arn,
            tags=tags.aws(),
            opts=self._opts(depends_on=[self.key]),  # the key policy admits CloudWatch Logs for this group
        )
        api = self._api_security_group()
        public = site.cluster.endpoint_public_cidrs
        cluster = aws.eks.Cluster(
            f"{self._n}-eks",
            name=self.name,
            version=site.cluster.version,
            role_arn=role.arn,
            vpc_config=aws.eks.ClusterVpcConfigArgs(
                subnet_ids=self._args.subnet_ids,
                security_group_ids=[api.id],
                endpoint_private_access=True,
                endpoint_public_access=bool(public),
                public_access_cidrs=list(public) if public else None,
            ),
            encryption_config=aws.eks.ClusterEncryptionConfigArgs(
                resources=["secrets"], provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=self.key_arn)
            ),
            enabled_cluster_log_types=iam.CONTROL_PLANE_LOG_TYPES,
            access_config=aws.eks.ClusterAccessConfigArgs(
                authentication_mode="API",
                # The deployer keeps admin so that the Kubernetes provider (its `aws eks get-token`) can apply.
                bootstrap_cluster_creator_admin_permissions=True,
            ),
            upgrade_policy=aws.eks.ClusterUpgradePolicyArgs(support_type=site.cluster.support_type),
            tags=tags.aws(),
            opts=self._opts(depends_on=[attachment, logs]),
        )
        for arn in site.cluster.admin_role_arns:
            label = arn.rsplit("/", 1)[-1]
            entry = aws.eks.AccessEntry(
                f"{self._n}-admin-{label}",
                cluster_name=cluster.name,
                principal_arn=arn,
                type="STANDARD",
                tags=tags.aws(),
                opts=self._opts(),
            )
            aws.eks.AccessPolicyAssociation(
                f"{self._n}-admin-{label}",
                cluster_name=cluster.name,
                principal_arn=arn,
                policy_arn=iam.EKS_CLUSTER_ADMIN_POLICY,
                access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                opts=self._opts(depends_on=[entry]),
            )
        return cluster

    def _api_security_group(self) -> aws.ec2.SecurityGroup:
        """An extra security group on the control plane's network interfaces (EKS `securityGroupIds`), admitting 443
        from the connected on-prem ranges and an in-VPC deployer (`reach.private_api_sources`): the EKS user guide
        (cluster-endpoint, private access) asks for exactly that. Always attached, so sources come and go as rules
        without touching the cluster; not the cluster security group, which the nodes carry too."""
        site, tags = self._args.site, self._args.tags
        sg = aws.ec2.SecurityGroup(
            f"{self._n}-api",
            vpc_id=self._args.vpc_id,
            description=f"{self.name}: Kubernetes API (443) from connected networks and the deployer",
            tags=tags.aws(Name=f"{self._n}-api"),
            opts=self._opts(),
        )
        for cidr in private_api_sources(self._args.spec, site):
            aws.vpc.SecurityGroupIngressRule(
                f"{self._n}-api-{cidr.replace('/', '-')}",
                security_group_id=sg.id,
                ip_protocol="tcp",
                from_port=443,
                to_port=443,
                cidr_ipv4=cidr if ":" not in cidr else None,
                cidr_ipv6=cidr if ":" in cidr else None,
                description="Kubernetes API over a private path",
                tags=tags.aws(),
                opts=self._opts(),
            )
        return sg

    @property
    def pins(self) -> EksMinor:
        pinned = eks_minor(self._args.site.cluster.version)
        assert pinned is not None, "the schema refuses a minor gpufleet pins nothing for"
        return pinned

    def _addon(self, cluster: aws.eks.Cluster, addon: str, version: str, after: list[pulumi.Resource]) -> aws.eks.Addon:
        vpc_cni = addon == "vpc-cni"
        return aws.eks.Addon(
            f"{self._n}-{addon}",
            cluster_name=self.name,
            addon_name=addon,
            addon_version=version,
            configuration_values=json.dumps(ADDON_VALUES[addon]) if addon in ADDON_VALUES else None,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE" if vpc_cni else "PRESERVE",
            tags=self._args.tags.aws(),
            opts=self._opts(depends_on=[cluster, *after]),
        )

    def _addons_before_nodes(self, cluster: aws.eks.Cluster) -> list[aws.eks.Addon]:
        """The add-ons nodes join with, after the control plane: vpc-cni with NetworkPolicy enforcement on (without
        it EKS accepts NetworkPolicies and enforces none: EKS user guide, cni-network-policy-configure), kube-proxy,
        then the pod identity and node monitoring agents. Each takes over the self-managed copy EKS bootstraps. All
        at the builds pinned for the minor, so a minor bump moves them right after the control plane (EKS user
        guide, update-cluster: update the add-ons after the control plane)."""
        return [self._addon(cluster, a, v, []) for a, v in self.pins.addons if a not in AFTER_NODES]

    def _addons_after_nodes(self, cluster: aws.eks.Cluster, system_nodes: aws.eks.NodeGroup) -> None:
        """CoreDNS as an EKS add-on at the build pinned for the minor, once the system nodes exist to run it."""
        for addon, version in self.pins.addons:
            if addon in AFTER_NODES:
                self._addon(cluster, addon, version, [system_nodes])

    def _system_node_group(self, cluster: aws.eks.Cluster, addons: list[aws.eks.Addon]) -> aws.eks.NodeGroup:
        site, tags = self._args.site, self._args.tags
        lt = aws.ec2.LaunchTemplate(
            f"{self._n}-system",
            **launch_template_args(
                instance_type=site.system_instance_type,
                hop_limit=1,
                root_volume_gib=SYSTEM_ROOT_VOLUME_GIB,
                key_arn=self.key_arn,
                tags=tags.aws(),
                description=f"{self.name}: CPU system nodes",
                # The Lustre tier's tenant-directory Job runs here.
                user_data=nodeadm_user_data(None, local_storage=False, lustre_client=mounts_lustre(site)),
            ),
            opts=self._opts(),
        )
        return aws.eks.NodeGroup(
            f"{self._n}-system",
            cluster_name=self.name,
            node_role_arn=self.node_role_arn,
            subnet_ids=self._args.subnet_ids,
            ami_type=SYSTEM_AMI_TYPE,
            version=site.cluster.version,
            capacity_type="ON_DEMAND",
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=SYSTEM_POOL_MIN, desired_size=SYSTEM_POOL_DESIRED, max_size=SYSTEM_POOL_MAX
            ),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=lt.id, version=lt.latest_version.apply(template_version)
            ),
            labels={**tags.labels(), ROLE_LABEL: "system"},
            update_config=update_config(),
            node_repair_config=aws.eks.NodeGroupNodeRepairConfigArgs(enabled=True),
            tags=tags.aws(),
            opts=self._opts(depends_on=[cluster, *addons]),
        )
