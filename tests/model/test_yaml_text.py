"""Stack files, the GPU catalog and kubeconfigs are read with libyaml's safe loader: the same values as PyYAML's."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from model.catalog import GPUS_FILE
from model.yaml_text import SAFE_LOADER, safe_load
from tests.conftest import ROOT

FILES = [*sorted((ROOT / "stacks").glob("Pulumi.*.yaml")), GPUS_FILE, ROOT / "Pulumi.yaml"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_same_values_as_pyyamls_safe_loader(path: Path) -> None:
    text = path.read_text()
    assert safe_load(text) == yaml.safe_load(text)


def test_libyaml_is_used_when_pyyaml_has_it() -> None:
    assert SAFE_LOADER is (yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader)


def test_a_syntax_error_still_marks_line_and_column() -> None:
    with pytest.raises(yaml.MarkedYAMLError) as e:
        safe_load("config:\n  a: b: c\n")
    assert e.value.problem_mark is not None and e.value.problem_mark.line == 1
