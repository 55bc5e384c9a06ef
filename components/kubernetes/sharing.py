"""GPU sharing configuration derived from a site's pools: device-plugin configs and MIG layouts.

Both the GPU Operator and the standalone device plugin get the same named device-plugin configs: one per
time-sliced pool (key `model.nodes.device_plugin_config_name(pool)`, which is also the value of the
pool's `nvidia.com/device-plugin.config` node label) and a default for every other GPU node. MIG layouts are
mig-parted configs named `all-<profile>`, the value of the pools' `nvidia.com/mig.config` node label.

Formats: k8s-device-plugin README (pinned tag) "Shared Access to GPUs" / api/config/v1 (version, flags.migStrategy,
sharing.timeSlicing.{renameByDefault, failRequestsGreaterThanOne, resources[{name, replicas}]}); GPU Operator
values.yaml `migManager.config` example at the pinned tag (version v1, mig-configs.<name>[{devices, mig-enabled,
mig-devices}]).
"""

from __future__ import annotations

from typing import Any

import yaml

from model.conventions import GPU_RESOURCE
from model.nodes import device_plugin_config_name
from model.spec import EstateSpec, Site

# Key of the config used by GPU nodes without a device-plugin config label. Pool names (the other keys) are
# DNS-1123 labels and cannot contain a dot, so this key never collides with a pool's.
DEFAULT_DEVICE_PLUGIN_CONFIG = "gpufleet.default"
MIG_DISABLED = "all-disabled"  # the MIG manager's default layout, and the label of every non-MIG pool


def _dump(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False)


def device_plugin_configs(site: Site) -> dict[str, str]:
    """Named device-plugin config files (YAML text) for the site: the default, then one per time-sliced pool.

    Time-slicing never renames the resource (pods keep asking for `nvidia.com/gpu`, so Kueue quotas and
    tenants' manifests stay the same) and fails requests for more than one shared GPU, which would buy no
    extra compute (device-plugin README; check T12).
    """
    strategy = site.kubernetes.mig_strategy
    configs = {DEFAULT_DEVICE_PLUGIN_CONFIG: _dump({"version": "v1", "flags": {"migStrategy": strategy}})}
    for pool in site.node_pools:
        key = device_plugin_config_name(pool)
        if key is None:
            continue
        configs[key] = _dump(
            {
                "version": "v1",
                "flags": {"migStrategy": strategy},
                "sharing": {
                    "timeSlicing": {
                        "renameByDefault": False,
                        "failRequestsGreaterThanOne": True,
                        "resources": [{"name": GPU_RESOURCE, "replicas": pool.sharing.replicas}],
                    }
                },
            }
        )
    return configs


def mig_layouts(spec: EstateSpec, site: Site) -> dict[str, dict[str, int]]:
    """`all-<profile>` -> {profile: instances per GPU} for the site's MIG pools (from the catalog)."""
    layouts: dict[str, dict[str, int]] = {}
    for pool in site.node_pools:
        if pool.sharing.mode != "mig" or pool.sharing.mig_profile is None:
            continue
        profile = spec.pool_gpu_model(pool.name).mig_profile(pool.sharing.mig_profile)
        if profile is None:  # the schema rejects this (sharing.mig_profile); kept for type narrowing
            raise ValueError(f"pool {pool.name}: unknown MIG profile {pool.sharing.mig_profile}")
        name = f"all-{profile.name}"
        if name in layouts and layouts[name] != {profile.name: profile.per_gpu}:
            # The schema rejects this too: one `all-<profile>` label value must mean one layout per site.
            raise ValueError(f"pool {pool.name}: MIG profile {profile.name} fits a different count per GPU model")
        layouts[name] = {profile.name: profile.per_gpu}
    return layouts


def mig_parted_config(spec: EstateSpec, site: Site) -> str:
    """The MIG manager's `config.yaml`: `all-disabled` plus one `all-<profile>` layout per profile in use."""
    configs: dict[str, list[dict[str, Any]]] = {MIG_DISABLED: [{"devices": "all", "mig-enabled": False}]}
    for name, devices in mig_layouts(spec, site).items():
        configs[name] = [{"devices": "all", "mig-enabled": True, "mig-devices": devices}]
    return _dump({"version": "v1", "mig-configs": configs})
