"""gpufleet components: what gets built. They know nothing of the CLI."""
