"""`gpufleet validate`: a stack file checked against the schema and its cross-field rules, without synthesis."""

from __future__ import annotations

from gpufleet.cli.options import HERE, ProjectOpt, StackOpt, out


def validate(stack: StackOpt, project: ProjectOpt = HERE) -> None:
    """Check a stack file fast: schema, cross-field rules, burst window and ledger, secrets, the rule ids of its
    enforcement overrides. No synthesis, no policies (`gpufleet preview` and `gpufleet check` run those). Exits 2
    with one line per problem."""
    from gpufleet.review.stack_file import judged
    from model.burst import burst_pools
    from model.load import read_stack

    stack_file = read_stack(project, stack)
    judged(stack_file)
    out.print(f"{stack_file.path}: valid", markup=False)
    spec = stack_file.estate(priced=False)
    if spec.burst is not None and not spec.burst.alert_emails and burst_pools(spec):
        out.print(
            "warning: burst.alert_emails is empty: the burst budget and a failed AWS stop of a burst node group "
            "(its CloudWatch alarm) tell nobody",
            markup=False,
        )
