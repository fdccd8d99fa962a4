"""A custom_jvp of a `functools.partial`, named apart from its function (tests/test_record_carrier.py)."""
