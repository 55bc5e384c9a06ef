"""The local API steps (node-ready, drain, node-delete), run with bash against a fake kubectl on PATH."""

from __future__ import annotations

import datetime as dt
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.baremetal.helpers import onprem_spec, scripts_for

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

KUBECONFIG = "apiVersion: v1\nkind: Config\n# token: not-a-real-one\n"


def run_step(tmp_path: Path, text: str, *, node_exists: bool) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run a step script; the fake kubectl records each call and the kubeconfig it was handed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    log = tmp_path / "calls"
    kubectl = bin_dir / "kubectl"
    kubectl.write_text(
        "#!/bin/bash\n"
        f'printf "%s\\n" "$*" >> "{log}"\n'
        '[ "$1" = --kubeconfig ] && cat "$2" > "' + str(tmp_path / "seen-kubeconfig") + '"\n'
        f'if [ "$3" = get ]; then exit {0 if node_exists else 1}; fi\n'
        "exit 0\n"
    )
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IEXEC)
    script = tmp_path / "step.sh"
    script.write_text(text)
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "GPUFLEET_NODE": "gpu-r1-01",
        "GPUFLEET_KUBECONFIG": KUBECONFIG,
        "TMPDIR": str(tmp_path),
    }
    result = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=30)
    calls = log.read_text().splitlines() if log.exists() else []
    return result, calls


def _without_kubeconfig_path(call: str) -> str:
    return call.split(" ", 2)[2]  # drop "--kubeconfig <tmpfile>"


def test_drain_cordons_and_drains_through_the_api(tmp_path: Path) -> None:
    result, calls = run_step(tmp_path, scripts_for(onprem_spec()).node_drain.text, node_exists=True)
    assert result.returncode == 0, result.stderr
    assert [_without_kubeconfig_path(c) for c in calls] == [
        "get node gpu-r1-01",
        "drain gpu-r1-01 --ignore-daemonsets --delete-emptydir-data --timeout=30m",
    ]
    assert (tmp_path / "seen-kubeconfig").read_text() == KUBECONFIG + "\n"


def test_drain_of_a_node_that_left_already_does_nothing(tmp_path: Path) -> None:
    result, calls = run_step(tmp_path, scripts_for(onprem_spec()).node_drain.text, node_exists=False)
    assert result.returncode == 0
    assert [_without_kubeconfig_path(c) for c in calls] == ["get node gpu-r1-01"]
    assert "nothing to drain" in result.stdout


def test_node_delete_tolerates_a_missing_node(tmp_path: Path) -> None:
    result, calls = run_step(tmp_path, scripts_for(onprem_spec()).node_delete.text, node_exists=False)
    assert result.returncode == 0
    assert [_without_kubeconfig_path(c) for c in calls] == ["delete node gpu-r1-01 --ignore-not-found"]


def test_kubeconfig_lives_in_a_temp_file_removed_after_the_step(tmp_path: Path) -> None:
    result, calls = run_step(tmp_path, scripts_for(onprem_spec()).node_ready.text, node_exists=True)
    assert result.returncode == 0
    get, call = calls
    assert _without_kubeconfig_path(get) == "get node gpu-r1-01"
    kubeconfig_file = call.split(" ")[1]
    assert kubeconfig_file.startswith(str(tmp_path)) and not Path(kubeconfig_file).exists()
    assert KUBECONFIG.strip() not in call  # never on a command line
    assert re.fullmatch(r"wait --for=condition=Ready node/gpu-r1-01 --timeout=\d+s", _without_kubeconfig_path(call))
    assert 890 <= int(call.rsplit("=", 1)[1].removesuffix("s")) <= 900  # the 15 minutes, less the registration


def _unregistered_for(tmp_path: Path, misses: int) -> Path:
    """A fake kubectl whose `get node` answers NotFound `misses` times, then finds the node (as after a join,
    before the kubelet registers), and a `sleep` that returns at once."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    count, log = tmp_path / "gets", tmp_path / "calls"
    (bin_dir / "kubectl").write_text(
        "#!/bin/bash\n"
        f'printf "%s\\n" "$*" >> "{log}"\n'
        'if [ "$3" = get ]; then\n'
        f'  n=$(cat "{count}" 2>/dev/null || echo 0); echo $((n + 1)) > "{count}"\n'
        f'  [ "$n" -ge {misses} ] || {{ echo "Error from server (NotFound)" >&2; exit 1; }}\n'
        "fi\n"
        'if [ "$3" = wait ]; then n=$(cat "' + str(count) + '"); [ "$n" -gt ' + str(misses) + " ] || exit 1; fi\n"
        "exit 0\n"
    )
    (bin_dir / "sleep").write_text("#!/bin/bash\nexit 0\n")
    for tool in ("kubectl", "sleep"):
        (bin_dir / tool).chmod(0o755)
    return bin_dir


def _run_ready(tmp_path: Path, bin_dir: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    script = tmp_path / "step.sh"
    script.write_text(scripts_for(onprem_spec()).node_ready.text)
    base = {"PATH": f"{bin_dir}:/usr/bin:/bin", "GPUFLEET_NODE": "gpu-r1-01", "GPUFLEET_KUBECONFIG": KUBECONFIG}
    result = subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, env={**base, "TMPDIR": str(tmp_path), **env}, timeout=30
    )
    log = tmp_path / "calls"
    return result, [_without_kubeconfig_path(c) for c in (log.read_text().splitlines() if log.exists() else [])]


def test_node_ready_waits_for_a_node_not_yet_registered(tmp_path: Path) -> None:
    """`kubectl wait --for=condition=Ready node/X` fails at once with NotFound when the Node object does not exist
    yet (kubernetes/kubectl#1516); right after a join the kubelet has not registered it, so the step waits for the
    object first, then for Ready."""
    result, calls = _run_ready(tmp_path, _unregistered_for(tmp_path, misses=3))
    assert result.returncode == 0, result.stderr
    assert calls[:4] == ["get node gpu-r1-01"] * 4
    assert calls[4].startswith("wait --for=condition=Ready node/gpu-r1-01 --timeout=")
    assert len(calls) == 5  # no token to delete: the token came from config, or EKS Hybrid Nodes


def test_node_ready_deletes_the_minted_token_once_ready(tmp_path: Path) -> None:
    """A joined server leaves no join credential behind: the minted bootstrap token's Secret is deleted
    (bootstrap tokens: kubernetes.io/docs/reference/access-authn-authz/bootstrap-tokens/)."""
    result, calls = _run_ready(tmp_path, _unregistered_for(tmp_path, misses=0), GPUFLEET_TOKEN_ID="abcdef")
    assert result.returncode == 0, result.stderr
    assert calls[-1] == "--namespace kube-system delete secret bootstrap-token-abcdef --ignore-not-found"


# -- join-token: a bootstrap token minted just before a server joins ------------------------------------------

TOKEN = re.compile(r"^([a-z0-9]{6})\.([a-z0-9]{16})$")  # kubeadm's bootstrap token format


def test_join_token_step_mints_a_day_long_kubeadm_bootstrap_token(tmp_path: Path) -> None:
    """A bootstrap token is a Secret `bootstrap-token-<token-id>` of type bootstrap.kubernetes.io/token in
    kube-system with token-id, token-secret, expiration (RFC 3339), the usage flags and auth-extra-groups
    (kubernetes.io/docs/reference/access-authn-authz/bootstrap-tokens/); system:bootstrappers:kubeadm:default-node-token
    is the group kubeadm binds node bootstrap to. The token is the step's only stdout line; nothing else is."""
    script = scripts_for(onprem_spec()).join_token
    assert script is not None
    before = dt.datetime.now(dt.UTC)
    result, calls = run_step(tmp_path, script.text, node_exists=False)
    assert result.returncode == 0, result.stderr
    token_line, expiry_line = result.stdout.splitlines()
    match = TOKEN.match(token_line)
    assert match and result.stdout.count("\n") == 2, result.stdout
    token_id, token_secret = match.groups()
    (call,) = [_without_kubeconfig_path(c) for c in calls]
    args = call.split(" ")
    assert args[:7] == [
        "--namespace",
        "kube-system",
        "create",
        "secret",
        "generic",
        f"bootstrap-token-{token_id}",
        "--type",
    ]
    assert args[7] == "bootstrap.kubernetes.io/token"
    literals = dict(
        a.removeprefix("--from-literal=").split("=", 1) for a in args[8:] if a.startswith("--from-literal=")
    )
    assert literals["token-id"] == token_id and literals["token-secret"] == token_secret
    assert literals["usage-bootstrap-authentication"] == "true" and literals["usage-bootstrap-signing"] == "true"
    assert literals["auth-extra-groups"] == "system:bootstrappers:kubeadm:default-node-token"
    expires = dt.datetime.strptime(literals["expiration"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    assert expiry_line == literals["expiration"]
    # An hour, well past a join and its wait for Ready: a failed join retried later gets a fresh token (the
    # join-attempt probe), so no token needs to outlive one `up` (node-ready deletes it sooner).
    assert dt.timedelta(minutes=55) < expires - before <= dt.timedelta(minutes=61)
    assert token_secret not in result.stderr  # the log line names the token id only


def test_two_mints_give_two_tokens(tmp_path: Path) -> None:
    script = scripts_for(onprem_spec()).join_token
    assert script is not None
    first, _ = run_step(tmp_path / "a", script.text, node_exists=False)
    second, _ = run_step(tmp_path / "b", script.text, node_exists=False)
    assert first.stdout != second.stdout


def test_node_ready_timing_out_prints_the_last_kubectl_error(tmp_path: Path) -> None:
    """An unreachable API server or a refused credential fails every `get node` as NotFound would: the timeout
    message carries the last error, not only "did not register"."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    clock = tmp_path / "clock"
    (bin_dir / "kubectl").write_text(
        "#!/bin/bash\necho 'Unable to connect to the server: dial tcp 10.0.0.1:6443: i/o timeout' >&2\nexit 1\n"
    )
    # each `date +%s` is 600s after the last: the 900s deadline passes on the second try
    (bin_dir / "date").write_text(
        f'#!/bin/bash\nn=$(cat "{clock}" 2>/dev/null || echo 0); echo $((n + 600)) > "{clock}"; echo $((n + 600))\n'
    )
    (bin_dir / "sleep").write_text("#!/bin/bash\nexit 0\n")
    for tool in ("kubectl", "date", "sleep"):
        (bin_dir / tool).chmod(0o755)
    result, _ = _run_ready(tmp_path, bin_dir)
    assert result.returncode == 1
    assert "did not register within 900s" in result.stderr
    assert "last error: Unable to connect to the server: dial tcp 10.0.0.1:6443: i/o timeout" in result.stderr
