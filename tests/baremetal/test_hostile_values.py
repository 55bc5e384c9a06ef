"""No stack value ever becomes a shell command: every template quotes every value, and a script rendered with
hostile values (quotes, newlines, `$(...)`, backticks, `;`, globs) runs nothing but what it names.

The scripts are rendered through `render_server`, the path the components take, from spec objects whose values
the schema would refuse (model_copy skips validation: the schema is the first belt, quoting the second). Each runs
in a sandbox: its own mount namespace with fresh /etc, /var and /mnt, `env -i`, a fresh HOME and TMPDIR, and a
PATH of stubs for every tool that could change a host (kubeadm, nodeadm, kubectl, mdadm, mount, ...), which only
record their arguments.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import jinja2
import pytest
import yaml
from jinja2 import nodes

from components.baremetal import bootstrap
from components.baremetal.bootstrap import Script, kubelet_flags, node_labels, remote_command, render_server
from model.nodes import pool_taints
from model.spec import ScratchTier
from tests.baremetal.helpers import SAMPLE, onprem_spec, server_of

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

MARK = "pwned"  # the file a payload creates if it ever runs
PAYLOADS = {
    "single-quote": "x'; touch {mark}; echo '",
    "double-quote": 'x"; touch {mark}; echo "',
    "substitution": "$(touch {mark})",
    "redirect": "$(: >{mark})",
    "backticks": "`touch {mark}`",
    "newline": "x\ntouch {mark}\n",
    "semicolon": "a; touch {mark} #",
    "backslash-newline": "\\\n$(touch {mark})",
    "ifs": "${{IFS}}touch${{IFS}}{mark}",
    "globs": "* ?[a-z] ~root {{a,b}} {mark}",
}
# Tools a script may run for real: inside the sandbox they change nothing but its own fresh directories.
TOOLS = ("awk", "bash", "cat", "cp", "cut", "date", "grep", "head", "mkdir", "mktemp", "paste", "rm", "sed", "sort")
TOOLS += ("tr", "wc")
# Every other tool the scripts call, as a stub that records its arguments (one file of NUL-separated words a call).
STUBS = {
    "kubeadm": 'cp /etc/default/kubelet "$LOG/kubelet-extra-args" 2>/dev/null || true',
    "nodeadm": '[ "$1" != init ] || cp "${3#file://}" "$LOG/nodeconfig"',
    "kubectl": "",
    "systemctl": "",  # "active": the join and leave steps then go all the way
    "nvidia-smi": "for i in 1 2 3 4 5 6 7 8; do echo 'NVIDIA H100 80GB HBM3, 81559, 580.126.20'; done",
    "lspci": 'for b in 18 2a 3a 5d 9a ab ba db; do echo "$b:00.0 0302: 10de:2330 (rev a1)"; done',
    "lsmod": "echo 'Module Size Used by'",
    "modinfo": "echo 'Dual MIT/GPL'",
    "ibstat": "printf 'State: Active\\nPhysical state: LinkUp\\nRate: 400\\n'",
    "lsblk": "echo 'disk nvme'",
    "mountpoint": "exit 1",
    "findmnt": "exit 1",
    "blkid": "exit 2",
    "mdadm": "",
    "mkfs.xfs": "",
    "mount": "",
    "touch": "",  # the payloads' own weapon: a call is recorded, never made
}
SANDBOX = (
    "set -e; for d in /etc /var /mnt; do mount -t tmpfs gpufleet-sandbox $d; done; "
    'mkdir -p /etc/default /etc/cni/net.d /etc/mdadm; touch /etc/fstab; exec "$@"'
)


def _can_sandbox() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = ["unshare", "-r", "-m", "/bin/sh", "-c", "mount -t tmpfs gpufleet-probe /mnt"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


# -- every template quotes every value ---------------------------------------------------------------------------


def _outputs(template: str) -> Iterator[nodes.Expr]:
    source = bootstrap.TEMPLATES.joinpath(template).read_text()
    for output in bootstrap._ENV.parse(source).find_all(nodes.Output):
        yield from (n for n in output.nodes if not isinstance(n, nodes.TemplateData))


TEMPLATES = sorted(p.name for p in bootstrap.TEMPLATES.glob("*.j2"))


@pytest.mark.parametrize("template", TEMPLATES)
def test_every_value_a_template_prints_goes_through_the_shell_quote(template: str) -> None:
    for expr in _outputs(template):
        assert isinstance(expr, nodes.Filter) and expr.name in ("q", "qwords"), (
            f"{template}: line {expr.lineno} prints a value without `| q` (or `| qwords` for a list)"
        )


@pytest.mark.parametrize("template", TEMPLATES)
def test_values_sit_outside_comments_quotes_and_here_documents(template: str) -> None:
    """A quoted word is one word only where the shell reads words: not in a comment (a newline ends it), not inside
    '...' or "..." (where `$(...)` still runs), not in a here-document."""
    text = bootstrap.TEMPLATES.joinpath(template).read_text()
    assert "<<" not in text, f"{template}: a here-document expands what it holds; print values with printf"
    for number, line in enumerate(text.splitlines(), 1):
        if "{{" not in line:
            continue
        assert not line.lstrip().startswith("#"), f"{template}:{number}: a value in a comment"
        before = line[: line.index("{{")]
        assert before.count("'") % 2 == 0 and before.count('"') % 2 == 0, f"{template}:{number}: a value in quotes"


@pytest.mark.parametrize(
    ("value", "word"),
    [("plain", "plain"), ("it's", "'it'\"'\"'s'"), ("$(x)", "'$(x)'"), ("", "''"), (None, "''"), (8, "8")],
)
def test_the_shell_quote_makes_one_word_of_anything(value: object, word: str) -> None:
    assert bootstrap.shell_quote(value) == word
    assert bootstrap.shell_words(["a b", None]) == "'a b' ''"


def test_the_shell_quote_is_the_one_filter_and_autoescape_is_off() -> None:
    assert bootstrap._ENV.filters["q"] is bootstrap.shell_quote
    assert bootstrap._ENV.autoescape is False
    assert isinstance(bootstrap._ENV.undefined, type) and issubclass(bootstrap._ENV.undefined, jinja2.StrictUndefined)


# -- hostile values, rendered and run -------------------------------------------------------------------------------

VARIANTS = {
    # method, driver_managed_by, NVMe devices
    "kubeadm-host-raid": ("kubeadm", "host", 2),
    "kubeadm-operator-disk": ("kubeadm", "operator", 1),
    "eks-hybrid-operator-raid": ("eks-hybrid", "operator", 2),
}


class Hostile:
    """The sample server's scripts with `payload` in every stack value that reaches them."""

    def __init__(self, variant: str, payload: str, mark: Path) -> None:
        method, driver, disks = VARIANTS[variant]
        text = payload.format(mark=mark)
        self.values: set[str] = set()
        spec = onprem_spec()
        site, pool, server = server_of(spec, SAMPLE)

        def v(field: str) -> str:
            self.values.add(f"{field}{text}")
            return f"{field}{text}"

        self.server = server.model_copy(
            update={
                "hostname": v("host"),
                "ib_ports": [v("ib0"), v("ib1")],
                "nvme_devices": [v(f"/dev/nvme{i}") for i in range(disks)],
                "driver_version": v("driver"),
                "rack": v("rack"),
                "leaf": v("leaf"),
                "rail": v("rail"),
            }
        )
        kubernetes = site.kubernetes.model_copy(
            update={
                "driver_version": v("site-driver"),
                "driver_managed_by": driver,
                "gpudirect_rdma": "dma-buf" if driver == "host" else None,
            }
        )
        join = site.join.model_copy(
            update={"method": method, "api_server": v("api"), "cluster_name": v("cluster"), "region": v("region")}
        )
        mount = "/mnt/" + v("mount")
        self.values.add(mount)
        storage = [
            t.model_copy(update={"mount_path": mount}) if isinstance(t, ScratchTier) else t for t in site.storage
        ]
        self.site = site.model_copy(update={"kubernetes": kubernetes, "join": join, "storage": storage})
        self.pool = pool.model_copy(update={"labels": {**pool.labels, "example.com/hostile": v("label")}})
        self.scripts = render_server(spec, self.site, self.pool, self.server)
        self.flags = kubelet_flags(node_labels(spec, self.pool, self.server), pool_taints(self.pool))


class Sandbox:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        self.log = root / "log"
        self.home = root / "home"
        self.tmp = root / "tmp"
        for d in (self.bin, self.log, self.home, self.tmp):
            d.mkdir(parents=True)
        for tool in TOOLS:
            found = shutil.which(tool)
            assert found, f"the sandbox needs {tool}"
            (self.bin / tool).symlink_to(Path(found).resolve())  # /etc/alternatives is hidden here
        for name, body in STUBS.items():
            stub = self.bin / name
            stub.write_text(
                "#!/bin/bash\n"
                f"LOG={self.log}\n"
                f'printf "%s\\0" {name} "$@" > "$LOG/call.${{EPOCHREALTIME/./}}.$$"\n'
                f"{body}\n"
            )
            stub.chmod(0o755)

    def run(
        self, command: list[str], stdin: str = "", env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        environment = [
            f"PATH={self.bin}",
            f"HOME={self.home}",
            f"TMPDIR={self.tmp}",
            *(f"{k}={v}" for k, v in (env or {}).items()),
        ]
        argv = ["unshare", "-r", "-m", "/bin/sh", "-c", SANDBOX, "sandbox", "env", "-i", *environment, *command]
        return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60, check=False, cwd=self.root)

    def calls(self) -> list[list[str]]:
        files = sorted(self.log.glob("call.*"), key=lambda p: p.name)
        return [p.read_bytes().decode().split("\0")[:-1] for p in files]


def _run_all(hostile: Hostile, sandbox: Sandbox) -> dict[str, subprocess.CompletedProcess[str]]:
    """Each script the way its Command runs it: remote steps as the SSH command line (`bash -c '<script>'`) read by
    a shell, local steps as `/bin/bash -c <script>` with the node name and kubeconfig in the environment."""
    scripts = hostile.scripts
    remote = {"preflight": scripts.preflight, "scratch": scripts.scratch, "join": scripts.join, "leave": scripts.leave}
    local = {"node-ready": scripts.node_ready, "node-drain": scripts.node_drain, "node-delete": scripts.node_delete}
    if scripts.join_token is not None:
        local["join-token"] = scripts.join_token
    results = {}
    for name, script in remote.items():
        assert isinstance(script, Script)
        stdin = "token-or-code\nhash-or-id\n" if name == "join" else ""
        results[name] = sandbox.run(["/bin/sh", "-c", remote_command(script, "root")], stdin=stdin)
    node = {"GPUFLEET_NODE": hostile.server.hostname, "GPUFLEET_KUBECONFIG": "apiVersion: v1"}
    for name, script in local.items():
        results[name] = sandbox.run(["/bin/bash", "-c", script.text], env=node)
    return results


needs_sandbox = pytest.mark.skipif(not _can_sandbox(), reason="needs unshare -r -m (user and mount namespaces)")


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_hostile_values_render_to_valid_bash(variant: str, payload: str, tmp_path: Path) -> None:
    hostile = Hostile(variant, PAYLOADS[payload], tmp_path / MARK)
    for script in hostile.scripts.all():
        result = subprocess.run(["bash", "-n"], input=script.text, capture_output=True, text=True, check=False)
        assert result.returncode == 0, (script.name, result.stderr)


@needs_sandbox
@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_scripts_with_hostile_values_run_nothing_they_carry(variant: str, payload: str, tmp_path: Path) -> None:
    mark = tmp_path / MARK
    hostile = Hostile(variant, PAYLOADS[payload], mark)
    sandbox = Sandbox(tmp_path / "sandbox")
    results = _run_all(hostile, sandbox)

    assert not mark.exists(), "a payload ran"
    for name, result in results.items():
        assert "command not found" not in result.stderr, (name, result.stderr)  # the sandbox lacks nothing
        assert result.returncode in (0, 1), (name, result.returncode, result.stderr)
    calls = sandbox.calls()
    assert not [c for c in calls if c[0] == "touch"], "a payload's command was called"
    node = hostile.server.hostname
    # A word that carries part of a payload carries all of one value, and nothing else (or the two words the API
    # steps build around the node name).
    whole = hostile.values | {f"node/{node}", f"--from-literal=description=gpufleet join of {node}"}
    for call in calls:
        for word in call[1:]:
            if MARK in word:
                assert word in whole, (call[0], word)

    kubeadm_join = [c for c in calls if c[:2] == ["kubeadm", "join"]]
    method = VARIANTS[variant][0]
    if method == "kubeadm":
        assert results["join"].returncode == 0, results["join"].stderr
        assert kubeadm_join == [
            [
                "kubeadm", "join", hostile.site.join.api_server, "--token", "token-or-code",
                "--discovery-token-ca-cert-hash", "hash-or-id", "--node-name", hostile.server.hostname,
            ]
        ]  # fmt: skip
        extra_args = (sandbox.log / "kubelet-extra-args").read_text()
        assert extra_args == "KUBELET_EXTRA_ARGS=" + " ".join(hostile.flags) + "\n"
    else:
        assert results["join"].returncode == 0, results["join"].stderr
        config = yaml.safe_load((sandbox.log / "nodeconfig").read_text())
        assert config["spec"]["cluster"] == {"name": hostile.site.join.cluster_name, "region": hostile.site.join.region}
        assert config["spec"]["kubelet"]["flags"] == hostile.flags
        assert config["spec"]["hybrid"]["ssm"] == {"activationCode": "token-or-code", "activationId": "hash-or-id"}
    assert [c[1:] for c in calls if c[0] == "ibstat"] == [[p] for p in hostile.server.ib_ports]
    assert [c[1:] for c in calls if c[0] == "lsblk"] == [
        ["-d", "-n", "-o", "TYPE,TRAN", "--", d] for d in hostile.server.nvme_devices
    ]
    # The scratch step refuses a device that is not a block device, naming it as it is.
    assert results["scratch"].returncode == 1
    assert f"{hostile.server.nvme_devices[0]} is not a block device" in results["scratch"].stderr
    for step in ("node-ready", "node-drain", "node-delete"):
        assert results[step].returncode == 0, (step, results[step].stderr)
    kubectl_nodes = [c for c in calls if c[0] == "kubectl" and node in c]
    assert kubectl_nodes, "the API steps named the node"
