"""Operands a rule's own code says are not float arrays (a PRNG key, an index), for tests/test_operand_kinds.py."""
