"""Synthetic estates at chosen scales.

`estate(scale)`: one bare-metal site (racks of 8-GPU servers on InfiniBand in pools of up to 32) and one AWS
site (EFA training pools, inference pools), tenants spread over the pools with quotas that fit; calibrated by
`benchmarks.run` to a number of resources.

`fleet(gpus)`: a multi-site hybrid estate of `gpus` GPUs in 8-GPU nodes: a data centre (InfiniBand H100 with MIG
and time-sliced pools, RoCE A100), an AWS training site, an AWS inference site and an AWS burst site whose EFA pools
idle at zero, one tenant per 40 GPUs (every fifth may burst, one in fifty is untrusted on a MIG pool dedicated to
it). Every estate both make passes the schema (`model.load.parse_estate`).
"""

from __future__ import annotations

import base64
import hashlib
import struct
from collections import Counter
from dataclasses import dataclass
from typing import Any

SERVERS_PER_POOL = 32
SERVERS_PER_RACK = 16


@dataclass(frozen=True)
class Scale:
    servers: int
    cloud_pools: int
    tenants: int

    def times(self, factor: float) -> Scale:
        return Scale(
            servers=max(1, round(self.servers * factor)),
            cloud_pools=max(1, round(self.cloud_pools * factor)),
            tenants=max(1, round(self.tenants * factor)),
        )


BASE = Scale(servers=20, cloud_pools=2, tenants=3)


def host_key(hostname: str) -> str:
    """A made-up ed25519 host key line for a synthetic server (RFC 4253 section 6.6 wire form: type name, then 32
    key bytes, here a hash of the host name), in the form the schema checks."""
    key = hashlib.sha256(hostname.encode()).digest()
    blob = struct.pack(">I", 11) + b"ssh-ed25519" + struct.pack(">I", len(key)) + key
    return f"ssh-ed25519 {base64.b64encode(blob).decode()} {hostname}"


def estate(scale: Scale) -> dict[str, Any]:
    """The `config:` mapping of a stack file holding a synthetic estate of `scale`."""
    bm_pools = [f"bm{i}" for i in range((scale.servers + SERVERS_PER_POOL - 1) // SERVERS_PER_POOL)]
    inventory = [
        {
            "hostname": f"gpu-{i:05d}",
            "address": f"10.{(i // 250) % 250}.{i % 250}.10",
            "gpu_model": "H100-80GB",
            "gpu_count": 8,
            "ib_ports": ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"],
            "nvme_devices": ["/dev/nvme1n1", "/dev/nvme2n1"],
            "rack": f"r{i // SERVERS_PER_RACK}",
            "leaf": f"leaf-{i // (SERVERS_PER_RACK * 2)}",
            "rail": str(i % 4),
            "labels": {"pool": bm_pools[i // SERVERS_PER_POOL]},
            "host_key": host_key(f"gpu-{i:05d}"),
        }
        for i in range(scale.servers)
    ]
    cloud_pools: list[dict[str, Any]] = [
        {
            "name": f"cloud{i}",
            "role": "training" if i % 2 == 0 else "inference",
            "instance_type": "p5.48xlarge" if i % 2 == 0 else "g6e.12xlarge",
            **({"fabric": "efa"} if i % 2 == 0 else {}),
            "scaling": {"min": 0, "desired": 1, "max": 4},
        }
        for i in range(scale.cloud_pools)
    ]
    pools = bm_pools + [p["name"] for p in cloud_pools]
    capacity = {p: SERVERS_PER_POOL * 8 for p in bm_pools}
    capacity[bm_pools[-1]] = (scale.servers - SERVERS_PER_POOL * (len(bm_pools) - 1)) * 8
    capacity.update({p["name"]: 4 * (8 if p["instance_type"].startswith("p5") else 4) for p in cloud_pools})
    tenants = []
    for t in range(scale.tenants):
        # Each tenant gets a slice of two pools; slices are small enough that every pool's sum fits.
        mine = {pools[(t * 2 + k) % len(pools)] for k in range(2)}
        share = {p: max(1, capacity[p] // (scale.tenants + 1)) for p in mine}
        tenants.append({"name": f"team{t:03d}", "gpu_quota": share, "members": [f"oidc:team{t:03d}"]})
    return {
        "aws:region": "us-east-1",
        "gpufleet:kubeconfig": {"secure": "v1:bench"},
        "gpufleet:sshPrivateKey": {"secure": "v1:bench"},
        "gpufleet:joinToken": {"secure": "v1:bench"},
        "gpufleet:caCertHash": {"secure": "v1:bench"},
        "gpufleet:estate": {
            "metadata": {"name": "bench", "environment": "bench", "owner": "perf", "cost_center": "cc-0"},
            "deployer": {"network": "dc", "cidrs": ["10.250.0.0/28"]},
            "sites": [
                {
                    "kind": "baremetal",
                    "name": "dc",
                    "ssh": {"user": "gpufleet", "private_key_config": "sshPrivateKey"},
                    "join": {"method": "kubeadm", "api_server": "k8s.dc.example.com:6443"},
                    "kubernetes": {"driver_version": "580.126.20", "network_policy_cni": "calico"},
                    # a block of 256 addresses per server (addresses_per_node) for up to 1023 servers
                    "fabrics": [{"kind": "infiniband", "name": "ib", "ipoib_cidr": "172.16.0.0/14", "ipoib_interface": "ibp24s0"}],
                    "inventory": inventory,
                    "node_pools": [
                        {"name": p, "role": "training", "selector": {"pool": p}, "fabric": "ib"} for p in bm_pools
                    ],
                    "storage": [
                        {"kind": "nfs", "name": "home", "server": "nfs.dc.example.com", "path": "/home"},
                        {"kind": "scratch", "name": "nvme"},
                    ],
                },
                {
                    "kind": "aws",
                    "name": "cloud",
                    "region": "us-east-1",
                    "availability_zones": ["us-east-1a", "us-east-1b"],
                    "interconnect": {"kind": "vpn", "site": "dc", "customer_gateway_ip": "198.51.100.7",
                                     "onprem_cidrs": ["10.128.0.0/9"]},
                    "fabrics": [
                        {"kind": "efa", "name": "efa", "availability_zone": "us-east-1a", "subnet_cidr": "10.0.128.0/20"}
                    ],
                    "node_pools": cloud_pools,
                    "storage": [
                        {"kind": "s3", "name": "objects"},
                        {"kind": "fsx-lustre", "name": "lustre", "fabric": "efa", "capacity_gib": 48000,
                         "throughput_per_tib": 1000},
                    ],
                },
            ],
            "tenants": tenants,
        },
    }  # fmt: skip


FLEET_POOL_SERVERS = 32  # bare-metal servers per training pool
FLEET_POOL_NODES = 16  # max nodes per AWS pool
GPUS_PER_TENANT = 40
MIN_SHARED_UNITS = 16  # GPU units: a shared pool has two nodes at least
SECRETS = ("kubeconfig", "sshPrivateKey", "joinToken", "caCertHash", "managerKubeconfig")
ONPREM = "10.20.0.0/16"  # the data centre's network: servers, the deployer, routed to every AWS site's VPC
MIG = {"mode": "mig", "mig_profile": "1g.10gb"}  # one MIG layout on the site (H100 and A100 80GB fit 7 per GPU)


FABRIC_ADDRESSES = 1 << 18  # a fleet fabric's range: a /14


def _blocks(fabric: dict[str, Any], servers: int) -> dict[str, Any]:
    """A fabric whose /14 holds a block of addresses per server: the default 256 (addresses_per_node) up to 1,023
    servers, then the largest power of two that fits (a larger fleet's fabric)."""
    if servers < FABRIC_ADDRESSES // 256:
        return fabric
    return {**fabric, "addresses_per_node": 1 << ((FABRIC_ADDRESSES // (servers + 1)).bit_length() - 1)}


def _chunks(total: int, size: int) -> list[int]:
    return [min(size, total - i) for i in range(0, total, size)]


def _group(prefix: str, servers: int, special: list[dict[str, Any]]) -> list[tuple[dict[str, Any], int]]:
    """Pools of one server group: the `special` ones first (each with its `servers`), the rest training pools."""
    rest = servers - sum(p["servers"] for p in special)
    pools = [({k: v for k, v in p.items() if k != "servers"}, p["servers"]) for p in special]
    return pools + [
        ({"name": f"{prefix}{i}", "role": "training"}, n) for i, n in enumerate(_chunks(rest, FLEET_POOL_SERVERS))
    ]


def _datacentre(groups: list[tuple[dict[str, Any], str, list[tuple[dict[str, Any], int]]]]) -> dict[str, Any]:
    """The bare-metal site: per group (fabric, GPU model, pools with server counts) racks of 8-GPU servers."""
    inventory: list[dict[str, Any]] = []
    pools: list[dict[str, Any]] = []
    for fabric, model, group in groups:
        for pool, count in group:
            pools.append({**pool, "selector": {"pool": pool["name"]}, "fabric": fabric["name"]})
            for _ in range(count):
                i = len(inventory)
                inventory.append(
                    {
                        "hostname": f"gpu-{i:05d}",
                        "address": f"10.20.{i // 250}.{i % 250 + 1}",
                        "gpu_model": model,
                        "gpu_count": 8,
                        "ib_ports": ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"],
                        "nvme_devices": ["/dev/nvme1n1", "/dev/nvme2n1"],
                        "rack": f"r{i // SERVERS_PER_RACK}",
                        "leaf": f"leaf-{i // (SERVERS_PER_RACK * 2)}",
                        "rail": str(i % 4),
                        "labels": {"pool": pool["name"]},
                        "host_key": host_key(f"gpu-{i:05d}"),
                    }
                )
    return {
        "kind": "baremetal",
        "name": "dc",
        "ssh": {"user": "gpufleet", "private_key_config": "sshPrivateKey"},
        "join": {"method": "kubeadm", "api_server": "k8s.dc.example.com:6443"},
        "kubernetes": {"driver_version": "580.126.20", "network_policy_cni": "calico"},
        "fabrics": [fabric for fabric, _, _ in groups],
        "inventory": inventory,
        "node_pools": pools,
        "storage": [
            {"kind": "nfs", "name": "home", "server": "nfs.dc.example.com", "path": "/home", "cidr": "10.20.250.0/24"},
            {"kind": "scratch", "name": "nvme"},
        ],
    }  # fmt: skip


def _aws_site(name: str, octet: int, azs: list[str], pools: list[dict[str, Any]]) -> dict[str, Any]:
    """An AWS site in its own VPC, connected to the data centre by a VPN; an EFA fabric with FSx for Lustre on it
    when its pools train on EFA."""
    efa = any(p.get("fabric") == f"{name}-efa" for p in pools)
    fabric = {"kind": "efa", "name": f"{name}-efa", "availability_zone": azs[0], "subnet_cidr": f"10.{octet}.128.0/20"}
    lustre = {
        "kind": "fsx-lustre",
        "name": "lustre",
        "fabric": f"{name}-efa",
        "capacity_gib": 48000,
        "throughput_per_tib": 1000,
    }
    return {
        "kind": "aws",
        "name": name,
        "region": "us-east-1",
        "availability_zones": azs,
        "vpc": {"cidr": f"10.{octet}.0.0/16"},
        "interconnect": {"kind": "vpn", "site": "dc", "customer_gateway_ip": "198.51.100.7", "onprem_cidrs": [ONPREM]},
        "fabrics": [fabric] if efa else [],
        "node_pools": pools,
        "storage": [{"kind": "s3", "name": "objects"}, *([lustre] if efa else []), {"kind": "scratch", "name": "nvme"}],
    }  # fmt: skip


def _aws_pools(prefix: str, nodes: int, **pool: Any) -> list[dict[str, Any]]:
    scaling = pool.pop("scaling", {"min": 0})
    return [{"name": f"{prefix}{i}", **pool, "scaling": {**scaling, "max": n}}
            for i, n in enumerate(_chunks(nodes, FLEET_POOL_NODES))]  # fmt: skip


def _units(sites: list[dict[str, Any]]) -> dict[str, int]:
    """Schedulable GPU units of every pool that takes quota (MIG slices and time-sliced replicas count apiece)."""
    servers = Counter(s["labels"]["pool"] for site in sites for s in site.get("inventory", []))
    units = {}
    for site in sites:
        for pool in site["node_pools"]:
            if not pool.get("burst"):
                sharing = pool.get("sharing", {})
                per_gpu = 7 if sharing.get("mode") == "mig" else sharing.get("replicas", 1)
                nodes = pool["scaling"]["max"] if "scaling" in pool else servers[pool["name"]]
                units[pool["name"]] = nodes * 8 * per_gpu
    return units


def fleet(gpus: int) -> dict[str, Any]:
    """The `config:` mapping of a stack file holding a hybrid estate of `gpus` GPUs (a multiple of 8, >= 640).

    60 % of the nodes are owned servers in one data centre (two thirds H100 on InfiniBand with a MIG pool, a
    time-sliced pool and a MIG pool per untrusted tenant; one third A100 on RoCE), 40 % AWS capacity at max size over
    three sites (EFA training pools, inference pools, burst pools idling at zero). One deployer in the data centre
    reaches every AWS site over its VPN (a second data centre could not be reached by it: model.reach).
    """
    if gpus % 8 or gpus < 640:
        raise ValueError(f"gpus must be a multiple of 8 and at least 640 (got {gpus})")
    nodes = gpus // 8
    tenants = [f"team{t:03d}" for t in range(gpus // GPUS_PER_TENANT)]
    untrusted = tenants[1::50]
    h100, a100 = round(nodes * 0.4), round(nodes * 0.2)
    special = [
        {"name": "h100-mig", "role": "inference", "servers": max(2, h100 // 20), "sharing": MIG},
        {"name": "h100-shared", "role": "interactive", "servers": 2, "dedicated_to": tenants[0],
         "sharing": {"mode": "time-slicing", "replicas": 4}},
    ] + [{"name": f"mig-{t}", "role": "inference", "servers": 2, "dedicated_to": t, "sharing": MIG} for t in untrusted]  # fmt: skip
    cloud = nodes - h100 - a100
    train, serve = round(cloud * 0.35), round(cloud * 0.25)
    sites = [
        _datacentre([
            (_blocks({"kind": "infiniband", "name": "ib", "ipoib_cidr": "172.16.0.0/14", "ipoib_interface": "ibp24s0"},
                     h100), "H100-80GB", _group("h100-train", h100, special)),
            (_blocks({"kind": "roce", "name": "roce", "interfaces": ["ens1f0np0"], "cidr": "172.20.0.0/14"}, a100),
             "A100-80GB", _group("a100-train", a100, [])),
        ]),
        _aws_site("train", 50, ["us-east-1a", "us-east-1b"], _aws_pools(
            "p5-train", train, role="training", instance_type="p5.48xlarge", fabric="train-efa",
            scaling={"min": 0, "desired": 1})),
        _aws_site("serve", 51, ["us-east-1b", "us-east-1c"], _aws_pools(
            "g6e-serve", serve, role="inference", instance_type="g6e.48xlarge", availability_zone="us-east-1c",
            scaling={"min": 1})),
        _aws_site("burst", 52, ["us-east-1c", "us-east-1d"], _aws_pools(
            "p5-burst", cloud - train - serve, role="training", instance_type="p5.48xlarge", fabric="burst-efa",
            burst=True)),
    ]  # fmt: skip
    units = _units(sites)
    dedicated = {p["dedicated_to"]: p["name"] for s in sites for p in s["node_pools"] if "dedicated_to" in p}
    # A one-node remainder pool is no tenant's: on a large fleet a dozen tenants' quotas of 1 GPU would not fit it.
    shared = [p for p in units if p not in dedicated.values() and units[p] >= MIN_SHARED_UNITS]
    mine = {
        t: [dedicated[t]] if t in untrusted else [shared[(2 * i + k) % len(shared)] for k in range(2)]
        for i, t in enumerate(tenants)
    }
    mine[tenants[0]].append(dedicated[tenants[0]])
    users = Counter(p for pools in mine.values() for p in pools)
    return {
        "aws:region": "us-east-1",
        **{f"gpufleet:{key}": {"secure": "v1:bench"} for key in SECRETS},
        "gpufleet:estate": {
            "metadata": {"name": "fleet", "environment": "bench", "owner": "perf", "cost_center": "cc-0"},
            "deployer": {"network": "dc", "cidrs": ["10.20.251.0/28"]},
            "sites": sites,
            "tenants": [
                {
                    "name": t,
                    "gpu_quota": {p: max(1, units[p] // (users[p] + 1)) for p in mine[t]},
                    "members": [f"oidc:{t}"],
                    **({"trust": "untrusted"} if t in untrusted else {}),
                    **({"burst": True} if i % 5 == 0 and t not in untrusted else {}),
                }
                for i, t in enumerate(tenants)
            ],
            "burst": {"cloud_site": "burst", "budget_usd": 250000, "max_window_hours": 48,
                      "manager": {"name": "kueue-manager", "kubeconfig_config": "managerKubeconfig", "network": "dc"},
                      "allowed_instance_types": ["p5.48xlarge"]},
        },
    }  # fmt: skip
