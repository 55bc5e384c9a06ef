"""`gpufleet validate`: a stack file checked against the schema and its cross-field rules, without synthesis."""

from __future__ import annotations

from gpufleet.cli.options import HERE, ProjectOpt, StackOpt, out


def validate(stack: StackOpt, project: ProjectOpt = HERE) -> None:
    """Check a stack file fast: schema, cross-field rules, burst window and ledger, secrets, the rule ids of its
    enforcement overrides. No synthesis, no policies (`gpufleet preview` and `gpufleet check` run those). Exits 2
    with one line per problem."""
    from gpufleet.review.stack_file import judged
    from model.load import read_stack

    stack_file = read_stack(project, stack)
    judged(stack_file)
    out.print(f"{stack_file.path}: valid", markup=False)
