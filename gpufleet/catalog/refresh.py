"""Regenerate the AWS instance catalog from EC2 (`gpufleet catalog refresh`).

The committed file `model/catalog/aws_instances.json` is exactly what this module writes, so no
instance fact in it is hand-typed. Tests run it against moto, which carries real DescribeInstanceTypes data.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from model.catalog import INSTANCES_FILE, OFFERINGS_KEY, OFFERINGS_SOURCES_KEY, PUBLISHED_KEY, SHIPPED_INSTANCE_TYPES

SOURCES_KEY = OFFERINGS_SOURCES_KEY
EC2_SOURCE = "ec2:DescribeInstanceTypeOfferings in the maintainer's account (gpufleet catalog refresh -r REGION)"


def _facts(it: dict[str, Any]) -> dict[str, Any]:
    gpu = it["GpuInfo"]["Gpus"][0]
    net = it["NetworkInfo"]
    storage = it.get("InstanceStorageInfo") or {}
    disks = storage.get("Disks") or [{}]
    return {
        "gpu_name": gpu["Name"],
        "gpu_manufacturer": gpu["Manufacturer"],
        "gpu_count": int(gpu["Count"]),
        "gpu_memory_mib": int(gpu["MemoryInfo"]["SizeInMiB"]),
        "vcpus": int(it["VCpuInfo"]["DefaultVCpus"]),
        "memory_mib": int(it["MemoryInfo"]["SizeInMiB"]),
        "architecture": it["ProcessorInfo"]["SupportedArchitectures"][0],
        "network_performance": net["NetworkPerformance"],
        "network_cards": int(net.get("MaximumNetworkCards", 1)),
        "efa_supported": bool(net.get("EfaSupported", False)),
        "max_efa_interfaces": int((net.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0)),
        "local_nvme_gb": int(storage.get("TotalSizeInGB", 0)),
        "local_nvme_disks": int(disks[0].get("Count", 0)),
        "placement_strategies": sorted((it.get("PlacementGroupInfo") or {}).get("SupportedStrategies", [])),
        "usage_classes": sorted(it.get("SupportedUsageClasses", [])),
    }


def describe(ec2: Any, instance_types: list[str]) -> dict[str, dict[str, Any]]:
    """Instance facts for `instance_types` through `ec2:DescribeInstanceTypes` (paginated)."""
    facts: dict[str, dict[str, Any]] = {}
    paginator = ec2.get_paginator("describe_instance_types")
    for page in paginator.paginate(InstanceTypes=instance_types):
        for it in page["InstanceTypes"]:
            facts[it["InstanceType"]] = _facts(it)
    return dict(sorted(facts.items()))


def offerings(ec2: Any, instance_types: list[str]) -> dict[str, list[str]]:
    """AZ IDs offering each instance type (`DescribeInstanceTypeOfferings`, location type `availability-zone-id`).

    AZ IDs, never AZ names: a name such as us-east-1a maps to a different AZ in each account, while an AZ ID
    (use1-az1) is the same AZ in every account (https://docs.aws.amazon.com/ram/latest/userguide/
    working-with-az-ids.html). So offerings recorded from the maintainer's account hold for every account."""
    zones: dict[str, set[str]] = {t: set() for t in instance_types}
    paginator = ec2.get_paginator("describe_instance_type_offerings")
    for page in paginator.paginate(
        LocationType="availability-zone-id",
        Filters=[{"Name": "instance-type", "Values": instance_types}],
    ):
        for off in page["InstanceTypeOfferings"]:
            zones[off["InstanceType"]].add(off["Location"])
    return {t: sorted(z) for t, z in sorted(zones.items())}


def refresh(
    ec2: Any,
    region: str,
    *,
    path: Path | None = None,
    instance_types: list[str] | None = None,
    today: dt.date | None = None,
    source: str = EC2_SOURCE,
) -> dict[str, Any]:
    """Rewrite the catalog's instance facts and `region`'s offerings by AZ ID, and record under SOURCES_KEY where
    and when `region`'s offerings came from (`source`: what `ec2` answers from); returns the new document.

    EC2 answers DescribeInstanceTypes only for types that exist in the client's region and fails the whole
    call otherwise ("InvalidInstanceType: The following supplied instance types do not exist"), and no region
    has every shipped type (p6-b300 is in few). So only the types offered in `region` are described; the
    others keep the facts an earlier refresh in another region recorded (instance facts are the same in every
    region), and their offerings in `region` are recorded as empty. A type under PUBLISHED_KEY (facts typed from
    AWS's pages, for types sold only as UltraServers) keeps its published offerings too until EC2 describes it;
    then the described facts replace it and its note goes.
    """
    path = INSTANCES_FILE if path is None else path
    types = sorted(instance_types or SHIPPED_INSTANCE_TYPES)
    doc: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    zones = offerings(ec2, types)
    offered = [t for t in types if zones[t]]
    facts = describe(ec2, offered) if offered else {}
    previous = doc.get("instances") or {}
    for t in types:
        if t not in facts and t in previous:
            facts[t] = previous[t]
    published = {t: note for t, note in (doc.get(PUBLISHED_KEY) or {}).items() if t not in offered}
    for t, note in published.items():
        zones[t] = zones[t] or list(note.get(OFFERINGS_KEY, {}).get(region, []))
    when = (today or dt.date.today()).isoformat()
    doc["source"] = "ec2:DescribeInstanceTypes and ec2:DescribeInstanceTypeOfferings (gpufleet catalog refresh)"
    doc["generated"] = when
    if published:
        doc[PUBLISHED_KEY] = published
    else:
        doc.pop(PUBLISHED_KEY, None)
    doc["instances"] = dict(sorted(facts.items()))
    doc.pop("offerings", None)  # the by-name offerings of earlier catalogs: true of their account only
    doc.setdefault(OFFERINGS_KEY, {})[region] = zones
    doc[OFFERINGS_KEY] = dict(sorted(doc[OFFERINGS_KEY].items()))
    doc.setdefault(SOURCES_KEY, {})[region] = {"source": source, "date": when}
    doc[SOURCES_KEY] = dict(sorted(doc[SOURCES_KEY].items()))
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    return doc
