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
