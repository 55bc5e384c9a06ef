"""Prometheus's volume in `gpufleet cost`: on a created EKS cluster it is gp3 in gpufleet's class and priced per
GB-month; anywhere else it is named among what the envelope leaves out, never $0."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.review.cost.envelope import estate_cost
from model import catalog
from model.load import parse_estate
from tests.review.estates import NOW, small


def _installed(**monitoring: Any) -> dict[str, Any]:
    estate = small()
    for site in estate["sites"]:
        site.setdefault("kubernetes", {})["monitoring"] = {"prometheus_operator": "install", **monitoring}
    return estate


def test_prometheus_volume_on_a_created_eks_cluster_is_priced_as_gp3() -> None:
    cost = estate_cost(parse_estate(_installed(storage_gib=200, retention_days=30), "t"), None, NOW)
    line = next(ln for ln in cost.bill if ln.item == "Prometheus volume")
    gp3 = catalog.service_price("ebs-gp3", "us-east-1")
    assert gp3 is not None and gp3.usd == 0.08
    # 200 GB × $0.08/GB-month = $16/month = 16 / 730 $/h at every size
    assert line.site == "use1" and line.quantity == "200 GB gp3" and line.status == "priced"
    assert line.hourly is not None and line.hourly.at("max") == pytest.approx(16 / 730)
    assert line.hourly.monthly("min") == pytest.approx(16.0)
    assert "gpufleet-gp3" in line.note and "30 days" in line.note
    # the owned site's volume is the cluster's own storage: named, not priced
    assert "Prometheus's 200 GiB volume on site dc (owned storage, the cluster's default StorageClass)" in cost.excluded


def test_prometheus_volume_in_a_class_the_stack_names_is_left_out_by_name() -> None:
    cost = estate_cost(parse_estate(_installed(storage_class="io2-fast"), "t"), None, NOW)
    assert not any(ln.item == "Prometheus volume" for ln in cost.bill)
    assert "Prometheus's 50 GiB volume on site use1 (StorageClass io2-fast)" in cost.excluded


def test_no_prometheus_volume_without_the_metrics_stack() -> None:
    cost = estate_cost(parse_estate(small(), "t"), None, NOW)
    assert not any("Prometheus" in x for x in [*(ln.item for ln in cost.bill), *cost.excluded])
