"""The estate schema: the only config contract between stack files and components.

A stack file `stacks/Pulumi.<env>.yaml` carries the estate under the config key `gpufleet:estate`, and an
optional burst window under `gpufleet:burstWindow`. Everything here is pydantic v2 with `extra="forbid"`;
cross-field rules are plain functions in `rules`, each problem with a message that names the field and says
what is allowed. GPU counts, memory and EFA limits come from the catalog, never from the stack file.

Modules by concern and platform: `base` (model base, names, metadata), `pools`, `aws`, `baremetal`, `access`
(deployer, interconnects, AWS account), `sites`, `tenancy`, `burst`, `estate` (EstateSpec) and `rules`. Every public name is importable from here.
"""

from model.spec.access import (
    AwsAccount,
    Deployer,
    ExistingInterconnect,
    Interconnect,
    PrivateInterconnect,
    PublicInterconnect,
    TransitGatewayInterconnect,
    VpnInterconnect,
)
from model.spec.aws import AwsNodePool, EfaFabric, EfsTier, EksCluster, FsxLustreTier, S3Tier, Vpc
from model.spec.baremetal import (
    BaremetalNodePool,
    InfinibandFabric,
    Join,
    NfsTier,
    OnPremCost,
    OnPremCostOverride,
    OnPremS3Tier,
    ParallelFsTier,
    RoceFabric,
    Server,
    SshAccess,
    Ufm,
)
from model.spec.base import (
    DNS1123,
    CapacityType,
    Metadata,
    Model,
    Name,
    NodeTaint,
    Problem,
    Role,
    SpecFieldError,
    SpecProblems,
    SystemNodes,
)
from model.spec.burst import BurstLedgerEntry, BurstPolicy, BurstWindow, KueueManager
from model.spec.estate import EstateSpec, PolicySettings, json_schema
from model.spec.pools import Capacity, PoolBase, Scaling, Sharing
from model.spec.sites import (
    AWS_STORAGE,
    BAREMETAL_STORAGE,
    SHARED_FILE_SYSTEM_KINDS,
    AwsSite,
    BaremetalSite,
    Fabric,
    KubernetesStack,
    Monitoring,
    NetworkPolicyCni,
    NodePool,
    ScratchTier,
    Site,
    SiteBase,
    StorageTier,
)
from model.spec.tenancy import S3Grant, Tenant

__all__ = [
    "AWS_STORAGE",
    "BAREMETAL_STORAGE",
    "DNS1123",
    "SHARED_FILE_SYSTEM_KINDS",
    "AwsAccount",
    "AwsNodePool",
    "AwsSite",
    "BaremetalNodePool",
    "BaremetalSite",
    "BurstLedgerEntry",
    "BurstPolicy",
    "BurstWindow",
    "Capacity",
    "CapacityType",
    "Deployer",
    "EfaFabric",
    "EfsTier",
    "EksCluster",
    "EstateSpec",
    "ExistingInterconnect",
    "Fabric",
    "FsxLustreTier",
    "InfinibandFabric",
    "Interconnect",
    "Join",
    "KubernetesStack",
    "KueueManager",
    "Metadata",
    "Model",
    "Monitoring",
    "Name",
    "NetworkPolicyCni",
    "NfsTier",
    "NodePool",
    "NodeTaint",
    "OnPremCost",
    "OnPremCostOverride",
    "OnPremS3Tier",
    "ParallelFsTier",
    "PolicySettings",
    "PoolBase",
    "PrivateInterconnect",
    "Problem",
    "PublicInterconnect",
    "RoceFabric",
    "Role",
    "S3Grant",
    "S3Tier",
    "Scaling",
    "ScratchTier",
    "Server",
    "Sharing",
    "Site",
    "SiteBase",
    "SpecFieldError",
    "SpecProblems",
    "SshAccess",
    "StorageTier",
    "SystemNodes",
    "Tenant",
    "TransitGatewayInterconnect",
    "Ufm",
    "Vpc",
    "VpnInterconnect",
    "json_schema",
]
