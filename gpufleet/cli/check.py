"""`gpufleet check`: the policy packs over the stack's plan, as `pulumi preview --policy-pack` runs them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpufleet.burst.aws import Aws
from gpufleet.burst.errors import BurstError
from gpufleet.cli.errors import CommandError, output_directory
from gpufleet.cli.options import (
    HERE,
    ChartCacheOpt,
    CheckFormat,
    CheckFormatOpt,
    ProjectOpt,
    StackOpt,
    SummaryOpt,
    out,
    progress,
)

if TYPE_CHECKING:
    from gpufleet.review.reality.aws_account import AccountCheck
    from model.spec import EstateSpec

WriteConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--write-config",
        help="Write one --policy-pack-config file per pack (<dir>/<pack>.json) for `pulumi preview` and stop.",
    ),
]


AwsOpt = Annotated[
    bool,
    typer.Option(
        "--aws",
        help="Also read the AWS account (read-only, the deployer's credentials): each GPU pool's EC2 vCPU quota and "
        "whether its AZs offer its instance type.",
    ),
]
# The account's AWS access per region; tests put moto or a stub here.
make_aws: Callable[[str], Aws] = Aws


def check(
    stack: StackOpt,
    format: CheckFormatOpt = CheckFormat.text,
    aws: AwsOpt = False,
    write_config: WriteConfigOpt = None,
    project: ProjectOpt = HERE,
    chart_cache: ChartCacheOpt = None,
    summary: SummaryOpt = False,
) -> None:
    """Evaluate the policy packs, simulate the first `up` and the teardown, and walk the canonical journeys
    offline; exit 1 on a mandatory violation, a first-up problem, a teardown deletion that fails on a dependency
    or a journey that does not answer as promised. The verdicts come first with what fails them; --summary
    leaves out the advisory findings, first-up notes and what the teardown keeps. --aws also reads the account's
    quotas and offerings and exits 1 on what the first `up` would fail on."""
    if summary and format is CheckFormat.json:
        raise CommandError("--summary: only for text (json carries every finding; select with jq)")
    from gpufleet.review import check as checker

    if write_config is not None:
        output_directory(write_config, "--write-config")
        for path in checker.write_configs(checker.load_spec(project, stack), write_config):
            out.print(f"pulumi preview -s {stack} --policy-pack policies/{path.stem} --policy-pack-config {path}")
        return

    from gpufleet.render.preview import check_json, check_text
    from gpufleet.review.review import build

    with progress(f"check {stack}: synthesizing offline, running the policy packs and the reality checks"):
        review = build(project, stack, chart_cache=chart_cache)
    account = _account(review.spec) if aws else None
    match format:
        case CheckFormat.json:
            doc = json.loads(check_json(review))
            doc["aws_account"] = None if account is None else account.to_dict()
            print(json.dumps(doc, indent=1))
        case CheckFormat.text:
            check_text(review, out, summary_only=summary)
            if account is not None:
                from gpufleet.render.account import account_text

                account_text(account, out)
    if (
        (review.findings is not None and not review.findings.passed)
        or (review.first_up and review.first_up.problems)
        or review.journeys_failed()
        or (account is not None and account.problems)
        or (review.teardown and review.teardown.failures)
    ):
        raise typer.Exit(1)


def _account(spec: EstateSpec) -> AccountCheck:
    """The account read through `make_aws`; an AWS error (credentials, permissions, throttling) is the
    environment's, exit 2, and nothing is judged."""
    from gpufleet.review.reality.aws_account import check_account

    with progress("check --aws: reading EC2 offerings and Service Quotas"):
        try:
            return check_account(spec, make_aws)
        except BurstError as err:
            raise CommandError(f"--aws: the account could not be read: {err}") from None
