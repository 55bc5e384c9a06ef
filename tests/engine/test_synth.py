"""The offline engine: config as the engine sets it, secrets, invokes, isolation and stable keys."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pulumi
import pytest

from gpufleet.engine.plan import SECRET, Plan
from gpufleet.engine.synth import SECRET_PLACEHOLDER, SynthError, engine_config, run_program, synth
from model.load import StackFile, read_stack
from tests.conftest import ROOT, example_config


def test_config_is_namespaced_and_structured_like_the_engine(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: proj\nruntime: python\nstackConfigDir: cfg\n")
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "Pulumi.s.yaml").write_text(
        "config:\n  plain: hello\n  aws:region: us-east-1\n  count: 3\n  flag: true\n"
        "  nested: {a: [1, 2]}\n  token:\n    secure: v1:abc\n"
    )
    stack = read_stack(tmp_path, "s")
    config, secret_keys = engine_config(stack)
    assert config == {
        "proj:plain": "hello",
        "aws:region": "us-east-1",
        "proj:count": "3",
        "proj:flag": "true",
        "proj:nested": '{"a": [1, 2]}',
        "proj:token": SECRET_PLACEHOLDER,
    }
    assert secret_keys == ["proj:token"]


def test_secure_values_reach_resources_only_as_secrets(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["onprem"]
    provider = plan.one("pulumi:providers:kubernetes", "dc1-k8s")
    assert provider.inputs["kubeconfig"] == SECRET
    assert SECRET_PLACEHOLDER not in plan.to_json()


def test_missing_secret_is_a_clear_error(synth_config) -> None:  # type: ignore[no-untyped-def]
    config = example_config("onprem")
    del config["gpufleet:kubeconfig"]
    with pytest.raises(pulumi.RunError, match=r"1 required secret\(s\) missing:\nconfig\.gpufleet:kubeconfig\n"):
        synth_config(config)


def test_keys_are_stable_across_two_runs_and_synths_are_isolated() -> None:
    first = synth(ROOT, "aws-train")
    other = synth(ROOT, "onprem")
    second = synth(ROOT, "aws-train")
    assert [r.key for r in first.resources] == [r.key for r in second.resources]
    assert first.to_json() == second.to_json()
    assert not {r.key for r in other.resources} & {r.key for r in first.resources}
    assert other.stack == "onprem"


def test_logical_keys_follow_the_parent_type_chain(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["hybrid"]
    site = plan.one("gpufleet:aws:Site", "cloud")
    assert site.key == "gpufleet:index:Estate$gpufleet:aws:Site::cloud"
    for r in plan.resources:
        if r.parent is not None:
            parent = plan.get(r.parent)
            assert r.key.startswith(parent.key.split("::")[0] + "$"), r.key


def test_stack_exports_are_in_the_plan(example_plans: dict[str, Plan]) -> None:
    assert example_plans["hybrid"].outputs["sites"] == {"onprem": "baremetal", "cloud": "aws"}


def _program(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "__main__.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_invokes_are_answered_from_the_catalog(tmp_path: Path) -> None:
    program = _program(
        tmp_path,
        """
        import pulumi, pulumi_aws as aws
        it = aws.ec2.get_instance_type(instance_type="p5.48xlarge")
        aws.ec2.PlacementGroup("pg", strategy="cluster", tags={"vcpus": str(it.default_vcpus)})
        """,
    )
    plan = run_program(program, "p", "s", {"aws:region": "us-east-1"}, [])
    assert plan.one("aws:ec2/placementGroup:PlacementGroup", "pg").inputs["tags"] == {"vcpus": "192"}


def test_an_invoke_nobody_can_answer_is_an_error_naming_the_token(tmp_path: Path) -> None:
    program = _program(
        tmp_path,
        """
        import pulumi_aws as aws
        aws.get_availability_zones(state="available")
        """,
    )
    with pytest.raises(SynthError, match="aws:index/getAvailabilityZones:getAvailabilityZones"):
        run_program(program, "p", "s", {"aws:region": "us-east-1"}, [])


def test_two_resources_with_one_urn_are_rejected(tmp_path: Path) -> None:
    program = _program(
        tmp_path,
        """
        import pulumi_aws as aws
        aws.ec2.PlacementGroup("dup", strategy="cluster")
        aws.ec2.PlacementGroup("dup", strategy="spread")
        """,
    )
    with pytest.raises(SynthError, match="share one URN"):
        run_program(program, "p", "s", {"aws:region": "us-east-1"}, [])


def test_numbers_are_normalised_and_protect_recorded(tmp_path: Path) -> None:
    program = _program(
        tmp_path,
        """
        import pulumi, pulumi_aws as aws
        aws.ebs.Volume("v", availability_zone="us-east-1a", size=100,
                       opts=pulumi.ResourceOptions(protect=True, retain_on_delete=True))
        """,
    )
    plan = run_program(program, "p", "s", {"aws:region": "us-east-1"}, [])
    v = plan.one("aws:ebs/volume:Volume", "v")
    assert v.inputs["size"] == 100 and isinstance(v.inputs["size"], int)
    assert v.protect and v.retain_on_delete


def test_plan_round_trips_through_json(example_plans: dict[str, Plan]) -> None:
    import json

    plan = example_plans["aws-train"]
    again = Plan.from_dict(json.loads(plan.to_json()))
    assert again.to_json() == plan.to_json()


def test_stack_file_reader_keeps_the_path() -> None:
    stack = read_stack(ROOT, "hybrid")
    assert isinstance(stack, StackFile) and stack.path.name == "Pulumi.hybrid.yaml"
    assert stack.window() is None


def test_a_run_skips_source_positions_and_pauses_the_collector_then_restores_both(tmp_path: Path) -> None:
    """Under the mocks nothing reads the SDK's per-resource stack traces; the engine skips them during a run only
    (pulumi/runtime/resource.py `_get_stack_trace`, pulumi 3.x) and pauses the cyclic collector."""
    import gc

    from pulumi.runtime import resource as sdk_resource

    original = sdk_resource._get_stack_trace
    assert gc.isenabled()
    (tmp_path / "__main__.py").write_text(
        "import gc\nimport pulumi\nfrom pulumi.runtime import resource\n"
        "pulumi.CustomResource('test:index:Thing', 'thing', {})\n"
        "pulumi.export('trace', resource._get_stack_trace.__module__)\n"
        "pulumi.export('collecting', gc.isenabled())\n"
    )
    plan = run_program(tmp_path / "__main__.py", "proj", "s", {}, [])
    assert plan.outputs == {"trace": "gpufleet.engine.synth", "collecting": False}
    assert original.__module__ == "pulumi.runtime.resource"
    assert sdk_resource._get_stack_trace is original
    assert gc.isenabled()


def test_collector_paused_leaves_a_disabled_collector_disabled() -> None:
    import gc

    from gpufleet.engine.synth import collector_paused

    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError])
def test_a_run_cut_short_leaves_no_report_of_its_unfinished_tasks(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, stop: type[BaseException]
) -> None:
    # A run stopped at its fifth registration (Ctrl-C, or an error) leaves the SDK's tasks pending; destroyed with
    # the loop, asyncio printed "Task was destroyed but it is pending!" for each and "Exception ignored in:
    # <coroutine object run_pulumi_func>" with a traceback, after the command had reported what went wrong.
    import gc

    from gpufleet.engine import synth as engine

    registered = engine._RecordingMocks.new_resource
    seen: list[str] = []

    def new_resource(self: engine._RecordingMocks, args: pulumi.runtime.MockResourceArgs) -> object:
        seen.append(args.name)
        if len(seen) == 5:
            raise stop("stop")
        return registered(self, args)

    monkeypatch.setattr(engine._RecordingMocks, "new_resource", new_resource)
    unraisable: list[str] = []  # "Exception ignored in: ..." (sys.unraisablehook, which pytest also wraps)
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(f"{u.err_msg}: {u.object!r}"))
    outcome = ""
    try:
        synth(ROOT, "onprem")
    except (stop, SynthError, pulumi.RunError) as err:
        outcome = type(err).__name__  # the exception and its frames are dropped on leaving the handler
    assert outcome
    gc.collect()  # what destroys the abandoned tasks and coroutines
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
    assert unraisable == []


def test_kueue_queues_flavors_and_topologies_wait_for_their_delete(example_plans: dict[str, Plan]) -> None:
    # Kueue keeps a ClusterQueue while workloads hold quota in it, a flavor while a ClusterQueue names it and a
    # Topology while a flavor names it; pulumi-kubernetes gives up on a delete after 10 minutes by default.
    from components.kubernetes.kueue import QUEUE_DELETE_TIMEOUT

    kinds = ("ClusterQueue", "ResourceFlavor", "Topology")
    objects = [r for plan in example_plans.values() for r in plan.kubernetes_objects()]
    held = [r for r in objects if r.inputs["kind"] in kinds]
    assert {r.inputs["kind"] for r in held} == set(kinds)
    assert any("KueueManager" in r.key for r in held)  # the hybrid manager's too
    assert [r.key for r in held if r.delete_timeout != QUEUE_DELETE_TIMEOUT] == []
    assert all(r.delete_timeout == "" for r in objects if r.inputs["kind"] == "LocalQueue")
