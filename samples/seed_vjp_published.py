"""Seed 2, the published custom_vjp (verbatim apart from comments). bwd returns ((dx, dy), None): one entry per
*args element is expected, so the fix is `return (dx, dy)`. Once fixed, bwd still ignores the cotangent of
out_1, so grad through out_1 is zero instead of 1."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def test_func(*args, **kwargs):
    x, y = args
    out_1 = x + y
    out_2 = x * y
    return out_1, out_2


def test_func_fwd(*args, **kwargs):
    x, y = args
    out_1 = x + y
    out_2 = x * y
    return (out_1, out_2), (x, y)


def test_func_bwd(res, cotangents):  # jaxdiag-expect: JXG010
    x, y = res
    _, cot_out2 = cotangents  # 仅取out_2的梯度权重，忽略out_1的

    dx = y * cot_out2
    dy = x * cot_out2

    # 返回输入的梯度，kwargs的梯度返回None
    return (dx, dy), None


test_func.defvjp(test_func_fwd, test_func_bwd)
