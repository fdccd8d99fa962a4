"""Rules whose inputs only their own package's callers know (probe modules for tests/test_inputs_call_sites.py)."""
