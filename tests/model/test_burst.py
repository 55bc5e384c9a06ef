"""Burst windows and the ledger, without Pulumi: sizes, expiry, spend per month, window checks."""

from __future__ import annotations

import copy
import datetime as dt

import pytest

from model.burst import admitting, burst_quotas, effective_scaling, window_phase
from model.burst_spend import booking, close_entry, spend_in_month, window_ceiling
from model.load import SpecError, check_window, parse_estate, parse_ledger, parse_window
from model.spec import AwsNodePool, BurstLedgerEntry, BurstWindow, EstateSpec, Scaling
from tests.burst.helpers import NOW, window
from tests.conftest import example_estate


@pytest.fixture(scope="module")
def spec() -> EstateSpec:
    return EstateSpec.model_validate(example_estate("hybrid"))


def entry(start: dt.datetime, end: dt.datetime, usd: float) -> BurstLedgerEntry:
    return BurstLedgerEntry(pool="burst-h100", instance_type="p5.48xlarge", nodes=1, start=start, end=end, usd=usd)


def test_window_is_a_cap_on_a_pool_that_starts_at_zero_and_holds_through_the_grace(spec: EstateSpec) -> None:
    pool = spec.pool("burst-h100")
    assert isinstance(pool, AwsNodePool)
    w = BurstWindow.model_validate(window(NOW - dt.timedelta(hours=1), 8, nodes=3))
    assert spec.burst is not None and spec.burst.grace_minutes == 30
    grace_end = w.expires + dt.timedelta(minutes=30)
    # open: from zero (the autoscaler decides) up to the cap
    assert effective_scaling(spec, pool, w, NOW) == Scaling(min=0, desired=0, max=3)
    assert (window_phase(spec, w, NOW), admitting(spec, w, NOW)) == ("open", True)
    # expired: no new admission, but the nodes may stay for the grace
    assert (window_phase(spec, w, w.expires), admitting(spec, w, w.expires)) == ("draining", False)
    assert effective_scaling(spec, pool, w, w.expires).max == 3
    # after the grace, and with no window or one not started yet: nothing
    assert window_phase(spec, w, grace_end) == "idle"
    assert effective_scaling(spec, pool, w, grace_end).max == 0
    assert effective_scaling(spec, pool, None, NOW).max == 0
    assert window_phase(spec, w, w.start - dt.timedelta(seconds=1)) == "idle"


def test_burst_quota_is_the_window_cap_until_the_grace_ends(spec: EstateSpec) -> None:
    w = BurstWindow.model_validate(window(NOW - dt.timedelta(hours=1), 8, nodes=2))
    (q,) = burst_quotas(spec, w, NOW)
    assert (q.flavor, q.gpus, q.gpu_units, q.cpu, q.memory_gib) == ("burst-h100", 16, 16, 384, 4096)
    (draining,) = burst_quotas(spec, w, w.expires + dt.timedelta(minutes=29))
    assert draining.gpus == 16  # work admitted under the window stays within quota while it finishes
    (closed,) = burst_quotas(spec, w, w.expires + dt.timedelta(minutes=30))
    assert (closed.gpus, closed.cpu, closed.memory_gib) == (0, 0, 0)


def test_window_ceiling_counts_every_node_of_the_cap_until_the_backstop_time(spec: EstateSpec) -> None:
    w = BurstWindow.model_validate(window(NOW, 8, nodes=2, usd_per_hour=55.04))
    assert window_ceiling(spec, w) == round(55.04 * 2 * (8.5 + 16 / 60), 2)  # 8 h open + 30 min grace + 16 min lag
    unpriced = BurstWindow.model_validate(window(NOW, 8, nodes=2, instance_type="p5en.48xlarge"))
    assert unpriced.usd_per_hour is None and window_ceiling(spec, unpriced) is not None  # from the catalog


def test_window_ceiling_is_never_below_what_the_ledger_books(spec: EstateSpec) -> None:
    # Review of L, defect 2: with a 6-minute grace the AWS stop is 10 min after expiry, plus the 16-minute lag; the
    # cost report's "at most" stopped at expiry + grace while the booking counted to 07:26 ($157.78).
    short = spec.model_copy(update={"burst": spec.burst.model_copy(update={"grace_minutes": 6})})  # type: ignore[union-attr]
    w = BurstWindow.model_validate(window(dt.datetime(2026, 11, 20, 6, tzinfo=dt.UTC), 1, nodes=2, usd_per_hour=55.04))
    entry = booking(short, w, "test")
    assert entry.end == dt.datetime(2026, 11, 20, 7, 26, tzinfo=dt.UTC)
    assert window_ceiling(short, w) == entry.usd == 157.78


@pytest.mark.parametrize("grace", [1, 5])
def test_a_grace_no_longer_than_the_clock_margin_is_refused_naming_the_field(grace: int) -> None:
    """The program applies a stop CLOCK_SKEW (5 minutes) early (model.burst.stop_phase): a grace of 1 to 5 minutes
    would stop a closed window's nodes at once."""
    raw = copy.deepcopy(example_estate("hybrid"))
    raw["burst"]["grace_minutes"] = grace
    with pytest.raises(SpecError, match=r"burst\.grace_minutes: .*no grace.*use 0 or at least 6"):
        parse_estate(raw, "test")
    raw["burst"]["grace_minutes"] = 6
    assert parse_estate(raw, "test").burst is not None


def test_spend_books_a_window_across_month_end_pro_rata() -> None:
    nov_30_18h = dt.datetime(2026, 11, 30, 18, tzinfo=dt.UTC)
    ledger = [
        entry(nov_30_18h, nov_30_18h + dt.timedelta(hours=12), 1200.0),  # 6 h in November, 6 h in December
        entry(dt.datetime(2026, 10, 5, tzinfo=dt.UTC), dt.datetime(2026, 10, 6, tzinfo=dt.UTC), 999.0),
        entry(dt.datetime(2026, 11, 2, tzinfo=dt.UTC), dt.datetime(2026, 11, 2, 2, tzinfo=dt.UTC), 110.08),
    ]
    assert spend_in_month(ledger, NOW) == 710.08
    assert spend_in_month(ledger, dt.datetime(2026, 12, 3, tzinfo=dt.UTC)) == 600.0


def test_closing_after_expiry_books_only_until_expiry(spec: EstateSpec) -> None:
    w = BurstWindow.model_validate(window(NOW, 8, nodes=2, usd_per_hour=55.04))
    e = close_entry(spec, w, NOW + dt.timedelta(days=3), "reconcile")
    assert e.end == w.expires
    assert e.usd == round(55.04 * 2 * 8, 2)


def test_closing_early_books_the_hours_open_at_catalog_price(spec: EstateSpec) -> None:
    w = BurstWindow.model_validate(window(NOW, 8, nodes=1))  # no recorded price: the catalog's
    e = close_entry(spec, w, NOW + dt.timedelta(hours=2), "close")
    assert e.usd == round(55.04 * 2, 2)


def test_window_for_another_instance_type_is_rejected_naming_the_field(spec: EstateSpec) -> None:
    w = parse_window(window(NOW, 8, instance_type="p5en.48xlarge"), "stacks/Pulumi.x.yaml")
    with pytest.raises(SpecError) as err:
        check_window(spec, w, "stacks/Pulumi.x.yaml")
    assert err.value.problems == [
        "stacks/Pulumi.x.yaml: config.gpufleet:burstWindow.instance_type: pool burst-h100 runs p5.48xlarge, not "
        "p5en.48xlarge; a window grows an existing burst pool and cannot change its instance type"
    ]


def test_window_on_a_non_burst_pool_or_too_many_nodes_is_rejected(spec: EstateSpec) -> None:
    with pytest.raises(SpecError, match=r"burstWindow\.pool: base is not a burst pool"):
        check_window(spec, parse_window(window(NOW, 8, pool="base"), "f"), "f")
    with pytest.raises(SpecError, match=r"burstWindow\.nodes: 5 nodes exceed pool burst-h100's max of 4"):
        check_window(spec, parse_window(window(NOW, 8, nodes=5), "f"), "f")


def test_window_and_ledger_read_back_from_json_text_as_pulumi_config_set_stores_them() -> None:
    w = parse_window('{"pool":"burst-h100","nodes":1,"instance_type":"p5.48xlarge",'
                     '"availability_zone":"us-east-1a","start":"2026-11-20T12:00:00Z",'
                     '"expires":"2026-11-20T20:00:00Z"}', "f")  # fmt: skip
    assert w is not None and w.expires - w.start == dt.timedelta(hours=8)
    ledger = parse_ledger('[{"pool":"burst-h100","instance_type":"p5.48xlarge","nodes":1,'
                          '"start":"2026-11-01T00:00:00","end":"2026-11-01T01:00:00","usd":55.04}]', "f")  # fmt: skip
    assert ledger[0].start.tzinfo is not None  # naive times are read as UTC


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"pool": "a", "pool": "burst-h100"}', "the key 'pool' appears twice"),
        ('{"nodes": ' + "9" * 5000 + "}", "digits"),
    ],
)
def test_a_json_text_window_is_read_within_the_json_limits(text: str, says: str) -> None:
    """Issue 29: the JSON text `pulumi config set` stores is read like every JSON gpufleet reads (model.inputs)."""
    with pytest.raises(SpecError, match=f"^f: config.gpufleet:burstWindow: .*{says}"):
        parse_window(text, "f")


def test_bad_ledger_entry_names_its_index_and_field() -> None:
    with pytest.raises(SpecError) as err:
        parse_ledger([{"pool": "burst-h100", "instance_type": "p5.48xlarge", "nodes": 0,
                       "start": "2026-11-01T00:00:00Z", "end": "2026-11-01T01:00:00Z", "usd": 1}], "f")  # fmt: skip
    assert err.value.problems[0].startswith("f: config.gpufleet:burstLedger[0].nodes:")


def test_reconcile_workflow_runs_on_a_schedule_with_pinned_actions_and_oidc() -> None:
    import re
    from pathlib import Path

    import yaml

    path = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "burst-reconcile.yml"
    doc = yaml.safe_load(path.read_text())
    assert doc[True]["schedule"][0]["cron"]  # `on:` parses as True in YAML 1.1
    assert doc["permissions"] == {}  # the state stack holds the window: nothing is committed back
    assert doc["jobs"]["reconcile"]["permissions"] == {"contents": "read", "id-token": "write"}
    steps = doc["jobs"]["reconcile"]["steps"]
    uses = [s["uses"] for s in steps if "uses" in s]
    assert uses and all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", u) for u in uses), uses
    assert any(u.startswith("pulumi/actions@") for u in uses)
    assert any("role-to-assume" in s.get("with", {}) for s in steps)
    assert any("gpufleet burst reconcile" in s.get("run", "") for s in steps)
