"""Charts as Helm itself sees them: a local cache keyed by name and version, a real Helm engine to render them
(`helm-python-sdk`, Helm's own Go SDK through a C library), and `gpufleet charts pull` to fill the cache."""
