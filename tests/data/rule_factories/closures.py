"""Factories returning the function that calls the rule they make, as matrix-free and solver libraries write them:
`_power_sum(depth, *, custom_vjp: bool)` wraps its kernel in a custom_vjp only under the flag (no default: every
caller passes its own), and returns `estimate`, which calls it; nothing in the package ever calls what it returns.
`_power_sum_wrong`'s bwd forgets the factor `k` of each power's derivative. `krylov_like(depth)` returns a function
taking the operator it applies (`matvec`, called in its body): it runs only with jaxdiag's stand-in there."""

import jax
import jax.numpy as jnp


def _kernel(depth, x):
    return sum(x ** k for k in range(1, depth + 1))


def _power_sum(depth: int, *, custom_vjp: bool):
    kernel = _kernel

    def fwd(depth, x):
        return _kernel(depth, x), x

    def bwd(depth, x, g):
        return (g * sum(k * x ** (k - 1) for k in range(1, depth + 1)),)

    if custom_vjp:
        kernel = jax.custom_vjp(_kernel, nondiff_argnums=(0,))
        kernel.defvjp(fwd, bwd)

    def estimate(x):
        return jnp.tanh(kernel(depth, x))

    return estimate


def _power_sum_wrong(depth: int, *, custom_vjp: bool):
    kernel = _kernel

    def fwd(depth, x):
        return _kernel(depth, x), x

    def bwd(depth, x, g):
        return (g * sum(x ** (k - 1) for k in range(1, depth + 1)),)

    if custom_vjp:
        kernel = jax.custom_vjp(_kernel, nondiff_argnums=(0,))
        kernel.defvjp(fwd, bwd)

    def estimate(x):
        return jnp.tanh(kernel(depth, x))

    return estimate


def krylov_like(depth: int):
    @jax.custom_vjp
    def project(v):
        return v / jnp.linalg.norm(v)

    def project_fwd(v):
        return project(v), v

    def project_bwd(v, g):
        n = jnp.linalg.norm(v)
        return ((g - jnp.vdot(g, v) * v / n ** 2) / n,)

    project.defvjp(project_fwd, project_bwd)

    def run(matvec, v):
        for _ in range(depth):
            v = project(matvec(v))
        return v

    return run


def krylov_like_wrong(depth: int):
    """As `krylov_like`, its bwd dropping the normalisation's 1/n: a verdict on it would depend on the stand-in."""
    @jax.custom_vjp
    def project(v):
        return v / jnp.linalg.norm(v)

    def project_fwd(v):
        return project(v), v

    def project_bwd(v, g):
        n = jnp.linalg.norm(v)
        return (g - jnp.vdot(g, v) * v / n ** 2,)

    project.defvjp(project_fwd, project_bwd)

    def run(matvec, v):
        for _ in range(depth):
            v = project(matvec(v))
        return v

    return run


def ticker(every: int):
    """Returns a function of ints and a function only (a progress bar's loop): nothing in it to check."""
    def tick(n):
        return jax.pure_callback(lambda i: i, jax.ShapeDtypeStruct((), jnp.int32), n % every,
                                 vmap_method="sequential")

    def loop(total: int):
        for i in range(total):
            tick(i)
        return total

    return loop
