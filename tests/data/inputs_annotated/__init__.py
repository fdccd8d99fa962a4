"""Signatures that say what their callers pass (probe modules for tests/test_inputs_call_sites.py)."""
