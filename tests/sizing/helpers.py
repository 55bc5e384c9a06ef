"""Small builders for workload classes and files in the sizing tests."""

from __future__ import annotations

from typing import Any

from gpufleet.sizing.workloads import WorkloadClass, WorkloadFile

ASSUMPTIONS = {"owner": "ml-platform", "source": "test figures", "review_date": "2027-01-01"}
PLANNING = {"period": "week", "hours_per_device": 120, "utilisation_pct": [50, 60, 70]}


def wclass(**over: Any) -> WorkloadClass:
    base: dict[str, Any] = {
        "name": "train-7b",
        "kind": "training",
        "parameters_billion": 7,
        "runs_per_period": 40,
        "gpus_per_run": 4,
        "hours_per_run": 6,
        "deadline_hours": 12,
    }
    base.update(over)
    return WorkloadClass.model_validate(base)


def raw_file(*classes: dict[str, Any], **planning: Any) -> dict[str, Any]:
    cls = list(classes) or [
        {
            "name": "train-7b",
            "kind": "training",
            "parameters_billion": 7,
            "runs_per_period": 40,
            "gpus_per_run": 4,
            "hours_per_run": 6,
            "deadline_hours": 12,
        }
    ]
    return {"assumptions": dict(ASSUMPTIONS), "planning": {**PLANNING, **planning}, "classes": cls}


def wfile(*classes: dict[str, Any], **planning: Any) -> WorkloadFile:
    return WorkloadFile.model_validate(raw_file(*classes, **planning))
