"""A function that indexes its input with a loop counter (equinox's buffered while_loop writes `x[i]` the same
way): correct for the jax Arrays users pass, while a NumPy input cannot be indexed by a traced counter."""

import jax


def running_total(x):
    return jax.lax.fori_loop(0, x.shape[0], lambda i, acc: acc + x[i] * 2.0, 0.0)
