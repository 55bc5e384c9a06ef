"""Kueue's ProvisioningRequest admission check, as data: Kueue asks cluster-autoscaler for nodes before it admits.

- A burst site's queues use it on every flavor (components/hybrid/burst_queues.py).
- An EKS site uses it on the topology-aware flavors of autoscaled pools (model.queues.provisioned_pools). Kueue assigns a
  topology against Ready nodes only, so a gang on a pool scaled below it would never be admitted. Behind the check,
  Kueue reserves quota, waits for the check, then assigns the topology on the nodes the autoscaler added. Its config
  manages every resource, so a pod set asking for no GPU gets a request too (`config_spec`).
- Sources: kubernetes-sigs/kueue at versions.KUEUE and cluster-autoscaler at versions.CLUSTER_AUTOSCALER_APP,
  cited beside each fact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

CONTROLLER = "kueue.x-k8s.io/provisioning-request"
# Atomic where the cloud provider implements AtomicIncreaseSize. AWS does not ("AtomicIncreaseSize is not
# implemented", cloudprovider/aws/aws_cloud_provider.go), so on AWS the scale-up "doesn't guarantee atomicity"
# (cluster-autoscaler FAQ.md, "Supported ProvisioningClasses"). Provisioned=True once the scale-up request succeeds.
PROVISIONING_CLASS = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
TOPOLOGY_CHECK = "gpufleet-topology-capacity"
"""The check (and its ProvisioningRequestConfig) guarding a site's topology-aware flavors on autoscaled pools."""


def check_spec(config: str) -> dict[str, Any]:
    """AdmissionCheck spec asking the autoscaler for capacity before Kueue admits (kueue
    site/content/en/docs/concepts/admission_check/provisioning_request.md, "Usage")."""
    return {
        "controllerName": CONTROLLER,
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": config},
    }


# Retries after a failed or expired request. cluster-autoscaler books a Provisioned request's capacity for 10
# minutes (processors/provreq/processor.go defaultReservationTime), then marks it BookingExpired. Kueue retries a
# workload not admitted by then while the attempt is at most backoffLimitCount, after b*2^(n-1) seconds
# (pkg/controller/admissionchecks/provisioning/controller.go, pkg/workload/admissionchecks.go
# UpdateAdmissionCheckRequeueState). 3 retries at base 60: 4 bookings and 60+120+240 s between them, about 47 minutes
# before Kueue rejects the check, against the 15 minutes the autoscaler waits for a node to be Ready
# (--max-node-provision-time, cluster-autoscaler FAQ.md). A retry's request counts the node still booting, which the
# autoscaler puts in its snapshot (core/static_autoscaler.go, upcoming nodes), so it starts no second node.
RETRY_STRATEGY = {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}


def config_spec(managed_resources: Sequence[str] = ()) -> dict[str, Any]:
    """ProvisioningRequestConfig: a best-effort atomic scale-up (PROVISIONING_CLASS), identical pod templates merged,
    retried with backoff (RETRY_STRATEGY; provisioning_request.md, "ProvisioningRequestConfig").

    `managed_resources`: the pod sets asking for one of them get a request; none given, every pod set does. A
    workload asking for none of them passes the check at once with no request ("NoRequestNeeded",
    pkg/controller/admissionchecks/provisioning/controller.go reqIsNeeded). That is harmless on a flavor without a Topology: its pods are created and the
    autoscaler sees them Pending. On a TAS flavor Kueue waits for Ready nodes first, so there the check manages
    everything (the topology check)."""
    return {
        "provisioningClassName": PROVISIONING_CLASS,
        **({"managedResources": list(managed_resources)} if managed_resources else {}),
        "retryStrategy": dict(RETRY_STRATEGY),
        "podSetMergePolicy": "IdenticalWorkloadSchedulingRequirements",
    }


def strategy(checks: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """A ClusterQueue's `admissionChecksStrategy`: check name -> the flavors it runs for (`onFlavors`; empty: every
    flavor; pkg/util/admissioncheck/admissioncheck.go NewAdmissionChecks)."""
    rules = [{"name": name, **({"onFlavors": list(on)} if on else {})} for name, on in checks.items()]
    return {"admissionChecks": rules}
