"""Kubernetes on every site: GPU software stack, fabric plugins, Kueue, priorities and tenants."""
