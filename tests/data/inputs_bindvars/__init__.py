"""Primitives whose required bind params their package binds from variables, never literals (probe package for
tests/test_inputs_bind_vars.py): the modules that call the wrappers are imported with the package, as a library's
`__init__` imports its public modules."""

from . import harmonic, spectra  # noqa: F401
