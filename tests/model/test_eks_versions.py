"""The pins per EKS Kubernetes minor, the upgrade rule between two versions of a stack, and the support warning."""

from __future__ import annotations

import datetime as dt

import pytest

from model import versions
from model.load import SpecError, parse_estate
from model.rules.upgrade import RULE, minor_step_problems
from tests.conftest import example_estate


def _estate(version: str) -> dict[str, object]:
    return {"sites": [{"kind": "aws", "name": "use1", "cluster": {"version": version}}]}


def test_every_pinned_minor_names_its_add_ons_and_an_ami_release_for_itself() -> None:
    for minor, pins in versions.EKS_MINORS.items():
        assert {a for a, _ in pins.addons} == {
            "vpc-cni",
            "kube-proxy",
            "eks-pod-identity-agent",
            "eks-node-monitoring-agent",
            "coredns",
        }
        assert versions.kubernetes_minor(pins.ami_release) == minor
        assert (pins.addon_version("kube-proxy") or "").startswith(f"v{minor}.")
        assert pins.eks_release < pins.end_of_standard_support < pins.end_of_extended_support


def test_vpc_cni_is_not_the_build_that_blocks_all_pod_traffic_on_fresh_clusters() -> None:
    # aws/aws-network-policy-agent#553: v1.21.1-eksbuild.7 denies all traffic in standard mode with no policies.
    assert all(p.addon_version("vpc-cni") != "v1.21.1-eksbuild.7" for p in versions.EKS_MINORS.values())


def test_a_minor_gpufleet_pins_nothing_for_is_refused_naming_the_supported_ones() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["cluster"]["version"] = "1.36"
    with pytest.raises(
        SpecError, match=r"cluster\.version: gpufleet pins no .* for Kubernetes 1\.36; supported minors: 1\.34, 1\.35"
    ):
        parse_estate(estate, "aws-train")


def test_a_pool_ami_release_for_another_minor_is_refused() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["node_pools"][0]["ami_release"] = "1.35.6-20260714"
    with pytest.raises(
        SpecError,
        match=r"node_pools\[0\]\.ami_release: 1\.35\.6-20260714 is an AMI release for Kubernetes 1\.35, not the cluster's 1\.34",
    ):
        parse_estate(estate, "aws-train")
    estate["sites"][0]["node_pools"][0]["ami_release"] = "1.34.9-20260714"
    parse_estate(estate, "aws-train")


def test_support_type_defaults_to_extended_and_takes_standard() -> None:
    estate = example_estate("aws-train")
    assert parse_estate(estate, "t").sites[0].cluster.support_type == "EXTENDED"
    estate["sites"][0]["cluster"].update(version="1.35", support_type="STANDARD")  # 1.35: in standard support
    assert parse_estate(estate, "t").sites[0].cluster.support_type == "STANDARD"
    estate["sites"][0]["cluster"]["support_type"] = "LONG"
    with pytest.raises(SpecError, match=r"cluster\.support_type"):
        parse_estate(estate, "t")


def test_one_minor_up_is_an_upgrade_and_a_skip_or_a_step_back_is_refused_naming_the_rule() -> None:
    assert minor_step_problems(_estate("1.34"), _estate("1.35"), "f") == []
    assert minor_step_problems(_estate("1.34"), _estate("1.34"), "f") == []
    (skip,) = minor_step_problems(_estate("1.34"), _estate("1.36"), "f")
    assert skip.startswith("f: config.gpufleet:estate.sites[0].cluster.version: 1.34 -> 1.36 skips")
    assert RULE in skip and "bump to 1.35" in skip
    (back,) = minor_step_problems(_estate("1.35"), _estate("1.34"), "f")
    assert "goes back a minor" in back and RULE in back


def test_a_new_site_or_an_adopted_cluster_has_nothing_to_upgrade_from() -> None:
    assert minor_step_problems({"sites": []}, _estate("1.36"), "f") == []
    adopted = {"sites": [{"kind": "aws", "name": "use1", "cluster": {"version": "1.30", "adopt_name": "x"}}]}
    assert minor_step_problems(adopted, _estate("1.34"), "f") == []


def test_the_support_warning_starts_sixty_days_before_the_end_of_standard_support() -> None:
    end = versions.EKS_MINORS["1.34"].end_of_standard_support
    assert versions.support_warning("c", "1.34", "EXTENDED", end - dt.timedelta(days=61)) is None
    soon = versions.support_warning("c", "1.34", "STANDARD", end - dt.timedelta(days=60))
    assert soon is not None and "ends in 60 days" in soon and "upgrades its control plane alone" in soon
    late = versions.support_warning("c", "1.34", "EXTENDED", end + dt.timedelta(days=3))
    assert late is not None and "ended 3 days ago" in late and "extended-support rate" in late


def test_standard_support_type_is_refused_on_a_minor_past_its_standard_support() -> None:
    """EKS user guide, disable-extended-support: "You cannot disable extended support once your cluster has entered
    it." 1.34's standard support ended 2026-12-02 (model.versions.EKS_MINORS)."""
    import datetime as dt

    from model import clock
    from model.load import SpecError, parse_estate
    from tests.conftest import example_estate

    estate = example_estate("aws-train")
    estate["sites"][0]["cluster"]["support_type"] = "STANDARD"
    with clock.frozen(dt.datetime(2026, 12, 1, tzinfo=dt.UTC)):
        parse_estate(estate, "f")  # still in standard support
    with (
        clock.frozen(dt.datetime(2026, 12, 3, tzinfo=dt.UTC)),
        pytest.raises(
            SpecError, match=r"sites\[0\]\.cluster\.support_type: Kubernetes 1\.34 left standard support on 2026-12-02"
        ),
    ):
        parse_estate(estate, "f")
    estate["sites"][0]["cluster"]["version"] = "1.35"
    with clock.frozen(dt.datetime(2026, 12, 3, tzinfo=dt.UTC)):
        parse_estate(estate, "f")  # the bump is the way out
