"""GPU models: the memory EC2 reports, MIG profiles, time-slicing, NVLink and PCIe links, NVLink domains (gpus.yaml,
each with its source). This module is the file's only reader; `model.catalog` re-exports it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from model.yaml_text import safe_load

# GPU models (API memory, MIG profiles, time-slicing) with sources.
GPUS_FILE = Path(__file__).parent / "gpus.yaml"


@dataclass(frozen=True)
class MigProfile:
    name: str  # e.g. "1g.10gb"
    per_gpu: int  # how many fit on one GPU


@dataclass(frozen=True)
class GpuModel:
    id: str  # e.g. "H100-80GB"; the name stack files use for bare-metal servers
    aws_name: str  # the name EC2 reports, e.g. "H100"
    memory_mib: int
    mig_profiles: tuple[MigProfile, ...]
    time_slicing: bool = False
    # GPU-to-GPU links as NVIDIA publishes them (total bidirectional GB/s per GPU): NVLink, or None for a part
    # without it; and the GPU's PCIe x16 link. Sources in gpus.yaml.
    nvlink_gb_per_s: int | None = None
    pcie_gb_per_s: int | None = None
    nvlink_domain_gpus: int = 1  # GPUs one NVLink domain joins (8 on an HGX board, 72 on NVL72; 1 without NVLink)

    def mig_profile(self, name: str) -> MigProfile | None:
        return next((p for p in self.mig_profiles if p.name == name), None)

    def sharing_modes(self) -> tuple[str, ...]:
        """The `sharing.mode` values a pool of this GPU may use (gpus.yaml: MIG profiles, time_slicing)."""
        return ("whole", *(("mig",) if self.mig_profiles else ()), *(("time-slicing",) if self.time_slicing else ()))

    def sharing_summary(self) -> str:
        """What sharing this GPU allows and what a quota counts, for schema errors."""
        parts = ["whole (1 nvidia.com/gpu per GPU)"]
        if self.mig_profiles:
            slices = ", ".join(f"{p.name} x{p.per_gpu}" for p in self.mig_profiles)
            parts.append(f"mig (hardware-isolated slices, each counted as one unit in quotas: {slices} per GPU)")
        if self.time_slicing:
            parts.append(
                "time-slicing (no memory or fault isolation; each GPU counts as `replicas` nvidia.com/gpu in quotas)"
            )
        return f"{self.id} GPUs allow " + "; ".join(parts)


@cache
def gpu_models() -> dict[str, GpuModel]:
    doc = safe_load(GPUS_FILE.read_text())
    return {
        gid: GpuModel(
            id=gid,
            aws_name=g["aws_name"],
            memory_mib=int(g["memory_mib"]),
            mig_profiles=tuple(MigProfile(n, int(c)) for n, c in (g.get("mig_profiles") or {}).items()),
            time_slicing=bool(g.get("time_slicing", False)),
            nvlink_gb_per_s=g.get("nvlink_gb_per_s"),
            pcie_gb_per_s=g.get("pcie_gb_per_s"),
            nvlink_domain_gpus=int(g.get("nvlink_domain_gpus", 1)),
        )
        for gid, g in doc["models"].items()
    }
