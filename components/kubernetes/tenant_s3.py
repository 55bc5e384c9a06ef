"""A tenant namespace's side of its S3 access (tenant `s3`, resolved by model.tenant_s3): the `s3-access` service
account its Pod Identity association names, and egress to S3 and to the Pod Identity agent.

- Egress to S3 lists AWS's published S3 ranges for the site's region, because a NetworkPolicy cannot name the
  S3 prefix list (`s3_egress_policy_spec`).
- Those ranges hold every bucket of the region. The IAM role scopes what the tenant's credentials reach; it does
  not limit a pod with other credentials.
"""

from __future__ import annotations

from typing import Any

from model import catalog
from model.spec import AwsSite, EstateSpec, Tenant
from model.tenant_s3 import tenant_s3_access

# The Pod Identity agent answers pods on the node's link-local address, port 80 (EKS user guide, pod-id-agent-setup).
POD_IDENTITY_AGENT = "169.254.170.23/32"
POD_IDENTITY_AGENT_PORTS = [{"protocol": "TCP", "port": 80}]
S3_PORTS = [{"protocol": "TCP", "port": 443}]


def has_s3_access(spec: EstateSpec, site: AwsSite, tenant: Tenant) -> bool:
    """The tenant holds grants on this site's buckets: its namespace gets the service account and egress."""
    return bool(tenant_s3_access(spec, site, tenant))


def s3_egress_policy_spec(site: AwsSite) -> dict[str, Any]:
    """NetworkPolicy spec: every pod of the namespace may open HTTPS to the region's S3 ranges and reach the Pod
    Identity agent.

    S3 traffic from the private subnets leaves through the VPC's S3 gateway endpoint (components.aws.network), which
    routes the region's prefix list `com.amazonaws.<region>.s3`. S3 answers on its public addresses, not inside the
    VPC, so egress to the VPC CIDR never reaches it. The EKS VPC CNI enforces only `ipBlock` rules, with no FQDN or
    prefix-list selectors (EKS user guide, cni-network-policy, "Considerations"). So the policy lists AWS's published
    S3 ranges (ip-ranges.json, service S3: model/catalog/aws_s3_ranges.json, dated).
    """
    return {
        "podSelector": {},
        "policyTypes": ["Egress"],
        "egress": [
            {"to": [{"ipBlock": {"cidr": c}} for c in catalog.s3_ranges(site.region)], "ports": S3_PORTS},
            {"to": [{"ipBlock": {"cidr": POD_IDENTITY_AGENT}}], "ports": POD_IDENTITY_AGENT_PORTS},
        ],
    }
