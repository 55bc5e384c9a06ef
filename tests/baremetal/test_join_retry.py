"""A failed kubeadm join retried later: a plain `up` mints a fresh token for a server not yet joined (the
join-attempt probe), a joined server's steps stay unchanged, and a token's expiry travels with it, so a join that
finds it passed says what to do instead of failing on an unknown token."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path
from typing import Any

import pytest

from components.baremetal.bootstrap import JOIN_ATTEMPT_ANNOTATION, minted_token, remote_command
from gpufleet.engine import synth as synth_module
from gpufleet.engine.plan import Plan
from tests.baremetal.helpers import SAMPLE, onprem_spec, scripts_for
from tests.baremetal.test_hostile_values import Sandbox, needs_sandbox
from tests.conftest import ROOT


def _stamp(delta: dt.timedelta) -> str:
    return (dt.datetime.now(dt.UTC) + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def _join(tmp_path: Path, stdin: str) -> tuple[int, str, list[list[str]]]:
    sandbox = Sandbox(tmp_path / "sandbox")
    result = sandbox.run(["/bin/sh", "-c", remote_command(scripts_for(onprem_spec()).join, "root")], stdin=stdin)
    return result.returncode, result.stderr, [c for c in sandbox.calls() if c[0] == "kubeadm"]


def test_the_join_token_step_prints_the_token_then_its_expiry() -> None:
    minted = minted_token("abcdef.0123456789abcdef\n2026-12-03T01:00:00Z\n")
    assert (minted.token, minted.expires, minted.token_id) == (
        "abcdef.0123456789abcdef",
        "2026-12-03T01:00:00Z",
        "abcdef",
    )


@needs_sandbox
def test_a_join_with_a_live_minted_token_joins(tmp_path: Path) -> None:
    code, stderr, kubeadm = _join(tmp_path, f"abcdef.0123456789abcdef\nsha256:00\n{_stamp(dt.timedelta(hours=3))}\n")
    assert code == 0, stderr
    assert kubeadm and kubeadm[0][1] == "join"


@needs_sandbox
def test_a_join_past_the_tokens_expiry_names_the_fix_and_runs_nothing(tmp_path: Path) -> None:
    """kubeadm would fail with an unknown-token error (the token cleaner deletes expired bootstrap tokens:
    kubernetes.io/docs/reference/access-authn-authz/bootstrap-tokens/); the join stops first and says a plain
    `up` mints a fresh one (only an `up` that outlives the TTL gets here)."""
    code, stderr, kubeadm = _join(tmp_path, f"abcdef.0123456789abcdef\nsha256:00\n{_stamp(-dt.timedelta(minutes=1))}\n")
    assert code == 2
    assert "expired" in stderr and "Run pulumi up again" in stderr and "--replace" not in stderr
    assert kubeadm == []


@needs_sandbox
def test_a_token_from_config_carries_no_expiry_and_joins(tmp_path: Path) -> None:
    code, stderr, kubeadm = _join(tmp_path, "abcdef.0123456789abcdef\nsha256:00\n")
    assert code == 0, stderr
    assert kubeadm


# -- the plan: a fresh token for a server not yet joined, the same one for a joined server -------------------------

_SIG, _SECRET_SIG, _OUTPUT_SIG = (
    "4dabf18193072939515e22adb298388d",
    "1b47061264138c4ac30d75fd1eb44270",
    ("d0e6a833031e9bbcd3f4e8bde6ca49a4"),
)


def _reveal(value: Any) -> Any:
    """A recorded input with its secrets opened (the Plan masks them; the test needs the join attempt inside)."""
    if isinstance(value, dict):
        if value.get(_SIG) in (_SECRET_SIG, _OUTPUT_SIG):
            return _reveal(value.get("value"))
        return {k: _reveal(v) for k, v in value.items()}
    return value


def _join_steps(monkeypatch: pytest.MonkeyPatch, attempts: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The onprem plan's join-token and node-ready environments, the probe answering `attempts` (node name ->
    its stdout; any other node: the offline answer)."""
    recorded: dict[str, dict[str, Any]] = {}

    def probe(args: dict[str, Any]) -> dict[str, Any]:
        answer = synth_module._local_run(args)
        node = str(_reveal(args.get("environment") or {}).get("GPUFLEET_NODE"))
        return {**answer, "stdout": attempts.get(node, answer["stdout"])}

    real_plan = synth_module._plan

    def capture(project: str, stack: str, monitor: Any, warnings: list[str]) -> Plan:
        for reg in monitor.registrations.values():
            if reg.name.endswith(("-join-token", "-node-ready")):
                recorded[reg.name] = _reveal(reg.inputs).get("environment") or {}
        return real_plan(project, stack, monitor, warnings)

    with monkeypatch.context() as patch:
        patch.setitem(synth_module.INVOKES, "command:local:run", probe)
        patch.setattr(synth_module, "_plan", capture)
        synth_module.synth(ROOT, "onprem")
    return recorded


def test_a_join_retried_after_the_tokens_ttl_mints_a_fresh_token_for_a_server_not_yet_joined(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The join-attempt probe runs on every up; its answer is in the token step's environment, so a server the
    cluster does not know yet gets a new answer, an update of the token step (a fresh token, TTL from now), while a
    joined server answers what node-ready recorded on it: no change, no token, no re-join."""
    first = _join_steps(monkeypatch, {SAMPLE: "20261202T010000Z-aaaa\n", "gpu-r1-02": "20261201T010000Z-bbbb\n"})
    retry = _join_steps(monkeypatch, {SAMPLE: "20261202T030000Z-cccc\n", "gpu-r1-02": "20261201T010000Z-bbbb\n"})
    token, joined = f"dc1-{SAMPLE}-join-token", "dc1-gpu-r1-02-join-token"
    assert first[token]["GPUFLEET_JOIN_ATTEMPT"] == "20261202T010000Z-aaaa"
    assert retry[token]["GPUFLEET_JOIN_ATTEMPT"] == "20261202T030000Z-cccc"  # not joined: minted again
    assert first[joined] == retry[joined]  # joined: the same inputs, so nothing runs
    # node-ready records the attempt on the node, which is what the probe answers for it from then on
    assert retry[f"dc1-{SAMPLE}-node-ready"]["GPUFLEET_JOIN_ATTEMPT"] == "20261202T030000Z-cccc"


def test_offline_the_probe_answers_a_constant_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = _join_steps(monkeypatch, {})
    assert {env["GPUFLEET_JOIN_ATTEMPT"] for env in steps.values()} == {synth_module.OFFLINE_JOIN_ATTEMPT}
    with pytest.raises(ValueError, match="join-attempt"):
        synth_module._local_run({"command": "#!/bin/sh\necho hi\n"})


@needs_sandbox
@pytest.mark.parametrize(
    ("node", "expected"),
    [
        ({"annotations": {JOIN_ATTEMPT_ANNOTATION: "20261202T010000Z-aaaa"}}, "20261202T010000Z-aaaa"),
        ({"annotations": {}}, "joined"),
        (None, None),
    ],
)
def test_the_probe_answers_the_recorded_attempt_joined_or_a_fresh_one(
    tmp_path: Path, node: dict[str, Any] | None, expected: str | None
) -> None:
    """Run the probe with a fake kubectl: a Node with the annotation, one without (joined before gpufleet recorded
    attempts), no Node."""
    script = scripts_for(onprem_spec()).join_attempt
    assert script is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kubectl = bin_dir / "kubectl"
    annotations = (node or {}).get("annotations", {})
    value = next(iter(annotations.values()), "")
    kubectl.write_text(
        "#!/bin/sh\n" + ("exit 1\n" if node is None else "") + 'case "$*" in *jsonpath*) printf %s "$VALUE";; esac\n'
    )
    kubectl.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "GPUFLEET_NODE": SAMPLE, "GPUFLEET_KUBECONFIG": "k", "VALUE": value}
    out = subprocess.run(["/bin/bash", "-c", script.text], env=env, capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert len(lines) == 1
    if expected is not None:
        assert lines[0] == expected
    else:
        assert lines[0] != "joined" and len(lines[0]) > len("20261202T010000Z-")
