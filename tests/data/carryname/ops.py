"""`apply_jvp` is `jax.custom_jvp` of a `functools.partial` of `_apply_inner`: the recording names the function it
unwraps (`_apply_inner`), JAX's trace the partial's (`_apply`). Its first argument is a callable (nondiff), so a
recorded call cannot be replayed from the file: it is checked inside the user's function that called it."""

from functools import partial

import jax


def _apply_inner(fn, x, scale):
    return scale * fn(x)


_apply = partial(_apply_inner, scale=1.0)
apply_jvp = jax.custom_jvp(_apply, nondiff_argnums=(0,))


@apply_jvp.defjvp
def _apply_jvp_rule(fn, primals, tangents):
    (x,), (t,) = primals, tangents
    return jax.jvp(fn, (x,), (t,))
