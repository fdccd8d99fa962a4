"""Rules made inside methods: no module attribute holds them and no module-level function calls the class."""

from typing import Optional

import jax
import jax.numpy as jnp


class Smoother:
    """Its method makes a custom_jvp whose JVP flips the sign."""

    def __init__(self, width: float, n_terms: int, label: Optional[str] = None):
        self.width, self.n_terms, self.label = width, n_terms, label

    def smooth(self, x):
        @jax.custom_jvp
        def soft(x):
            return jnp.tanh(self.width * x)

        @soft.defjvp
        def soft_jvp(primals, tangents):
            (x,), (tx,) = primals, tangents
            return soft(x), -self.width * tx / jnp.cosh(self.width * x) ** 2

        return soft(x) * self.n_terms


class Clipper:
    """Its method returns the custom_vjp it makes (correct)."""

    def __init__(self, bound: float = 1.0):
        self.bound = bound

    def clip_gradient(self):
        @jax.custom_vjp
        def clip(x):
            return x

        def clip_fwd(x):
            return x, None

        def clip_bwd(_, g):
            return (jnp.clip(g, -self.bound, self.bound),)

        clip.defvjp(clip_fwd, clip_bwd)
        return clip


class Solver:
    """Its constructor takes an object jaxdiag cannot make: its method's rule stays unchecked, with the reason."""

    def __init__(self, linear_operator: "jax.Array | object"):
        self.op = linear_operator

    def solve(self, b):
        @jax.custom_jvp
        def inv(b):
            return b / 2.0

        inv.defjvp(lambda p, t: (inv(*p), t[0] / 2.0))
        return inv(b)
