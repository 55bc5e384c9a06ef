"""`gpufleet validate`: a stack file checked against the schema and its cross-field rules, without synthesis."""

from __future__ import annotations

from gpufleet.cli.options import HERE, ProjectOpt, StackOpt, out


def validate(stack: StackOpt, project: ProjectOpt = HERE) -> None:
    """Check a stack file fast: schema, cross-field rules, burst window and ledger, secrets. No synthesis, no
    policies (`gpufleet preview` and `gpufleet check` run those). Exits 2 with one line per problem."""
    from model.load import check_window, read_stack
    from model.secrets import check_secrets

    stack_file = read_stack(project, stack)
    spec = stack_file.estate()
    window = stack_file.window()
    check_window(spec, window, str(stack_file.path))
    stack_file.ledger()
    check_secrets(spec, stack_file.config, str(stack_file.path), stack_file.project, stack)
    out.print(f"{stack_file.path}: valid", markup=False)
