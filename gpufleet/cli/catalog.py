"""`gpufleet catalog show|refresh|s3-ranges`: the GPU instance catalog and the AWS data it ships."""

from __future__ import annotations

import http.client
from pathlib import Path
from typing import Annotated, Any

import typer

from gpufleet.cli.errors import CommandError
from gpufleet.cli.options import out

RegionOpt = Annotated[str, typer.Option("--region", "-r", help="Region for prices.")]
RefreshRegionOpt = Annotated[str, typer.Option("--region", "-r", help="Region whose AZ offerings to record.")]


PricesOpt = Annotated[
    bool,
    typer.Option(
        "--prices",
        help="Regenerate the region's on-demand instance prices and its storage and service list prices from the "
        "AWS Price List (pricing:GetProducts) and the known regions from botocore, instead of instance facts.",
    ),
]


OfferFilesOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--from",
        help="With --prices: read AWS Price List offer files downloaded from the bulk API (one per service: "
        "AmazonEC2, AmazonEKS, AWSDataTransfer, AmazonEFS, AmazonS3 for the region; repeat --from) instead of asking "
        "the Price List API, so no credentials are needed.",
        dir_okay=False,
    ),
]


def _offer_files(paths: list[Path], region: str) -> Any:
    """The offer files as a Price List client (exit 2 naming a file that cannot be read or holds no `region`)."""
    from gpufleet.catalog.price_list import OfferFileError, OfferFiles
    from model.inputs import SpecError

    try:
        offers = OfferFiles.read(paths)
    except SpecError as e:  # not a regular file, not UTF-8 or not JSON within the limits
        raise CommandError(f"--from: cannot read a Price List offer file: {e}") from None
    except OfferFileError as e:
        raise CommandError(f"--from: {e}") from None
    if region not in offers.regions():
        found = ", ".join(sorted(offers.regions())) or "none"
        raise CommandError(
            f"--from: no product of {', '.join(f for fs in offers.files.values() for f in fs)} is in {region} (regions found: {found}); download the "
            f"offer files for {region} (offers/v1.0/aws/<service>/current/{region}/index.json)"
        )
    return offers


def catalog_refresh(region: RefreshRegionOpt, prices: PricesOpt = False, offer_files: OfferFilesOpt = None) -> None:
    """Regenerate instance facts and AZ offerings from EC2, or (--prices) the region's prices from the AWS Price
    List (needs AWS credentials, or --from offer files)."""
    import boto3
    import botocore.exceptions

    from model import catalog

    if (unknown := catalog.unknown_region(region)) is not None:
        raise CommandError(f"--region: {unknown}")
    if offer_files and not prices:
        raise CommandError("--from: offer files price a region; use it with --prices")
    try:
        if prices:
            from gpufleet.catalog.price_list import PRICING_ENDPOINT_REGION, PriceListError
            from gpufleet.catalog.prices import refresh_instance_type_names, refresh_prices, refresh_regions

            client = (
                _offer_files(offer_files, region)
                if offer_files
                else boto3.client("pricing", region_name=PRICING_ENDPOINT_REGION)
            )
            try:
                doc = refresh_prices(client, region)
            except PriceListError as e:
                raise CommandError(f"the Price List answer cannot be used: {e}", exit_code=1) from None
            refresh_regions()
            refresh_instance_type_names()
            when = doc["sources"][region]["date"]
            where = "the offer files" if offer_files else "the Price List"
            out.print(
                f"prices: {len(doc['regions'][region])} GPU instance types priced in {region} ({when}); its storage "
                f"and service list prices rewritten where {where} answer{'' if offer_files else 's'}"
            )
            return
        from gpufleet.catalog.refresh import refresh

        doc = refresh(boto3.client("ec2", region_name=region), region)
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
        raise CommandError(f"AWS refused the catalog refresh: {e}") from None
    out.print(f"catalog: {len(doc['instances'])} instance types, offerings for {region} ({doc['generated']})")


FromOpt = Annotated[
    Path | None,
    typer.Option("--from", help="A local copy of ip-ranges.json instead of downloading it.", dir_okay=False),
]


def catalog_s3_ranges(source: FromOpt = None) -> None:
    """Rewrite the S3 address ranges tenant NetworkPolicies open, from AWS's ip-ranges.json (downloaded, or --from)."""
    from gpufleet.catalog.s3_ranges import URL, IpRangesError, download, read_ip_ranges, refresh_s3_ranges

    where = str(source) if source is not None else URL
    try:
        doc = read_ip_ranges(source) if source is not None else download()
    except (OSError, http.client.HTTPException) as e:  # the download (the environment: no network, a cut answer)
        raise CommandError(f"{where}: cannot read ip-ranges.json: {e}") from None
    except IpRangesError as e:  # the download answered with what is not ip-ranges.json (oversized, not JSON)
        raise CommandError(f"{where}: {e}") from None
    try:
        written = refresh_s3_ranges(doc)  # a write that fails is an OSError naming the catalog file (exit 2)
    except IpRangesError as e:
        raise CommandError(f"{where}: {e}") from None
    out.print(f"s3 ranges: {len(written['regions'])} regions, published {written['createDate']}")


def catalog_show(region: RegionOpt = "us-east-1") -> None:
    """List the GPU instance types the catalog holds, with GPUs, EFA and on-demand price."""
    from gpufleet.render.catalog import catalog_table, price_note
    from model import catalog

    if (unknown := catalog.unknown_region(region)) is not None:
        raise CommandError(f"--region: {unknown}")
    out.print(catalog_table(region))
    out.print(price_note(region), markup=False, soft_wrap=False)
