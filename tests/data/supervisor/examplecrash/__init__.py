"""Kernels that crash the process, at a documented call and at an inferred one (tests/test_supervisor.py)."""
