"""`gpufleet size -f json`: the sizing report as data (every figure, every placement a class fits on)."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

from gpufleet.render.sizing import headline, node_pool_snippet
from gpufleet.sizing.placement import Choice
from gpufleet.sizing.pools import Demand, PoolRecommendation
from gpufleet.sizing.report import SizingReport


def _f(x: Fraction | None) -> float | None:
    return None if x is None else round(float(x), 6)


def _demand_json(d: Demand) -> dict[str, Any]:
    return {
        "placement": d.placement.name,
        "gpu": d.placement.gpu.id,
        "classes": list(d.classes),
        "gpu_hours": _f(d.gpu_hours),
        "min_gpus": d.min_gpus,
        "max_gpus": d.max_gpus,
        "gang_gpus": d.gang_gpus,
        "min_nodes": d.min_nodes,
        "max_nodes": d.max_nodes,
        "scaling": {"min": d.scale_min_nodes, "desired": d.scale_desired_nodes, "max": d.scale_max_nodes},
        "spare_nodes": d.spare_nodes,
        "work_usd": _f(d.work_usd),
    }


def _choice_json(ch: Choice) -> dict[str, Any]:
    return {
        "placement": ch.placement.name,
        "gpu": ch.placement.gpu.id,
        "gpus_per_node": ch.placement.gpus_per_node,
        "gpus_for_memory": ch.gpus_needed,
        "nodes_per_run": ch.nodes_per_run,
        "hours_per_run": _f(ch.hours_per_run),
        "cost_per_run_usd": _f(ch.cost_per_run),
        "status": ch.status,
        "owned": ch.owned,
        "existing_pool": ch.placement.scale is not None,
        "penalty_hours": _f(ch.penalty_hours),
        "price_basis": ch.placement.price_basis,
        "ring": None
        if ch.ring is None
        else {
            "busbw_gb_per_s": _f(ch.ring.gb_per_s),  # nccl-tests bus bandwidth of the slowest link
            "slowest_link": ch.ring.link,
            "allreduce_s": _f(ch.ring.allreduce_s),
        },
        "slower_than": ch.slower_than.placement.name if ch.slower_than else None,
    }


def _pool_json(rec: PoolRecommendation) -> dict[str, Any]:
    s, to = rec.demand.placement.scale, rec.demand.raised
    # A cloud pool the stack has: its scaling as declared and as raised to take the demand; None for other pools.
    existing = None if s is None or to is None else {k: {"min": x.min, "desired": x.desired, "max": x.max}
                                                     for k, x in (("declared", s), ("raised", to))}  # fmt: skip
    return {"name": rec.name, "role": rec.role, **_demand_json(rec.demand), "existing_scaling": existing}


def sizing_document(r: SizingReport) -> dict[str, Any]:
    w = r.workloads
    out: dict[str, Any] = {
        "source": r.source,
        "region": r.region,
        "headline": headline(r),
        "assumptions": {**w.assumptions.model_dump(mode="json"), "review_overdue": r.review_overdue},
        "planning": w.planning.model_dump(mode="json"),
        "demand_gpu_hours": _f(r.total_gpu_hours),
        "scenarios": [
            {
                "utilisation_pct": _f(s.utilisation_pct),
                "equivalents": _f(s.equivalents),
                "equivalents_rounded": s.equivalents_rounded,
                "failure_reserve": _f(s.failure_reserve),
                "maintenance": _f(s.maintenance),
                "growth": _f(s.growth),
                "total": _f(s.total),
                "total_rounded": s.rounded,
                "pools_added_up": pools,
            }
            for s, pools in zip(r.scenarios, r.installed_per_scenario, strict=True)
        ],
        "installed_gpus": {"min": r.installed_range[0], "max": r.installed_range[1]},
        "installed_gpus_whole_nodes": {"min": r.installed_nodes_gpus[0], "max": r.installed_nodes_gpus[1]},
        "gang_minimum": {"gpus": r.gang_gpus, "class": r.gang_class},
        "classes": [
            {
                "name": cs.cls.name,
                "kind": cs.cls.kind,
                "gpu_hours": _f(cs.gpu_hours),
                "memory": {
                    "basis": cs.need.basis,
                    "bytes_per_parameter": _f(cs.need.bytes_per_parameter),
                    "states_gb": _f(cs.need.states_gb),
                    "kv_cache_gb": _f(cs.need.kv_cache_gb),
                    "margin_pct": _f(cs.need.margin_pct),
                    "required_gb": _f(cs.need.required_gb),
                },
                "memory_fit": [
                    {
                        "gpu": f.gpu.id,
                        "gb_per_gpu": _f(f.gpu_memory_gb),
                        "fits_one_gpu": f.fits_one_gpu,
                        "gpus_needed": f.gpus_needed,
                    }
                    for f in cs.fits
                ],
                "choices": [_choice_json(ch) for ch in cs.choices],
                "chosen": cs.chosen.placement.name if cs.chosen else None,
                "refused": cs.refused or None,
                "overflow": cs.overflow or None,
                "too_small": list(cs.too_small),
            }
            for cs in r.classes
        ],
        "node_pools": [_pool_json(p) for p in r.pools],
        "snippet": node_pool_snippet(r.pools),
        "notes": r.notes,
    }
    if r.comparison is not None:
        c = r.comparison
        out["stack"] = {
            "name": c.stack,
            "verdict": c.verdict,
            "pools": [
                {
                    **_demand_json(v.demand),
                    "pool": v.placement.name,
                    "capacity_gpus": v.placement.capacity_gpus,
                    "verdict": v.verdict,
                    "excess_gpus": v.excess_gpus,
                    "excess_usd_per_month": _f(v.excess_usd_per_month),
                    "excess_expected_usd_per_month": _f(v.excess_expected_usd_per_month),
                    "role_mismatch": list(v.role_mismatch),
                }
                for v in c.pools
            ],
            "unplaced": [{"class": n, "why": why} for n, why in c.unplaced],
            "skipped": [{"pool": p, "why": why} for p, why in c.skipped],
            "passed_over": [{"class": n, "why": why} for n, why in c.passed_over],
        }
    return out


def sizing_json(r: SizingReport) -> str:
    return json.dumps(sizing_document(r), indent=1)
