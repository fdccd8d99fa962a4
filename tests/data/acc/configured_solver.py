"""Solver factories configured by keywords alone, as matrix-free libraries write them: `scaled_solver(*, scale=2.0)`
returns the solver `run(matvec, b)` it defines, after handing its inner `_run` to a module function that wraps it in
a custom_vjp. Nothing positional to infer: before, "a call on its defaults is no inferred input" left both rules
unreached (JXN012). `scaled_solver_wrong`'s bwd forgets the scale: a wrong gradient (JXG014/JXG024)."""

import jax


def _with_vjp(solve, scale):
    rule = jax.custom_vjp(solve, nondiff_argnums=(0,))

    def fwd(matvec, b):
        return solve(matvec, b), b

    def bwd(matvec, b, g):
        _, pullback = jax.vjp(matvec, b)
        return (g - pullback(g)[0] / scale,)

    rule.defvjp(fwd, bwd)
    return rule


def _with_forgetful_vjp(solve, scale):
    rule = jax.custom_vjp(solve, nondiff_argnums=(0,))

    def fwd(matvec, b):
        return solve(matvec, b), b

    def bwd(matvec, b, g):
        _, pullback = jax.vjp(matvec, b)
        return (g - pullback(g)[0],)  # the scale is forgotten

    rule.defvjp(fwd, bwd)
    return rule


def scaled_solver(*, scale=2.0):
    def _run(matvec, b):
        return b - matvec(b) / scale

    solve = _with_vjp(_run, scale)

    def run(matvec, b):
        return solve(matvec, b)

    return run


def scaled_solver_wrong(*, scale=2.0):
    def _run(matvec, b):
        return b - matvec(b) / scale

    solve = _with_forgetful_vjp(_run, scale)

    def run(matvec, b):
        return solve(matvec, b)

    return run
