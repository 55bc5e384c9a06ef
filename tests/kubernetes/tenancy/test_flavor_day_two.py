"""Day 2 of Kueue's topology objects: an `up` from one plan to the next, as Pulumi steps each ResourceFlavor and
Topology (replaced where a changed input path is one of its replaceOnChanges or what it is replaced with is
replaced, else updated), and each update judged by the CRD's rules in the pinned chart (cel-python)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import celpy
import yaml
from celpy import json_to_cel

from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.review.diff.plans import property_changes
from model import versions
from model.load import ESTATE_KEY
from tests.charts import chart_dir
from tests.conftest import example_config

KINDS = ("Topology", "ResourceFlavor", "ClusterQueue")
Synth = Callable[[dict[str, Any]], Plan]


def _objects(plan: Plan) -> dict[str, PlanResource]:
    return {r.key: r for r in plan.kubernetes_objects() if r.inputs.get("kind") in KINDS}


def _under(path: str, listed: str) -> bool:
    return path == listed or path.startswith((f"{listed}.", f"{listed}["))


def up(base: Plan, head: Plan) -> dict[str, str]:
    """Key -> `replace` or `update` for each Kueue object both plans hold and the up changes. Pulumi replaces on a
    diff of any listed path, added and removed keys included, and replaces a resource whose replace_with target is
    replaced."""
    old, new = _objects(base), _objects(head)
    steps: dict[str, str] = {}
    for key in old.keys() & new.keys():
        paths = [c.path for c in property_changes(old[key], new[key])]
        if any(_under(p, listed) for p in paths for listed in new[key].replace_on_changes):
            steps[key] = "replace"
        elif paths:
            steps[key] = "update"
    grew = True
    while grew:
        grew = False
        for key in old.keys() & new.keys():
            if steps.get(key) != "replace" and any(steps.get(t) == "replace" for t in new[key].replace_with):
                steps[key], grew = "replace", True
    return steps


def _flavor_rules() -> list[dict[str, str]]:
    text = (chart_dir(versions.KUEUE) / "templates/crd/kueue.x-k8s.io_resourceflavors.yaml").read_text()
    crd = yaml.safe_load(re.sub(r"\{\{.*?\}\}", "", text[text.index("\nspec:") :], flags=re.S))
    (v1beta2,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta2"]
    rules: list[dict[str, str]] = v1beta2["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"]
    return rules


def refused_updates(base: Plan, head: Plan, steps: dict[str, str]) -> list[str]:
    """What the API server refuses of the up's in-place updates: a ResourceFlavor's spec breaking one of the CRD's
    rules (self the new spec, oldSelf the old), a Topology's levels changing (`self == oldSelf`)."""
    env = celpy.Environment()
    old, new = _objects(base), _objects(head)
    out = []
    for key in (k for k, step in steps.items() if step == "update"):
        before, after = old[key].inputs.get("spec", {}), new[key].inputs.get("spec", {})
        kind, name = new[key].inputs["kind"], new[key].inputs["metadata"]["name"]
        if kind == "Topology" and before.get("levels") != after.get("levels"):
            out.append(f"Topology {name}: field is immutable")
        if kind == "ResourceFlavor":
            activation = {"self": json_to_cel(after), "oldSelf": json_to_cel(before)}
            for rule in _flavor_rules():
                if not env.program(env.compile(rule["rule"])).evaluate(activation):
                    out.append(f"ResourceFlavor {name}: {rule['message']}")
    return out


def _by_name(plan: Plan, steps: dict[str, str], kind: str) -> dict[str, str]:
    objects = _objects(plan)
    return {objects[k].inputs["metadata"]["name"]: s for k, s in steps.items() if objects[k].inputs["kind"] == kind}


def _topologies(plan: Plan) -> dict[str, str | None]:
    return {
        r.inputs["metadata"]["name"]: r.inputs["spec"].get("topologyName")
        for r in _objects(plan).values()
        if r.inputs["kind"] == "ResourceFlavor"
    }


def _day_two(synth_config: Synth, stack: str, change: Callable[[dict[str, Any]], None]) -> tuple[Plan, Plan]:
    config = example_config(stack)
    base = synth_config(copy.deepcopy(config))
    change(config[ESTATE_KEY])
    return base, synth_config(config)


def test_an_eks_site_losing_its_last_labelled_efa_pool_replaces_every_flavor_and_queue(synth_config: Synth) -> None:
    """aws-train's h100 (p5.48xlarge, EKS's network-node layers) leaves its EFA fabric: the site no longer schedules
    by topology, so every flavor drops its topologyName, which the CRD refuses in place ("topologyName is
    immutable when topologyName is set", kubernetes-sigs/kueue v0.19.2 apis/kueue/v1beta2/resourceflavor_types.go).
    The up replaces each flavor, and with it the ClusterQueues naming it."""

    def off_fabric(estate: dict[str, Any]) -> None:
        for pool in estate["sites"][0]["node_pools"]:
            pool.pop("fabric", None)

    base, head = _day_two(synth_config, "aws-train", off_fabric)
    assert _topologies(base) == {"agents-l40s": "gpufleet-hosts", "h100": "train-efa", "l40s": "gpufleet-hosts"}
    assert set(_topologies(head).values()) == {None}
    steps = up(base, head)
    assert _by_name(head, steps, "ResourceFlavor") == {"agents-l40s": "replace", "h100": "replace", "l40s": "replace"}
    assert set(_by_name(head, steps, "ClusterQueue").values()) == {"replace"}
    assert refused_updates(base, head, steps) == []


def test_a_pool_leaving_its_fabric_for_single_hosts_replaces_its_flavor(synth_config: Synth) -> None:
    """On onprem, `train` leaves the InfiniBand fabric: its flavor moves from `ib` to `gpufleet-hosts` (the site
    keeps scheduling by topology), and only it and its ClusterQueues are replaced."""

    def off_fabric(estate: dict[str, Any]) -> None:
        next(p for p in estate["sites"][0]["node_pools"] if p["name"] == "train").pop("fabric")

    base, head = _day_two(synth_config, "onprem", off_fabric)
    assert _topologies(base) == {"dev": "gpufleet-hosts", "train": "ib"}
    assert _topologies(head) == {"dev": "gpufleet-hosts", "train": "gpufleet-hosts"}
    steps = up(base, head)
    assert _by_name(head, steps, "ResourceFlavor") == {"train": "replace"}
    assert refused_updates(base, head, steps) == []


def test_the_up_helper_finds_what_the_api_server_refuses_of_an_update_in_place(synth_config: Synth) -> None:
    """The judge itself: the move above, stepped without topologyName as a replace path, is refused."""

    def off_fabric(estate: dict[str, Any]) -> None:
        next(p for p in estate["sites"][0]["node_pools"] if p["name"] == "train").pop("fabric")

    base, head = _day_two(synth_config, "onprem", off_fabric)
    for r in _objects(head).values():
        r.replace_on_changes = [p for p in r.replace_on_changes if p != "spec.topologyName"]
    steps = up(base, head)
    found = refused_updates(base, head, steps)
    assert found == ["ResourceFlavor train: topologyName is immutable when topologyName is set"], found
