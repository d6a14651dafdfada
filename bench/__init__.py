"""Benchmarks: `make bench` (or `python -m bench`) prints the figures quoted in docs/benchmarks.md."""
