"""Hybrid estates: MultiKueue wiring between sites, burst pools and burst windows."""
