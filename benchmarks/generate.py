"""Synthetic estates at chosen scales: bare-metal servers, cloud pools, tenants and storage.

The shape mirrors a large real estate: racks of 8-GPU servers on InfiniBand grouped in pools of up to 32,
an AWS site with EFA training pools and inference pools, tenants spread over the pools with quotas that fit.
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
    cloud_pools = [
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
