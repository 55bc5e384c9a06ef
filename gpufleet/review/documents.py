"""`python -m gpufleet.review.documents PROJECT_DIR STACK FILE...`: the review of each version of one stack file.

Each FILE holds the stack's file as one revision has it (the working tree's own `stacks/Pulumi.<STACK>.yaml`, or
a copy of it taken from a git revision); each is reviewed with this tree's code and the project's other files,
in order, in this one interpreter, and its review document (plan, cost, findings, as `gpufleet.review.document`
prints it) is printed on a line of its own as soon as it is done. `gpufleet diff` runs this when the stack file
is all that differs between two revisions (gpufleet/review/revision.py): the second review then costs one more
synthesis and none of the imports. Bad input in a file: its message on stderr, exit 2, after the lines of the
files before it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pulumi

from gpufleet.engine.synth import SynthError
from gpufleet.review.review import build
from model.load import SpecError, read_stack

USAGE = "usage: python -m gpufleet.review.documents PROJECT_DIR STACK FILE..."
FAILURES = (SpecError, pulumi.RunError, SynthError)  # bad input or a program that does not synthesize


def documents(project: Path, stack: str, files: list[Path]) -> Iterator[str]:
    """The review document of each file, one JSON line each, in order; raises one of FAILURES."""
    project = project.resolve()
    for file in files:
        review = build(project, stack, simulate=False, stack_file=read_stack(project, stack, file))
        yield json.dumps(review.document(), sort_keys=True, default=str)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 3:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        for line in documents(Path(args[0]), args[1], [Path(a) for a in args[2:]]):
            print(line, flush=True)
    except FAILURES as err:
        print(str(err), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
