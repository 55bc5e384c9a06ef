"""A deliberately broken stack: the aws-train example with changes that each break named policy rules.

The schema accepts every change (they are policy decisions, not malformed input); the packs must reject exactly
these rules, each for the reason given.
"""

from __future__ import annotations

from typing import Any

from model.load import ESTATE_KEY
from tests.conftest import example_config

BREAKS: dict[str, str] = {
    "budget-cap": "policies.budget_usd_per_hour 50 < 4 x p5.48xlarge + 6 x g6e.12xlarge + 4 x g6e.xlarge at max size",
    "gpu-instance-allowlist": "policies.allowed_instance_types lists only p5.48xlarge; the L40S pools use g6e",
    "required-tags": "metadata.required_tags adds `project`, which no resource carries",
    "tags-propagate": "launch templates tag instances and volumes without `project`",
    "imds-v2-hop-limit": "pool l40s sets pods_need_imds (hop limit 2) but is not in policies.imds_hop_limit_exceptions",
}


def broken_config() -> dict[str, Any]:
    config = example_config("aws-train")
    estate = config[ESTATE_KEY]
    estate["metadata"]["required_tags"] = ["owner", "cost-center", "env", "cluster", "tenant", "project"]
    estate["policies"] = {"budget_usd_per_hour": 50, "allowed_instance_types": ["p5.48xlarge"]}
    pool = next(p for p in estate["sites"][0]["node_pools"] if p["name"] == "l40s")
    pool["pods_need_imds"] = True
    return config
