"""Tenant S3 identities: an IAM role tagged `tenant=<id>` (components.aws.tenant_identity) holds only scoped S3
access, and an untrusted tenant's S3 access is exactly what the stack declares for it.

A role's permissions are read from the policies that depend on it (`aws.iam.RolePolicy` with `role`, and
`aws.iam.RolePolicyAttachment` of AWS managed policies) and its `inlinePolicies`. IAM policy grammar: IAM User
Guide, "IAM JSON policy element reference" (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements.html);
S3 resource ARNs `arn:<partition>:s3:::<bucket>[/<key>]` (Service Authorization Reference, Amazon S3, resource types).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pulumi_policy import PolicyResource, ReportViolation, StackValidationArgs

from model.conventions import SHARED, TENANT_LABEL, TRUST_LABEL
from policies.common import as_dict, as_list, config, dependents, k8s_labels, objects, plain

ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
ROLE_POLICY_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
# AWS managed policies that grant S3 on every bucket (IAM console, AWS managed policies).
S3_MANAGED_POLICIES = ("AmazonS3FullAccess", "AmazonS3ReadOnlyAccess", "AdministratorAccess", "PowerUserAccess")


def _document(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            doc = json.loads(value)
        except ValueError:
            return {}
        return doc if isinstance(doc, dict) else {}
    return as_dict(plain(value))


def _statements(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for s in as_list(doc.get("Statement")):
        if isinstance(s, dict) and s.get("Effect") == "Allow":
            yield s


def tenant_roles(resources: list[PolicyResource]) -> dict[str, PolicyResource]:
    """URN -> role, for every IAM role tagged with a tenant other than `shared`."""
    out = {}
    for r in resources:
        if r.resource_type == ROLE and as_dict(r.props.get("tags")).get(TENANT_LABEL, SHARED) != SHARED:
            out[r.urn] = r
    return out


def role_statements(role: PolicyResource, resources: list[PolicyResource]) -> Iterator[dict[str, Any]]:
    """The Allow statements of the role's inline policies and of the role policies that depend on it."""
    for inline in as_list(role.props.get("inlinePolicies")):
        yield from _statements(_document(as_dict(inline).get("policy")))
    for r in dependents(resources, role, ROLE_POLICY):
        yield from _statements(_document(r.props.get("policy")))


def _s3_actions(statement: dict[str, Any]) -> list[str]:
    return [str(a) for a in as_list(statement.get("Action")) if str(a) == "*" or str(a).lower().startswith("s3:")]


def _wildcard(action: str) -> bool:
    return "*" in action


def _any_bucket(resource: str) -> bool:
    return resource == "*" or (":s3:::" in resource and resource.split(":s3:::", 1)[1].startswith("*"))


def tenant_s3_scoped(args: StackValidationArgs, report: ReportViolation) -> None:
    """No tenant role holds s3:* (or any S3 wildcard action) on every bucket, nor an AWS managed S3 policy."""
    for role in tenant_roles(args.resources).values():
        tenant = as_dict(role.props.get("tags")).get(TENANT_LABEL)
        for s in role_statements(role, args.resources):
            actions = [a for a in _s3_actions(s) if _wildcard(a)]
            broad = [str(x) for x in as_list(s.get("Resource")) if _any_bucket(str(x))]
            if actions and broad:
                report(f"tenant {tenant}'s role allows {', '.join(actions)} on {', '.join(broad)}", role.urn)
        for r in dependents(args.resources, role, ROLE_POLICY_ATTACHMENT):
            arn = str(r.props.get("policyArn") or "")
            if arn.rsplit("/", 1)[-1] in S3_MANAGED_POLICIES:
                report(f"tenant {tenant}'s role has {arn}, which reaches every bucket", role.urn)


def _granted(resource: str) -> str | None:
    """`bucket/prefix` of an object ARN `arn:...:s3:::bucket/prefix*`, `bucket` of a bucket ARN; None otherwise."""
    if ":s3:::" not in resource:
        return None
    return resource.split(":s3:::", 1)[1].removesuffix("*")


def _untrusted(resources: list[PolicyResource]) -> set[str]:
    return {
        str(labels.get(TENANT_LABEL))
        for ns in objects(resources, "Namespace")
        if (labels := k8s_labels(ns.props)).get(TRUST_LABEL) == "untrusted"
    }


def untrusted_tenant_s3_declared(args: StackValidationArgs, report: ReportViolation) -> None:
    """An untrusted tenant's role reaches only the bucket prefixes the stack declares for it (`tenantS3Grants`,
    written from tenants[].s3); with no declaration, no S3 at all."""
    declared = {str(t): [str(g) for g in as_list(v)] for t, v in as_dict(config(args, "tenantS3Grants", {})).items()}
    untrusted = _untrusted(args.resources)
    for role in tenant_roles(args.resources).values():
        tenant = str(as_dict(role.props.get("tags")).get(TENANT_LABEL))
        if tenant not in untrusted:
            continue
        grants = declared.get(tenant, [])
        for s in role_statements(role, args.resources):
            if not _s3_actions(s):
                continue
            for res in (str(x) for x in as_list(s.get("Resource"))):
                got = _granted(res)
                # An object ARN must lie under a declared prefix; a bucket ARN (ListBucket) must be a declared bucket.
                ok = got is not None and any(
                    got.startswith(g) if "/" in got else got == g.split("/", 1)[0] for g in grants
                )
                if not ok:
                    report(
                        f"untrusted tenant {tenant}'s role reaches {res}, which the stack does not declare", role.urn
                    )
