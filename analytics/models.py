"""Stats, metrics and dashboards."""
