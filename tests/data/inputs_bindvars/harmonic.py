"""The public transform: its defaults are the bind params the primitive ever sees."""

from . import _harmonic_prim


def forward(x, L=2, sampling="mw"):
    return _harmonic_prim.analyse(x, L=L, sampling=sampling)
