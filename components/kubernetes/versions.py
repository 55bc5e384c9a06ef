"""Every chart and image version gpufleet installs: the one place they are pinned.

A test fails when one of these version strings appears anywhere else in the code. Sources: the upstream
repositories' tags as recorded in shared/reference/gpu-facts.md (state of 2026-08).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chart:
    name: str
    version: str
    repository: str  # Helm repository URL (or oci:// registry path)


# -- NVIDIA GPU stack ---------------------------------------------------------------------------------
GPU_OPERATOR = Chart("gpu-operator", "v26.7.0", "https://helm.ngc.nvidia.com/nvidia")
NVIDIA_DEVICE_PLUGIN = Chart("nvidia-device-plugin", "0.20.0", "https://nvidia.github.io/k8s-device-plugin")

# -- Scheduling -----------------------------------------------------------------------------------------
KUEUE = Chart("kueue", "0.19.2", "oci://registry.k8s.io/kueue/charts")
