"""Reading YAML text: PyYAML's safe loader, on libyaml's parser when PyYAML was built with it.

`yaml.CSafeLoader` has the same resolver and constructor as `yaml.SafeLoader` (PyYAML `cyaml.py`), so it builds the
same values; only the parser is C. A stack file with a 1,250-server inventory takes seconds in the pure-Python
parser. Error messages differ in wording, but both loaders mark the line and column of a problem.

For YAML that gpufleet ships or generates (the GPU catalog, a kubeconfig it builds, Kueue's config it renders).
Files a user writes (stack, workload, usage, Pulumi.yaml, kubeconfigs handed to `verify`) go through
`model.load.read_yaml`, which bounds size, depth, aliases and numbers.
"""

from __future__ import annotations

from typing import Any

import yaml

SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """`yaml.safe_load(text)` on the fastest safe loader available."""
    return yaml.load(text, Loader=SAFE_LOADER)
