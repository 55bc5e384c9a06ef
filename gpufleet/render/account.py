"""`gpufleet check --aws` as text: what the AWS account answered, problems first."""

from __future__ import annotations

from rich.console import Console

from gpufleet.review.reality.aws_account import AccountCheck


def account_text(result: AccountCheck, console: Console) -> None:
    """A heading, then one line per problem (what to request or change) and one per check that passed."""
    n = len(result.problems)
    verdict = f"{n} problem{'' if n == 1 else 's'}" if n else "ready for the first `up`"
    console.print(f"[bold]AWS account (read-only)[/bold]: {verdict}")
    for line in result.problems:
        console.print(f"  problem: {line}", markup=False)
    for line in result.checks:
        console.print(f"  ok: {line}", markup=False)
