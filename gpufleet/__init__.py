"""gpufleet: the tool around the Pulumi program (offline engine, checks, cost, reports, CLI)."""
