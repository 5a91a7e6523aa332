"""Faulty MCP children for tests/faults: each misbehaves in one way, logs only to stderr, serves over stdio."""
