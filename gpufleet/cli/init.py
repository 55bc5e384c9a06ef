"""`gpufleet init`: a first stack file (aws, baremetal or hybrid), commented, that previews cleanly once the
values only the user knows are filled in.

- Every value a real estate must change says so in a comment (CHANGE).
- Most are from the documentation ranges: RFC 5737 addresses, the example.com domain.
- Those that would fail a real `up` are `change-me` and every command refuses them until replaced
  (model.placeholders): the estate's name, which the global S3 bucket names derive from, the admin role ARN's
  account and role, and the deployer's egress CIDRs (the aws estate's `deployer.cidrs`, `endpoint_public_cidrs`).
- The catalog may hold no price for the cloud site's region. Then the prices to fill in are written, commented out.
- Secrets are `secure:` placeholders. They preview offline, and `pulumi config set --secret` replaces them before
  a real `up`.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from enum import StrEnum
from typing import Annotated

import typer

from gpufleet.cli.errors import CommandError
from gpufleet.cli.options import HERE, ProjectOpt, out
from model.placeholders import PLACEHOLDER

SECRET = "    secure: v1:REPLACEWITHPULUMICONFIGSETSECRET"
# Not AWS's example account 123456789012 (IAM user guide): kept with only the role name replaced, it names no
# role of the user's, so the account is a placeholder too.
ADMIN_ROLE = f"arn:aws:iam::{PLACEHOLDER}:role/{PLACEHOLDER}"
# Where `up` runs from and who reaches the public endpoint: an RFC 5737 range (203.0.113.0/24) is on no network,
# so a kept one locks the deployer out of its own cluster (model.placeholders.FIXES).
DEPLOYER_CIDR = PLACEHOLDER


class Kind(StrEnum):
    aws = "aws"
    baremetal = "baremetal"
    hybrid = "hybrid"


KindArg = Annotated[Kind, typer.Argument(help="aws, baremetal or hybrid (on-prem baseline that bursts to AWS).")]
NameOpt = Annotated[str | None, typer.Option("--stack", "-s", help="Stack name (default: the kind).")]
RegionOpt = Annotated[str, typer.Option("--region", "-r", help="AWS region of the cloud site (aws, hybrid).")]
GpuOpt = Annotated[str, typer.Option("--gpu", "-g", help="GPU model, e.g. H100-80GB (`gpufleet catalog show`).")]


def _known_gpu(gpu: str) -> None:
    """Refuse an unknown GPU model (bad input: exit 2), naming the known ones."""
    from model import catalog

    try:
        catalog.gpu_model(gpu)
    except catalog.CatalogError as e:
        raise CommandError("--gpu: " + str(e).strip("'\"")) from None


def _instance_for(gpu: str) -> str:
    """The catalog's instance type with the most `gpu`s (EFA-capable first): the training pool's type."""
    from model import catalog

    _known_gpu(gpu)
    types = [t for t in catalog.instance_types().values() if t.gpu.id == gpu]
    if not types:
        raise CommandError(f"--gpu: no AWS instance type in the catalog carries {gpu}")
    return max(types, key=lambda t: (t.gpu_count, t.efa_supported, t.name)).name


def _has_efa(instance: str) -> bool:
    from model import catalog

    return catalog.instance_type(instance).efa_supported


def _gpus_per_node(gpu: str) -> int:
    from model import catalog

    return catalog.instance_type(_instance_for(gpu)).gpu_count


def _zones(instance: str, region: str) -> tuple[list[str], str]:
    """Two AZs for the site and a comment saying how to check them.

    The catalog knows which AZ IDs offer the type, but not which AZ names those are in the user's account
    (https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html), so the names are a first guess."""
    from model import catalog

    offered = catalog.offered_zone_ids(instance, region)
    if offered == []:
        raise CommandError(f"--gpu: {instance} is offered in no AZ of {region} (the catalog's EC2 offerings)")
    where = "" if offered is None else f" ({len(offered)} AZ IDs of {region} offer {instance})"
    note = f"AZ names differ per account: `gpufleet check --aws` checks these{where}"
    return [f"{region}a", f"{region}b"], note


def _metadata(name: str) -> str:
    why = "short: prefixes every resource name"
    if name == PLACEHOLDER:
        why = "CHANGE: short, prefixes every resource and S3 bucket name (global)"
    return f"""    metadata:
      name: {name}                   # {why}
      environment: dev
      owner: ml-platform             # CHANGE: the owning team
      cost_center: cc-0000           # CHANGE: your cost centre"""


def _aws_site(
    name: str, region: str, gpu: str, burst: bool, indent: str = "      ", prices: tuple[str, ...] = ()
) -> str:
    instance = _instance_for(gpu)
    zones, note = _zones(instance, region)
    scaling = "{min: 0, max: 2}" if burst else "{min: 0, desired: 1, max: 2}"
    lines = [
        "- kind: aws",
        f"  name: {name}",
        f"  region: {region}",
        f"  availability_zones: [{', '.join(zones)}]   # {note}",
        "  vpc: {cidr: 10.60.0.0/16}         # CHANGE if it overlaps a network you route to",
        "  cluster:",
        '    version: "1.34"',
        f"    admin_role_arns: [{ADMIN_ROLE}]   # CHANGE: your platform admins' IAM role",
    ]
    if not burst:
        lines += [f"    endpoint_public_cidrs: [{DEPLOYER_CIDR}]   # CHANGE: the deployer's egress; else the VPC"]
    if burst:
        lines += [
            "  # CHANGE: your VPN device's public address and the on-prem networks the VPN routes",
            "  interconnect: {kind: vpn, site: onprem, customer_gateway_ip: 198.51.100.7, onprem_cidrs: [10.30.0.0/16]}",
        ]
    pool = "burst" if burst else "train"
    fabric = f"{pool}-efa" if _has_efa(instance) else None
    if fabric:
        lines += [
            f"  # {instance} has EFA: the training pool's nodes get their EFA interfaces on this fabric (one AZ,",
            "  # a subnet of its own, a cluster placement group). CHANGE the CIDR if it overlaps.",
            "  fabrics:",
            f"    - {{kind: efa, name: {fabric}, availability_zone: {zones[0]}, subnet_cidr: 10.60.128.0/20}}",
        ]
    lines += [
        "  node_pools:",
        f"    - name: {pool}",
        "      role: training",
        f"      instance_type: {instance}     # the catalog's largest {gpu} instance",
        *([f"      fabric: {fabric}"] if fabric else []),
        *(["      burst: true                 # idles at zero; `gpufleet burst open` grows it"] if burst else []),
        f"      scaling: {scaling}",
        "  storage:",
        "    - {kind: s3, name: objects}",
        "    - {kind: scratch, name: nvme}",
    ]
    if prices:
        lines += [
            f"  # CHANGE: the catalog holds no {region} price for these. `gpufleet validate` refuses the stack until",
            "  # each has one: uncomment, fill in your price with its date and source.",
            "  # prices:",
            *(f"  #   - {entry}" for entry in prices),
        ]
    return "\n".join(indent + line for line in lines)


def _baremetal_site(gpu: str, indent: str = "      ") -> str:
    _known_gpu(gpu)
    servers = "\n".join(
        f"    - {{hostname: gpu-0{i}, address: 192.0.2.1{i}, gpu_model: {gpu}, gpu_count: 8, "
        f"nvme_devices: [/dev/nvme1n1], rack: r1, leaf: leaf-1, "
        f'labels: {{pool: base}}, host_key: "{_made_up_host_key(f"gpu-0{i}")}"}}'
        for i in (1, 2)
    )
    text = f"""- kind: baremetal
  name: onprem
  kubeconfig_config: kubeconfig          # the secret above
  ssh: {{user: gpufleet, private_key_config: sshPrivateKey}}
  join: {{method: kubeadm, api_server: "k8s-api.example.com:6443"}}   # CHANGE: your cluster's API
  kubernetes: {{gpu_stack: gpu-operator, driver_version: "580.126.20", network_policy_cni: calico}}
  # Amortised price per server, so on-prem GPU-hours are priced beside cloud ones. CHANGE to your figures.
  cost: {{server_price_usd: 320000, lifetime_years: 4, power_kw: 11, usd_per_kwh: 0.12, ops_usd_per_server_month: 500}}
  # CHANGE: the cluster's nodes besides the GPU servers below (gpufleet joins and taints only those), with their
  # labels and taints. The controllers gpufleet installs run there; Kueue's tolerates no taint.
  system_nodes: [{{name: cpu-workers}}]
  # CHANGE: one line per server (addresses here are the documentation range 192.0.2.0/24). Each host_key is
  # made up (so `up` refuses to connect until it is replaced): use the server's real one, from
  # `ssh-keyscan -t ed25519 <address>` over a network you trust or its /etc/ssh/ssh_host_ed25519_key.pub.
  inventory:
{servers}
  node_pools:
    - {{name: base, role: training, selector: {{pool: base}}}}
  storage:
    - {{kind: scratch, name: nvme}}"""
    return "\n".join(indent + line for line in text.splitlines())


def _made_up_host_key(hostname: str) -> str:
    """A well-formed ed25519 public key line (RFC 4253 6.6 blob) that belongs to no server: a placeholder that
    fails closed (no real server presents it)."""

    def field(data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + data

    blob = field(b"ssh-ed25519") + field(hashlib.sha256(f"gpufleet-init {hostname}".encode()).digest())
    return f"ssh-ed25519 {base64.b64encode(blob).decode()} placeholder-{hostname}"


def _secrets(keys: list[str]) -> str:
    return "\n".join(f"  gpufleet:{k}:\n{SECRET}" for k in keys)


def render(kind: Kind, stack: str, region: str, gpu: str) -> str:
    """The stack file text for `kind`. Where the catalog cannot price what the cloud site bills in its region,
    the site carries the `prices` entries to fill in, commented out (validate names them until they are)."""
    text = _render(kind, stack, region, gpu, ())
    prices = _unpriced_entries(text)
    return _render(kind, stack, region, gpu, prices) if prices else text


def _unpriced_entries(text: str) -> tuple[str, ...]:
    import yaml

    from model import kinds
    from model.load import ESTATE_KEY, parse_estate
    from model.pricing import prices_entry, unpriced_needs

    # The CIDRs left to the user do not change what is priced: a documentation range (RFC 5737) stands in.
    text = text.replace(f"cidrs: [{DEPLOYER_CIDR}]", "cidrs: [192.0.2.0/24]")
    spec = parse_estate(yaml.safe_load(text)["config"][ESTATE_KEY], "init", priced=False)
    clouds = [cloud for s in spec.sites if (cloud := kinds.of(s).aws_site) is not None]
    return tuple(prices_entry(n) for cloud in clouds for n in unpriced_needs(cloud))


def _render(kind: Kind, stack: str, region: str, gpu: str, prices: tuple[str, ...]) -> str:
    if kind is Kind.baremetal and region:
        raise CommandError("--region: a baremetal estate has no AWS region (use aws or hybrid)")
    from model import catalog

    if region and (unknown := catalog.unknown_region(region)) is not None:
        raise CommandError(f"--region: {unknown}")
    secrets = ["kubeconfig", "sshPrivateKey", "caCertHash"]  # the join token is minted (Join.token)
    how = (
        "# Secrets (`secure:` below) are placeholders: `gpufleet preview` runs offline with them. Before a real\n"
        "# `pulumi up`, set each with `pulumi config set --secret <key> -s " + stack + "` (e.g. the kubeconfig:\n"
        "# `pulumi config set --secret kubeconfig -s " + stack + " < kubeconfig`).\n"
    )
    head = (
        f"# {stack}: written by `gpufleet init {kind.value}`. Every line marked CHANGE is a placeholder.\n"
        f"# Preview offline: gpufleet preview --stack {stack}    Check the file: gpufleet validate --stack {stack}\n"
        "# Allowed keys: `gpufleet schema` (a JSON Schema for your editor).\n"
    )
    tenants = (
        "    tenants:\n"
        "      - name: research               # CHANGE: one entry per team; quotas in GPUs per pool\n"
        "        gpu_quota: {{{pool}: {gpus}}}\n"
        "        members: [oidc:research-engineers]   # CHANGE: your identity provider's group\n"
    )
    fabric_tenant = (  # a fabric pool's tenant may run a gang across the pool's nodes over the fabric
        "    tenants:\n"
        "      - name: research               # CHANGE: one entry per team; quotas in GPUs per pool\n"
        "        gpu_quota: {{{pool}: {gpus}}}    # the pool's max: a gang across all its nodes\n"
        "        rdma: true                   # its jobs may use the fabric (EFA)\n"
        "        members: [oidc:research-engineers]   # CHANGE: your identity provider's group\n"
    )
    if kind is Kind.aws:
        region = region or "us-east-1"
        return (
            head
            + "config:\n"
            + f"  aws:region: {region}\n"
            + "  gpufleet:estate:\n"
            + _metadata(PLACEHOLDER)
            + f"\n    deployer:\n      cidrs: [{DEPLOYER_CIDR}]       # CHANGE: the fixed egress of the runner doing `up`\n"
            + "    sites:\n"
            + _aws_site("cloud", region, gpu, burst=False, prices=prices)
            + "\n"
            + (
                fabric_tenant.format(pool="train", gpus=2 * _gpus_per_node(gpu))
                if _has_efa(_instance_for(gpu))
                else tenants.format(pool="train", gpus=_gpus_per_node(gpu))
            )
        )
    if kind is Kind.baremetal:
        return (
            head
            + how
            + "config:\n"
            + _secrets(secrets)
            + "\n  gpufleet:estate:\n"
            + _metadata("lab")
            + "\n    deployer:\n      network: onprem               # a self-hosted runner in the data centre\n"
            + "      cidrs: [10.30.9.0/28]         # CHANGE: that runner's addresses\n"
            + "    sites:\n"
            + _baremetal_site(gpu)
            + "\n"
            + tenants.format(pool="base", gpus=8)
        )
    region = region or "us-east-1"
    return (
        head
        + how
        + "config:\n"
        + f"  aws:region: {region}\n"
        + _secrets([*secrets, "managerKubeconfig"])
        + "\n  gpufleet:estate:\n"
        + _metadata(PLACEHOLDER)
        + "\n    deployer:\n      network: onprem               # a self-hosted runner in the data centre\n"
        + "      cidrs: [10.30.9.0/28]         # CHANGE: that runner's addresses (inside onprem_cidrs)\n"
        + "    sites:\n"
        + _baremetal_site(gpu)
        + "\n"
        + _aws_site("cloud", region, gpu, burst=True, prices=prices)
        + "\n"
        + tenants.format(pool="base", gpus=8).rstrip("\n")
        + "\n        burst: true                  # its jobs (LocalQueue research on the manager) run on-prem\n"
        + "                                     # first, on the cloud site only while a burst window is open\n"
        + "    burst:\n"
        + "      cloud_site: cloud\n"
        + "      # the Kueue manager: an existing small cluster in the data centre that tenants submit to (CHANGE name)\n"
        + "      manager: {name: kueue-manager, kubeconfig_config: managerKubeconfig, network: onprem,\n"
        + "                system_nodes: [{name: cpu-workers}]}   # CHANGE: its nodes, where its Kueue runs\n"
        + "      budget_usd: 10000              # CHANGE: monthly cloud burst budget\n"
        + "      max_window_hours: 24\n"
        + f"      allowed_instance_types: [{_instance_for(gpu)}]\n"
    )


def init(kind: KindArg, gpu: GpuOpt, stack: NameOpt = None, region: RegionOpt = "", project: ProjectOpt = HERE) -> None:
    """Write a commented starter stack file (stacks/Pulumi.<stack>.yaml) that previews cleanly once each
    `change-me` is replaced.

    Refuses to overwrite an existing stack file.
    """
    from model.load import stack_path

    name = stack or kind.value
    path = stack_path(project, name)
    if path.exists():
        raise CommandError(f"{path}: already exists; choose another --stack or remove it")
    text = render(kind, name, region, gpu)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    first = f"replace each `{PLACEHOLDER}` (CHANGE), then " if PLACEHOLDER in text else ""
    out.print(f"wrote {path}; next: {first}gpufleet preview --stack {name}", markup=False)
    if "  # prices:" in text:
        out.print(f"{path}: fill in the commented `prices` entries (CHANGE) before it validates", markup=False)
