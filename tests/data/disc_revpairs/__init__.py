"""Primitives made in pairs by a factory loop: the reverse primitive of each op is bound only inside the transpose
rule of the op's JVP primitive, which no module attribute holds (probe package for tests/test_disc_revpairs.py)."""
