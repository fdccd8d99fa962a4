"""Targets whose inputs only their authors' statements give (tests/test_stated_shapes.py)."""
