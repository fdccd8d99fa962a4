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
from jaxdiag._compat import _base

TARGET = "tests/data/speed/softplus.py:"


@pytest.mark.skipif(not _base._JIT_COMPILER_OPTIONS, reason="this JAX's jit takes no compiler options")
def test_own_programs_carry_level_zero_and_nothing_else_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    real_jit = jax.jit

    def spying_jit(fn: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("compiler_options"))
        return real_jit(fn, *args, **kwargs)

    monkeypatch.setattr(jax, "jit", spying_jit)
    flags_before = os.environ.get("XLA_FLAGS")
    config_before = _compat.config_values()
    report = jaxdiag.check_grad(TARGET + "softplus", "f32[5]")
    assert report.ok, str(report)
    assert _base.OWN_PROGRAM_OPTIONS in seen  # the grad composition at least
    assert os.environ.get("XLA_FLAGS") == flags_before
    assert _compat.config_values() == config_before
    # the user's programs: a nested jit (which JAX refuses to give compiler options) still traces and runs
    user = real_jit(lambda x: real_jit(jnp.sin)(x) * 2)
    np.testing.assert_allclose(user(jnp.ones(3)), 2 * np.sin(np.ones(3)), rtol=1e-6)


def test_level_zero_program_computes_the_same_values() -> None:
    def f(x: Any) -> Any:
        return jnp.sum(jnp.tanh(x) * jnp.log1p(jnp.exp(x))) + jnp.cumsum(x)

    x = jnp.linspace(-3.0, 3.0, 64, dtype=jnp.float32)
    np.testing.assert_array_equal(np.asarray(_compat.own_jit(f)(x)), np.asarray(jax.jit(f)(x)))
