"""Policy pack `tenancy`: `pulumi preview --policy-pack policies/tenancy`.

The Pulumi CLI runs this file (runpy) with only the pack folder on sys.path. The rules are the importable module
`policies.tenancy.rules`, which also imports `policies.common` and the catalog from `components`, so the
project root (two folders up) goes on sys.path first. `gpufleet check` evaluates the same `rules.ALL` objects.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pulumi_policy import PolicyPack

from policies.tenancy import rules

PolicyPack(name=rules.PACK_NAME, enforcement_level=rules.DEFAULT_ENFORCEMENT, policies=rules.ALL)
