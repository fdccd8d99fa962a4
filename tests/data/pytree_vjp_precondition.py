"""An ODE-style integrator in equinox/diffrax's pattern: a custom_vjp over a pytree argument (a dict holding the save
times and a scale) whose backward pass is only defined on strictly increasing save times, the contract every caller
keeps. `solve` passes it fixed increasing times; random draws of `ts` are almost never increasing, so checking the
nested rule on them raises an error the user's program can never hit."""

import jax
import jax.numpy as jnp
import numpy as np


def _require_increasing(ts):
    if not np.all(np.diff(ts) > 0):
        raise ValueError(f"save times must be strictly increasing, got {ts}")


@jax.custom_vjp
def integrate(problem, y0):
    return y0 * problem["scale"] * jnp.sum(jnp.diff(problem["ts"]))


def integrate_fwd(problem, y0):
    return integrate(problem, y0), (problem, y0)


def integrate_bwd(res, g):
    problem, y0 = res
    ts, scale = problem["ts"], problem["scale"]
    jax.debug.callback(_require_increasing, ts)  # like equinox's error_if: the adjoint steps backwards through ts
    span = jnp.sum(jnp.diff(ts))
    pull = jnp.sum(g * y0) * scale
    d_ts = jnp.zeros_like(ts).at[0].set(-pull).at[-1].set(pull)
    d_problem = {"ts": d_ts, "scale": jnp.sum(g * y0) * span}
    return d_problem, g * scale * span


integrate.defvjp(integrate_fwd, integrate_bwd)


def solve(y0):
    problem = {"ts": jnp.array([0.0, 0.5, 1.0, 2.0], dtype=y0.dtype), "scale": jnp.asarray(1.5, y0.dtype)}
    return integrate(problem, y0)


@jax.custom_vjp
def integrate_unscaled(problem, y0):
    return y0 * problem["scale"] * jnp.sum(jnp.diff(problem["ts"]))


def integrate_unscaled_bwd(res, g):  # the cotangent of y0 forgets `scale`: wrong at every input, the observed ones too
    problem, y0 = res
    ts = problem["ts"]
    jax.debug.callback(_require_increasing, ts)
    span = jnp.sum(jnp.diff(ts))
    return {"ts": jnp.zeros_like(ts), "scale": jnp.sum(g * y0) * span}, g * span


integrate_unscaled.defvjp(lambda problem, y0: (integrate_unscaled(problem, y0), (problem, y0)), integrate_unscaled_bwd)


def solve_unscaled(y0):
    problem = {"ts": jnp.array([0.0, 0.5, 1.0, 2.0], dtype=y0.dtype), "scale": jnp.asarray(1.5, y0.dtype)}
    return integrate_unscaled(problem, y0)
