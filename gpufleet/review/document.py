"""`python -m gpufleet.review.document PROJECT_DIR STACK [FILE...]`: print a stack's review (plan, cost, findings)
as JSON, one line for each version of its stack file.

- Without FILE, the stack's own file is reviewed. Each FILE is the stack's file as one revision has it.
- Each is reviewed in order, in this interpreter, with this tree's code and the project's other files. Its line
  is printed as soon as it is done.
- `gpufleet diff` runs this module with each side's tree first on the path (revision.py). So a base revision is
  judged by its own components, catalog and policy packs.
- Bad input: its message on stderr and exit 2, after the lines of the files before it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pulumi

from gpufleet.engine.synth import SynthError
from gpufleet.review.review import build
from model.load import SpecError, read_stack

USAGE = "usage: python -m gpufleet.review.document PROJECT_DIR STACK [FILE...]"
FAILURES = (SpecError, pulumi.RunError, SynthError)  # bad input or a program that does not synthesize


def documents(project: Path, stack: str, files: Sequence[Path] = ()) -> Iterator[str]:
    """The review document of each file (none: the stack's own file), one JSON line each, in order; raises one of
    FAILURES."""
    project = project.resolve()
    for file in files or (None,):
        review = build(project, stack, simulate=False, stack_file=read_stack(project, stack, file))
        # Compact: only `gpufleet diff` reads it, and json's C encoder runs only without indent (a 10,000-GPU
        # estate's document is ~90 MB; indenting it took seconds more on each side of a diff).
        yield json.dumps(review.document(), sort_keys=True, default=str)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
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
