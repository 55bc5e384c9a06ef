"""`python -m gpufleet.review.document PROJECT_DIR STACK`: print a stack's review (plan, cost, findings) as JSON.

`gpufleet diff` runs this in a separate interpreter for each side, with that side's tree first on the path, so a
base revision is judged by its own components, catalog and policy packs. Bad input: the message on stderr, exit 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pulumi

from gpufleet.engine.synth import SynthError
from gpufleet.review.review import build
from model.load import SpecError

USAGE = "usage: python -m gpufleet.review.document PROJECT_DIR STACK"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        review = build(Path(args[0]), args[1], simulate=False)  # the document carries no first-up result
    except (SpecError, pulumi.RunError, SynthError) as err:
        print(str(err), file=sys.stderr)
        return 2
    # Compact: only `gpufleet diff` reads it, and json's C encoder runs only without indent (a 10,000-GPU
    # estate's document is ~90 MB; indenting it took seconds more on each side of a diff).
    print(json.dumps(review.document(), sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
