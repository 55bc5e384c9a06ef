"""What gpufleet measures on a site with a Prometheus: the exporters' metric names, the recording rules and alerts,
and the Grafana dashboard, as plain data the components ship."""
