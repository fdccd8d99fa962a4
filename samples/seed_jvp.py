"""Seed 2, the published custom_jvp variant: correct (jaxdiag reports nothing)."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def test_func(*args, **kwargs):
    x, y = args
    out_1 = x + y
    out_2 = x * y
    return out_1, out_2


def test_func_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out_1 = x + y
    out_2 = x * y
    t_out2 = y * tx + x * ty
    t_out1 = tx + ty
    return (out_1, out_2), (t_out1, t_out2)


test_func.defjvp(test_func_jvp)
