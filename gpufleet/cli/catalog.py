"""`gpufleet catalog show|refresh`: the GPU instance catalog."""

from __future__ import annotations

from typing import Annotated

import typer

from gpufleet.cli.errors import CommandError
from gpufleet.cli.options import out

RegionOpt = Annotated[str, typer.Option("--region", "-r", help="Region for prices.")]
RefreshRegionOpt = Annotated[str, typer.Option("--region", "-r", help="Region whose AZ offerings to record.")]


def catalog_refresh(region: RefreshRegionOpt) -> None:
    """Regenerate instance facts and AZ offerings from EC2 (needs AWS credentials)."""
    import boto3
    import botocore.exceptions

    from gpufleet.catalog.refresh import refresh

    try:
        doc = refresh(boto3.client("ec2", region_name=region), region)
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
        raise CommandError(f"EC2 refused the catalog refresh: {e}") from None
    out.print(f"catalog: {len(doc['instances'])} instance types, offerings for {region} ({doc['generated']})")


def catalog_show(region: RegionOpt = "us-east-1") -> None:
    """List the GPU instance types the catalog holds, with GPUs, EFA and on-demand price."""
    from gpufleet.render.catalog import catalog_table

    out.print(catalog_table(region))
