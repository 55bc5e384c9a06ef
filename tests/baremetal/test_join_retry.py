"""A failed kubeadm join retried later: the minted token's expiry travels with it, and the join says what to do
when it has passed instead of failing on an unknown token."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from components.baremetal.bootstrap import minted_token, remote_command
from tests.baremetal.helpers import onprem_spec, scripts_for
from tests.baremetal.test_hostile_values import Sandbox, needs_sandbox


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
def test_a_retried_join_past_the_tokens_expiry_names_the_fix_and_runs_nothing(tmp_path: Path) -> None:
    """kubeadm would fail with an unknown-token error (the token cleaner deletes expired bootstrap tokens:
    kubernetes.io/docs/reference/access-authn-authz/bootstrap-tokens/); the join stops first, naming the step to
    replace."""
    code, stderr, kubeadm = _join(tmp_path, f"abcdef.0123456789abcdef\nsha256:00\n{_stamp(-dt.timedelta(minutes=1))}\n")
    assert code == 2
    assert "expired" in stderr and "pulumi up --replace" in stderr and "join-token" in stderr
    assert kubeadm == []


@needs_sandbox
def test_a_token_from_config_carries_no_expiry_and_joins(tmp_path: Path) -> None:
    code, stderr, kubeadm = _join(tmp_path, "abcdef.0123456789abcdef\nsha256:00\n")
    assert code == 0, stderr
    assert kubeadm
