"""One module per site kind: the pure facts the rest of gpufleet asks of a site of that kind."""
