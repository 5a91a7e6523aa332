"""Benchmark of the hub against a direct connection to the same child: `python -m bench` (see bench/README.md)."""
