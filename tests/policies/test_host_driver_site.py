"""operator-driver-site on a bare-metal site whose hosts bring the NVIDIA driver (kubernetes.driver_managed_by:
host): the spec names the site's GPU Operator release in the pack config, the synthesized release turns the
operator's driver off, and the rule accepts exactly that release, by the name the real plan gives it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from gpufleet.engine.plan import Plan
from gpufleet.review import check
from model import conventions
from model.load import ESTATE_KEY, parse_estate
from tests.conftest import EXAMPLES, example_config

RULE = "operator-driver-site"


def _guardrails(spec_config: dict[str, object]) -> dict[str, object]:
    pack = next(p for p in check.packs() if any(pol.name == RULE for pol in p.policies))
    doc: dict[str, object] = check.pack_config(parse_estate(spec_config, "test"), pack)[RULE]
    return doc


def test_examples_write_no_host_driver_releases() -> None:
    # onprem and hybrid keep the default: the GPU Operator installs the driver, and the rule demands it
    for stack in EXAMPLES:
        assert _guardrails(example_config(stack)[ESTATE_KEY])["hostDriverReleases"] == []


def test_host_driver_site_passes_every_mandatory_rule_with_the_written_config(
    synth_config: Callable[[dict[str, object]], Plan], tmp_path: Path
) -> None:
    config = example_config("onprem")
    config[ESTATE_KEY]["sites"][0]["kubernetes"]["driver_managed_by"] = "host"
    config[ESTATE_KEY]["sites"][0]["kubernetes"]["gpudirect_rdma"] = (
        "off"  # GPUDirect RDMA not used (its own tests set dma-buf)
    )
    plan = synth_config(config)
    spec = parse_estate(config[ESTATE_KEY], "test")

    (release,) = [r for r in plan.helm_releases() if r.inputs.get("name") == "gpu-operator"]
    assert release.inputs["values"]["driver"]["enabled"] is False
    assert release.inputs["values"]["toolkit"]["enabled"] is True
    # the config names the release as the plan (and so the engine) names it
    assert _guardrails(config[ESTATE_KEY])["hostDriverReleases"] == [release.name]
    assert release.name == conventions.gpu_operator_release_name("dc1")

    violations = check.evaluate(plan, spec).mandatory
    assert violations == [], "\n".join(f"{f.rule} {f.resource}: {f.message}" for f in violations)

    # the --write-config file carries the same list, so `pulumi preview --policy-pack` agrees with gpufleet check
    written = {p.stem: json.loads(p.read_text()) for p in check.write_configs(spec, tmp_path / "cfg")}
    assert written["gpu_guardrails"][RULE] == {"enforcementLevel": "mandatory", "hostDriverReleases": [release.name]}

    # without the config entry the same plan is a violation: driver off on bare metal is only allowed when listed
    found = check.run(plan, None, only={RULE})
    assert {f.rule for f in found} == {RULE}
    assert any("must install the driver (driver.enabled)" in f.message for f in found)
