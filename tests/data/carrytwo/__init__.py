"""A small library for tests/test_record_carrier.py: two primitives whose bind param is a callable, so both are
reached only through the one example function that calls them (tests/data/carrytwo_example.py)."""
