"""How `gpufleet verify` reaches each site's cluster, in this order:

1. `--kubeconfig SITE=PATH` (or a bare PATH when the estate has one site), optionally `PATH#CONTEXT`;
2. as the site's kind gives access (model.kinds, `kubeconfig_access`):
   - an EKS token (aws): the EKS cluster the stack built (model/kinds/aws.py `cluster_name`), described with the
     deployer's AWS credentials, and the same exec-based kubeconfig the Pulumi program hands its provider
     (`aws eks get-token`, model/kinds/aws.py `kubeconfig`);
   - a secret kubeconfig (baremetal), with `--pulumi-secrets`: the kubeconfig held in the site's Pulumi secret
     (`kubeconfig_config`), read with `pulumi config get <key> --stack <stack>` (needs the Pulumi CLI, logged in).

A site none of these reaches is a usage error naming the site and the options (exit 2).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, assert_never

import yaml

from gpufleet.verify.kube import ClusterApi
from model import kinds
from model.kinds.aws import kubeconfig
from model.kinds.facts import EksToken, SecretKubeconfig
from model.load import load_yaml, read_text, yaml_problem
from model.spec import EstateSpec, Site


class AccessError(Exception):
    """A site's cluster cannot be reached with what was given; the message says what to pass."""


def parse_kubeconfig_options(values: Sequence[str], spec: EstateSpec) -> dict[str, str]:
    """`SITE=PATH[#CONTEXT]` per site (and the MultiKueue manager by its name), or one bare `PATH[#CONTEXT]` for a
    one-site estate."""
    sites = [s.name for s in spec.sites] + ([spec.burst.manager.name] if spec.burst else [])
    out: dict[str, str] = {}
    for v in values:
        site, sep, path = v.partition("=")
        if not sep:
            if len(sites) != 1:
                raise AccessError(f"--kubeconfig {v}: the estate has sites {', '.join(sites)}; write SITE=PATH")
            site, path = sites[0], v
        if site not in sites:
            raise AccessError(f"--kubeconfig {v}: {site} is not a site of the estate ({', '.join(sites)})")
        out[site] = path
    return out


def load_kubeconfig(text: str, where: str) -> dict[str, Any]:
    try:
        doc = load_yaml(text, where)
    except yaml.YAMLError as err:
        raise AccessError(yaml_problem(where, err)) from None
    if not isinstance(doc, dict) or "clusters" not in doc:
        raise AccessError(f"{where}: not a kubeconfig (no `clusters`)")
    return doc


def eks_kubeconfig(site: str, access: EksToken, eks: Any) -> dict[str, Any]:
    name, region = access.cluster, access.region
    try:
        cluster = eks.describe_cluster(name=name)["cluster"]
    except Exception as e:  # botocore ClientError / NoCredentialsError
        raise AccessError(
            f"site {site}: cannot describe EKS cluster {name} in {region} ({e}); pass --kubeconfig "
            f"{site}=PATH (e.g. from `aws eks update-kubeconfig --name {name} --region {region}`)"
        ) from None
    ca = (cluster.get("certificateAuthority") or {}).get("data")
    return dict(json.loads(kubeconfig(name, cluster.get("endpoint"), ca, region)))


def pulumi_secret_kubeconfig(site: str, key: str, stack: str, project: Path) -> str:
    cmd = ["pulumi", "config", "get", key, "--stack", stack]
    try:
        done = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise AccessError(f"site {site}: `{' '.join(cmd)}` could not run ({e})") from None
    if done.returncode != 0:
        raise AccessError(f"site {site}: `{' '.join(cmd)}` failed: {done.stderr.strip()}")
    return done.stdout


def kubeconfig_for(
    spec: EstateSpec,
    stack: str,
    site: Site,
    given: dict[str, str],
    *,
    project: Path,
    pulumi_secrets: bool,
    eks_client: Callable[[str], Any],
    read_secret: Callable[[str, str, str, Path], str] = pulumi_secret_kubeconfig,
) -> tuple[dict[str, Any], str | None]:
    """The kubeconfig document and context to use for a site."""
    if site.name in given:
        path, _, context = given[site.name].partition("#")
        text = read_text(Path(path).expanduser(), f"not found (--kubeconfig {site.name}={path})")
        return load_kubeconfig(text, path), context or None
    access = kinds.of(site).kubeconfig_access(spec)
    match access:
        case EksToken():
            return eks_kubeconfig(site.name, access, eks_client(access.region)), None
        case SecretKubeconfig(key):
            if pulumi_secrets:
                return load_kubeconfig(read_secret(site.name, key, stack, project), f"Pulumi secret {key}"), None
            raise AccessError(
                f"site {site.name}: no kubeconfig. Pass --kubeconfig {site.name}=PATH, or --pulumi-secrets to read "
                f"the Pulumi secret `{key}` (pulumi config get {key} --stack {stack})"
            )
        case _:
            assert_never(access)


def manager_kubeconfig(
    spec: EstateSpec,
    stack: str,
    given: dict[str, str],
    *,
    project: Path,
    pulumi_secrets: bool,
    read_secret: Callable[[str, str, str, Path], str] = pulumi_secret_kubeconfig,
) -> tuple[dict[str, Any], str | None]:
    """The kubeconfig document and context of a hybrid estate's MultiKueue manager (`burst.manager`): given as
    `--kubeconfig <manager>=PATH`, or its Pulumi secret (`kubeconfig_config`) with --pulumi-secrets."""
    assert spec.burst is not None
    name, key = spec.burst.manager.name, spec.burst.manager.kubeconfig_config
    if name in given:
        path, _, context = given[name].partition("#")
        text = read_text(Path(path).expanduser(), f"not found (--kubeconfig {name}={path})")
        return load_kubeconfig(text, path), context or None
    if pulumi_secrets:
        return load_kubeconfig(read_secret(name, key, stack, project), f"Pulumi secret {key}"), None
    raise AccessError(
        f"MultiKueue manager {name}: no kubeconfig; tenants' probes are submitted there. Pass --kubeconfig "
        f"{name}=PATH, or --pulumi-secrets to read the Pulumi secret `{key}` (pulumi config get {key} --stack {stack})"
    )


def cluster_api(config: dict[str, Any], context: str | None) -> tuple[ClusterApi, str]:
    """Clients for a kubeconfig (the official `kubernetes` package) and the server's version."""
    from kubernetes import client
    from kubernetes import config as kube_config

    try:
        api_client = kube_config.new_client_from_config_dict(config, context=context)
    except Exception as e:  # ConfigException: missing context, bad credentials section
        raise AccessError(f"kubeconfig: {e}") from None
    try:
        version = client.VersionApi(api_client).get_code().git_version
    except Exception as e:  # unreachable API server, expired credentials
        raise AccessError(f"cannot reach the Kubernetes API ({e})") from None
    apis = ClusterApi(
        core=client.CoreV1Api(api_client),
        batch=client.BatchV1Api(api_client),
        custom=client.CustomObjectsApi(api_client),
    )
    return apis, str(version)
