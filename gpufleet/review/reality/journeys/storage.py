"""Storage: every volume of every pod binds and mounts on the nodes placement chose.

- A claim binds to the PersistentVolume it names or that is pre-bound to it (claimRef), or a StorageClass
  provisions one; a claim's access mode must allow the gang's nodes (ReadWriteOnce: one node).
- The CSI driver's node plugin must run on those nodes: its DaemonSet tolerates their taints and selects their
  labels.
- Two volumes of one pod with the same CSI driver and volumeHandle never both mount: the kubelet names a CSI volume
  by driver and handle (kubernetes/kubernetes#91556, kubernetes-sigs/aws-fsx-csi-driver#328).
- Inline volume types outside the restricted Pod Security profile (nfs, iscsi, ...) mount whatever the manifest
  says. If admission let one through, the cluster mounts it: the stage passes and says so.
"""

from __future__ import annotations

from typing import Any

from gpufleet.review.reality.journeys.core import Cite, ClusterView, PodSet, Stage, Walk, ref
from gpufleet.review.reality.journeys.nodes import cluster_nodes
from gpufleet.review.reality.scheduling import Node, fits

PV_DOC = "https://kubernetes.io/docs/concepts/storage/persistent-volumes/"
CITES = (
    Cite("a claim binds to the volume it names or that is pre-bound to it, or its class provisions one", PV_DOC),
    Cite("ReadWriteOnce: the volume can be mounted by a single node", PV_DOC + "#access-modes"),
    Cite("the kubelet names a CSI volume by driver and volumeHandle", "kubernetes/kubernetes#91556"),
    Cite("two FSx volumes with one volumeHandle in one pod never mount", "kubernetes-sigs/aws-fsx-csi-driver#328"),
    Cite(
        "the restricted profile allows only configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, "
        "projected and secret volumes",
        "https://kubernetes.io/docs/concepts/security/pod-security-standards/#restricted",
    ),
)
# Volume types the restricted Pod Security profile allows (Pod Security Standards, "Volume Types").
RESTRICTED_VOLUMES = (
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret",
)  # fmt: skip
NO_PROVISIONER = "kubernetes.io/no-provisioner"
SINGLE_NODE = ("ReadWriteOnce", "ReadWriteOncePod")


class Refused(Exception):
    """A volume that does not bind or mount: what blocks it and what would unblock it."""

    def __init__(self, detail: str, blocker: str, unblock: str) -> None:
        super().__init__(detail)
        self.detail, self.blocker, self.unblock = detail, blocker, unblock


def _meta(o: dict[str, Any]) -> dict[str, Any]:
    return o.get("metadata") or {}


def _pv_for_claim(view: ClusterView, namespace: str, claim: str) -> tuple[dict[str, Any] | None, str]:
    """The PersistentVolume a claim binds to, and how it binds (or why no volume is found)."""
    pvc = view.get("PersistentVolumeClaim", claim, namespace)
    spec = (pvc or {}).get("spec") or {}
    if spec.get("volumeName"):
        pv = view.get("PersistentVolume", str(spec["volumeName"]))
        if pv is None:
            raise Refused(
                f"claim {namespace}/{claim} names PersistentVolume {spec['volumeName']}, which does not exist",
                f"PersistentVolumeClaim/{namespace}/{claim}",
                f"create PersistentVolume {spec['volumeName']} or drop volumeName",
            )
        bound = ((pv.get("spec") or {}).get("claimRef")) or {}
        if bound and (bound.get("namespace"), bound.get("name")) != (namespace, claim):
            raise Refused(
                f"PersistentVolume {spec['volumeName']} is bound to {bound.get('namespace')}/{bound.get('name')}, "
                f"not to claim {namespace}/{claim}",
                ref(pv),
                "claim a volume pre-bound to this namespace",
            )
        return pv, f"bound to {ref(pv)}"
    for pv in view.of("PersistentVolume"):
        bound = (pv.get("spec") or {}).get("claimRef") or {}
        if (bound.get("namespace"), bound.get("name")) == (namespace, claim):
            how = "bound" if pvc else "pre-bound, binds when the claim is created"
            return pv, f"{how} to {ref(pv)}"
    if pvc is None:
        classes = ", ".join(sorted(str(_meta(c).get("name")) for c in view.of("StorageClass"))) or "none"
        raise Refused(
            f"PersistentVolumeClaim {namespace}/{claim} does not exist and no volume is pre-bound to it: the pod stays "
            "Pending",
            f"PersistentVolumeClaim/{namespace}/{claim}",
            f"create the claim with a StorageClass of the cluster ({classes})",
        )
    return None, _class_binds(view, spec.get("storageClassName"), f"claim {namespace}/{claim}")


def _class_binds(view: ClusterView, class_name: object, what: str) -> str:
    """A claim without a volume: its StorageClass must exist and provision (a no-provisioner class never does)."""
    if class_name is None:
        default = [c for c in view.of("StorageClass") if _is_default(c)]
        if not default:
            raise Refused(
                f"{what} names no StorageClass and the cluster has no default class",
                f"cluster/{view.name}",
                "name a StorageClass of the cluster",
            )
        class_name = _meta(default[0]).get("name")
    sc = view.get("StorageClass", str(class_name))
    if sc is None:
        raise Refused(
            f"{what} asks for StorageClass {class_name}, which does not exist",
            f"StorageClass/{class_name}",
            "use a StorageClass of the cluster",
        )
    if sc.get("provisioner") == NO_PROVISIONER:
        free = [
            pv
            for pv in view.of("PersistentVolume")
            if (pv.get("spec") or {}).get("storageClassName") == class_name
            and not (pv.get("spec") or {}).get("claimRef")
        ]
        if not free and sc.get("volumeBindingMode") != "WaitForFirstConsumer":
            raise Refused(
                f"{what}: StorageClass {class_name} provisions nothing and no free volume of that class exists",
                f"StorageClass/{class_name}",
                f"claim one of the volumes pre-bound to the namespace, or create a PersistentVolume of class {class_name}",
            )
        return f"class {class_name}: a local or pre-created volume"
    return f"provisioned by StorageClass/{class_name} ({sc.get('provisioner')})"


def _is_default(sc: dict[str, Any]) -> bool:
    return (_meta(sc).get("annotations") or {}).get("storageclass.kubernetes.io/is-default-class") == "true"


def _driver_of(view: ClusterView, pv: dict[str, Any] | None, class_name: object) -> str | None:
    if pv is not None:
        return ((pv.get("spec") or {}).get("csi") or {}).get("driver")
    sc = view.get("StorageClass", str(class_name)) if class_name else None
    provisioner = (sc or {}).get("provisioner")
    return None if provisioner in (None, NO_PROVISIONER) else str(provisioner)


def _node_plugin(view: ClusterView, driver: str, nodes: list[tuple[str, Node]]) -> None:
    """The driver's node plugin (the DaemonSet whose registrar names `/plugins/<driver>/`) runs on every node."""
    plugins = [
        ds
        for ds in view.of("DaemonSet")
        if f"/plugins/{driver}/" in str(((ds.get("spec") or {}).get("template") or {}).get("spec"))
    ]
    if not plugins:
        raise Refused(
            f"no DaemonSet of cluster {view.name} runs the node plugin of CSI driver {driver}",
            f"CSIDriver/{driver}",
            f"install the {driver} node plugin",
        )
    for pool, node in nodes:
        if not any(fits(((ds.get("spec") or {}).get("template") or {}).get("spec") or {}, node) for ds in plugins):
            raise Refused(
                f"the node plugin of CSI driver {driver} ({ref(plugins[0])}) does not run on the nodes of pool {pool}",
                ref(plugins[0]),
                f"let {ref(plugins[0])} select and tolerate the nodes of pool {pool}",
            )


def _placed_nodes(walk: Walk) -> list[tuple[str, Node]]:
    if walk.placement is None:
        return []
    pools = {p.strip() for p in walk.placement.pool.split(",")}
    return [(s.pool or "", s.node) for s in cluster_nodes(walk.spec, walk.cluster) if s.pool in pools]


def _claim(
    walk: Walk, pod_set: PodSet, vol: dict[str, Any], nodes: list[tuple[str, Node]], handles: dict[tuple[str, str], str]
) -> str:
    """One claim of a pod: it binds, its access modes allow the pods' nodes, its CSI handle is the pod's only one
    (`handles`: those the pod's other volumes use), its driver's node plugin runs there. How it binds."""
    ns, view, name = walk.workload.namespace, walk.cluster, str(vol.get("name"))
    claim = str(vol["persistentVolumeClaim"].get("claimName"))
    spread = walk.placement.nodes if walk.placement else 1
    pv, how = _pv_for_claim(view, ns, claim)
    pv_spec = (pv or {}).get("spec") or {}
    pvc_spec = ((view.get("PersistentVolumeClaim", claim, ns) or {}).get("spec")) or {}
    modes = list(pv_spec.get("accessModes") or pvc_spec.get("accessModes") or [])
    one_pod = "ReadWriteOncePod" in modes and walk.workload.pods > 1
    if modes and all(m in SINGLE_NODE for m in modes) and (spread > 1 or one_pod):
        many = f"{spread} nodes" if spread > 1 else f"{walk.workload.pods} pods"
        raise Refused(
            f"claim {ns}/{claim} is {', '.join(modes)}, but the workload's pods run on {many}",
            ref(pv) if pv else f"PersistentVolumeClaim/{ns}/{claim}",
            "use a ReadWriteMany volume for a gang across nodes, or one claim per pod",
        )
    driver = _driver_of(view, pv, pvc_spec.get("storageClassName"))
    handle = (pv_spec.get("csi") or {}).get("volumeHandle")
    if driver and handle:
        other = handles.get((driver, str(handle)))
        if other is not None:
            raise Refused(
                f"volumes {other} and {name} of pod set {pod_set.name} are two PersistentVolumes with one driver and "
                f"volumeHandle ({driver}, {handle}): the kubelet mounts one and the pod never starts "
                "(kubernetes/kubernetes#91556)",
                ref(pv or {}),
                "give every PersistentVolume its own volumeHandle",
            )
        handles[(driver, str(handle))] = name
    if driver:
        _node_plugin(view, driver, nodes)
    return how


def _pod_set(walk: Walk, pod_set: PodSet, nodes: list[tuple[str, Node]], notes: list[str]) -> list[str]:
    ns = walk.workload.namespace
    view = walk.cluster
    said: list[str] = []
    handles: dict[tuple[str, str], str] = {}
    templates = {
        str(_meta(t).get("name")): t
        for t in ((walk.workload.manifest.get("spec") or {}).get("volumeClaimTemplates") or [])
    }
    mounted = {m.get("name") for c in pod_set.containers() for m in c.get("volumeMounts") or []}
    for name, template in templates.items():
        if name in mounted:  # each replica gets its own claim: only its class must provision
            spec = template.get("spec") or {}
            said.append(f"{name}: {_class_binds(view, spec.get('storageClassName'), f'claim template {name}')}")
    for vol in pod_set.spec.get("volumes") or []:
        name = str(vol.get("name"))
        kind = next((k for k in vol if k != "name"), "")
        if kind == "persistentVolumeClaim":
            said.append(f"{name}: {_claim(walk, pod_set, vol, nodes, handles)}")
        elif kind == "ephemeral":
            spec = ((vol[kind].get("volumeClaimTemplate") or {}).get("spec")) or {}
            said.append(f"{name}: {_class_binds(view, spec.get('storageClassName'), f'ephemeral volume {name}')}")
        elif kind == "csi":
            _node_plugin(view, str(vol[kind].get("driver")), nodes)
            said.append(f"{name}: inline CSI volume of {vol[kind].get('driver')}")
        elif kind not in RESTRICTED_VOLUMES:
            why = "bypasses the tenant's subdirectory" if kind == "nfs" else "mounts what the manifest names"
            notes.append(
                f"estate defect: inline {kind} volume {name} of pod set {pod_set.name} {why}, and no admission rule "
                f"of namespace {ns} refuses it: the cluster mounts it as written"
            )
            said.append(f"{name}: inline {kind}, mounted as written")
    return said


def check(walk: Walk) -> Stage:
    """Every volume of every pod set binds and mounts on the nodes placement chose."""
    nodes = _placed_nodes(walk)
    notes: list[str] = []
    said: list[str] = []
    try:
        for pod_set in walk.pod_sets:
            said.extend(_pod_set(walk, pod_set, nodes, notes))
    except Refused as r:
        return Stage("storage", False, r.detail, r.blocker, r.unblock, CITES)
    walk.notes.extend(notes)
    detail = "; ".join(said) if said else "no volumes to bind"
    if notes:
        detail += "; " + "; ".join(notes)
    return Stage("storage", True, detail, cites=CITES)
