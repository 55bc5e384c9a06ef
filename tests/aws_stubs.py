"""Stubs for the AWS answers moto does not give: Service Quotas for EC2 (moto 5's service-quotas knows only `vpc`:
moto/servicequotas/models.py), shared by the burst preflight and `gpufleet check --aws` tests."""

from __future__ import annotations

from botocore.stub import Stubber

from gpufleet.burst.aws import Aws


class Quotas:
    """Service Quotas answers for one Aws instance (botocore Stubber: request shapes checked against the model)."""

    def __init__(self, aws: Aws) -> None:
        self.stub = Stubber(aws.quotas)
        self.stub.activate()

    def value(self, code: str, vcpus: float) -> None:
        self.stub.add_response(
            "get_service_quota",
            {"Quota": {"ServiceCode": "ec2", "QuotaCode": code, "QuotaName": "x", "Value": vcpus}},
            {"ServiceCode": "ec2", "QuotaCode": code},
        )

    def error(self, code: str) -> None:
        self.stub.add_client_error("get_service_quota", service_error_code=code, http_status_code=400)
