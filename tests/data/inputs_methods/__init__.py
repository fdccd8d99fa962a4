"""Rules built inside class methods (probe package for tests/test_inputs_call_sites.py)."""
