"""jaxdiag's own programs are compiled at XLA's backend optimisation level 0, set per jit: the process's JAX
configuration and the user's own programs are untouched (docs/speed.md)."""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdiag
from jaxdiag import _compat
from jaxdiag._compat import _own_programs

TARGET = "tests/data/speed/softplus.py:"


@pytest.mark.skipif(not _own_programs._JIT_COMPILER_OPTIONS, reason="this JAX's jit takes no compiler options")
def test_own_programs_carry_level_zero_and_nothing_else_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    real_compile = jax.stages.Lowered.compile

    def spying_compile(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("compiler_options"))
        return real_compile(self, *args, **kwargs)

    monkeypatch.setattr(jax.stages.Lowered, "compile", spying_compile)
    flags_before = os.environ.get("XLA_FLAGS")
    config_before = _compat.config_values()
    report = jaxdiag.check_grad(TARGET + "softplus", "f32[5]")
    assert report.ok, str(report)
    assert _own_programs._known_options() in seen  # the grad composition at least
    assert {} not in seen  # softplus loops nowhere: every program of jaxdiag's own is compiled at level 0
    assert _own_programs.OWN_PROGRAM_OPTIONS.items() <= _own_programs._known_options().items()
    assert os.environ.get("XLA_FLAGS") == flags_before
    assert _compat.config_values() == config_before
    # the user's programs: a nested jit (which JAX refuses to give compiler options) still traces and runs
    user = jax.jit(lambda x: jax.jit(jnp.sin)(x) * 2)
    np.testing.assert_allclose(user(jnp.ones(3)), 2 * np.sin(np.ones(3)), rtol=1e-6)


@pytest.mark.skipif(not _own_programs._JIT_COMPILER_OPTIONS, reason="this JAX's jit takes no compiler options")
def test_a_program_that_loops_many_times_gets_xla_defaults() -> None:
    """A while loop's trip count is unknown when compiling, and a long scan runs its body over and over: there the
    optimised code repays its compile (docs/speed.md). A short scan (a per-example map) stays at level 0."""
    def converge(x: Any) -> Any:
        return jax.lax.while_loop(lambda c: c[1] < 50, lambda c: (jnp.cos(c[0]), c[1] + 1), (x, 0))[0]

    def long_scan(x: Any) -> Any:
        return jax.lax.scan(lambda c, _: (jnp.cos(c), None), x, None, length=_own_programs.LONG_SCAN)[0]

    def short_scan(x: Any) -> Any:
        return jax.lax.map(jnp.cos, x)

    x = jnp.linspace(0.0, 1.0, 4)
    for fn, expected in ((converge, {}), (long_scan, {}), (short_scan, _own_programs._known_options()),
                         (jnp.cos, _own_programs._known_options())):
        program = _compat.own_jit(fn)
        np.testing.assert_allclose(program(x), jax.jit(fn)(x), rtol=1e-6)
        program(x + 1)  # same types: no second compile
        program(x[:2])  # new shape: one more
        assert program.options_used == [expected, expected], fn


@pytest.mark.skipif(not _own_programs._JIT_COMPILER_OPTIONS, reason="this JAX's jit takes no compiler options")
def test_an_option_this_xla_does_not_know_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """A release of XLA without one of jaxdiag's CPU options compiles jaxdiag's programs without it, never fails."""
    monkeypatch.setattr(_own_programs, "_CPU_PROGRAM_OPTIONS", {"xla_cpu_no_such_option_anywhere": True})
    monkeypatch.setattr(_own_programs, "_OPTIONS", [])
    program = _compat.own_jit(jnp.cos)
    np.testing.assert_allclose(program(jnp.zeros(2)), np.ones(2))
    assert program.options_used == [_own_programs.OWN_PROGRAM_OPTIONS]
    assert _own_programs._known_options() == _own_programs.OWN_PROGRAM_OPTIONS  # settled: the next program too


@pytest.mark.skipif(not _own_programs._JIT_COMPILER_OPTIONS, reason="this JAX's jit takes no compiler options")
def test_a_program_that_fails_to_compile_settles_no_option(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compile that fails with and without the CPU options is the program's own error: it is raised as it is,
    and the options stay unsettled for the next program."""
    monkeypatch.setattr(_own_programs, "_OPTIONS", [])
    calls: list[Any] = []

    class Failing:
        def compile(self, compiler_options: Any) -> Any:
            calls.append(compiler_options)
            raise jax.errors.JaxRuntimeError(f"INVALID_ARGUMENT: the program's own failure {len(calls)}")

    options = _own_programs._known_options()
    with pytest.raises(jax.errors.JaxRuntimeError, match="own failure 1"):
        _own_programs._compile(Failing(), options)
    assert _own_programs._OPTIONS == []
    if jax.default_backend() == "cpu":
        assert calls == [options, _own_programs.OWN_PROGRAM_OPTIONS]


def test_level_zero_program_computes_the_same_values() -> None:
    def f(x: Any) -> Any:
        return jnp.sum(jnp.tanh(x) * jnp.log1p(jnp.exp(x))) + jnp.cumsum(x)

    x = jnp.linspace(-3.0, 3.0, 64, dtype=jnp.float32)
    np.testing.assert_array_equal(np.asarray(_compat.own_jit(f)(x)), np.asarray(jax.jit(f)(x)))


# ---------------------------------------------------------------------------------------------------------------
# Finite differences in the inputs' precision, escalated to float64 where that is inconclusive
# ---------------------------------------------------------------------------------------------------------------

F32_TOL = 2e-3  # the float32 gradient tolerance (_numerics.GRAD_TOL)


def _sine(kind: str, error: float, offset: float) -> Any:
    """sin(x) + offset whose custom JVP or VJP rule is off by the relative `error`."""
    if kind == "jvp":

        @jax.custom_jvp
        def f(x: Any) -> Any:
            return offset + jnp.sin(x)

        @f.defjvp
        def f_jvp(primals: Any, tangents: Any) -> Any:
            (x,), (dx,) = primals, tangents
            return f(x), jnp.cos(x) * dx * (1.0 + error)

        return f

    @jax.custom_vjp
    def g(x: Any) -> Any:
        return offset + jnp.sin(x)

    g.defvjp(lambda x: (g(x), x), lambda x, ct: (ct * jnp.cos(x) * (1.0 + error),))
    return g


def _codes(report: Any) -> list[tuple[str, str]]:
    return sorted((f.code, f.severity) for f in report.findings)


def test_richardson_bound_holds_for_float32_differences() -> None:
    from jaxdiag._checks._gradref._fd import richardson

    x = np.linspace(-2.0, 2.0, 41)
    unit = float(np.finfo(np.float32).eps)
    for h in (0.1, 0.02):
        diffs = [(np.sin(x + s).astype(np.float32).astype(np.float64)
                  - np.sin(x - s).astype(np.float32).astype(np.float64)) / (2 * s) for s in (h, h / 2, h / 4)]
        value, bound = richardson(diffs, h, unit, np.ones_like(x), float(np.max(np.abs(x))))
        assert np.all(np.abs(value - np.cos(x)) <= bound)
        assert np.all(bound < F32_TOL)


# the rule's error in units of the tolerance, around where the verdict turns on these inputs (2.0-2.1 for the JVP
# against autodiff and finite differences, 1.5-1.75 for the VJP's dot-product test against finite differences)
_FACTORS = {"jvp": (1.0, 1.9, 1.97, 2.0, 2.03, 2.06, 2.1, 2.2, 3.0),
            "vjp": (1.0, 1.5, 1.6, 1.65, 1.7, 1.75, 1.8, 2.0, 10.0)}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["jvp", "vjp"])
@pytest.mark.parametrize("offset", [0.0, 1e4])  # 1e4: f large against its change over the step (cancellation)
def test_verdicts_at_the_threshold_match_float64_differences(kind: str, offset: float,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from jaxdiag._checks._gradref import _fd

    used = {"native": 0, "float64": 0}
    native, margin = _fd.FiniteDifferences._native, _fd.NATIVE_MARGIN

    def counting(self: Any, *args: Any) -> Any:
        result = native(self, *args)
        if _fd.NATIVE_MARGIN == margin:  # the default runs only
            used["native" if result is not None else "float64"] += 1
        return result

    monkeypatch.setattr(_fd.FiniteDifferences, "_native", counting)
    x = np.linspace(-1.3, 1.1, 6).astype(np.float32)
    verdicts = set()
    for factor in _FACTORS[kind]:
        f = _sine(kind, factor * F32_TOL, offset)
        first = _codes(jaxdiag.check_grad(f, x))
        with monkeypatch.context() as m:
            m.setattr(_fd, "NATIVE_MARGIN", float("inf"))  # every difference in float64, as before
            assert _codes(jaxdiag.check_grad(f, x)) == first, factor
        verdicts.add(tuple(first))
    assert len(verdicts) == 2  # the factors straddle the threshold
    if offset:
        assert used["float64"] and not used["native"], used  # cancellation: escalated every time
    else:
        assert used["native"], used
