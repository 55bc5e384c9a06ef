"""The few EC2 and Service Quotas calls the burst preflight needs, with bounded retries on throttling."""

from __future__ import annotations

import datetime as dt
import email.utils
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpufleet.burst.errors import BurstError
from model import aws_account, catalog

THROTTLE_CODES = frozenset(
    {"Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException", "RequestThrottled"}
)
# Transient server-side errors, retried like throttling: EC2's (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html,
# "Unavailable", "InternalError") and Service Quotas' ServiceException.
UNAVAILABLE_CODES = frozenset(
    {"ServiceUnavailable", "ServiceUnavailableException", "Unavailable", "InternalError", "ServiceException"}
)
RETRY_CODES = THROTTLE_CODES | UNAVAILABLE_CODES
# Service Quotas answers this where the service is not offered ("This service is not available in the current Region").
NOT_IN_REGION = "NoSuchResourceException"


class ServiceAbsent(BurstError):
    """An AWS API that this region does not offer (the check that needs it cannot run there)."""


def quota_family(instance_type: str) -> str:
    """The quota family of an instance type (model.aws_account); BurstError (exit 2) for one with no GPU quota."""
    family = aws_account.quota_family(instance_type)
    if family is None:
        raise BurstError(f"no EC2 GPU vCPU quota is known for instance family {instance_type.split('.')[0]}", 2)
    return family


class Aws:
    """The few EC2 and Service Quotas calls the preflight needs, with bounded retries on throttling.

    botocore retries first (mode `adaptive`, `max_attempts`); on top, a throttling error that still comes back
    is retried here with exponential backoff, at most `attempts` times, then reported.
    """

    def __init__(
        self,
        region: str,
        *,
        session: Any = None,
        attempts: int = 4,
        sleep: Callable[[float], None] = time.sleep,
        base_delay: float = 1.0,
    ) -> None:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError

        cfg = Config(retries={"mode": "adaptive", "max_attempts": 5}, connect_timeout=10, read_timeout=30)
        self.region = region
        try:
            sess = session or boto3.session.Session()
            self.ec2 = sess.client("ec2", region_name=region, config=cfg)
            self.quotas = sess.client("service-quotas", region_name=region, config=cfg)
            self.autoscaling = sess.client("autoscaling", region_name=region, config=cfg)
            self.cloudwatch = sess.client("cloudwatch", region_name=region, config=cfg)
        except BotoCoreError as err:
            raise BurstError(f"cannot talk to AWS in {region}: {err}") from None
        self.attempts = attempts
        self.sleep = sleep
        self.base_delay = base_delay

    def _call(self, what: str, fn: Callable[..., Any], **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError, NoCredentialsError

        for attempt in range(1, self.attempts + 1):
            try:
                return fn(**kwargs)
            except ClientError as err:
                code = err.response.get("Error", {}).get("Code", "")
                if code in RETRY_CODES and attempt < self.attempts:
                    self.sleep(min(self.base_delay * 2 ** (attempt - 1), 20.0))
                    continue
                if code in RETRY_CODES:
                    verb = "throttling" if code in THROTTLE_CODES else "failing"
                    raise BurstError(
                        f"AWS kept {verb} {what} ({code}) after {self.attempts} attempts; nothing was changed, "
                        "try again in a few minutes"
                    ) from None
                if code == NOT_IN_REGION:
                    raise ServiceAbsent(f"{what} is not available in {self.region}") from None
                msg = err.response.get("Error", {}).get("Message", str(err))
                raise BurstError(f"AWS refused {what}: {code}: {msg}") from None
            except NoCredentialsError:
                raise BurstError(
                    f"no AWS credentials for {what}; configure them (AWS_PROFILE, SSO or OIDC) and try again"
                ) from None
            except EndpointConnectionError as err:
                raise ServiceAbsent(f"could not reach AWS for {what} in {self.region}: {err}") from None
            except BotoCoreError as err:
                raise BurstError(f"could not reach AWS for {what}: {err}") from None
        raise AssertionError("unreachable")

    def offered_zones(self, instance_type: str) -> list[str]:
        resp = self._call(
            f"DescribeInstanceTypeOfferings for {instance_type}",
            self.ec2.describe_instance_type_offerings,
            LocationType="availability-zone",
            Filters=[{"Name": "instance-type", "Values": [instance_type]}],
        )
        return sorted(o["Location"] for o in resp.get("InstanceTypeOfferings", []))

    def offered_zone_ids(self, instance_type: str) -> list[str]:
        """AZ IDs of the region offering `instance_type`: the same AZ in every account, unlike AZ names."""
        resp = self._call(
            f"DescribeInstanceTypeOfferings for {instance_type}",
            self.ec2.describe_instance_type_offerings,
            LocationType="availability-zone-id",
            Filters=[{"Name": "instance-type", "Values": [instance_type]}],
        )
        return sorted(o["Location"] for o in resp.get("InstanceTypeOfferings", []))

    def zone_ids(self) -> dict[str, str]:
        """This account's AZ names of the region -> their AZ IDs (DescribeAvailabilityZones: names map to AZs per
        account, https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html)."""
        resp = self._call("DescribeAvailabilityZones", self.ec2.describe_availability_zones)
        return {z["ZoneName"]: z["ZoneId"] for z in resp.get("AvailabilityZones", [])}

    def server_time(self) -> dt.datetime:
        """Now by AWS's clock: the `Date` header of an EC2 response (RFC 7231 section 7.1.1.2), not the runner's."""
        resp = self._call("DescribeAvailabilityZones", self.ec2.describe_availability_zones)
        header = resp.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
        if not header:
            raise BurstError(f"EC2 in {self.region} sent no Date header; cannot tell the time by AWS's clock")
        return email.utils.parsedate_to_datetime(header).astimezone(dt.UTC)

    def quota_vcpus(self, code: str) -> float | None:
        """The quota's value in vCPUs; None where Service Quotas is not offered (the region or its endpoint)."""
        try:
            resp = self._call(
                f"GetServiceQuota ec2/{code}", self.quotas.get_service_quota, ServiceCode="ec2", QuotaCode=code
            )
        except ServiceAbsent:
            return None
        return float(resp["Quota"]["Value"])

    def vcpus_running(self, family: str, spot: bool, skip: Sequence[Mapping[str, str]] = ()) -> int:
        """vCPUs of pending or running instances counting against the family's on-demand (or spot) quota, less
        those carrying every tag of any mapping in `skip` (the estate's own nodes, for `gpufleet check --aws`)."""
        types: list[str] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {
                "Filters": [{"Name": "instance-state-name", "Values": ["pending", "running"]}],
                "MaxResults": 1000,
            }
            if token:
                kwargs["NextToken"] = token
            resp = self._call("DescribeInstances", self.ec2.describe_instances, **kwargs)
            for r in resp.get("Reservations", []):
                for i in r.get("Instances", []):
                    is_spot = i.get("InstanceLifecycle") == "spot"
                    t = i["InstanceType"]
                    tags = {x["Key"]: x["Value"] for x in i.get("Tags", [])}
                    if any(all(tags.get(k) == v for k, v in m.items()) for m in skip):
                        continue
                    if is_spot == spot and aws_account.quota_family(t) == family:
                        types.append(t)
            token = resp.get("NextToken")
            if not token:
                break
        return sum(self._vcpus(t) for t in types)

    def _vcpus(self, instance_type: str) -> int:
        try:
            return catalog.instance_type(instance_type).vcpus
        except catalog.CatalogError:
            resp = self._call(
                f"DescribeInstanceTypes {instance_type}",
                self.ec2.describe_instance_types,
                InstanceTypes=[instance_type],
            )
            return int(resp["InstanceTypes"][0]["VCpuInfo"]["DefaultVCpus"])

    def capacity_reservation(self, reservation_id: str) -> dict[str, Any]:
        resp = self._call(
            f"DescribeCapacityReservations {reservation_id}",
            self.ec2.describe_capacity_reservations,
            CapacityReservationIds=[reservation_id],
        )
        found = resp.get("CapacityReservations", [])
        if not found:
            raise BurstError(f"capacity reservation {reservation_id} was not found in {self.region}")
        return dict(found[0])

    def tagged_reservations(self, tags: dict[str, str]) -> list[dict[str, Any]]:
        """The capacity reservations carrying every tag of `tags` (DescribeCapacityReservations, filter
        tag:<key>: EC2 API reference, DescribeCapacityReservations), first page."""
        filters = [{"Name": f"tag:{k}", "Values": [v]} for k, v in tags.items()]
        resp = self._call(
            "DescribeCapacityReservations by tags", self.ec2.describe_capacity_reservations, Filters=filters
        )
        return list(resp.get("CapacityReservations", []))

    def capacity_block_offerings(
        self, instance_type: str, instances: int, hours: int, start: dt.datetime | None
    ) -> list[dict[str, Any]]:
        """The Capacity Block offerings EC2 sells now for `instances` x `instance_type` over `hours`, starting from
        `start` (or any time), every page. Each is a CapacityBlockOffering: CapacityBlockOfferingId, InstanceType,
        AvailabilityZone, InstanceCount, StartDate, EndDate, CapacityBlockDurationHours, UpfrontFee (a string),
        CurrencyCode (EC2 API reference, DescribeCapacityBlockOfferings and CapacityBlockOffering)."""
        out: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "InstanceType": instance_type,
            "InstanceCount": instances,
            "CapacityDurationHours": hours,
        }
        if start is not None:
            kwargs["StartDateRange"] = start
        while True:
            resp = self._call(
                f"DescribeCapacityBlockOfferings {instances} x {instance_type} for {hours} h",
                self.ec2.describe_capacity_block_offerings,
                **kwargs,
            )
            out += resp.get("CapacityBlockOfferings", [])
            token = resp.get("NextToken")
            if not token:
                return out
            kwargs["NextToken"] = token

    def group_by_tags(self, tags: dict[str, str]) -> str | None:
        """The Auto Scaling group carrying every tag of `tags` (the burst node group's, by its autoscaler
        discovery tags); None when there is none."""
        filters = [{"Name": f"tag:{k}", "Values": [v]} for k, v in tags.items()]
        resp = self._call("DescribeAutoScalingGroups", self.autoscaling.describe_auto_scaling_groups, Filters=filters)
        names = sorted(g["AutoScalingGroupName"] for g in resp.get("AutoScalingGroups", []))
        return names[0] if names else None

    def group_size(self, group: str) -> tuple[int, int]:
        """(desired capacity, instances in any lifecycle state) of the Auto Scaling group now
        (DescribeAutoScalingGroups `DesiredCapacity`, `Instances`)."""
        resp = self._call(
            "DescribeAutoScalingGroups", self.autoscaling.describe_auto_scaling_groups, AutoScalingGroupNames=[group]
        )
        groups = resp.get("AutoScalingGroups", [])
        return sum(int(g.get("DesiredCapacity", 0)) for g in groups), sum(len(g.get("Instances", [])) for g in groups)

    def enable_group_metrics(self, group: str) -> None:
        """Collect the group's `GroupTotalInstances` metric, at one-minute granularity (free for group metrics:
        https://docs.aws.amazon.com/autoscaling/ec2/userguide/ec2-auto-scaling-metrics.html)."""
        self._call(
            f"EnableMetricsCollection for {group}",
            self.autoscaling.enable_metrics_collection,
            AutoScalingGroupName=group,
            Metrics=[TOTAL_INSTANCES],
            Granularity="1Minute",
        )

    def node_hours(self, group: str, start: dt.datetime, end: dt.datetime, gap_nodes: int) -> float | None:
        """Instance-hours the group held in [start, end): per one-minute period the `AWS/AutoScaling`
        `GroupTotalInstances` average, and `gap_nodes` for a minute with no datapoint; None when CloudWatch holds
        no datapoint at all (metrics collection was off). Asked one day at a time (at most 1,440 datapoints).

        `GroupTotalInstances` counts instances "in service, pending, and terminating", all of them billed;
        `GroupInServiceInstances` leaves out the booting and the draining ones. Group metrics are sent "on a
        best-effort basis" and gaps are not backfilled (ec2-auto-scaling-metrics.html), so a missing minute is
        booked at the cap, not as zero."""
        total, seen = 0.0, set()
        lo = start
        while lo < end:
            hi = min(end, lo + dt.timedelta(days=1))
            resp = self._call(
                f"GetMetricStatistics {TOTAL_INSTANCES} of {group}",
                self.cloudwatch.get_metric_statistics,
                Namespace="AWS/AutoScaling",
                MetricName=TOTAL_INSTANCES,
                Dimensions=[{"Name": "AutoScalingGroupName", "Value": group}],
                StartTime=lo,
                EndTime=hi,
                Period=60,
                Statistics=["Average"],
            )
            for point in resp.get("Datapoints", []):
                seen.add(point["Timestamp"].replace(second=0, microsecond=0))
                total += float(point["Average"]) / 60
            lo = hi
        if not seen:
            return None
        minutes = math.ceil((end - start).total_seconds() / 60)
        return round(total + max(0, minutes - len(seen)) * gap_nodes / 60, 4)


TOTAL_INSTANCES = "GroupTotalInstances"
