"""Seed 2 with only the structure fixed (`return (dx, dy)`): grad now runs, but bwd still ignores the cotangent
of out_1, so grad of out_1 is silently 0 instead of 1 (JXG011)."""

import jax


@jax.custom_vjp
def test_func(*args, **kwargs):
    x, y = args
    return x + y, x * y


def test_func_fwd(*args, **kwargs):
    x, y = args
    return (x + y, x * y), (x, y)


def test_func_bwd(res, cotangents):  # jaxdiag-expect: JXG011
    x, y = res
    _, cot_out2 = cotangents
    return (y * cot_out2, x * cot_out2)


test_func.defvjp(test_func_fwd, test_func_bwd)
