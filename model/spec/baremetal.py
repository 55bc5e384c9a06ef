"""The bare-metal side of the schema: inventory pools and their amortised cost, InfiniBand / RoCE fabrics,
NFS / parallel-fs / on-prem S3 tiers, servers, SSH access and how servers join the cluster."""

from __future__ import annotations

import base64
import binascii
import re
import struct
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from model import catalog
from model.spec.base import Model, Name
from model.spec.health import BaremetalHealth
from model.spec.host import (
    AwsRegionCode,
    Bastion,
    DriverVersion,
    EksClusterName,
    HcaPort,
    InterfaceName,
    LabelValue,
    NfsExportPath,
    NvmeDevice,
    UnixUser,
)
from model.spec.net import MAX_USD, CidrRange, HostAddress, HostPort, HttpsUrl
from model.spec.pools import PoolBase

# Address pools of IPoIB / RoCE networks (nv-ipam hands each node a block of them): IPv4, /8 to /28.
FABRIC = CidrRange(8, 28, ipv4_only=True)
# Addresses nv-ipam gives each node of a fabric unless the fabric says otherwise: more than kubelet's default
# maxPods (110; kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1, maxPods), so a node runs out of
# pods before it runs out of fabric addresses.
NODE_ADDRESS_BLOCK = 256
NODE_ADDRESSES_HELP = (
    "Addresses nv-ipam gives each node from the fabric's range (its IPPool's perNodeBlockSize). Fixed, so a node "
    "keeps its block as the fabric grows; the range must hold one block per server on the fabric."
)
# A storage server's range as a NetworkPolicy ipBlock names it: never everything (/0).
POLICY_PEER = CidrRange(1, 128)


class OnPremCost(Model):
    """Amortised cost of owned GPU servers, so on-prem and cloud are priced side by side."""

    server_price_usd: float = Field(gt=0, le=MAX_USD, description="Purchase price of one server, all-in.")
    lifetime_years: float = Field(default=4, gt=0, le=10, description="Depreciation period.")
    power_kw: float = Field(
        default=10.0, ge=0, le=1000, description="Average power draw of one server in kW, incl. cooling."
    )
    usd_per_kwh: float = Field(default=0.12, ge=0, le=100, description="Electricity price.")
    ops_usd_per_server_month: float = Field(
        default=500.0, ge=0, le=MAX_USD, description="Operations: space, support contracts, staff share."
    )


class OnPremCostOverride(Model):
    """A pool's own amortisation inputs: each field set here replaces the site's; each unset field is the site's
    `cost` value (and OnPremCost's default where the site sets none). `gpufleet cost` names every defaulted one."""

    server_price_usd: float | None = Field(default=None, gt=0, description="Purchase price of one server, all-in.")
    lifetime_years: float | None = Field(default=None, gt=0, le=10, description="Depreciation period.")
    power_kw: float | None = Field(default=None, ge=0, description="Average power draw of one server in kW.")
    usd_per_kwh: float | None = Field(default=None, ge=0, description="Electricity price.")
    ops_usd_per_server_month: float | None = Field(default=None, ge=0, description="Operations per server-month.")


class BaremetalNodePool(PoolBase):
    """A group of inventory servers selected by their labels."""

    selector: dict[str, str] = Field(
        min_length=1, description="Inventory labels a server must carry to belong to this pool."
    )
    health: BaremetalHealth = Field(
        default_factory=BaremetalHealth, description="What watches the nodes and the one remediator that repairs them."
    )
    cost: OnPremCostOverride | None = Field(
        default=None,
        description="Amortisation inputs of this pool; each unset field is the site's `cost` value (else the default).",
    )
    nvlink_domain_nodes: int = Field(
        default=1,
        ge=1,
        description=(
            "Servers per NVLink domain (a GB200 NVL72 rack: 18), for GPUs whose NVLink domain spans servers. Above "
            "1, the pool is rack-scale: NVIDIA's DRA driver gives its gangs IMEX channels through ComputeDomains "
            "(docs/rack-scale.md), and its Kueue Topology gets the NVLink clique level (nvidia.com/gpu.clique) "
            "under the rack."
        ),
    )


class Ufm(Model):
    """The NVIDIA UFM that manages an InfiniBand fabric's subnet. ib-kubernetes adds each pod's GUID to its tenant's
    partition through UFM's REST API over HTTPS (Mellanox/ib-kubernetes at network-operator-v26.4.0,
    pkg/sm/plugins/ufm/ufm.go: UFM_ADDRESS, UFM_PORT, UFM_USERNAME, UFM_PASSWORD, UFM_CERTIFICATE)."""

    address: HostAddress = Field(description="UFM's host name or IP address, reached from the cluster's nodes.")
    port: int | None = Field(default=None, ge=1, le=65535, description="UFM's REST API port (443 if unset).")
    username_config: str = Field(description="Config key holding the UFM user name (a Pulumi secret).")
    password_config: str = Field(description="Config key holding the UFM password (a Pulumi secret).")
    ca_certificate_config: str | None = Field(
        default=None,
        description=(
            "Config key holding the PEM certificate that signed UFM's TLS certificate (a Pulumi secret; for a "
            "self-signed UFM, its own certificate). Required unless insecure_skip_tls_verify is set."
        ),
    )
    insecure_skip_tls_verify: bool = Field(
        default=False,
        description=(
            "Talk to UFM without checking its certificate. ib-kubernetes then sends the UFM password to whoever "
            "answers at the address (pkg/drivers/http/client.go: InsecureSkipVerify without a certificate)."
        ),
    )

    @model_validator(mode="after")
    def _verified(self) -> Ufm:
        if self.ca_certificate_config is None and not self.insecure_skip_tls_verify:
            raise ValueError(
                "ufm needs ca_certificate_config, the config key of the PEM certificate that signed UFM's TLS "
                "certificate (ib-kubernetes sends the UFM password to it); to connect unchecked set "
                "insecure_skip_tls_verify: true"
            )
        return self


class InfinibandFabric(Model):
    """InfiniBand through the NVIDIA Network Operator."""

    kind: Literal["infiniband"]
    name: Name
    device_plugin: Literal["rdma-shared", "sriov"] = Field(
        default="rdma-shared", description="RDMA shared device plugin or SR-IOV VFs per pod."
    )
    ipoib: bool = Field(default=True, description="Create IPoIB secondary networks.")
    ipoib_cidr: Annotated[str, FABRIC] = Field(
        default="192.168.64.0/18", description="IP range handed out on IPoIB networks."
    )
    partition_keys: dict[Name, str] = Field(
        default_factory=dict,
        description=(
            "Per-tenant InfiniBand partition keys (`0x0001` ...) for isolation. ib-kubernetes puts each pod in its "
            "tenant's partition through the fabric's `ufm`, which they need."
        ),
    )
    ufm: Ufm | None = Field(
        default=None, description="The UFM that manages the fabric's partitions; required with partition_keys."
    )
    hca_device_ids: list[str] = Field(
        default_factory=lambda: ["101b", "1021"], description="PCI device ids of the HCAs (ConnectX-6/7)."
    )
    ipoib_interface: InterfaceName | None = Field(
        default=None,
        description=(
            "Host IPoIB interface the IPoIB networks create child links from, named alike on every server of the "
            "fabric; required with ipoib. Names follow the PCI slot: DGX H100 has ibp24s0 (mlx5_0), ibp64s0, ... "
            "and no ib0. `ip -br link show type ipoib` on a server lists them; the preflight checks it exists."
        ),
    )
    vfs_per_port: int = Field(
        default=8, ge=1, le=127, description="SR-IOV virtual functions per HCA port (device_plugin sriov)."
    )
    addresses_per_node: int = Field(default=NODE_ADDRESS_BLOCK, ge=1, le=1 << 24, description=NODE_ADDRESSES_HELP)

    @property
    def address_range(self) -> str:
        """The range every network on the fabric takes its addresses from (the fabric's nv-ipam IPPool)."""
        return self.ipoib_cidr

    @field_validator("partition_keys")
    @classmethod
    def _pkeys(cls, v: dict[str, str]) -> dict[str, str]:
        for tenant, pkey in v.items():
            if not re.fullmatch(r"0x[0-9a-fA-F]{1,4}", pkey) or int(pkey, 16) in (0, 0x7FFF, 0xFFFF):
                raise ValueError(
                    f"partition key {pkey!r} of tenant {tenant} must be a hex pkey 0x0001..0x7ffe "
                    "(0x7fff/0xffff is the default partition every port is in)"
                )
        return v

    @model_validator(mode="after")
    def _pkeys_need_sriov(self) -> InfinibandFabric:
        if self.partition_keys and self.device_plugin != "sriov":
            raise ValueError(
                "partition_keys need device_plugin: sriov (a partition isolates SR-IOV virtual functions through "
                "ib-kubernetes; with rdma-shared every pod shares the HCA in the default partition)"
            )
        # ib-sriov-cni with ibKubernetesEnabled waits for ib-kubernetes to put the pod's GUID in the partition, and
        # ib-kubernetes does that only through UFM: without one, no pod on a partitioned network starts.
        if self.partition_keys and self.ufm is None:
            raise ValueError(
                "partition_keys need ufm, the UFM that manages this fabric's partitions: ib-kubernetes adds each "
                "pod to its tenant's partition through it; write `ufm: {address: <UFM host>, username_config: "
                "<key>, password_config: <key>, ca_certificate_config: <key>}` with those keys set as secrets"
            )
        if self.ufm is not None and not self.partition_keys:
            raise ValueError("ufm is used only to manage partition_keys; remove it or give tenants partition keys")
        return self


class RoceFabric(Model):
    """RoCE through SR-IOV networks and network attachment definitions."""

    kind: Literal["roce"]
    name: Name
    interfaces: list[InterfaceName] = Field(
        min_length=1, description="Host interface names carrying RoCE (e.g. `ens1f0np0`)."
    )
    cidr: Annotated[str, FABRIC] = Field(default="192.168.128.0/18", description="IP range on the RoCE networks.")
    vfs_per_interface: int = Field(default=8, ge=1, le=127, description="SR-IOV virtual functions per interface.")
    addresses_per_node: int = Field(default=NODE_ADDRESS_BLOCK, ge=1, le=1 << 24, description=NODE_ADDRESSES_HELP)

    @property
    def address_range(self) -> str:
        """The range every network on the fabric takes its addresses from (the fabric's nv-ipam IPPool)."""
        return self.cidr


class NfsTier(Model):
    """An existing NFS export through the NFS CSI driver (shared-warm)."""

    kind: Literal["nfs"]
    name: Name
    server: HostAddress = Field(description="NFS server address (IP address or host name).")
    path: NfsExportPath = Field(description="Exported path on the server, absolute and normalized.")
    cidr: Annotated[str, POLICY_PEER] | None = Field(
        default=None,
        description="Network range of the server, for tenant NetworkPolicies (needed when server is a host name).",
    )


class ParallelFsTier(Model):
    """An existing parallel file system (Lustre, GPFS, WEKA, ...) through its CSI driver (shared-hot)."""

    kind: Literal["parallel-fs"]
    name: Name
    csi_driver: str = Field(description="CSI driver name, e.g. `lustre.csi.k8s.io`.")
    parameters: dict[str, str] = Field(default_factory=dict, description="StorageClass parameters.")
    throughput_gbps: float = Field(gt=0, le=1_000_000, description="Aggregate throughput the file system delivers.")


class OnPremS3Tier(Model):
    """An on-prem S3 endpoint (MinIO, Ceph RGW, ...) as the object tier; credentials are Pulumi secrets."""

    kind: Literal["s3-onprem"]
    name: Name
    endpoint: HttpsUrl = Field(description="HTTPS endpoint (a port, if any, in 1..65535).")
    cidr: Annotated[str, POLICY_PEER] | None = Field(
        default=None,
        description="Network range of the endpoint, for tenant NetworkPolicies (needed when it is a host name).",
    )
    access_key_config: str = Field(description="Config key holding the access key id (a Pulumi secret).")
    secret_key_config: str = Field(description="Config key holding the secret access key (a Pulumi secret).")


# Host key types gpufleet accepts. pulumi-command (provider/pkg/provider/remote/connection.go at v1.2.1) parses
# `host_key` with ssh.ParseAuthorizedKey and offers only that key's own type as the host key algorithm, which for
# an RSA key is `ssh-rsa` (RSA/SHA-1 signatures), disabled by default since OpenSSH 8.8: RSA host keys are refused.
HOST_KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521")
HOST_KEY_HELP = (
    "an OpenSSH public host key line `<type> <base64> [comment]` (the server's /etc/ssh/ssh_host_ed25519_key.pub, "
    "or `ssh-keyscan -t ed25519 <address>` run over a network you trust)"
)


def ssh_host_key(value: str) -> str:
    """Check an OpenSSH public key line (RFC 4253 section 6.6: the base64 blob starts with its own type name)."""
    parts = value.split()
    if len(parts) < 2:
        raise ValueError(f"expected {HOST_KEY_HELP}")
    kind, blob = parts[0], parts[1]
    if kind == "ssh-rsa":
        raise ValueError(
            "RSA host keys are not accepted: pulumi-command then negotiates only the SHA-1 `ssh-rsa` signature, "
            f"which OpenSSH 8.8 and later refuse; use the server's ed25519 or ECDSA key ({', '.join(HOST_KEY_TYPES)})"
        )
    if kind not in HOST_KEY_TYPES:
        raise ValueError(f"host key type {kind!r} is not one of {', '.join(HOST_KEY_TYPES)}")
    try:
        raw = base64.b64decode(blob, validate=True)
        (length,) = struct.unpack(">I", raw[:4])
        named = raw[4 : 4 + length].decode()
    except (binascii.Error, struct.error, UnicodeDecodeError) as err:
        raise ValueError(f"the key after {kind} is not valid base64 key data ({err})") from err
    if named != kind or len(raw) <= 4 + length:
        raise ValueError(f"the key data does not hold a {kind} key (it names {named!r}); expected {HOST_KEY_HELP}")
    return value


class Server(Model):
    """One racked GPU server of a bare-metal inventory."""

    hostname: Name
    address: HostAddress = Field(description="Management IP address or DNS name reached over SSH.")
    gpu_model: str = Field(description="GPU model id from the catalog, e.g. `H100-80GB`.")
    gpu_count: int = Field(ge=1, le=16, strict=True)
    ib_ports: list[HcaPort] = Field(default_factory=list, description="InfiniBand / RoCE ports, e.g. `mlx5_0`.")
    nvme_devices: list[NvmeDevice] = Field(
        default_factory=list, description="NVMe devices for scratch, e.g. `/dev/nvme1n1`."
    )
    rack: LabelValue = Field(min_length=1)
    leaf: LabelValue = Field(min_length=1, description="Leaf switch the server's fabric ports attach to.")
    rail: LabelValue | None = Field(default=None, description="Rail (rail-optimised fabrics).")
    nvlink_domain: LabelValue | None = Field(
        default=None,
        description=(
            "The multi-node NVLink domain the server's GPUs belong to (a GB200 NVL72 rack's, e.g. `rack-a1-nvl`). "
            "Required on servers of a pool with nvlink_domain_nodes above 1."
        ),
    )
    bmc_address: HostAddress | None = None
    labels: dict[str, str] = Field(default_factory=dict, description="Inventory labels pools select on.")
    driver_version: DriverVersion | None = Field(
        default=None,
        description=(
            "NVIDIA driver the preflight expects (nvidia-smi) with kubernetes.driver_managed_by: host; defaults to "
            "the site's kubernetes.driver_version."
        ),
    )
    ib_rate_gbps: int | None = Field(
        default=None, gt=0, description="Link rate every ib_port must report (ibstat `Rate:`); unchecked if unset."
    )
    host_key: str | None = Field(
        default=None,
        description=(
            "The server's SSH host key, checked on every connection (the join token travels over it): "
            + HOST_KEY_HELP
            + ". Required for servers a pool selects unless ssh.insecure_skip_host_key_check is set."
        ),
    )

    @field_validator("host_key")
    @classmethod
    def _host_key(cls, v: str | None) -> str | None:
        return None if v is None else ssh_host_key(v)

    @field_validator("gpu_model")
    @classmethod
    def _known_gpu(cls, v: str) -> str:
        catalog.gpu_model(v)
        return v


class SshAccess(Model):
    """How gpufleet reaches inventory servers."""

    user: UnixUser = Field(default="root")
    private_key_config: str = Field(description="Config key holding the SSH private key (a Pulumi secret).")
    bastion: Bastion | None = Field(default=None, description="Bastion host (user@host) to jump through.")
    bastion_host_key: str | None = Field(
        default=None,
        description="The bastion's SSH host key (" + HOST_KEY_HELP + "); required with a bastion.",
    )
    insecure_skip_host_key_check: bool = Field(
        default=False,
        description=(
            "Connect without checking host keys where the inventory gives none. Anyone who can intercept the "
            "connection can then impersonate a server and take its join token; every `up` warns."
        ),
    )

    @field_validator("bastion_host_key")
    @classmethod
    def _bastion_host_key(cls, v: str | None) -> str | None:
        return None if v is None else ssh_host_key(v)


class Join(Model):
    """How servers join the site's cluster."""

    method: Literal["kubeadm", "eks-hybrid"] = "kubeadm"
    api_server: HostPort = Field(
        description="host:port of the Kubernetes API the nodes join (`[addr]:port` for IPv6; port 1..65535)."
    )
    token: Literal["minted", "config"] | None = Field(
        default=None,
        description=(
            "kubeadm: `minted` (the default) mints a bootstrap token valid for an hour just before each server "
            "joins, through the site's kubeconfig, so a server added months later still joins; `config` reads one "
            "from token_config (kubeadm tokens expire after 24 hours by default: renew it before adding servers). "
            "eks-hybrid always reads its SSM activation from config."
        ),
    )
    token_config: str = Field(
        default="joinToken",
        description="Config key holding the kubeadm token (token: config) or the SSM activation code (secret).",
    )
    ca_hash_config: str = Field(default="caCertHash", description="Config key holding the CA cert hash (secret).")
    cluster_name: EksClusterName | None = Field(
        default=None, description="EKS cluster hybrid nodes join (method eks-hybrid)."
    )
    region: AwsRegionCode | None = Field(
        default=None, description="AWS region of that EKS cluster (method eks-hybrid)."
    )
    activation_id_config: str = Field(
        default="ssmActivationId",
        description="Config key holding the SSM hybrid activation id (secret; method eks-hybrid).",
    )

    @model_validator(mode="after")
    def _eks_hybrid(self) -> Join:
        if self.method == "eks-hybrid" and not (self.cluster_name and self.region):
            raise ValueError("method eks-hybrid needs cluster_name and region (the EKS cluster nodeadm joins)")
        if self.method == "eks-hybrid" and self.token == "minted":
            raise ValueError("token: minted is for kubeadm; eks-hybrid joins with an SSM activation from token_config")
        return self

    @property
    def mints_token(self) -> bool:
        """The stack mints a short-lived kubeadm bootstrap token per joining server."""
        return self.method == "kubeadm" and self.token != "config"
