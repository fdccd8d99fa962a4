"""JXN021 good: the single-device counterpart of `jxn021_bad.py`: a shard doubled, with no collective, runs on any
input, so jaxdiag infers its inputs as usual and has nothing to say about named axes."""

import jax


@jax.custom_vjp
def shift(x):
    return x * 2.0


def _shift_fwd(x):
    return shift(x), None


def _shift_bwd(_, g):
    return (g * 2.0,)


shift.defvjp(_shift_fwd, _shift_bwd)
