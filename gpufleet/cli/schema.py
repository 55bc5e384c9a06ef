"""`gpufleet schema`: the JSON Schema of the estate, for editors."""

from __future__ import annotations

import json


def schema() -> None:
    """Print the JSON Schema of the `gpufleet:estate` config value (for editor validation)."""
    from components.model.spec import json_schema

    print(json.dumps(json_schema(), indent=1))
