"""`gpufleet cost --actual`: what each tenant's GPUs did over a window, read from a Prometheus and priced with the
estate's own prices."""
