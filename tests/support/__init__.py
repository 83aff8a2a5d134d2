"""Helpers the test modules share (importable in pytest's importlib mode through the `pythonpath` setting)."""
