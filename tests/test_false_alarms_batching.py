"""No false alarms: JAX's own primitives (with their params) and jax.numpy / jax.nn functions, checked with
`include_jax=True`, must produce no error and no warning. Their batching rules are JAX's, so any finding here is
a jaxdiag bug."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

import jaxdiag

pytestmark = pytest.mark.slow  # sweeps over many JAX functions: the slow tier

_I32 = np.dtype("int32")

# (primitive, specs, bind params): params as they appear in make_jaxpr output on both supported JAX releases
# (parameters a release does not know are dropped below).
PRIMITIVES = [
    (lax.exp_p, ["f32[2,3]"], {"accuracy": None}),
    (lax.tanh_p, ["f32[4]"], {"accuracy": None}),
    (lax.log_p, ["f32[3]@positive"], {"accuracy": None}),
    (lax.sqrt_p, ["f32[3]@positive"], {"accuracy": None}),
    (lax.logistic_p, ["f32[3]"], {"accuracy": None}),
    (lax.abs_p, ["f32[2,2]"], {}),
    (lax.neg_p, ["f32[3]"], {}),
    (lax.floor_p, ["f32[3]"], {}),
    (lax.sign_p, ["f32[3]"], {}),
    (lax.add_p, ["f32[3]", "f32[3]"], {}),
    (lax.sub_p, ["f32[2,3]", "f32[2,3]"], {}),
    (lax.max_p, ["f32[3]", "f32[3]"], {}),
    (lax.atan2_p, ["f32[3]", "f32[3]"], {}),
    (lax.gt_p, ["f32[3]", "f32[3]"], {}),
    (lax.integer_pow_p, ["f32[3]"], {"y": 3}),
    (lax.convert_element_type_p, ["f32[3]"], {"new_dtype": _I32, "weak_type": False, "sharding": None}),
    (lax.reduce_sum_p, ["f32[3,4]"], {"axes": (0,), "out_sharding": None}),
    (lax.reduce_max_p, ["f32[3,4]"], {"axes": (1,), "out_sharding": None}),
    (lax.argmax_p, ["f32[3,4]"], {"axes": (1,), "index_dtype": _I32}),
    (lax.transpose_p, ["f32[3,4]"], {"permutation": (1, 0)}),
    (lax.squeeze_p, ["f32[3,1]"], {"dimensions": (1,)}),
    (lax.rev_p, ["f32[3,4]"], {"dimensions": (1,)}),
    (lax.cumsum_p, ["f32[4,3]"], {"axis": 0, "reverse": False}),
    (lax.cummax_p, ["f32[6]"], {"axis": 0, "reverse": True}),
    (lax.sort_p, ["f32[6]"], {"dimension": 0, "is_stable": True, "num_keys": 1}),
    (lax.select_n_p, ["bool[3]", "f32[3]", "f32[3]"], {}),
    (lax.clamp_p, ["f32[]", "f32[4]", "f32[]"], {}),
    (lax.concatenate_p, ["f32[2]", "f32[3]"], {"dimension": 0}),
    (lax.dot_general_p, ["f32[3,4]", "f32[4,2]"], {"dimension_numbers": (((1,), (0,)), ((), ())),
                                                   "precision": None, "preferred_element_type": np.dtype("float32"),
                                                   "out_sharding": None}),
]

FUNCTIONS = [
    (jnp.sin, ["f32[3]"]),
    (jnp.sum, ["f32[3,4]"]),
    (jnp.cumsum, ["f32[5]"]),
    (jnp.sort, ["f32[6]"]),
    (jnp.argmax, ["f32[6]"]),
    (jnp.matmul, ["f32[3,4]", "f32[4,2]"]),
    (jnp.where, ["bool[3]", "f32[3]", "f32[3]"]),
    (jnp.transpose, ["f32[2,3]"]),
    (jnp.maximum, ["f32[3]", "f32[3]"]),
    (jax.nn.sigmoid, ["f32[3]"]),
    (jax.nn.silu, ["f32[3]"]),
    (lambda x: jnp.concatenate([x, 2 * x]), ["f32[2]"]),
]


def _known_params(prim, specs, params):
    """Drop bind parameters this JAX release does not take (they differ between 0.5 and 0.10)."""
    from jaxdiag._loading._inputs import (
        parse_spec  # a submodule: `jaxdiag._loading._inputs` is only set once something imported it,
    )

    args = [np.zeros(s.shape, s.dtype) for s in map(parse_spec, specs)]

    def runs(candidate):
        try:
            prim.bind(*args, **candidate)
        except Exception:
            return False
        return True

    for name in list(params):
        if not runs(params):
            trial = {k: v for k, v in params.items() if k != name}
            if runs(trial):
                params = trial
    return params


def _problems(report):
    found = [f"{t.target}: {f.code} {f.message}" for t in report.targets for f in t.findings
             if f.severity in ("error", "warning")]
    broken = [f"{t.target}: check {c.name} crashed: {c.detail}" for t in report.targets for c in t.checks
              if c.status == "error"]
    return found + broken


@pytest.mark.parametrize("prim, specs, params", PRIMITIVES, ids=[p.name for p, _, _ in PRIMITIVES])
def test_jax_primitive_has_no_findings(prim, specs, params):
    params = _known_params(prim, specs, dict(params))
    report = jaxdiag.check_batching(prim, *specs, include_jax=True, params=params)
    assert not _problems(report)
    assert any(c.name == "batching-vs-loop" and c.status == "passed" for c in report.targets[0].checks)


@pytest.mark.parametrize("fn, specs", FUNCTIONS, ids=[getattr(f, "__name__", "lambda") + str(i)
                                                        for i, (f, _) in enumerate(FUNCTIONS)])
def test_jax_function_has_no_findings(fn, specs):
    report = jaxdiag.check_batching(fn, *specs, include_jax=True)
    assert not _problems(report)
