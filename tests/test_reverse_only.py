"""Primitives whose derivative exists in reverse mode only (JXN019): the JVP rule's tangent is a primitive with a
transpose rule but no impl or lowering, as FFI libraries write them. jax.grad works and jax.jvp cannot run, so the
JVP checks have nothing to evaluate: the note says so, reverse mode is checked against finite differences instead,
and the tangent primitive is no target of its own. Before, every such kernel was a JXG017 "the JVP rule raised"
and its reverse mode went unchecked."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from clirun import check_json

ACC = Path(__file__).parent / "data" / "acc"


def _module():
    spec = importlib.util.spec_from_file_location("reverse_only_kernel", ACC / "reverse_only_kernel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_plain_jax_reverse_mode_runs_forward_mode_cannot_and_the_doubled_kernel_doubles_the_gradient():
    module = _module()
    x = jnp.array([0.5, -1.0, 2.0])
    want = jax.grad(lambda v: jnp.sum(jnp.sin(jnp.cumsum(v))))(x)
    for prim, factor in ((module.scan_sum_p, 1.0), (module.scan_sum_doubled_p, 2.0)):
        got = jax.grad(lambda v: jnp.sum(jnp.sin(prim.bind(v))))(x)  # noqa: B023
        assert np.allclose(got, factor * want, rtol=1e-5), (prim, got, want)
        with pytest.raises(NotImplementedError, match="Evaluation rule"):
            jax.jvp(prim.bind, (x,), (x,))


def test_a_reverse_mode_only_kernel_is_checked_in_reverse_mode_and_its_wrong_reverse_kernel_found():
    _, data = check_json(str(ACC / "reverse_only_kernel.py"), ACC)
    targets = {t["target"].split(":")[-1]: t for t in data["targets"]}
    assert not any("tangent" in name for name in targets), sorted(targets)  # checked through their forward kernel
    right, doubled = targets["scan_sum_p"], targets["scan_sum_doubled_p"]
    for target in (right, doubled):
        codes = {f["code"] for f in target["findings"]}
        assert "JXN019" in codes and "JXG017" not in codes, target["findings"]
        ran = {c["name"]: c["status"] for c in target["checks"]}
        assert ran["reverse-only-reference"] in ("passed", "failed"), ran
    assert not [f for f in right["findings"] if f["code"].startswith("JXG")], right["findings"]
    (mismatch,) = [f for f in doubled["findings"] if f["code"] == "JXG001"]
    assert mismatch["location"]["function"] == "_scan_sum_doubled_tangent_transpose", mismatch["location"]
    assert "jax.vjp" in mismatch["message"] and "jax.jvp return" not in mismatch["message"], mismatch["message"]


def test_reverse_mode_with_no_finite_reference_is_not_verified(tmp_path):
    """A reverse-mode-only kernel whose impl is inf wherever it is evaluated: finite differences give nothing to
    compare jax.vjp with, so the reverse check skips (it passed, comparing nothing)."""
    source = (ACC / "reverse_only_kernel.py").read_text()
    source = source.replace("def _running_sum(x):\n    return jnp.cumsum(x, axis=-1)",
                            "def _running_sum(x):\n    return jnp.cumsum(x, axis=-1) / 0.0")
    assert "/ 0.0" in source
    (tmp_path / "infinite_kernel.py").write_text(source)
    import jaxdiag

    report = jaxdiag.check_grad(f"{tmp_path / 'infinite_kernel.py'}:scan_sum_p", "f32[3]")
    ran = {c.name: c.status for t in report.targets for c in t.checks}
    assert ran["reverse-only-reference"] == "skipped", ran
    assert not report.ok and [t.unverified for t in report.targets] == ["no-check-ran"], report.targets
