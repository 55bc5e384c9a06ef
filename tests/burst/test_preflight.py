"""The burst preflight against moto (EC2 offerings and instances) with stubbed Service Quotas and capacity
reservations, which moto 5 does not implement (service-quotas only knows `vpc`; DescribeCapacityReservations
raises NotImplementedError)."""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from gpufleet.burst.aws import Aws
from gpufleet.burst.errors import BurstError
from gpufleet.burst.preflight import BurstRequest, preflight
from model.burst_spend import RECONCILE_LAG, booking, latest_expiry, spend_in_month, worst_case
from model.load import parse_window
from model.spec import BurstLedgerEntry, EstateSpec
from tests.aws_stubs import Quotas
from tests.burst.helpers import NOW, window
from tests.conftest import example_estate

P_ON_DEMAND = "L-417A185B"


def estate(**changes: Any) -> EstateSpec:
    raw = copy.deepcopy(example_estate("hybrid"))
    cloud = raw["sites"][1]
    pool = cloud["node_pools"][0]
    for key, value in changes.items():
        target = {"pool": pool, "cloud": cloud, "burst": raw["burst"]}[key.split("__")[0]]
        target[key.split("__")[1]] = value
    return EstateSpec.model_validate(raw)


@pytest.fixture
def aws_env(moto_aws: Aws) -> Iterator[dict[str, Any]]:
    slept: list[float] = []
    moto_aws.sleep = slept.append
    quotas = Quotas(moto_aws)
    yield {"aws": moto_aws, "quotas": quotas, "slept": slept}
    quotas.stub.deactivate()


def test_gpus_round_up_to_whole_nodes_in_the_fabric_az_and_window_is_priced(aws_env: dict[str, Any]) -> None:
    aws_env["quotas"].value(P_ON_DEMAND, 768)
    check = preflight(estate(), [], BurstRequest(gpus=12, hours=8), NOW, aws_env["aws"])
    w = check.window
    assert (w.pool, w.nodes, w.instance_type, w.availability_zone) == ("burst-h100", 2, "p5.48xlarge", "us-east-1a")
    assert w.expires - w.start == dt.timedelta(hours=8) and w.gpus == 12 and w.usd_per_hour == 55.04
    assert check.price_usd == round(55.04 * 2 * 8, 2)
    assert any("quota L-417A185B" in c and "0 + 384 of 768" in c for c in check.checks)


def test_quota_counts_running_instances_of_the_family(aws_env: dict[str, Any]) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    running = [
        ec2.run_instances(ImageId="ami-12c6146b", InstanceType=t, MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
        for t in ("p4d.24xlarge", "g5.xlarge")  # 96 P vCPUs; the G instance counts against another quota
    ]
    try:
        aws_env["quotas"].value(P_ON_DEMAND, 384)
        with pytest.raises(BurstError) as err:
            preflight(estate(), [], BurstRequest(gpus=16, hours=4), NOW, aws_env["aws"])
        assert str(err.value).startswith(
            "EC2 quota L-417A185B (Running On-Demand P instances) in us-east-1 is 384 vCPUs; 96 are in use and "
            "the window needs 384 more (2 x 192)"
        )
        assert err.value.exit_code == 1
        aws_env["quotas"].value(P_ON_DEMAND, 384)
        assert preflight(estate(), [], BurstRequest(gpus=8, hours=4), NOW, aws_env["aws"]).window.nodes == 1
    finally:
        ec2.terminate_instances(InstanceIds=running)


def test_type_not_offered_in_the_fabric_az_is_refused(moto: None) -> None:
    # moto's eu-west-1 offerings carry no p5.48xlarge; the catalog holds offerings for us-east-1 only, so the
    # schema lets the estate through and only the preflight can tell. The site prices itself what the catalog
    # holds no eu-west-1 price for (else the schema refuses it).
    quote = {"date": "2026-11-01", "source": "test quote"}
    prices = [{"instance_type": "p5.48xlarge", "usd_per_hour": 60.0, **quote}] + [
        {"service": k, "usd": 0.1, **quote} for k in ("ebs-gp3", "data-transfer-out", "s3-standard")
    ]
    spec = estate(cloud__region="eu-west-1", cloud__availability_zones=["eu-west-1a", "eu-west-1b"],
                  cloud__fabrics=[{"kind": "efa", "name": "burst-efa", "availability_zone": "eu-west-1a",
                                   "subnet_cidr": "10.50.128.0/20"}], cloud__prices=prices)  # fmt: skip
    aws = Aws("eu-west-1", session=boto3.session.Session(region_name="eu-west-1"))
    with pytest.raises(BurstError, match=r"EC2 does not offer p5\.48xlarge in eu-west-1a \(offered in: no AZ"):
        preflight(spec, [], BurstRequest(gpus=8, hours=4), NOW, aws)


def test_budget_refusal_gives_the_worst_case_arithmetic(aws_env: dict[str, Any]) -> None:
    """$50 left cannot even hold the 30-minute grace of 2 x p5.48xlarge ($55.04)."""
    aws_env["quotas"].value(P_ON_DEMAND, 768)
    spent = BurstLedgerEntry(pool="burst-h100", instance_type="p5.48xlarge", nodes=4,
                             start=dt.datetime(2026, 11, 3, tzinfo=dt.UTC), end=dt.datetime(2026, 11, 4, tzinfo=dt.UTC),
                             usd=19950.0)  # fmt: skip
    with pytest.raises(BurstError) as err:
        preflight(estate(), [spent], BurstRequest(gpus=16, hours=8), NOW, aws_env["aws"])
    assert str(err.value) == (
        "2 x p5.48xlarge for 8 h cost $965.03 at worst (2 x $55.04/h x (8 h + 0.5 h grace + 16 min stop lag)), "
        "but only $50.00 left in November 2026 ($19,950.00 spent) of the $20,000.00 monthly burst budget; no "
        "window fits"
    )


def test_a_window_costing_exactly_what_is_left_is_shortened_by_its_grace(aws_env: dict[str, Any]) -> None:
    """$440.32 left and 1 x p5.48xlarge for 8 h at $55.04/h is exactly $440.32, but its nodes may serve through
    the 30-minute grace and the 16 minutes until the stop has taken hold (model.burst_spend.RECONCILE_LAG) too: admitted
    as asked, the month would end $42.20 over. It opens for 7 h 14 min."""
    aws_env["quotas"].value(P_ON_DEMAND, 768)
    check = preflight(estate(), [spent_in_november(20_000 - 440.32)], BurstRequest(gpus=8, hours=8), NOW,
                      aws_env["aws"])  # fmt: skip
    assert check.window.expires - check.window.start == dt.timedelta(hours=7, minutes=14)
    assert check.price_usd == 398.12
    assert (
        "window shortened to 7 h 14 min: 1 x p5.48xlarge for 8 h cost $482.52 at worst (1 x $55.04/h x (8 h + "
        "0.5 h grace + 16 min stop lag)), but only $440.32 left in November 2026 ($19,559.68 spent) of the "
        "$20,000.00 monthly burst budget; 7 h 14 min cost $440.32 at worst (1 x $55.04/h x (7 h 14 min + 0.5 h "
        "grace + 16 min stop lag))"
    ) in check.checks


@pytest.mark.parametrize("left", [440.32, 467.83, 27.52, 1000.0, 5.0])
@pytest.mark.parametrize("hours", [1, 8, 24])
@pytest.mark.parametrize("seconds", [0, 30])
def test_the_month_cannot_end_over_budget_even_if_every_node_serves_through_the_grace(
    aws_env: dict[str, Any], left: float, hours: int, seconds: int
) -> None:
    """Whatever is admitted, booked as the backstop allows it at worst (every node of the cap until expiry +
    grace + lag, model.burst_spend.booking), leaves the month within its budget, whatever second AWS's clock reads."""
    aws_env["quotas"].value(P_ON_DEMAND, 768)
    spec = estate()
    ledger = [spent_in_november(round(20_000 - left, 2))]
    now = NOW + dt.timedelta(seconds=seconds)
    try:
        check = preflight(spec, ledger, BurstRequest(gpus=16, hours=hours), now, aws_env["aws"])
    except BurstError as err:
        assert "no window fits" in str(err)
        tail = 0.5 + RECONCILE_LAG.total_seconds() / 3600  # the grace and the stop lag
        assert left < 2 * 55.04 * (tail + 1 / 60)  # refused only when not one minute fits beside them
        return
    worst = booking(spec, check.window, "the backstop at worst")
    assert spend_in_month([*ledger, worst], NOW) <= spec.burst.budget_usd


def test_the_worst_case_counts_the_lag_until_the_stop_has_taken_hold() -> None:
    """16 minutes after the backstop's minute: Scheduler fires within the minute, EKS drains a node up to 15 minutes
    before termination (model.burst_spend.RECONCILE_LAG). A longer lag, as passed, shortens the window further."""
    spec = estate()
    start = NOW
    asked = start + dt.timedelta(hours=8)
    ledger = [spent_in_november(20_000 - 440.32)]
    assert latest_expiry(spec, ledger, 1, 55.04, start, asked) == start + dt.timedelta(hours=7, minutes=14)
    lagging = latest_expiry(spec, ledger, 1, 55.04, start, asked, lag=dt.timedelta(hours=1))
    assert lagging == start + dt.timedelta(hours=6, minutes=30)


@pytest.mark.parametrize("seconds", [1, 30, 59])
def test_the_budget_counts_to_the_minute_the_booking_counts_to(seconds: int) -> None:
    """A window that starts between minutes (one recorded before open started at whole minutes) is stopped at the
    AWS stop's minute, rounded up (EventBridge Scheduler fires on the minute: schedule-types.html#one-time). The
    budget check, the message and the booking all count to that minute (model.burst_spend.stopped_by): the latest
    expiry admitted is booked within what is left, one minute more is not."""
    spec, left = estate(), 440.32
    ledger = [spent_in_november(20_000 - left)]
    start = NOW + dt.timedelta(seconds=seconds)
    fits = latest_expiry(spec, ledger, 1, 55.04, start, start + dt.timedelta(hours=8))
    assert fits is not None
    w = parse_window(window(start, 8, nodes=1), "test")
    booked = booking(spec, w.model_copy(update={"expires": fits}), "worst").usd
    assert booked <= left < booking(spec, w.model_copy(update={"expires": fits + dt.timedelta(minutes=1)}), "x").usd
    assert worst_case(spec, 1, 55.04, start, fits).startswith(f"${booked:,.2f} at worst")


def test_last_month_spend_does_not_count_against_this_month(aws_env: dict[str, Any]) -> None:
    aws_env["quotas"].value(P_ON_DEMAND, 768)
    october = BurstLedgerEntry(pool="burst-h100", instance_type="p5.48xlarge", nodes=4,
                               start=dt.datetime(2026, 10, 3, tzinfo=dt.UTC),
                               end=dt.datetime(2026, 10, 4, tzinfo=dt.UTC), usd=19500.0)  # fmt: skip
    assert preflight(estate(), [october], BurstRequest(gpus=16, hours=8), NOW, aws_env["aws"]).spend_usd == 0


def test_instance_type_outside_the_burst_policy_is_refused_before_any_aws_call() -> None:
    spec = estate(burst__allowed_instance_types=["p5en.48xlarge"])
    with pytest.raises(BurstError, match=r"p5\.48xlarge is not allowed by the burst policy"):
        preflight(spec, [], BurstRequest(gpus=8, hours=4), NOW, aws=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (BurstRequest(gpus=8, hours=49), r"--hours must be at least a minute \(0.0167\) and at most .* \(48\); got 49"),
        (BurstRequest(gpus=8, hours=4, instance_type="p9.huge"), r"instance type 'p9\.huge' is not in the GPU catalog"),
        (BurstRequest(gpus=8, hours=4, instance_type="p5en.48xlarge"), r"no burst pool runs p5en\.48xlarge"),
        (BurstRequest(gpus=40, hours=4), r"40 GPUs need 5 x p5\.48xlarge .* more than pool burst-h100's max of 4"),
    ],
)
def test_bad_requests_are_input_errors(request_: BurstRequest, message: str) -> None:
    with pytest.raises(BurstError, match=message) as err:
        preflight(estate(), [], request_, NOW, aws=None)  # type: ignore[arg-type]
    assert err.value.exit_code == 2


def test_spot_pool_needs_allow_spot_and_uses_the_spot_quota(aws_env: dict[str, Any]) -> None:
    spot = {"type": "spot", "checkpointing": True}
    with pytest.raises(BurstError, match="does not allow_spot"):
        preflight(estate(pool__capacity=spot), [], BurstRequest(gpus=8, hours=4), NOW, aws_env["aws"])
    aws_env["quotas"].value("L-7212CCBC", 192)
    check = preflight(estate(pool__capacity=spot, burst__allow_spot=True), [], BurstRequest(gpus=8, hours=4), NOW,
                      aws_env["aws"])  # fmt: skip
    assert any("L-7212CCBC (All P Spot Instance Requests)" in c for c in check.checks)


def test_capacity_block_needs_room_in_its_reservation(aws_env: dict[str, Any]) -> None:
    block = {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}
    spec = estate(pool__capacity=block, burst__allow_capacity_blocks=True)
    with pytest.raises(BurstError, match="does not allow_capacity_blocks"):
        preflight(estate(pool__capacity=block), [], BurstRequest(gpus=8, hours=4), NOW, aws_env["aws"])
    stub = Stubber(aws_env["aws"].ec2)  # moto does not implement DescribeCapacityReservations
    reservation = {"CapacityReservationId": "cr-0123456789abcdef0", "InstanceType": "p5.48xlarge",
                   "AvailabilityZone": "us-east-1a", "State": "active", "AvailableInstanceCount": 1,
                   "EndDate": NOW + dt.timedelta(hours=24)}  # fmt: skip
    for _ in range(2):
        stub.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": [
            {"InstanceType": "p5.48xlarge", "LocationType": "availability-zone", "Location": "us-east-1a"}]})  # fmt: skip
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [reservation]},
                          {"CapacityReservationIds": ["cr-0123456789abcdef0"]})  # fmt: skip
    with stub:
        with pytest.raises(BurstError, match="only 1 of its instances are free and the window needs 2"):
            preflight(spec, [], BurstRequest(gpus=16, hours=4), NOW, aws_env["aws"])
        check = preflight(spec, [], BurstRequest(gpus=8, hours=4), NOW, aws_env["aws"])
    assert check.window.nodes == 1


def test_throttling_is_retried_with_backoff_then_succeeds(aws_env: dict[str, Any]) -> None:
    q = aws_env["quotas"]
    q.error("ThrottlingException")
    q.error("ThrottlingException")
    q.value(P_ON_DEMAND, 768)
    check = preflight(estate(), [], BurstRequest(gpus=8, hours=4), NOW, aws_env["aws"])
    assert check.window.nodes == 1
    assert aws_env["slept"] == [1.0, 2.0]


def test_persistent_throttling_is_reported_after_bounded_attempts(aws_env: dict[str, Any]) -> None:
    for _ in range(4):
        aws_env["quotas"].error("ThrottlingException")
    with pytest.raises(BurstError, match=r"AWS kept throttling GetServiceQuota ec2/L-417A185B .* after 4 attempts"):
        preflight(estate(), [], BurstRequest(gpus=8, hours=4), NOW, aws_env["aws"])
    assert aws_env["slept"] == [1.0, 2.0, 4.0]


def test_other_aws_errors_are_reported_not_raised(aws_env: dict[str, Any]) -> None:
    aws_env["quotas"].error("AccessDeniedException")
    with pytest.raises(BurstError, match=r"AWS refused GetServiceQuota ec2/L-417A185B: AccessDeniedException"):
        preflight(estate(), [], BurstRequest(gpus=8, hours=4), NOW, aws_env["aws"])


def test_service_unavailable_is_retried_like_throttling(aws_env: dict[str, Any]) -> None:
    q = aws_env["quotas"]
    q.stub.add_client_error("get_service_quota", service_error_code="ServiceUnavailable", http_status_code=503)
    q.value(P_ON_DEMAND, 768)
    check = preflight(estate(), [], BurstRequest(gpus=8, hours=4), NOW, aws_env["aws"])
    assert check.window.nodes == 1
    assert aws_env["slept"] == [1.0]


def test_region_without_service_quotas_skips_the_quota_check_and_says_so(aws_env: dict[str, Any]) -> None:
    """Service Quotas answers NoSuchResourceException where it is not offered ("This service is not available in
    the current Region", as moto 5 answers for such a region); the window is still checked for everything else."""
    aws_env["quotas"].stub.add_client_error(
        "get_service_quota",
        service_error_code="NoSuchResourceException",
        service_message="This service is not available in the current Region.",
        http_status_code=400,
    )
    check = preflight(estate(), [], BurstRequest(gpus=8, hours=4), NOW, aws_env["aws"])
    assert check.window.nodes == 1
    assert any("quota L-417A185B (Running On-Demand P instances) not checked" in c for c in check.checks)


MONTH_END = dt.datetime(2026, 11, 30, 22, 0, tzinfo=dt.UTC)


def spent_in_november(usd: float) -> BurstLedgerEntry:
    return BurstLedgerEntry(
        pool="burst-h100",
        instance_type="p5.48xlarge",
        nodes=1,
        start=dt.datetime(2026, 11, 2, tzinfo=dt.UTC),
        end=dt.datetime(2026, 11, 3, tzinfo=dt.UTC),
        usd=usd,
    )


def test_window_across_a_month_boundary_is_checked_against_each_months_budget(aws_env: dict[str, Any]) -> None:
    """2 h of the window fall in November and 2 h (and the grace) in December; spend is booked to each month pro
    rata (model/burst.py, spend_in_month), so each month's part of the worst case must fit that month's budget."""
    aws_env["quotas"].value(P_ON_DEMAND, 768)
    check = preflight(estate(), [spent_in_november(19_800)], BurstRequest(gpus=8, hours=4), MONTH_END, aws_env["aws"])
    assert check.window.expires == MONTH_END + dt.timedelta(hours=4)
    assert (
        "worst case $262.36 at worst (1 x $55.04/h x (4 h + 0.5 h grace + 16 min stop lag)) within $200.00 left "
        "in November 2026 ($19,800.00 spent) and $20,000.00 left in December 2026 ($0.00 spent) of the $20,000.00 "
        "monthly burst budget"
    ) in check.checks

    aws_env["quotas"].value(P_ON_DEMAND, 768)
    # From 23:00 on November 30th, December holds 3 h + the grace + the stop lag ($207.32 at worst) of a $100 budget:
    # the window is shortened until December holds 1 h 49 min ($99.99) of it: 1 h 3 min of window, then 46 min.
    small = estate(burst__budget_usd=100)
    check = preflight(small, [], BurstRequest(gpus=8, hours=4), MONTH_END + dt.timedelta(hours=1), aws_env["aws"])
    assert check.window.expires - check.window.start == dt.timedelta(hours=2, minutes=3)
    assert any(c.startswith("window shortened to 2.05 h") for c in check.checks)
