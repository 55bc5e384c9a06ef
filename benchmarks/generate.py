"""Synthetic estates at chosen scales.

`estate(scale)`: one bare-metal site (racks of 8-GPU servers on InfiniBand in pools of up to 32) and one AWS
site (EFA training pools, inference pools), tenants spread over the pools with quotas that fit; calibrated by
`benchmarks.run` to a number of resources.

`fleet(gpus)`: a multi-site hybrid estate of `gpus` GPUs in 8-GPU nodes: two bare-metal sites (InfiniBand H100
with a MIG pool and a time-sliced pool; RoCE A100), an AWS training and inference site and an AWS burst site
whose EFA pools idle at zero, one tenant per 40 GPUs (every fifth may burst, one in fifty is untrusted on a
MIG pool dedicated to it). Every estate both make passes the schema (`components.model.load.parse_estate`).
"""

from __future__ import annotations

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
                    "fabrics": [{"kind": "infiniband", "name": "ib"}],
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
SECRETS = ("kubeconfig", "sshPrivateKey", "joinToken", "caCertHash")


def _servers(site: str, count: int, model: str, octet: int, pool_of: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "hostname": f"{site}-gpu-{i:05d}",
            "address": f"10.{octet}.{i // 250}.{i % 250 + 1}",
            "gpu_model": model,
            "gpu_count": 8,
            "ib_ports": ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"],
            "nvme_devices": ["/dev/nvme1n1", "/dev/nvme2n1"],
            "rack": f"r{i // SERVERS_PER_RACK}",
            "leaf": f"leaf-{i // (SERVERS_PER_RACK * 2)}",
            "rail": str(i % 4),
            "labels": {"pool": pool_of[i]},
        }
        for i in range(count)
    ]


def _chunks(total: int, size: int) -> list[int]:
    return [min(size, total - i) for i in range(0, total, size)]


def _baremetal_site(
    name: str, servers: int, model: str, octet: int, fabric: dict[str, Any], special: list[dict[str, Any]]
) -> dict[str, Any]:
    """A bare-metal site: the `special` pools first (each with its `servers` count), the rest in training pools."""
    rest = servers - sum(p["servers"] for p in special)
    pools = [{k: v for k, v in p.items() if k != "servers"} for p in special]
    pools += [{"name": f"{name}-train{i}", "role": "training"} for i in range(len(_chunks(rest, FLEET_POOL_SERVERS)))]
    sizes = [p["servers"] for p in special] + _chunks(rest, FLEET_POOL_SERVERS)
    pool_of = [pool["name"] for pool, n in zip(pools, sizes, strict=True) for _ in range(n)]
    return {
        "kind": "baremetal",
        "name": name,
        "kubeconfig_config": "kubeconfig",
        "ssh": {"user": "gpufleet", "private_key_config": "sshPrivateKey"},
        "join": {"method": "kubeadm", "api_server": f"k8s.{name}.example.com:6443"},
        "kubernetes": {"driver_version": "580.126.20"},
        "fabrics": [fabric],
        "inventory": _servers(name, servers, model, octet, pool_of),
        "node_pools": [{**p, "selector": {"pool": p["name"]}, "fabric": fabric["name"]} for p in pools],
        "storage": [
            {"kind": "nfs", "name": "home", "server": f"nfs.{name}.example.com", "path": "/home", "cidr": f"10.{octet}.250.0/24"},
            {"kind": "scratch", "name": "nvme"},
        ],
    }  # fmt: skip


def _aws_site(name: str, cidr_octet: int, azs: list[str], pools: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": "aws",
        "name": name,
        "region": "us-east-1",
        "availability_zones": azs,
        "vpc": {"cidr": f"10.{cidr_octet}.0.0/16"},
        "fabrics": [{"kind": "efa", "name": f"{name}-efa", "availability_zone": azs[0], "subnet_cidr": f"10.{cidr_octet}.128.0/20"}],
        "node_pools": pools,
        "storage": [
            {"kind": "s3", "name": "objects"},
            {"kind": "fsx-lustre", "name": "lustre", "fabric": f"{name}-efa", "capacity_gib": 48000, "throughput_per_tib": 1000},
            {"kind": "scratch", "name": "nvme"},
        ],
    }  # fmt: skip


def fleet(gpus: int) -> dict[str, Any]:
    """The `config:` mapping of a stack file holding a hybrid estate of `gpus` GPUs (a multiple of 8, >= 640)."""
    if gpus % 8 or gpus < 640:
        raise ValueError(f"gpus must be a multiple of 8 and at least 640 (got {gpus})")
    nodes = gpus // 8
    tenants = [f"team{t:03d}" for t in range(gpus // GPUS_PER_TENANT)]
    untrusted = tenants[1::50]
    dc_a, dc_b = round(nodes * 0.4), round(nodes * 0.2)
    special_a = [
        {"name": "dc-a-mig", "role": "inference", "servers": max(2, dc_a // 20), "sharing": {"mode": "mig", "mig_profile": "1g.10gb"}},
        {"name": "dc-a-shared", "role": "interactive", "servers": 2, "dedicated_to": tenants[0], "sharing": {"mode": "time-slicing", "replicas": 4}},
    ] + [
        {"name": f"dc-a-{t}", "role": "inference", "servers": 2, "dedicated_to": t, "sharing": {"mode": "mig", "mig_profile": "1g.10gb"}}
        for t in untrusted
    ]  # fmt: skip
    sites = [
        _baremetal_site("dc-a", dc_a, "H100-80GB", 20, {"kind": "infiniband", "name": "ib"}, special_a),
        _baremetal_site("dc-b", dc_b, "A100-80GB", 21, {"kind": "roce", "name": "roce", "interfaces": ["ens1f0np0"]}, []),
    ]  # fmt: skip
    cloud = nodes - dc_a - dc_b
    train, burst = round(cloud * 0.6), cloud - round(cloud * 0.6)
    use1_pools = [
        {"name": f"use1-train{i}", "role": "training", "instance_type": "p5.48xlarge", "fabric": "use1-efa", "scaling": {"min": 0, "desired": 1, "max": n}}
        for i, n in enumerate(_chunks(train // 2, FLEET_POOL_NODES))
    ] + [
        {"name": f"use1-serve{i}", "role": "inference", "instance_type": "g6e.48xlarge", "availability_zone": "us-east-1b", "scaling": {"min": 1, "max": n}}
        for i, n in enumerate(_chunks(train - train // 2, FLEET_POOL_NODES))
    ]  # fmt: skip
    burst_pools = [
        {"name": f"burst{i}", "role": "training", "instance_type": "p5.48xlarge", "fabric": "burst-efa", "burst": True, "scaling": {"min": 0, "max": n}}
        for i, n in enumerate(_chunks(burst, FLEET_POOL_NODES))
    ]  # fmt: skip
    sites += [
        _aws_site("use1", 50, ["us-east-1a", "us-east-1b"], use1_pools),
        _aws_site("burst", 51, ["us-east-1c", "us-east-1d"], burst_pools),
    ]
    units: dict[str, int] = {}
    for site in sites:
        for pool in site["node_pools"]:
            if pool.get("burst"):
                continue
            n = (
                pool["scaling"]["max"]
                if "scaling" in pool
                else sum(1 for s in site["inventory"] if s["labels"]["pool"] == pool["name"])
            )
            sharing = pool.get("sharing", {})
            units[pool["name"]] = n * 8 * (7 if sharing.get("mode") == "mig" else sharing.get("replicas", 1))
    dedicated = {p["dedicated_to"]: p["name"] for s in sites for p in s["node_pools"] if "dedicated_to" in p}
    shared = [p for p in units if p not in dedicated.values()]
    mine = {
        t: [dedicated[t]] if t in untrusted else [shared[(2 * i + k) % len(shared)] for k in range(2)]
        for i, t in enumerate(tenants)
    }
    mine[tenants[0]].append(dedicated[tenants[0]])
    users = {p: sum(p in pools for pools in mine.values()) for p in units}
    return {
        "aws:region": "us-east-1",
        **{f"gpufleet:{key}": {"secure": "v1:bench"} for key in SECRETS},
        "gpufleet:estate": {
            "metadata": {"name": "fleet", "environment": "bench", "owner": "perf", "cost_center": "cc-0"},
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
            "burst": {"cloud_site": "burst", "budget_usd": 250000, "max_window_hours": 48, "allowed_instance_types": ["p5.48xlarge"]},
        },
    }  # fmt: skip
