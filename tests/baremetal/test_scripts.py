"""Rendered bootstrap scripts: golden files, determinism, re-run scope, no secrets, valid bash."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from components.baremetal.bootstrap import ServerScripts, kubelet_flags, registration_labels, remote_command
from model.conventions import GPU_TAINT, TENANT_NODE_LABEL, Taint
from tests.baremetal.helpers import SAMPLE, host_driver, onprem_spec, scripts_for

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("GPUFLEET_UPDATE_GOLDEN") == "1"


def _fields(scripts: ServerScripts) -> dict[str, str]:
    named = {
        "preflight": scripts.preflight,
        "scratch": scripts.scratch,
        "join-attempt": scripts.join_attempt,
        "join-token": scripts.join_token,
        "join": scripts.join,
        "leave": scripts.leave,
        "node-ready": scripts.node_ready,
        "node-drain": scripts.node_drain,
        "node-delete": scripts.node_delete,
    }
    return {k: v.text for k, v in named.items() if v is not None}


def _eks_hybrid(estate: dict[str, Any]) -> None:
    estate["sites"][0]["join"] = {
        "method": "eks-hybrid",
        "api_server": "ABCDEF.gr7.us-east-1.eks.amazonaws.com:443",
        "cluster_name": "dc1-hybrid",
        "region": "us-east-1",
    }


CASES = {
    "kubeadm": onprem_spec,
    "eks-hybrid": lambda: onprem_spec(_eks_hybrid),
    "kubeadm-host-driver": lambda: onprem_spec(host_driver),  # the preflight checks nvidia-smi instead
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_scripts_match_reviewed_golden_files(case: str) -> None:
    rendered = _fields(scripts_for(CASES[case]()))
    folder = GOLDEN / case / SAMPLE
    if UPDATE:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in rendered.items():
            (folder / f"{name}.sh").write_text(text)
    expected = {p.stem: p.read_text() for p in sorted(folder.glob("*.sh"))}
    assert sorted(rendered) == sorted(expected)
    for name, text in rendered.items():
        assert text == expected[name], (
            f"{case}/{SAMPLE}/{name}.sh differs; review and regenerate with GPUFLEET_UPDATE_GOLDEN=1"
        )


def test_same_spec_renders_byte_identical_scripts_and_triggers() -> None:
    first, second = scripts_for(onprem_spec()), scripts_for(onprem_spec())
    assert [s.text for s in first.all()] == [s.text for s in second.all()]
    assert [s.sha256 for s in first.all()] == [s.sha256 for s in second.all()]
    assert remote_command(first.join, "gpufleet") == remote_command(second.join, "gpufleet")


def test_changing_one_servers_rail_changes_only_that_servers_join_trigger() -> None:
    def move(estate: dict[str, Any]) -> None:
        estate["sites"][0]["inventory"][0]["rail"] = "7"

    before, after = onprem_spec(), onprem_spec(move)
    for host in ("gpu-r1-01", "gpu-r1-02", "gpu-r2-04"):
        b, a = scripts_for(before, host), scripts_for(after, host)
        changed = host == "gpu-r1-01"
        assert (b.join.sha256 != a.join.sha256) is changed
        # nothing else about the server changed, so no other step re-runs
        assert b.preflight.sha256 == a.preflight.sha256
        assert b.scratch is not None and a.scratch is not None and b.scratch.sha256 == a.scratch.sha256


def test_join_secrets_come_from_stdin_not_from_the_script_text() -> None:
    join = scripts_for(onprem_spec()).join.text
    assert "IFS= read -r token" in join and "IFS= read -r ca_hash" in join
    assert '--token "$token"' in join and '--discovery-token-ca-cert-hash "$ca_hash"' in join
    assert "joinToken" not in join and "caCertHash" not in join  # not even the config key names


def test_kubelet_does_not_register_node_restriction_labels() -> None:
    labels = {"gpufleet.io/pool": "a", TENANT_NODE_LABEL: "t", "kubernetes.io/hostname": "x", "k8s.io/y": "z"}
    assert registration_labels(labels) == {"gpufleet.io/pool": "a"}
    flags = kubelet_flags(labels, [GPU_TAINT, Taint("tenant", "t", "NoSchedule")])
    assert flags == [
        "--node-labels=gpufleet.io/pool=a",
        "--register-with-taints=nvidia.com/gpu=present:NoSchedule,tenant=t:NoSchedule",
    ]


def test_remote_steps_run_as_root_through_sudo_for_a_non_root_user() -> None:
    preflight = scripts_for(onprem_spec()).preflight
    assert remote_command(preflight, "gpufleet").startswith("sudo -n bash -c '#!/usr/bin/env bash")
    assert remote_command(preflight, "root").startswith("bash -c '")
    assert remote_command(preflight, "root").endswith(" gpufleet-preflight")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_rendered_script_is_valid_bash(case: str, tmp_path: Path) -> None:
    for name, text in _fields(scripts_for(CASES[case]())).items():
        path = tmp_path / f"{name}.sh"
        path.write_text(text)
        result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, f"{name}: {result.stderr}"


def test_single_nvme_device_is_formatted_directly_without_raid() -> None:
    def one_disk(estate: dict[str, Any]) -> None:
        estate["sites"][0]["inventory"][0]["nvme_devices"] = ["/dev/nvme1n1"]

    scratch = scripts_for(onprem_spec(one_disk)).scratch
    assert scratch is not None
    assert "mdadm" not in scratch.text
    assert "devices=(/dev/nvme1n1)" in scratch.text and 'target="${devices[0]}"' in scratch.text


def test_server_without_nvme_devices_gets_no_scratch_step() -> None:
    def no_disks(estate: dict[str, Any]) -> None:
        estate["sites"][0]["inventory"][0]["nvme_devices"] = []

    scripts = scripts_for(onprem_spec(no_disks))
    assert scripts.scratch is None
    assert "nvme" not in scripts.preflight.text.split("# -- InfiniBand")[1]
