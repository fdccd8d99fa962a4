"""No false alarms: `jaxdiag.check_grad` on JAX's own differentiable functions (most with custom_jvp rules, some
with custom rules nested inside) reports no error and no warning.

A few run with include_jax=True, which also checks the JAX custom rules and primitives found inside them (JVP
against finite differences, transpose dot-product tests, composition)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.special as sp
import pytest

import jaxdiag

pytestmark = pytest.mark.slow  # sweeps over many JAX functions: the slow tier

CASES = [
    # (name, function, argument specs, include_jax)
    ("relu", jax.nn.relu, ["f32[5]"], False),
    ("relu6", jax.nn.relu6, ["f32[5]"], False),
    ("log1mexp", getattr(jax.nn, "log1mexp", None), ["f32[5]@positive"], False),  # jax >= 0.6
    ("logit", sp.logit, ["f32[5]"], False),  # normal inputs are outside (0, 1): domain fallback
    ("xlogy", sp.xlogy, ["f32[5]", "f32[5]"], False),
    ("xlog1py", sp.xlog1py, ["f32[5]", "f32[5]"], False),
    ("log_ndtr", sp.log_ndtr, ["f32[5]"], False),  # custom_jvp with a defaulted nondiff argument
    ("softmax", jax.nn.softmax, ["f32[2,3]"], True),
    ("log_softmax", jax.nn.log_softmax, ["f32[2,3]"], False),
    ("norm", jnp.linalg.norm, ["f32[4]"], True),
    ("silu", jax.nn.silu, ["f32[5]"], False),
    ("gelu", jax.nn.gelu, ["f32[5]"], False),
    ("logsumexp", jax.nn.logsumexp, ["f32[2,3]"], False),
    ("softplus", jax.nn.softplus, ["f32[5]"], True),
    ("sigmoid", jax.nn.sigmoid, ["f32[5]"], False),
    ("sinc", jnp.sinc, ["f32[5]"], True),
    ("erf", sp.erf, ["f32[5]"], False),
    ("entr", sp.entr, ["f32[5]"], True),
    ("logaddexp", jnp.logaddexp, ["f32[5]", "f32[5]"], False),
    ("kl_div", sp.kl_div, ["f32[5]", "f32[5]"], False),
    ("i0", jnp.i0, ["f32[5]"], False),
    ("log_sigmoid", jax.nn.log_sigmoid, ["f32[5]"], True),
    ("hard_swish", jax.nn.hard_swish, ["f32[5]"], False),
    ("elu", jax.nn.elu, ["f32[5]"], False),
    ("ndtri", sp.ndtri, ["f32[5]"], False),
    ("erfinv", sp.erfinv, ["f32[5]"], False),
    ("cumlogsumexp", jax.lax.cumlogsumexp, ["f32[5]"], False),
    ("det", jnp.linalg.det, ["f32[3,3]"], False),
    # other dtypes on custom_jvp rules: float64 references, half-precision tolerances, complex conventions
    ("relu f64", jax.nn.relu, ["f64[5]"], False),
    ("logit f16", sp.logit, ["f16[5]"], False),
    ("xlogy bf16", sp.xlogy, ["bf16[5]", "bf16[5]"], False),
    ("norm c64", jnp.linalg.norm, ["c64[3]"], False),
]


@pytest.mark.parametrize("name, fn, specs, include_jax", CASES, ids=[c[0] for c in CASES])
def test_no_false_alarm(name, fn, specs, include_jax):
    if fn is None:
        pytest.skip(f"{name} is not in this JAX release")
    report = jaxdiag.check_grad(fn, *specs, include_jax=include_jax)
    internal = [(t.target, c.name, c.detail) for t in report.targets for c in t.checks if c.status == "error"]
    assert not internal, internal
    bad = [(f.code, f.message) for f in report.findings if f.severity in ("error", "warning")]
    assert not bad, bad
    ran = {c.name for t in report.targets for c in t.checks if c.status == "passed"}
    assert ran & {"jvp-reference", "grad-composition"}, "the derivative was never compared with a reference"
