"""Sparse kernels over COO triplets (tests/data/sparse_coo): inputs a sparse solve accepts, and foreign calls that a
custom_vmap's rule batches."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdiag
from jaxdiag import _compat

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def targets() -> dict:
    report = jaxdiag.check_module(str(DATA / "sparse_coo"), app_dir=str(DATA))
    assert not report.internal_errors
    return {t.target.split(" ")[0].rpartition(":")[2]: t for t in report.targets}


def test_random_positions_make_a_singular_matrix_so_a_diagonal_is_drawn(targets) -> None:
    """Random (rows, cols) give a singular matrix (the solve is non-finite): the indices take a diagonal's positions
    and the values are positive (JXN002 'diagonal'), on the vector rung, instead of 2-D operands outside the
    contract on which random positions happened to work."""
    solve = targets["coo_solve"]
    assert solve.inputs == ["i32[3]@0..2", "i32[3]@0..2", "f32[3]", "f32[3]"]
    assert any(f.code == "JXN002" and "'diagonal'" in f.message for f in solve.findings)
    assert not solve.unverified and not [f for f in solve.findings if f.severity != "info"]


def test_a_callback_inside_a_custom_vmap_is_that_rule_s_and_its_nested_failure_names_the_rule_s_call(targets):
    """The primal's callback has no vmap_method, which is right: vmap goes through the custom_vmap's rule. Only the
    rule's own callback (batched again by an outer vmap) is at fault, and the fix says so."""
    from sparse_coo import ops  # noqa: PLC0415 - the data package, put on sys.path by the check

    assert "shifted" not in targets  # no "(calls a callback)" report blaming the primal's call (was JXB020)
    applied = targets["batched_apply"]
    if not _compat.vmap_method_none_raises():  # jax 0.5: vmap_method=None loops, with a DeprecationWarning
        assert not [f for f in applied.findings if f.severity == "error"]
        return
    x = jnp.ones((2, 3, 4), jnp.float32)
    np.testing.assert_allclose(jax.vmap(ops.shifted)(x[0]), 2 * x[0] + 1)  # one vmap: the rule
    with pytest.raises(NotImplementedError, match="vmap_method"):
        jax.vmap(jax.vmap(ops.shifted))(x)
    [found] = [f for f in applied.findings if f.severity != "info"]
    rule_line = next(i for i, line in enumerate((DATA / "sparse_coo" / "ops.py").read_text().splitlines(), 1)
                     if "_host_scale_batch, jax.ShapeDtypeStruct" in line)
    assert found.code == "JXV005" and f"ops.py:{rule_line}" in found.fix and "vmap_method=" in found.fix


def test_a_kernel_refusing_its_operands_is_a_refusal_of_values_and_a_callback_s_error_is_not() -> None:
    """An ffi_call handler's status (a sparse solver's "not positive definite") reaches Python as JAX's runtime
    error: it is about the values, so inference tries other domains. A host callback's error (`equinox.error_if`)
    comes the same way but names the callback: taking it for a domain once let a check run whose reference took
    17 GB to compile."""
    kernel = jax.errors.JaxRuntimeError("INTERNAL: solver: matrix is not positive definite (failure at column 0)")
    callback = jax.errors.JaxRuntimeError("INTERNAL: CpuCallback error calling callback: Traceback ...")
    assert _compat.raised_by_kernel(kernel)
    assert not _compat.raised_by_kernel(callback) and not _compat.raised_by_kernel(ValueError("INTERNAL: x"))
    decode = jax.errors.JaxRuntimeError("INVALID_ARGUMENT: [execute] Failed to decode all FFI handler operands (bad "
                                        "operands at: 0, 1)")  # a dtype the handler does not take: not a value
    assert not _compat.raised_by_kernel(decode)
