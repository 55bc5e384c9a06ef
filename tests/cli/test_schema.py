"""`gpufleet schema`: the JSON Schema of the estate."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpufleet.cli.app import app

runner = CliRunner()


def test_schema_is_json_schema_of_the_estate() -> None:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["title"].startswith("gpufleet estate")
    assert "AwsNodePool" in doc["$defs"] and doc["$defs"]["AwsNodePool"]["additionalProperties"] is False


def test_schema_workloads_validates_the_example_workload_file_and_rejects_an_unknown_key() -> None:
    import jsonschema
    import yaml

    from tests.conftest import ROOT

    result = runner.invoke(app, ["schema", "--workloads"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["title"].startswith("gpufleet workload file")
    # as an editor sees it: YAML dates are strings to a JSON Schema validator
    example = json.loads(json.dumps(yaml.safe_load((ROOT / "examples" / "workloads.yaml").read_text()), default=str))
    jsonschema.Draft202012Validator(doc).validate(example)
    example["classes"][0]["gpus_per_runn"] = 4
    assert not jsonschema.Draft202012Validator(doc).is_valid(example)
