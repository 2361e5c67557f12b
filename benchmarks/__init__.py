"""Reproducible benchmarks: `python -m benchmarks.<name> --help` (see docs/benchmarks.md)."""
