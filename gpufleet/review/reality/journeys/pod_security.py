"""The Pod Security Standards, baseline and restricted, as the Pod Security admission controller enforces them
on a pod spec: https://kubernetes.io/docs/concepts/security/pod-security-standards/ (one control per check,
named as the page names it).

A namespace's level is its `pod-security.kubernetes.io/enforce` label; none means privileged, which admits
everything (https://kubernetes.io/docs/concepts/security/pod-security-admission/). No maintained Python
implementation exists on PyPI, so the controls are written here, small and table-driven.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
PSS_URL = "https://kubernetes.io/docs/concepts/security/pod-security-standards/"
LEVELS = ("privileged", "baseline", "restricted")

BASELINE_CAPABILITIES = frozenset(
    {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP",
     "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
)  # fmt: skip
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
SAFE_SYSCTLS = frozenset(
    {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
     "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
     "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
     "net.ipv4.tcp_keepalive_probes"}
)  # fmt: skip
RESTRICTED_VOLUMES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
)
VOLUME_SOURCE_FIELDS = frozenset({"name"})  # a volume is its name plus one source field

Pod = dict[str, Any]


def _containers(spec: Pod) -> Iterator[dict[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or []


def _sc(c: dict[str, Any]) -> dict[str, Any]:
    return c.get("securityContext") or {}


def _contexts(spec: Pod) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, securityContext) of the pod and of each container."""
    yield "the pod", spec.get("securityContext") or {}
    for c in _containers(spec):
        yield f"container {c.get('name', '?')}", _sc(c)


def _host_process(spec: Pod) -> list[str]:
    return [f"{w} sets windowsOptions.hostProcess" for w, sc in _contexts(spec)
            if (sc.get("windowsOptions") or {}).get("hostProcess")]  # fmt: skip


def _host_namespaces(spec: Pod) -> list[str]:
    return [f"{f}: true" for f in ("hostNetwork", "hostPID", "hostIPC") if spec.get(f)]


def _privileged(spec: Pod) -> list[str]:
    return [f"container {c.get('name')} is privileged" for c in _containers(spec) if _sc(c).get("privileged")]


def _capabilities_baseline(spec: Pod) -> list[str]:
    out = []
    for c in _containers(spec):
        extra = sorted(set((_sc(c).get("capabilities") or {}).get("add") or []) - BASELINE_CAPABILITIES)
        if extra:
            out.append(f"container {c.get('name')} adds capabilities {', '.join(extra)}")
    return out


def _host_path(spec: Pod) -> list[str]:
    return [f"volume {v.get('name')} is a hostPath" for v in spec.get("volumes") or [] if "hostPath" in v]


def _host_ports(spec: Pod) -> list[str]:
    return [f"container {c.get('name')} uses hostPort {p['hostPort']}" for c in _containers(spec)
            for p in c.get("ports") or [] if p.get("hostPort")]  # fmt: skip


def _app_armor(spec: Pod) -> list[str]:
    return [f"{w} sets AppArmor Unconfined" for w, sc in _contexts(spec)
            if (sc.get("appArmorProfile") or {}).get("type") == "Unconfined"]  # fmt: skip


def _selinux(spec: Pod) -> list[str]:
    out = []
    for w, sc in _contexts(spec):
        opts = sc.get("seLinuxOptions") or {}
        if opts.get("type", "") not in SELINUX_TYPES or opts.get("user") or opts.get("role"):
            out.append(f"{w} sets seLinuxOptions the baseline level does not allow")
    return out


def _proc_mount(spec: Pod) -> list[str]:
    return [f"container {c.get('name')} sets procMount {_sc(c)['procMount']}" for c in _containers(spec)
            if _sc(c).get("procMount", "Default") != "Default"]  # fmt: skip


def _seccomp_baseline(spec: Pod) -> list[str]:
    return [f"{w} sets seccomp Unconfined" for w, sc in _contexts(spec)
            if (sc.get("seccompProfile") or {}).get("type") == "Unconfined"]  # fmt: skip


def _sysctls(spec: Pod) -> list[str]:
    bad = [s.get("name") for s in (spec.get("securityContext") or {}).get("sysctls") or []
           if s.get("name") not in SAFE_SYSCTLS]  # fmt: skip
    return [f"unsafe sysctls {', '.join(map(str, bad))}"] if bad else []


def _volume_types(spec: Pod) -> list[str]:
    out = []
    for v in spec.get("volumes") or []:
        kinds = sorted(set(v) - VOLUME_SOURCE_FIELDS - RESTRICTED_VOLUMES)
        if kinds:
            out.append(f"volume {v.get('name')} is of type {', '.join(kinds)}")
    return out


def _privilege_escalation(spec: Pod) -> list[str]:
    return [f"container {c.get('name')} does not set allowPrivilegeEscalation: false"
            for c in _containers(spec) if _sc(c).get("allowPrivilegeEscalation") is not False]  # fmt: skip


def _non_root(spec: Pod) -> list[str]:
    pod = (spec.get("securityContext") or {}).get("runAsNonRoot")
    out = []
    for c in _containers(spec):
        own = _sc(c).get("runAsNonRoot")
        if own is False or (own is None and pod is not True):
            out.append(f"container {c.get('name')} does not run with runAsNonRoot: true")
    return out


def _non_root_user(spec: Pod) -> list[str]:
    return [f"{w} sets runAsUser: 0" for w, sc in _contexts(spec) if sc.get("runAsUser") == 0]


def _seccomp_restricted(spec: Pod) -> list[str]:
    allowed = ("RuntimeDefault", "Localhost")
    pod = ((spec.get("securityContext") or {}).get("seccompProfile") or {}).get("type")
    out = []
    for c in _containers(spec):
        own = (_sc(c).get("seccompProfile") or {}).get("type")
        if (own or pod) not in allowed:
            out.append(f"container {c.get('name')} has no seccompProfile RuntimeDefault or Localhost")
    return out


def _capabilities_restricted(spec: Pod) -> list[str]:
    out = []
    for c in _containers(spec):
        caps = _sc(c).get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            out.append(f"container {c.get('name')} does not drop ALL capabilities")
        extra = sorted(set(caps.get("add") or []) - {"NET_BIND_SERVICE"})
        if extra:
            out.append(f"container {c.get('name')} adds capabilities {', '.join(extra)}")
    return out


Control = tuple[str, Callable[[Pod], list[str]]]
BASELINE: tuple[Control, ...] = (
    ("HostProcess", _host_process),
    ("Host Namespaces", _host_namespaces),
    ("Privileged Containers", _privileged),
    ("Capabilities", _capabilities_baseline),
    ("HostPath Volumes", _host_path),
    ("Host Ports", _host_ports),
    ("AppArmor", _app_armor),
    ("SELinux", _selinux),
    ("/proc Mount Type", _proc_mount),
    ("Seccomp", _seccomp_baseline),
    ("Sysctls", _sysctls),
)
RESTRICTED: tuple[Control, ...] = (
    *BASELINE,
    ("Volume Types", _volume_types),
    ("Privilege Escalation", _privilege_escalation),
    ("Running as Non-root", _non_root),
    ("Running as Non-root user", _non_root_user),
    ("Seccomp", _seccomp_restricted),
    ("Capabilities", _capabilities_restricted),
)


def level(namespace: dict[str, Any] | None) -> str:
    """The namespace's enforced level (privileged when unlabelled or unknown)."""
    value = ((namespace or {}).get("metadata") or {}).get("labels", {}).get(ENFORCE_LABEL, "privileged")
    return value if value in LEVELS else "privileged"


def violations(spec: Pod, at: str) -> list[str]:
    """What in `spec` the level `at` refuses, each as "control: what"; empty when admitted."""
    controls = {"baseline": BASELINE, "restricted": RESTRICTED}.get(at, ())
    return [f"{name}: {what}" for name, check in controls for what in check(spec)]
