"""Bare-metal sites: inventory servers bootstrapped over SSH, InfiniBand / RoCE fabrics, storage."""
