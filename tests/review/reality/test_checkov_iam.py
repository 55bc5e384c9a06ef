"""Checkov's IAM checks over the tenant S3 roles of the example plans, as the CloudFormation they amount to
(AWS::IAM::Role with its trust policy and inline policies): no failure for gpufleet's roles, and the same harness
fails a role with s3:* on every bucket, so the check can fail.

Checkov 3.3.30 (installed by .ci/run into .venv-checkov); its IAM checks are in checkov/cloudformation/checks/resource/
aws/ at that tag (e.g. IAMDataExfiltration.py, IAMWriteAccess.py, IAMStarResourcePolicyDocument.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpufleet.engine.plan import Plan
from model.conventions import SHARED, TENANT_LABEL
from tests.review.reality.test_checkov import scan

ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"


def tenant_role_templates(plan: Plan) -> dict[str, dict[str, Any]]:
    """Logical id -> AWS::IAM::Role for every role tagged with a tenant, with the role policies that name it."""
    out: dict[str, dict[str, Any]] = {}
    for role in plan.find(ROLE):
        if role.inputs.get("tags", {}).get(TENANT_LABEL, SHARED) == SHARED:
            continue
        policies = [
            {"PolicyName": p.name, "PolicyDocument": json.loads(p.inputs["policy"])}
            for p in plan.find(ROLE_POLICY)
            if role.key in p.dependencies
        ]
        logical = "".join(c for c in role.name.title() if c.isalnum())
        out[logical] = {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "AssumeRolePolicyDocument": json.loads(role.inputs["assumeRolePolicy"]),
                "Policies": policies,
            },
        }
    return out


def _failures(templates: dict[str, dict[str, Any]], tmp: Path) -> tuple[list[tuple[str, str]], int]:
    for name, resources in templates.items():
        (tmp / f"{name}.json").write_text(
            json.dumps({"AWSTemplateFormatVersion": "2010-09-09", "Resources": resources})
        )
    report = scan(tmp, "cloudformation")
    failed = [(f["check_id"], f["file_path"]) for f in report["results"]["failed_checks"]]
    return failed, report["summary"]["passed"]


def test_tenant_s3_roles_pass_checkovs_iam_checks_and_a_wildcard_role_does_not(
    example_plans: dict[str, Plan], tmp_path: Path
) -> None:
    ours = tenant_role_templates(example_plans["aws-train"])
    assert len(ours) == 2  # research and product (agents declares no S3)
    wildcard = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
    role = next(iter(ours.values()))
    bad = {
        **role,
        "Properties": {**role["Properties"], "Policies": [{"PolicyName": "all", "PolicyDocument": wildcard}]},
    }
    failed, passed = _failures({"ours": ours, "wildcard": {"WildcardRole": bad}}, tmp_path)
    assert passed > 0
    assert [f for f in failed if "ours" in f[1]] == []
    assert {c for c, file in failed if "wildcard" in file} >= {"CKV_AWS_108"}  # data exfiltration: s3:GetObject on *
