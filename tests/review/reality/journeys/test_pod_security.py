"""The Pod Security Standards controls (https://kubernetes.io/docs/concepts/security/pod-security-standards/)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpufleet.review.reality.journeys.pod_security import level, violations

RESTRICTED: dict[str, Any] = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [
        {
            "name": "c",
            "image": "x",
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        }
    ],
    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "lustre"}}],
}


def changed(path: list[Any], value: Any) -> dict[str, Any]:
    spec = copy.deepcopy(RESTRICTED)
    node: Any = spec
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return spec


def test_a_hardened_pod_meets_restricted() -> None:
    assert violations(RESTRICTED, "restricted") == []


@pytest.mark.parametrize(
    ("spec", "control"),
    [
        (changed(["hostNetwork"], True), "Host Namespaces"),
        (changed(["containers", 0, "securityContext", "privileged"], True), "Privileged Containers"),
        (changed(["containers", 0, "securityContext", "capabilities", "add"], ["SYS_ADMIN"]), "Capabilities"),
        (changed(["volumes"], [{"name": "h", "hostPath": {"path": "/"}}]), "HostPath Volumes"),
        (changed(["containers", 0, "ports"], [{"containerPort": 80, "hostPort": 80}]), "Host Ports"),
        (changed(["securityContext", "seccompProfile"], {"type": "Unconfined"}), "Seccomp"),
        (changed(["securityContext", "sysctls"], [{"name": "kernel.msgmax", "value": "1"}]), "Sysctls"),
    ],
)
def test_baseline_refuses_known_privilege_escalations(spec: dict[str, Any], control: str) -> None:
    assert any(v.startswith(control) for v in violations(spec, "baseline"))


@pytest.mark.parametrize(
    ("spec", "control"),
    [
        (changed(["volumes"], [{"name": "n", "nfs": {"server": "s", "path": "/"}}]), "Volume Types"),
        (changed(["containers", 0, "securityContext", "allowPrivilegeEscalation"], True), "Privilege Escalation"),
        (changed(["securityContext", "runAsNonRoot"], False), "Running as Non-root"),
        (changed(["securityContext", "runAsUser"], 0), "Running as Non-root user"),
        (changed(["securityContext", "seccompProfile"], {}), "Seccomp"),
        (changed(["containers", 0, "securityContext", "capabilities"], {"add": ["CHOWN"]}), "Capabilities"),
    ],
)
def test_restricted_refuses_what_baseline_allows(spec: dict[str, Any], control: str) -> None:
    assert violations(spec, "baseline") == []
    assert any(v.startswith(control) for v in violations(spec, "restricted"))


def test_an_unlabelled_namespace_is_privileged_and_admits_everything() -> None:
    assert level({"metadata": {"name": "x"}}) == "privileged"
    assert violations(changed(["hostNetwork"], True), "privileged") == []
