"""A package one of whose plain modules holds a global named `__path__` (a `Path` to its templates)."""
