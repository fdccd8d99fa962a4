"""A Newton solver's custom_vjp whose bwd is relaxed by design (5% off, a JXG014 warning) and returns None for a
weight of the equation: `relaxed_root`'s weight moves the root by parts in 10^4 (no gradient is dropped), while
`weighted_root`'s moves it as much as its other input does (JXG018). The primal loops (`while_loop`), so JAX cannot
differentiate it in reverse mode and the reference is finite differences, argument by argument once the joint
comparison fails: a weight's tiny dependence was then compared alone, relatively, and called a dropped gradient."""

import jax
import jax.numpy as jnp


def _solver(scale):
    def solve(a, tau):
        c = 1 + scale * tau

        def body(x):
            return x - (x**3 + c * x - a) / (3 * x**2 + c)

        return jax.lax.while_loop(lambda x: jnp.max(jnp.abs(x**3 + c * x - a)) > 1e-6, body, a / 2)

    def fwd(a, tau):
        x = solve(a, tau)
        return x, (x, 1 + scale * tau)

    def bwd(res, g):
        x, c = res
        return g / (3 * x**2 + c + 0.05), None  # relaxed by design; no cotangent for the weight

    rule = jax.custom_vjp(solve)
    rule.defvjp(fwd, bwd)
    return rule


relaxed_root = _solver(1e-4)
weighted_root = _solver(0.5)
