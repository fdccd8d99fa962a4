"""Discovery cases for tests/test_inputs_discovery.py."""
