"""Kubernetes objects of the acceptance run, as plain dicts for the official client. Pure.

Multi-node NCCL runs as an Indexed Job with a headless Service (stable pod DNS names `<job>-<i>.<service>`) and
sshd in every pod: pod 0 runs `mpirun` over ssh, the way MPI launchers work, without the MPI Operator (not
installed by the estate) and without JobSet (its CRD is not installed either; Kueue only integrates with it).
Fabric probes are tenant jobs: in the tenant's namespace, labelled with its LocalQueue, run as its
ServiceAccount, picking the pool by its pool label (Kueue's flavor adds the tolerations) and asking for the
fabric's devices. Every object carries the run label, so cleanup finds exactly what one run created.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from gpufleet.review.reality.journeys.core import QUEUE_LABEL
from gpufleet.verify import thresholds
from model import conventions, dra, kinds, nodes, queues, versions
from model.rdma import SRIOV_RESOURCE_PREFIX, fabric_requests, sriov_network, sriov_resource_name, uses_sriov
from model.spec import (
    EfaFabric,
    EstateSpec,
    InfinibandFabric,
    NodePool,
    RoceFabric,
    Site,
)

Pool = NodePool
Manifest = dict[str, Any]

RUN_LABEL = "gpufleet.io/verify-run"
CHECK_ANNOTATION = "gpufleet.io/verify-check"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpufleet-verify"}
NCCL_BINARY = "/opt/nccl-tests/build/all_reduce_perf"  # both nccl-tests images build into /opt/nccl-tests
SSH_MOUNT = "/etc/gpufleet-ssh"
DONE_MARKER = "/tmp/gpufleet-verify-done"
FIO_MARKER = "=== gpufleet fio {} ==="
DATA_MOUNT = "/data"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"  # Multus: the NetworkAttachmentDefinitions a pod attaches to
RESTRICTED = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "runAsUser": 65534,
    "runAsGroup": 65534,
    "seccompProfile": {"type": "RuntimeDefault"},
}


@dataclass(frozen=True)
class Run:
    """One verify run on one cluster: its id (in every name and label) and its namespace."""

    run_id: str

    @property
    def namespace(self) -> str:
        return f"gpufleet-verify-{self.run_id}"

    def labels(self, **extra: str) -> dict[str, str]:
        return {**MANAGED_BY, RUN_LABEL: self.run_id, **extra}

    def meta(self, name: str, namespace: str | None = None, check: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"name": name, "namespace": namespace or self.namespace, "labels": self.labels()}
        if check:
            out["annotations"] = {CHECK_ANNOTATION: check}
        return out


def namespace(run: Run) -> Manifest:
    """The run's own namespace. Pod Security `privileged`: DCGM diagnostics need SYS_ADMIN and RDMA / EFA need
    IPC_LOCK, neither allowed by baseline; the namespace lives only while the run does (deleted in `finally`).
    It carries no `tenant` label, so Kueue and the tenant admission policies leave it alone."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": run.namespace,
            "labels": {**run.labels(), **conventions.pod_security_labels("privileged")},
        },
    }


def _placement(pool: Pool) -> dict[str, Any]:
    return {
        "nodeSelector": {conventions.POOL_LABEL: pool.name},
        "tolerations": [t.toleration() for t in nodes.pool_taints(pool)],
    }


def _as_tenant(pool: Pool) -> dict[str, Any]:
    """What a tenant's pod says about placement and identity: the pool label (Kueue's flavor injects the pool's
    tolerations) and the tenant's ServiceAccount, without an API token (components/kubernetes/tenancy.py)."""
    return {
        "nodeSelector": {conventions.POOL_LABEL: pool.name},
        "serviceAccountName": conventions.TENANT_SERVICE_ACCOUNT,
        "automountServiceAccountToken": False,
    }


def queued(job: Manifest, queue: str) -> Manifest:
    """The Job labelled with a LocalQueue of its namespace: Kueue suspends it until a Workload is admitted."""
    job["metadata"]["labels"][QUEUE_LABEL] = queue
    return job


def job_manifest(run: Run, name: str, check: str, pod: dict[str, Any], *, count: int = 1, deadline: int = 1800,
         namespace: str | None = None, indexed: bool = False, labels: dict[str, str] | None = None) -> Manifest:  # fmt: skip
    spec: dict[str, Any] = {
        "backoffLimit": 0,
        "activeDeadlineSeconds": deadline,
        "completions": count,
        "parallelism": count,
        "template": {"metadata": {"labels": run.labels(**(labels or {}))}, "spec": {"restartPolicy": "Never", **pod}},
    }
    if indexed:
        spec["completionMode"] = "Indexed"
    meta = run.meta(name, namespace, check)
    meta["labels"] = {**meta["labels"], **(labels or {})}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}


# -- fabric: NCCL ---------------------------------------------------------------------------------------------
def nccl_env(spec: EstateSpec, site: Site, pool: Pool) -> dict[str, str]:
    fabric = next((f for f in site.fabrics if f.name == pool.fabric), None)
    env = {"NCCL_DEBUG": "WARN", "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    if isinstance(fabric, EfaFabric):
        # libfabric >= 1.18 needs only FI_EFA_USE_HUGE_PAGE=0 to run without hugepages (aws-ofi-nccl docs).
        env |= {"FI_PROVIDER": "efa", "FI_EFA_USE_HUGE_PAGE": "0"}
    elif isinstance(fabric, InfinibandFabric | RoceFabric):
        servers = kinds.of(site).selected_servers(pool.name)
        ports = servers[0].ib_ports if servers else []
        env |= {"NCCL_SOCKET_IFNAME": "eth0", "UCX_TLS": "tcp", "UCX_NET_DEVICES": "eth0",
                "OMPI_MCA_coll_hcoll_enable": "0"}  # fmt: skip
        if ports and not uses_sriov(fabric):  # a VF pod sees only its own device, not the host's ports
            env["NCCL_IB_HCA"] = "=" + ",".join(ports)
    return env


def nccl_image(site: Site, pool: Pool) -> str:
    fabric = next((f for f in site.fabrics if f.name == pool.fabric), None)
    return (versions.NCCL_TESTS_EFA if isinstance(fabric, EfaFabric) else versions.NCCL_TESTS_IB).reference


def nccl_args(spec: EstateSpec, pool: Pool, gpus_per_process: int) -> str:
    top = thresholds.nccl_max_bytes(spec.pool_gpu_model(pool.name))
    return f"-b {thresholds.NCCL_MIN_BYTES} -e {top} -f 2 -g {gpus_per_process} -c 1 -n 20 -w 5"


def ssh_secret(run: Run, name: str, private_key: str, public_key: str, namespace: str | None = None) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": run.meta(name, namespace),
        "type": "Opaque",
        "stringData": {"id_ed25519": private_key, "id_ed25519.pub": public_key, "authorized_keys": public_key},
    }


def headless_service(run: Run, name: str, namespace: str | None = None) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": run.meta(name, namespace),
        "spec": {"clusterIP": "None", "selector": {"job-name": name}, "publishNotReadyAddresses": True},
    }


def _nccl_script(name: str, node_count: int, gpus: int, env: dict[str, str], args: str) -> str:
    hosts = [f"{name}-{i}.{name}" for i in range(node_count)]
    exports = " ".join(f"-x {k}" for k in sorted(env))
    lines = [
        "set -u",
        f"mkdir -p /root/.ssh /run/sshd && cp {SSH_MOUNT}/id_ed25519 {SSH_MOUNT}/authorized_keys /root/.ssh/",
        "chmod 700 /root/.ssh && chmod 600 /root/.ssh/id_ed25519 /root/.ssh/authorized_keys",
        "ssh-keygen -A >/dev/null && /usr/sbin/sshd",
        'if [ "$JOB_COMPLETION_INDEX" != 0 ]; then',
        f"  while [ ! -f {DONE_MARKER} ]; do sleep 2; done; exit 0",
        "fi",
        ": > /tmp/hostfile",
        *[f"echo '{h} slots={gpus}' >> /tmp/hostfile" for h in hosts],
        *[f"until ssh -o StrictHostKeyChecking=no -o ConnectTimeout=5 {h} true; do sleep 3; done" for h in hosts],
        f"mpirun --allow-run-as-root -np {node_count * gpus} --npernode {gpus} --hostfile /tmp/hostfile "
        f"--bind-to none {exports} {NCCL_BINARY} {args}",
        "rc=$?",
        *[f"ssh -o StrictHostKeyChecking=no {h} touch {DONE_MARKER}" for h in hosts[1:]],
        "exit $rc",
    ]
    return "\n".join(lines)


def nccl_multi_node_job(run: Run, name: str, check: str, spec: EstateSpec, site: Site, pool: Pool, node_count: int,
                        tenant: str) -> Manifest:  # fmt: skip
    """`node_count` pods, one per node of `pool` (required anti-affinity), each with all the node's GPUs and the
    fabric's devices, as a Job of `tenant` through its LocalQueue (one Workload: Kueue admits the gang at once).

    The namespace is an RDMA one: Pod Security baseline plus IPC_LOCK, which RDMA and EFA need to pin memory
    (components/kubernetes/admission.py). sshd and mpirun run as root, which baseline admits. On an SR-IOV fabric
    the pod attaches to the tenant's network and asks for one virtual function (model.rdma.sriov_network)."""
    gpus = spec.pool_gpus_per_node(pool.name)
    env = nccl_env(spec, site, pool)
    resources = fabric_requests(spec, site, pool)
    fabric = next(f for f in site.fabrics if f.name == pool.fabric)
    network = sriov_network(fabric, tenant) if uses_sriov(fabric) else None
    if uses_sriov(fabric) and network:
        resources[f"{SRIOV_RESOURCE_PREFIX}/{sriov_resource_name(fabric)}"] = "1"
    pod = {
        **_as_tenant(pool),
        "subdomain": name,
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"job-name": name}}, "topologyKey": conventions.HOSTNAME_LABEL}
                ]
            }
        },
        "containers": [
            {
                "name": "nccl",
                "image": nccl_image(site, pool),
                "command": ["bash", "-c", _nccl_script(name, node_count, gpus, env, nccl_args(spec, pool, 1))],
                "env": [{"name": k, "value": v} for k, v in sorted(env.items())],
                "resources": {"requests": resources, "limits": resources},
                "securityContext": {
                    "capabilities": {"add": ["IPC_LOCK"]},
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "volumeMounts": [{"name": "ssh", "mountPath": SSH_MOUNT}, {"name": "shm", "mountPath": "/dev/shm"}],
            }
        ],
        "volumes": [
            {"name": "ssh", "secret": {"secretName": name, "defaultMode": 0o400}},
            {"name": "shm", "emptyDir": {"medium": "Memory"}},
        ],
    }
    if dra.rack_scale(pool):  # across the NVLink domain through one IMEX channel of the run's ComputeDomain
        dra.claim_channel(pod, compute_domain(run, name, tenant))
    job = job_manifest(run, name, check, pod, count=node_count, indexed=True, deadline=2400, namespace=tenant)
    annotations = {**queues.topology_request(site, pool), **({NETWORKS_ANNOTATION: network} if network else {})}
    if annotations:
        job["spec"]["template"]["metadata"]["annotations"] = annotations
    return queued(job, tenant)


def compute_domain(run: Run, name: str, tenant: str) -> Manifest:
    """The run's ComputeDomain in the tenant's namespace (model.dra.compute_domain), labelled like every object of
    the run: a rack-scale gang's pods reach each other's GPUs over multi-node NVLink only through its IMEX channel."""
    domain = dra.compute_domain(name, tenant, f"{name}-channel")
    domain["metadata"] = run.meta(name, tenant)
    return domain


def nccl_single_node_job(run: Run, name: str, check: str, spec: EstateSpec, site: Site, pool: Pool,
                         tenant: str) -> Manifest:  # fmt: skip
    """One process driving every GPU of one node (`-g <gpus>`): NVLink / PCIe only, no network. A Job of `tenant`
    through its LocalQueue, under Pod Security restricted (which every tenant namespace admits)."""
    gpus = spec.pool_gpus_per_node(pool.name)
    resources = {queues.gpu_resource_name(site, pool): str(gpus)}
    pod = {
        **_as_tenant(pool),
        "containers": [
            {
                "name": "nccl",
                "image": nccl_image(site, pool),
                "command": ["bash", "-c", f"{NCCL_BINARY} {nccl_args(spec, pool, gpus)}"],
                "env": [{"name": "NCCL_DEBUG", "value": "WARN"}],
                "resources": {"requests": resources, "limits": resources},
                "securityContext": RESTRICTED,
                "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
            }
        ],
        "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
    }
    job = job_manifest(run, name, check, pod, deadline=1200, namespace=tenant)
    if annotations := queues.topology_request(site, pool):
        job["spec"]["template"]["metadata"]["annotations"] = annotations
    return queued(job, tenant)


# -- GPUs: DCGM diagnostics -------------------------------------------------------------------------------------
QUARANTINE_TOLERATION = conventions.QUARANTINE_TOLERATION


def dcgm_diag_job(
    run: Run, name: str, check: str, spec: EstateSpec, site: Site, pool: Pool, node: str, level: int
) -> Manifest:
    """`dcgmi diag -r <level> -j` on every GPU of one node, with its own host engine. SYS_ADMIN: DCGM's
    diagnostics read and reset GPU state that the default capability set does not allow."""
    gpus = spec.pool_gpus_per_node(pool.name)
    resources = {queues.gpu_resource_name(site, pool): str(gpus)}
    script = f'nv-hostengine >/dev/null 2>&1; sleep 3; dcgmi diag -r {int(level)} -j; echo "dcgmi exit $?" >&2'
    placement = _placement(pool)
    placement["nodeSelector"] = {**placement["nodeSelector"], conventions.HOSTNAME_LABEL: node}
    # A quarantined node is probed again, so a repaired one can be verified before its `--return`.
    placement["tolerations"] = [*placement["tolerations"], QUARANTINE_TOLERATION]
    pod = {
        **placement,
        "containers": [
            {
                "name": "dcgm",
                "image": versions.DCGM.reference,
                "command": ["bash", "-c", script],
                "resources": {"requests": resources, "limits": resources},
                "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}},
            }
        ],
    }
    return job_manifest(run, name, check, pod, deadline={1: 600, 2: 1200, 3: 3600}.get(level, 7200))


# -- storage: fio ------------------------------------------------------------------------------------------------
def claim(run: Run, name: str, storage_class: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": run.meta(name),
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": "100Gi"}},
        },
    }


def fio_script(directory: str) -> str:
    common = (
        f"--directory={shlex.quote(directory)} --bs=1M --direct=1 --ioengine=libaio --iodepth=32 --numjobs=8 "
        "--size=2G --runtime=45 --time_based --group_reporting --output-format=json"
    )
    return "\n".join(
        [
            "set -e",
            f"mkdir -p {shlex.quote(directory)}",
            f"echo '{FIO_MARKER.format('write')}'",
            f"fio --name=write --rw=write {common}",
            f"echo '{FIO_MARKER.format('read')}'",
            f"fio --name=read --rw=read {common}",
            f"rm -rf {shlex.quote(directory)}",
        ]
    )


def fio_job(
    run: Run, name: str, check: str, pool: Pool, node: str, claim_name: str, namespace: str | None = None
) -> Manifest:
    """fio on one training node against a claim. In a tenant namespace (a tier whose volumes are pre-bound per
    tenant) the pod follows Pod Security `restricted` and Kueue admits the Job through the tenant's default
    queue; in the run's namespace it runs as root on the volume."""
    placement = _placement(pool)
    placement["nodeSelector"] = {**placement["nodeSelector"], conventions.HOSTNAME_LABEL: node}
    container: dict[str, Any] = {
        "name": "fio",
        "image": versions.FIO.reference,
        "command": ["sh", "-c", fio_script(f"{DATA_MOUNT}/gpufleet-verify-{run.run_id}-{name}")],
        "resources": {"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"cpu": "8", "memory": "8Gi"}},
        "volumeMounts": [{"name": "data", "mountPath": DATA_MOUNT}],
    }
    if namespace is not None:
        container["securityContext"] = RESTRICTED
    pod = {**placement, "containers": [container],
           "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]}  # fmt: skip
    return job_manifest(run, name, check, pod, namespace=namespace, deadline=900)
