"""aws-train with a GB200 UltraServer pool: one u-p6e-gb200x72 (18 x p6e-gb200.36xlarge) on a Capacity Block in
the Dallas Local Zone, on its own EFA fabric there (the zone is the fabric's only: EKS refuses it as a site zone); the research tenant holds the whole NVL72 domain."""

from __future__ import annotations

from typing import Any

from tests.conftest import example_config

BLOCK = "cr-0123456789abcdef0"
ZONE = "us-east-1-dfw-2a"  # the Local Zone that sells P6e-GB200 UltraServers (model/catalog/aws_instances.json)


def gb200_config() -> dict[str, Any]:
    config: dict[str, Any] = example_config("aws-train")
    estate = config["gpufleet:estate"]
    site = estate["sites"][0]
    site["fabrics"].append(
        {"kind": "efa", "name": "nvl72-efa", "availability_zone": ZONE, "subnet_cidr": "10.40.144.0/20"}
    )
    site["node_pools"].append(
        {
            "name": "gb200",
            "role": "training",
            "instance_type": "p6e-gb200.36xlarge",
            "fabric": "nvl72-efa",
            "capacity": {
                "type": "capacity-block",
                "reservation_id": BLOCK,
                "block": {"days": 7, "start": "2026-12-10T11:30:00Z"},
            },
            "scaling": {"min": 0, "max": 18},
        }
    )
    estate["tenants"][0]["gpu_quota"]["gb200"] = 72  # research
    estate["policies"]["budget_usd_per_hour"] = 1200  # 18 x $42.328/h on top of aws-train's $331/h at max
    return config
