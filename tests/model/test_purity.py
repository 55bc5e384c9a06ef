"""model is pure: every module imports with the Pulumi SDKs unavailable, so policies and tools can
use the model without Pulumi (the layering DESIGN.md states: model -> build -> engine)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import ROOT

BLOCKED = ("pulumi", "pulumi_aws", "pulumi_kubernetes", "pulumi_command", "pulumi_policy")

# Runs in a fresh interpreter: a meta-path finder first in line refuses every blocked package, then every module
# under model is imported by name.
SCRIPT = textwrap.dedent(
    """
    import importlib, pkgutil, sys

    BLOCKED = {blocked!r}

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"blocked: {{name}} (model must not import Pulumi)")
            return None

    sys.meta_path.insert(0, Blocker())
    import model
    names = ["model"] + [
        m.name for m in pkgutil.walk_packages(model.__path__, "model.")
    ]
    for name in names:
        importlib.import_module(name)
    assert not [m for m in sys.modules if m.split(".")[0] in BLOCKED]
    print(len(names))
    """
)


def run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def test_every_module_of_components_model_imports_with_pulumi_blocked() -> None:
    result = run(SCRIPT.format(blocked=BLOCKED))
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) >= 15  # the package, spec/ and its modules, load, catalog, ...


def test_the_blocker_does_block_pulumi() -> None:
    """The check above can fail: the same blocker stops a module that imports Pulumi."""
    result = run(SCRIPT.format(blocked=BLOCKED).replace('["model"] + [', '["components.aws.site"] + ['))
    assert result.returncode != 0
    assert "blocked: pulumi" in result.stderr
