"""MultiKueueWiring: a hybrid estate's dispatch. A Kueue manager sends each job on-prem first, and to the cloud
when on-prem is full and a burst window is open.

The path of a job:
1. A tenant submits it to the manager (manager.KueueManagerStack), which reserves quota.
2. The manager copies the Workload to the on-prem site, and adds the cloud site if none admits it in a round.
3. On the cloud site, a burst ClusterQueue admits only inside a window, up to its cap (burst_queues.BurstQueues).
4. The first worker to admit the Workload gets the job; the manager deletes the other copies.

Why:
- A job is a MultiKueue job from creation: Kueue sets its `spec.managedBy`. A batch Job's managedBy is
  immutable, so moving a waiting Job to another queue would not make MultiKueue take it.
- The manager reaches each worker with a token of its own there (access.WorkerAccess).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.hybrid.access import WorkerAccess
from components.hybrid.burst_queues import BurstQueues, BurstQueuesArgs
from components.hybrid.manager import KueueManagerArgs, KueueManagerStack, WorkerLink
from components.kubernetes.cluster import ClusterStack
from model import dispatch
from model.burst import cloud_site
from model.spec import BurstWindow, EstateSpec
from model.tags import Tags


@dataclass(frozen=True)
class WorkerSite:
    """A site as the wiring sees it: its Kubernetes provider and stack, and the deployer's kubeconfig of it."""

    provider: k8s.Provider
    stack: ClusterStack
    kubeconfig: pulumi.Input[str]


@dataclass(frozen=True)
class MultiKueueArgs:
    spec: EstateSpec
    tags: Tags
    sites: Mapping[str, WorkerSite]  # every site of the estate
    manager_kubeconfig: pulumi.Input[str]  # secret: the deployer's kubeconfig of the manager cluster
    window: BurstWindow | None  # the burst window in stack config, open or not
    now: dt.datetime  # the moment the window is judged against


class MultiKueueWiring(pulumi.ComponentResource):
    """Creates the manager's Kubernetes provider and KueueManagerStack, a WorkerAccess on every worker, and the
    burst site's BurstQueues."""

    manager_provider: k8s.Provider

    def __init__(self, name: str, args: MultiKueueArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:hybrid:MultiKueue", name, None, opts)
        spec = args.spec
        assert spec.burst is not None, "a hybrid estate has a burst policy"
        manager = spec.burst.manager
        self.manager_provider = k8s.Provider(
            f"{manager.name}-k8s",
            kubeconfig=args.manager_kubeconfig,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        frameworks = dispatch.manager_frameworks(spec)
        links: dict[str, WorkerLink] = {}
        for site in dispatch.workers(spec):
            w = args.sites[site.name]
            access = WorkerAccess(f"{name}-{site.name}-access", frameworks, args.tags, self._on(w.provider, w.stack))
            links[site.name] = WorkerLink(w.kubeconfig, access.token)
        KueueManagerStack(
            manager.name,
            KueueManagerArgs(spec, args.tags, links),
            pulumi.ResourceOptions(parent=self, providers={"kubernetes": self.manager_provider}),
        )
        cloud = cloud_site(spec)  # the schema makes the burst site an aws site
        c = args.sites[cloud.name]
        BurstQueues(
            f"{name}-{cloud.name}-burst",
            BurstQueuesArgs(spec, cloud, args.tags, c.stack, args.window, args.now),
            self._on(c.provider, c.stack),
        )
        self.register_outputs({})

    def _on(self, provider: k8s.Provider, stack: ClusterStack) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, providers={"kubernetes": provider}, depends_on=[stack])
