"""The journeys an estate promises, derived from its pools and tenants (the walk is tested with the stages)."""

from __future__ import annotations

from pathlib import Path

from gpufleet.review.reality.journeys.canonical import canonical
from model.load import read_stack

ROOT = Path(__file__).resolve().parents[4]


def _canonical(stack: str) -> list:
    spec, window, _ = read_stack(ROOT, stack).contents()
    return canonical(spec, window)


def test_a_p5_gang_asks_for_every_gpu_and_efa_interface_of_each_node_through_each_fabric_tenant() -> None:
    gangs = [c for c in _canonical("aws-train") if c.manifest["metadata"]["name"].startswith("gang-")]
    # research may run fabric jobs (rdma: true); product may not, so it is promised none.
    assert [c.manifest["metadata"]["namespace"] for c in gangs] == ["research"]
    job = gangs[0].manifest
    # The h100 pool's max is 4 x p5.48xlarge; research's quota 24 + borrowing 8 = 32 GPUs = 4 nodes.
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 4
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {"gpufleet.io/pool": "h100"}
    limits = job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    # p5.48xlarge: 8 H100s and 32 EFA interfaces (the catalog's network-card layout).
    assert limits == {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}
    assert job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": job["metadata"]["namespace"]}


def test_an_infiniband_gang_asks_for_the_shared_rdma_device_and_ipc_lock() -> None:
    gang = next(c for c in _canonical("onprem") if c.manifest["metadata"]["name"].startswith("gang-"))
    container = gang.manifest["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8", "rdma/shared_ib": "1"}
    assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    assert gang.manifest["spec"]["parallelism"] == 6


def test_a_burst_gang_is_expected_to_wait_without_a_window_and_every_other_to_run() -> None:
    journeys = _canonical("hybrid")
    burst = [c for c in journeys if "burst-h100" in c.title]
    assert burst and all(c.expected == "blocked" for c in burst)
    assert all(c.expected == "runs" for c in journeys if c not in burst)


def test_an_untrusted_tenant_is_promised_an_open_egress_refusal_on_its_own_pool() -> None:
    (egress,) = [c for c in _canonical("aws-train") if c.manifest["metadata"]["name"] == "open-egress"]
    assert egress.expected == "blocked" and egress.stage == "network"
    spec = egress.manifest["spec"]["template"]["spec"]
    assert egress.manifest["metadata"]["namespace"] == "agents"
    assert spec["nodeSelector"] == {"gpufleet.io/pool": "agents-l40s"}  # its own pool: only the network refuses
    assert spec["containers"][0]["command"] == ["wget", "-q", "-O-", "https://example.com/"]
    refused_at_network = {c.manifest["metadata"]["namespace"] for c in _canonical("aws-train") if c.stage == "network"}
    assert refused_at_network == {"agents"}
