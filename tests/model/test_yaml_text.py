"""Stack files, the GPU catalog, kubeconfigs and rendered charts are read with libyaml's safe loader: the same values as PyYAML's."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from model.catalog import GPUS_FILE
from model.yaml_text import SAFE_LOADER, manifests, safe_load, safe_load_all
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


def test_a_multi_document_render_reads_as_pyyaml_reads_it() -> None:
    # Helm joins a template's documents with `---` and leaves empty ones where a template renders nothing.
    text = "---\n# Source: a/templates/x.yaml\n---\nkind: A\nx: &v [1, 2]\ny: *v\n---\nkind: B\nz: 'on'\nw: on\n"
    assert safe_load_all(text) == list(yaml.safe_load_all(text))
    assert [d["kind"] for d in safe_load_all(text) if d] == ["A", "B"]


def test_a_rendered_manifest_reads_a_bare_equals_sign_as_kubernetes_does() -> None:
    # prometheus-operator's CRDs (kube-prometheus-stack's crds subchart) list the matcher `=` in enums; PyYAML's
    # safe loader refuses the bare scalar (YAML 1.1's `value` type), Kubernetes reads it as a string.
    text = "kind: CustomResourceDefinition\nenum:\n  - =\n  - =~\n  - '!='\n"
    with pytest.raises(yaml.constructor.ConstructorError):
        safe_load_all(text)
    (doc,) = manifests(text)
    assert doc["enum"] == ["=", "=~", "!="]
