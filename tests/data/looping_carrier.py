"""A function whose nested custom_vjp is called outside a long loop, with its scale under stop_gradient: reading
which inputs JAX perturbs at that call must not run the 200 iterations op by op."""

import jax
from jax import lax

BODY_RUNS = [0]  # how often Python runs the loop body


@jax.custom_vjp
def scaled(x, s):
    return x * s


def _scaled_fwd(x, s):
    return x * s, (x, s)


def _scaled_bwd(res, g):
    x, s = res
    return g * s, g * x


scaled.defvjp(_scaled_fwd, _scaled_bwd)


def _halve_and_add(i, acc):
    BODY_RUNS[0] += 1
    return acc * 0.5 + 1.0


def settle(x, s):
    return lax.fori_loop(0, 200, _halve_and_add, scaled(x, lax.stop_gradient(s)))
