"""Bootstrap of inventory servers over SSH: preflight, scratch NVMe, join, and a clean leave on delete.

- Scripts are rendered from the jinja2 templates in `templates/`. Rendering is pure: the same spec gives
  byte-identical scripts.
- A changed script re-runs in place, only on the servers whose script changed. No Command sets `triggers`,
  because a changed trigger replaces the Command and runs its `delete` (`ServerBootstrap._ssh_step`).
- Every SSH connection checks the host's key from the inventory, unless the site opts out
  (`ssh.insecure_skip_host_key_check`, warned on every run).
- Secrets never reach a template. Join secrets travel on the Command's stdin, a secret Output; the kubeconfig
  of the API steps travels in the environment of local commands.
- Destroy runs the steps backwards, which is kubeadm's "remove a node" order (`ServerBootstrap`).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import jinja2
import pulumi
import pulumi_command as command

from model import catalog, versions
from model.conventions import Taint
from model.nodes import pool_labels, pool_taints, server_topology_labels
from model.spec import BaremetalNodePool, BaremetalSite, EstateSpec, InfinibandFabric, Join, ScratchTier, Server

TEMPLATES = Path(__file__).parent / "templates"
SCRATCH_FS_LABEL = "gf-scratch"  # XFS labels hold at most 12 characters
SCRATCH_MD_NAME = "gpufleet-scratch"
LOCAL_VOLUME_ROOT = "/mnt/gpufleet"  # the local volume provisioner's discovery directories live under here
# The kubelet's kubeconfig once a server has joined (kubeadm: kubeadm join writes it; EKS Hybrid Nodes: nodeadm
# init writes it). The join, leave and preflight scripts all decide "already a node" by it and an active kubelet.
KUBELET_KUBECONFIG = {"kubeadm": "/etc/kubernetes/kubelet.conf", "eks-hybrid": "/var/lib/kubelet/kubeconfig"}
READY_TIMEOUT_SECONDS = 15 * 60  # from the join's end: the Node registers, then turns Ready
# A minted token lives for an hour, well past a join and its wait for Ready; a failed join retried later gets a
# fresh one (the join-attempt probe), and the node-ready step deletes it as soon as the node is Ready, so a joined
# server leaves no credential behind.
JOIN_TOKEN_TTL_MINUTES = 60
# Where node-ready records the attempt a node joined with, which the join-attempt probe reads back.
JOIN_ATTEMPT_ANNOTATION = "gpufleet.io/join-attempt"
DRAIN_TIMEOUT = "30m"


def shell_quote(value: object) -> str:
    """One shell word that stands for `value` and nothing else (None: the empty word). Every value a template puts in a
    script goes through this (`| q`), or through `shell_words` (`| qwords`) for a list; jinja2's autoescape is for
    HTML and knows nothing of the shell."""
    return shlex.quote("" if value is None else str(value))


def shell_words(values: Iterable[object]) -> str:
    """Each value as its own quoted shell word, separated by spaces: the body of a bash array `(...)`."""
    return " ".join(shell_quote(v) for v in values)


# One module-level Environment: templates are loaded once, not per resource.
_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=False,
)
_ENV.filters["q"] = shell_quote
_ENV.filters["qwords"] = shell_words


@dataclass(frozen=True)
class Script:
    """A rendered script: its text (a changed text re-runs the step) and its sha256 (a short handle to compare texts by)."""

    name: str  # preflight, scratch, join-attempt, join-token, join, leave, node-ready, node-drain, node-delete
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


@dataclass(frozen=True)
class ServerScripts:
    preflight: Script
    scratch: Script | None
    join_attempt: Script | None  # with join.token minted (kubeadm)
    join_token: Script | None  # with join.token minted (kubeadm)
    join: Script
    leave: Script
    node_ready: Script
    node_drain: Script
    node_delete: Script

    def all(self) -> list[Script]:
        scripts = [
            self.preflight,
            self.scratch,
            self.join_attempt,
            self.join_token,
            self.join,
            self.leave,
            self.node_ready,
            self.node_drain,
        ]
        return [s for s in [*scripts, self.node_delete] if s is not None]


def render(template: str, **context: object) -> Script:
    name = template.removesuffix(".sh.j2")
    return Script(name, _ENV.get_template(template).render(**context))


def registration_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """Labels a kubelet may register itself with: NodeRestriction refuses kubernetes.io / k8s.io prefixes."""

    def restricted(key: str) -> bool:
        prefix = key.split("/", 1)[0] if "/" in key else ""
        return any(prefix == d or prefix.endswith("." + d) for d in ("kubernetes.io", "k8s.io"))

    return {k: v for k, v in sorted(labels.items()) if not restricted(k)}


def kubelet_flags(labels: Mapping[str, str], taints: list[Taint]) -> list[str]:
    flags = []
    allowed = registration_labels(labels)
    if allowed:
        flags.append("--node-labels=" + ",".join(f"{k}={v}" for k, v in allowed.items()))
    if taints:
        flags.append("--register-with-taints=" + ",".join(f"{t.key}={t.value}:{t.effect}" for t in taints))
    return flags


def nodeadm_config(join: Join, flags: list[str]) -> str:
    """The NodeConfig the eks-hybrid join writes, up to `spec.hybrid.ssm:`, whose two secret lines the script adds
    from stdin. Scalars are JSON strings, which YAML reads as they are (YAML 1.2 section 1.3: JSON is YAML)."""
    lines = [
        "apiVersion: node.eks.aws/v1alpha1",
        "kind: NodeConfig",
        "spec:",
        "  cluster:",
        f"    name: {json.dumps(join.cluster_name)}",
        f"    region: {json.dumps(join.region)}",
        "  kubelet:",
        "    flags:",
        *(f"      - {json.dumps(flag)}" for flag in flags),
        "  hybrid:",
        "    ssm:",
    ]
    return "\n".join(lines)


def node_labels(spec: EstateSpec, pool: BaremetalNodePool, server: Server) -> dict[str, str]:
    """Pool labels plus the server's rack / leaf / rail (what the NodePatch sets and the join registers)."""
    return {**pool_labels(spec, pool), **server_topology_labels(server)}


def scratch_tier(site: BaremetalSite) -> ScratchTier | None:
    return next((t for t in site.storage if isinstance(t, ScratchTier)), None)


def local_volume_dir(tier: ScratchTier) -> str:
    """Discovery directory of the local volume provisioner for a scratch tier."""
    return f"{LOCAL_VOLUME_ROOT}/{tier.name}"


def preflight_driver_version(site: BaremetalSite, server: Server) -> str | None:
    """The driver the preflight names: with `driver_managed_by: host` the version nvidia-smi must report (the
    server's, else the site's, else unchecked); with `operator` the one the GPU Operator will install (the site's
    pin or versions.GPU_DRIVER, as in gpu_operator.py), which the host must not have loaded."""
    if site.kubernetes.driver_managed_by == "host":
        return server.driver_version or site.kubernetes.driver_version
    return site.kubernetes.driver_version or versions.GPU_DRIVER


def preflight_gpudirect(site: BaremetalSite, pool: BaremetalNodePool) -> str | None:
    """What the preflight checks for GPUDirect RDMA: the site's `gpudirect_rdma` on a host-driver site's fabric
    pools (the schema requires it there), else nothing (the GPU Operator's fabric driver brings nvidia-peermem)."""
    if site.kubernetes.driver_managed_by == "host" and pool.fabric is not None:
        return site.kubernetes.gpudirect_rdma
    return None


def preflight_ipoib_interface(site: BaremetalSite, pool: BaremetalNodePool) -> str | None:
    """The IPoIB interface the preflight checks: the one the pool's InfiniBand fabric names as its IPoIB networks'
    `master`, when the fabric has them (ipoib-cni creates each pod's child link on it)."""
    fabric = next((f for f in site.fabrics if f.name == pool.fabric), None)
    return fabric.ipoib_interface if isinstance(fabric, InfinibandFabric) and fabric.ipoib else None


def render_server(spec: EstateSpec, site: BaremetalSite, pool: BaremetalNodePool, server: Server) -> ServerScripts:
    """Every script of one server. Pure: no Pulumi, no secrets; the same inputs give the same bytes."""
    gpu = catalog.gpu_model(server.gpu_model)
    labels = node_labels(spec, pool, server)
    taints = pool_taints(pool)
    flags = kubelet_flags(labels, taints)
    common = {
        "server": server,
        "pool": pool,
        "join": site.join,
        "kubelet_kubeconfig": KUBELET_KUBECONFIG[site.join.method],
    }
    tier = scratch_tier(site)
    scratch = None
    if tier is not None and server.nvme_devices:
        scratch = render(
            "scratch.sh.j2",
            **common,
            tier=tier.name,
            mount_path=tier.mount_path,
            bind_path=f"{local_volume_dir(tier)}/{SCRATCH_MD_NAME}",
            fs_label=SCRATCH_FS_LABEL,
            md_name=SCRATCH_MD_NAME,
        )
    kubeadm = site.join.method == "kubeadm"
    mints = site.join.mints_token
    return ServerScripts(
        preflight=render(
            "preflight.sh.j2",
            **common,
            gpu=gpu,
            driver_managed_by=site.kubernetes.driver_managed_by,
            driver_version=preflight_driver_version(site, server),
            gpudirect=preflight_gpudirect(site, pool),
            ipoib_interface=preflight_ipoib_interface(site, pool),
            nvlink_domain=server.nvlink_domain if pool.nvlink_domain_nodes > 1 else None,
        ),
        scratch=scratch,
        join_attempt=render("join-attempt.sh.j2", annotation=JOIN_ATTEMPT_ANNOTATION) if mints else None,
        join_token=render("join-token.sh.j2", ttl_minutes=JOIN_TOKEN_TTL_MINUTES) if mints else None,
        join=render(
            "join-kubeadm.sh.j2" if kubeadm else "join-eks-hybrid.sh.j2",
            **common,
            kubelet_extra_args=" ".join(flags),
            node_config="" if kubeadm else nodeadm_config(site.join, flags),
        ),
        leave=render("leave-kubeadm.sh.j2" if kubeadm else "leave-eks-hybrid.sh.j2", **common),
        node_ready=render(
            "node-ready.sh.j2",
            ready_timeout_seconds=READY_TIMEOUT_SECONDS,
            attempt_annotation=JOIN_ATTEMPT_ANNOTATION,
        ),
        node_drain=render("node-drain.sh.j2", drain_timeout=DRAIN_TIMEOUT),
        node_delete=render("node-delete.sh.j2"),
    )


def remote_command(script: Script, user: str) -> str:
    """The command line a remote step runs: the script as `bash -c` (as root through sudo for a non-root user).

    stdin passes through sudo to the script (the join reads its secrets there); environment variables would not
    (sudo resets them, and sshd accepts only AcceptEnv names), which is why secrets do not use `environment`.
    """
    run = f"bash -c {shlex.quote(script.text)} gpufleet-{script.name}"
    return run if user == "root" else f"sudo -n {run}"


def parse_node_name(stdout: str | None) -> str:
    """The `node-name=` line the eks-hybrid join prints last (SSM names the node after its managed instance)."""
    for line in reversed((stdout or "").splitlines()):
        if line.startswith("node-name="):
            return line.removeprefix("node-name=")
    return ""


def ssh_connection(
    site: BaremetalSite, server: Server, private_key: pulumi.Input[str]
) -> command.remote.ConnectionArgs:
    """SSH to the server (through the bastion, if any), checking each host's key where the inventory has one.
    The schema requires the keys unless the site sets ssh.insecure_skip_host_key_check; pulumi-command checks
    nothing when `host_key` is unset (provider/pkg/provider/remote/connection.go at v1.2.1)."""
    ssh = site.ssh
    proxy = None
    if ssh.bastion:
        user, _, host = ssh.bastion.rpartition("@")
        proxy = command.remote.ProxyConnectionArgs(
            host=host, user=user or ssh.user, private_key=private_key, host_key=ssh.bastion_host_key
        )
    return command.remote.ConnectionArgs(
        host=server.address, user=ssh.user, private_key=private_key, proxy=proxy, host_key=server.host_key
    )


@dataclass(frozen=True)
class ServerBootstrapArgs:
    spec: EstateSpec
    site: BaremetalSite
    pool: BaremetalNodePool
    server: Server
    scripts: ServerScripts
    secret: Callable[[str], pulumi.Output[str]]
    join_stdin: pulumi.Output[str] | None  # the site's join secrets (join_stdin(), once per site); None: minted


def join_stdin(
    site: BaremetalSite, secret: Callable[[str], pulumi.Output[str]], minted: pulumi.Output[str] | None = None
) -> pulumi.Output[str]:
    """The join secrets, one per line, for the join script's stdin: kubeadm token and CA-cert hash, or the SSM
    activation code and id. The token is `minted` (one server's join-token step) or read from config, once per
    site, every server's join step then reading the same secret Output."""
    join = site.join
    second = join.ca_hash_config if join.method == "kubeadm" else join.activation_id_config
    if minted is None:
        both = pulumi.Output.all(secret(join.token_config), secret(second))
        return pulumi.Output.secret(both.apply(lambda values: f"{values[0]}\n{values[1]}\n"))
    minted_lines = minted.apply(lambda out: minted_token(out or ""))
    every = pulumi.Output.all(minted_lines, secret(second))
    return pulumi.Output.secret(every.apply(lambda v: f"{v[0].token}\n{v[1]}\n{v[0].expires}\n"))


@dataclass(frozen=True)
class MintedToken:
    """What the join-token step prints: the token (`<id>.<secret>`) and its expiry (RFC 3339, UTC)."""

    token: str
    expires: str

    @property
    def token_id(self) -> str:
        """The token's public half, the name of its Secret (`bootstrap-token-<id>`)."""
        return self.token.split(".", 1)[0]


def minted_token(stdout: str) -> MintedToken:
    lines = [line.strip() for line in stdout.splitlines() if line.strip()] + ["", ""]
    return MintedToken(lines[0], lines[1])


class ServerBootstrap(pulumi.ComponentResource):
    """One inventory server's bootstrap: these Commands, in order of creation, each from a rendered script.

        node-delete (local; delete: kubectl delete node)
          -> preflight (remote; refuses a server that does not match the inventory; judges a joined server as joined)
          -> scratch (remote; only with a scratch tier and NVMe devices)
          -> join-token (local; kubeadm with join.token minted: a bootstrap token valid for an hour, minted
             again whenever the join-attempt probe, run on every preview and up, answers a new attempt: a server
             not yet joined)
          -> join (remote; kubeadm join / nodeadm init; delete: kubeadm reset / nodeadm uninstall)
          -> node-ready (local; waits for Ready, deletes a minted token, records the attempt on the node;
             delete: kubectl drain)
          -> NodePatch (labels and taints; see node_patch.py)

    Destroy runs it backwards, which is the kubeadm "remove a node" order: drain through the API, reset on the
    server, delete the Node object.

    `node_name` is the Kubernetes node name (the hostname with kubeadm; from the join's output with EKS Hybrid
    Nodes on SSM); `ready` is the last step, which the server's NodePatch depends on.
    """

    node_name: pulumi.Output[str]
    ready: command.local.Command

    def __init__(self, name: str, args: ServerBootstrapArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:baremetal:ServerBootstrap", name, None, opts)
        self._prefix = name
        self._args = args
        self._ssh_connection = ssh_connection(args.site, args.server, args.secret(args.site.ssh.private_key_config))
        self._kubeconfig = args.secret(args.site.kubeconfig_config)
        hostname = pulumi.Output.from_input(args.server.hostname)
        node_delete = self._api_step("node-delete", hostname, create=None, delete=args.scripts.node_delete)
        preflight = self._ssh_step("preflight", args.scripts.preflight, [node_delete])
        before_join: list[pulumi.Resource] = [preflight]
        if args.scripts.scratch is not None:
            before_join = [self._ssh_step("scratch", args.scripts.scratch, [preflight])]
        stdin = args.join_stdin
        token_id: pulumi.Output[str] | None = None
        attempt: pulumi.Output[str] | None = None
        if args.scripts.join_token is not None:
            assert args.scripts.join_attempt is not None  # rendered together (render_server)
            attempt = self._join_attempt(args.scripts.join_attempt, hostname)
            token = self._join_token(args.scripts.join_token, hostname, attempt, before_join)
            stdin, before_join = join_stdin(args.site, args.secret, token.stdout), [token]
            token_id = token.stdout.apply(lambda out: minted_token(out or "").token_id)
        assert stdin is not None  # the site passes its join secrets unless the stack mints the token
        join = self._join(before_join, stdin)
        if args.site.join.method == "kubeadm":
            self.node_name = hostname
        else:
            self.node_name = join.stdout.apply(parse_node_name)
        self.ready = self._api_step(
            "node-ready",
            self.node_name,
            create=args.scripts.node_ready,
            delete=args.scripts.node_drain,
            after=[join],
            token_id=token_id,
            attempt=attempt,
        )
        self.register_outputs({"nodeName": self.node_name})

    def _ssh_step(
        self,
        step: str,
        script: Script,
        after: list[pulumi.Resource],
        *,
        stdin: pulumi.Output[str] | None = None,
        delete: Script | None = None,
    ) -> command.remote.Command:
        user = self._args.site.ssh.user
        run = remote_command(script, user)
        return command.remote.Command(
            f"{self._prefix}-{step}",
            connection=self._ssh_connection,
            create=run,
            # A changed script re-runs in place. No `triggers`: pulumi-command replaces a Command whose triggers
            # change, whatever `update` says (the SDK adds `replace_on_changes=["triggers[*]"]`,
            # sdk/python/pulumi_command/*/command.py at v1.2.1; pulumi/pulumi-command#855). A replacement runs the
            # old Command's `delete`: for the join step `kubeadm reset`, for node-ready a drain.
            update=run,
            delete=remote_command(delete, user) if delete else None,
            stdin=stdin,
            opts=pulumi.ResourceOptions(parent=self, depends_on=after),
        )

    def _join(self, after: list[pulumi.Resource], stdin: pulumi.Output[str]) -> command.remote.Command:
        return self._ssh_step("join", self._args.scripts.join, after, stdin=stdin, delete=self._args.scripts.leave)

    def _join_attempt(self, script: Script, node: pulumi.Output[str]) -> pulumi.Output[str]:
        """The server's join attempt (templates/join-attempt.sh.j2), asked on every preview and up: an invoke,
        which pulumi-command runs unconditionally (`local.run`), where a Command would run only when its inputs
        change. Unchanged for a joined server; fresh for one that has not joined, so its token is minted again."""
        environment = pulumi.Output.all(node, self._kubeconfig).apply(
            lambda v: {"GPUFLEET_NODE": v[0], "GPUFLEET_KUBECONFIG": v[1]}
        )
        result = command.local.run_output(
            command=script.text,
            interpreter=["/bin/bash", "-c"],
            environment=environment,
            logging=command.local.Logging.STDERR,
        )
        return result.stdout.apply(lambda out: (out or "").strip())

    def _join_token(
        self,
        script: Script,
        node: pulumi.Output[str],
        attempt: pulumi.Output[str],
        after: list[pulumi.Resource],
    ) -> command.local.Command:
        """Mint the server's bootstrap token through the API just before it joins (templates/join-token.sh.j2).
        Its stdout is the token: kept secret in state and never logged (only stderr is). A new `attempt` changes
        the environment, so the step runs its `update` and mints a fresh token: an update, not a replacement
        (no `triggers`, see _ssh_step); the step has no `delete`."""
        return command.local.Command(
            f"{self._prefix}-join-token",
            create=script.text,
            update=script.text,
            interpreter=["/bin/bash", "-c"],
            environment={
                "GPUFLEET_NODE": node,
                "GPUFLEET_KUBECONFIG": self._kubeconfig,
                "GPUFLEET_JOIN_ATTEMPT": attempt,
            },
            logging=command.local.Logging.STDERR,
            opts=pulumi.ResourceOptions(parent=self, depends_on=after, additional_secret_outputs=["stdout"]),
        )

    def _api_step(
        self,
        step: str,
        node: pulumi.Output[str],
        *,
        create: Script | None,
        delete: Script | None,
        after: list[pulumi.Resource] | None = None,
        token_id: pulumi.Output[str] | None = None,
        attempt: pulumi.Output[str] | None = None,
    ) -> command.local.Command:
        """A step against the Kubernetes API, run where `pulumi up` runs (kubectl), with the site's kubeconfig.

        The environment (node name, kubeconfig, the minted token's id to delete, the join attempt to record) is
        kept in state, so the delete step still has it on destroy.
        """
        text = create.text if create else None
        environment: dict[str, pulumi.Input[str]] = {"GPUFLEET_NODE": node, "GPUFLEET_KUBECONFIG": self._kubeconfig}
        if token_id is not None:
            environment["GPUFLEET_TOKEN_ID"] = token_id
        if attempt is not None:
            environment["GPUFLEET_JOIN_ATTEMPT"] = attempt
        return command.local.Command(
            f"{self._prefix}-{step}",
            create=text,
            update=text,
            delete=delete.text if delete else None,
            interpreter=["/bin/bash", "-c"],
            environment=environment,
            opts=pulumi.ResourceOptions(parent=self, depends_on=after or []),
        )
