"""What the tests share, one module per subject; tests/conftest.py only registers the fixtures (tests/README.md)."""
