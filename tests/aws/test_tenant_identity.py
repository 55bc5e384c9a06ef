"""A tenant's S3 identity checked against AWS's own artifacts: the trust policy EKS Pod Identity documents, IAM's
action and resource catalogue (parliament, which ships the IAM service definitions), and IAM itself (moto).

Sources: EKS user guide pod-id-role (https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html: the trust
policy, and "Setting Conditions" with aws:RequestTag/kubernetes-namespace and kubernetes-service-account);
Service Authorization Reference for Amazon S3 (s3:ListBucket on a bucket ARN, object actions on object ARNs).
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from moto import mock_aws
from parliament import analyze_policy_string

from components.aws import iam
from model.conventions import TENANT_S3_SERVICE_ACCOUNT
from model.load import ESTATE_KEY, SpecError, parse_estate
from tests.conftest import example_config

KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
GRANTS = [("train-prod-datasets", "research/", False), ("train-prod-checkpoints", "research/", True)]


def _findings(doc: str) -> list[tuple[str, Any]]:
    return [(f.issue, f.detail) for f in analyze_policy_string(doc).findings]


def test_trust_policy_is_the_documented_pod_identity_policy_held_to_one_service_account() -> None:
    doc = json.loads(iam.pod_identity_trust_policy("train-prod-use1", "research", TENANT_S3_SERVICE_ACCOUNT))
    (statement,) = doc["Statement"]
    documented = {
        "Sid": "AllowEksAuthToAssumeRoleForPodIdentity",
        "Effect": "Allow",
        "Principal": {"Service": "pods.eks.amazonaws.com"},
        "Action": ["sts:AssumeRole", "sts:TagSession"],
    }
    assert {k: v for k, v in statement.items() if k != "Condition"} == documented
    assert statement["Condition"]["StringEquals"] == {
        "aws:RequestTag/eks-cluster-name": "train-prod-use1",
        "aws:RequestTag/kubernetes-namespace": "research",
        "aws:RequestTag/kubernetes-service-account": "s3-access",
    }


def test_s3_and_kms_policies_have_no_iam_catalogue_findings() -> None:
    assert _findings(iam.tenant_s3_policy("us-east-1", GRANTS)) == []
    kms = iam.tenant_s3_key_policy("us-east-1", ([KEY], ["train-prod-datasets"]), ([KEY], ["train-prod-checkpoints"]))
    assert _findings(kms) == []


def test_iam_catalogue_check_catches_a_bucket_action_on_an_object_arn() -> None:
    """The check above can fail: s3:ListBucket on `bucket/prefix*` is the mistake it exists for."""
    bad = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::train-prod-datasets/research/*"}]}  # fmt: skip
    assert [issue for issue, _ in _findings(json.dumps(bad))] == ["RESOURCE_MISMATCH"]


def test_s3_policy_is_scoped_to_the_grant_prefix_and_writes_only_where_granted() -> None:
    doc = json.loads(iam.tenant_s3_policy("us-east-1", GRANTS))
    by_resource = {s["Resource"]: s for s in doc["Statement"]}
    datasets = by_resource["arn:aws:s3:::train-prod-datasets/research/*"]
    assert "s3:PutObject" not in datasets["Action"] and "s3:GetObject" in datasets["Action"]
    assert "s3:PutObject" in by_resource["arn:aws:s3:::train-prod-checkpoints/research/*"]["Action"]
    listing = by_resource["arn:aws:s3:::train-prod-datasets"]
    assert listing["Action"] == "s3:ListBucket"
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["research/*"]}}
    assert not any("*" in str(s["Action"]) for s in doc["Statement"])


def test_iam_accepts_the_role_and_its_policies() -> None:
    with mock_aws():
        client = boto3.client("iam", region_name="us-east-1")
        trust = iam.pod_identity_trust_policy("train-prod-use1", "research", TENANT_S3_SERVICE_ACCOUNT)
        client.create_role(RoleName="research-s3", AssumeRolePolicyDocument=trust)
        client.put_role_policy(RoleName="research-s3", PolicyName="s3",
                               PolicyDocument=iam.tenant_s3_policy("us-east-1", GRANTS))  # fmt: skip
        kms = iam.tenant_s3_key_policy("us-east-1", ([KEY], ["train-prod-datasets"]), ([], []))
        client.put_role_policy(RoleName="research-s3", PolicyName="kms", PolicyDocument=kms)
        assert sorted(client.list_role_policies(RoleName="research-s3")["PolicyNames"]) == ["kms", "s3"]


def _refused(grants: list[dict[str, Any]]) -> str:
    config = example_config("aws-train")
    next(t for t in config[ESTATE_KEY]["tenants"] if t["name"] == "research")["s3"] = grants
    with pytest.raises(SpecError) as err:
        parse_estate(config[ESTATE_KEY], "stacks/Pulumi.test.yaml")
    return str(err.value)


def test_grant_on_a_bucket_the_estate_does_not_create_is_refused_listing_its_buckets() -> None:
    msg = _refused([{"bucket": "train-prod-models"}, {"bucket": "someone-elses-bucket"}])
    assert "tenants[0].s3[1].bucket: someone-elses-bucket is not a bucket the estate creates" in msg
    assert "train-prod-datasets" in msg


def test_grant_prefix_with_a_wildcard_or_leading_slash_is_refused_at_its_path() -> None:
    for prefix in ("/abs/", "a/*", "no-slash", "a/../b/"):
        msg = _refused([{"bucket": "train-prod-models", "prefix": prefix}])
        assert "config.gpufleet:estate.tenants[0].s3[0]: " in msg and "must be a plain key prefix" in msg, prefix
