"""Seed 2, done right: bwd returns one cotangent per argument and uses the cotangents of both outputs."""

import jax


@jax.custom_vjp
def test_func(x, y):
    return x + y, x * y


def test_func_fwd(x, y):
    return (x + y, x * y), (x, y)


def test_func_bwd(res, cotangents):
    x, y = res
    ct_sum, ct_prod = cotangents
    return (ct_sum + y * ct_prod, ct_sum + x * ct_prod)


test_func.defvjp(test_func_fwd, test_func_bwd)
