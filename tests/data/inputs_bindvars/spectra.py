"""The package's caller of `spread`: the grid's shape is a literal here, and only here."""

from ._spread_prim import spread


def periodogram(x):
    return spread(x, (4,)) ** 2
