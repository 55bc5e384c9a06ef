"""`gpufleet journey` text: a line per workload with its verdict, then the blocker and the unblock, then stages."""

from __future__ import annotations

import json

from gpufleet.render.journey import journey_json, journey_text
from gpufleet.review.reality.journeys.core import STAGES, Journey, Placement, Stage
from gpufleet.review.reality.journeys.workloads import workload

JOB = workload(
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "research"},
     "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never"}}}},
    "job.yaml, document 1",
)  # fmt: skip
OK = [Stage(n, True, f"{n} fine") for n in STAGES]


def test_a_blocked_workload_names_stage_blocker_and_unblock_once() -> None:
    blocked = Journey(JOB, (OK[0], Stage("admission", False, "quota", "ResourceQuota/research/q", "ask for less")))
    text = journey_text([blocked])
    assert text.splitlines()[0] == "blocked  Job/research/j at admission: quota"
    assert "blocker: ResourceQuota/research/q" in text and "unblock: ask for less" in text
    assert text.count(": quota") == 1  # the headline only, not again in the stage list
    assert text.endswith("0 of 1 workload run\n")


def test_a_workload_that_runs_says_where_it_lands() -> None:
    runs = Journey(JOB, tuple(OK), Placement("use1", "h100", 2, "h100"))
    assert journey_text([runs]).startswith("runs     Job/research/j: site use1, pool h100, 2 nodes, flavor h100\n")
    (doc,) = json.loads(journey_json([runs]))["journeys"]
    assert (
        doc["placement"] == {"site": "use1", "pool": "h100", "nodes": 2, "flavor": "h100"} and doc["verdict"] == "runs"
    )
