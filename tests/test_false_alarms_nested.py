"""Nested rules checked as their function drives them (false alarms met on equinox, each on a fixture of the same
pattern in tests/data, no equinox import): operands a function never batches, calls recorded under vmap, and
arguments a function passes its nested custom rules. Each case is first confirmed with plain JAX."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdiag

DATA = Path(__file__).resolve().parent / "data"


def _load_data(name: str):
    path = DATA / name
    spec = importlib.util.spec_from_file_location(f"nested_fixture_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def problems(report: jaxdiag.Report) -> list:
    return [(f.code, f.severity, f.message[:200]) for f in report.findings if f.severity in ("error", "warning")]


def no_internal_errors(report: jaxdiag.Report) -> None:
    assert not report.internal_errors, [(c.name, c.detail) for c in report.internal_errors]


# ---------------------------------------------------------------------------------------------------------------
# Operands built from no input of the function are never batched by vmap of the function
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["double", "sine_twice"])
def test_constant_operand_of_a_nested_primitive_stays_unbatched(target):
    module = _load_data("fn_table_primitive.py")
    xs = jnp.arange(12.0).reshape(4, 3)
    fn = getattr(module, target)
    np.testing.assert_allclose(jax.vmap(fn)(xs), np.stack([fn(x) for x in xs]), rtol=1e-6)  # plain JAX: fine
    report = jaxdiag.check_batching(f"{DATA / 'fn_table_primitive.py'}:{target}", "f32[3]")
    no_internal_errors(report)
    assert not problems(report), problems(report)
    nested = [t for t in report.targets if t.target.endswith("> table_call")]
    assert nested and all(c.status == "passed" for c in nested[0].checks if c.name == "batching-rule")


def test_an_operand_that_is_an_input_is_still_batched():
    """Where the index is one of the function's inputs, vmap does batch it and the rule's refusal is reported: a
    JXN020 note, since the rule batches `x` and refuses only a batched index, on purpose."""
    module = _load_data("fn_table_primitive.py")
    with pytest.raises(ValueError, match="must not be batched"):
        jax.vmap(module.pick)(jnp.zeros(4, jnp.int32), jnp.ones((4, 3)))
    report = jaxdiag.check_batching(f"{DATA / 'fn_table_primitive.py'}:pick", "i32[]", "f32[3]")
    no_internal_errors(report)
    assert "JXN020" in {f.code for t in report.targets for f in t.findings}, problems(report)


# ---------------------------------------------------------------------------------------------------------------
# A primitive's JVP rule gets tuples of primals and tangents, as JAX passes them
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("target", "specs"), [("pair_mul_p", ["f32[3]", "f32[3]"]), ("square_sum", ["f32[3]"])])
def test_jvp_rule_gets_tuples_as_jax_passes_them(target, specs):
    """equinox's `_vprim_jvp` vmaps over its primals with a tuple in_axes: under JAX's jvp it works."""
    module = _load_data("tuple_primals_jvp.py")
    x, y = jnp.array([0.5, -1.0, 2.0]), jnp.array([1.5, 0.25, -3.0])
    _, tangent = jax.jvp(module.pair_mul, (x, y), (jnp.ones(3), jnp.zeros(3)))
    np.testing.assert_allclose(tangent, y)
    np.testing.assert_allclose(jax.grad(module.square_sum)(x), 2 * x)
    report = jaxdiag.check_grad(f"{DATA / 'tuple_primals_jvp.py'}:{target}", *specs)
    no_internal_errors(report)
    assert not problems(report), problems(report)


def test_operand_dependence_follows_loops_and_calls():
    """A loop counter is not batched by vmap; a carry is once the loop's predicate depends on an input."""
    from jaxdiag import _compat

    def counted(x):
        return jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + x), (0, jnp.zeros(3)))

    def until(x):
        return jax.lax.while_loop(lambda c: c[0] < x[0], lambda c: (c[0] + 1.0, c[1] * 2), (0.0, 1))

    def through_jit(x):
        n = jax.jit(lambda v: (jnp.int32(2), v * 2))(x)[0]
        return n * 3, x + 1

    def by_name(fn):
        jaxpr = jax.make_jaxpr(fn)(jnp.ones(3))
        dependent = _compat.input_dependent_operands(jaxpr)
        return [(e.primitive.name, dependent(e)) for e in _compat.iter_eqns(jaxpr)]

    assert ("lt", [False, False]) in by_name(counted) and ("add", [True, True]) in by_name(counted)
    assert ("add", [False, False]) in by_name(counted)  # the counter
    assert ("mul", [True, False]) in by_name(until)  # the int carry, batched by the input-dependent predicate
    assert ("mul", [False, False]) in by_name(through_jit)  # jit's first output is a constant
    assert jax.vmap(until)(jnp.ones((2, 3)))[1].shape == (2,)  # plain JAX: that carry is batched


# ---------------------------------------------------------------------------------------------------------------
# float8 / float4 are floating everywhere (as jnp.issubdtype(dtype, jnp.inexact) says)
# ---------------------------------------------------------------------------------------------------------------


def test_repro_scripts_treat_float8_as_floating(monkeypatch):
    import ml_dtypes

    from jaxdiag._evidence import _repro_templates

    namespace: dict = {}
    monkeypatch.setattr("sys.argv", ["repro.py"])
    exec(_repro_templates.PRELUDE.format(module_file="json", module_name="json", root=str(DATA), attr="dumps",
                                         specs="[]", call="TARGET(*args)"), namespace)
    narrow = [getattr(ml_dtypes, name) for name in ("float8_e4m3fn", "float4_e2m1fn") if hasattr(ml_dtypes, name)]
    assert all(namespace["is_float"](dtype) for dtype in narrow)  # float4 exists from ml_dtypes 0.5 on
    assert not namespace["is_float"](np.int8) and not namespace["is_float"](jax.dtypes.float0)
    a = np.array([0.5, 1.0, 2.0], ml_dtypes.float8_e4m3fn)
    namespace["assert_close"](a, np.array([0.5, 1.0, 2.0], ml_dtypes.float8_e4m3fn), "same")
    with pytest.raises(AssertionError, match="differ"):
        namespace["assert_close"](a, np.array([0.5, 1.0, 4.0], ml_dtypes.float8_e4m3fn), "other")


def test_vmap_reference_sees_equal_float8_nans_as_constant():
    import ml_dtypes

    from jaxdiag._checks._vmap_harness import Reference

    out = np.array([np.nan, 1.0], ml_dtypes.float8_e4m3fn)
    reference = Reference(None, lambda *a: out, [np.zeros((3, 2), np.float32)], 3)  # type: ignore[arg-type]
    reference._outputs[frozenset()] = [[out.copy()] for _ in range(3)]
    assert reference.constant(frozenset(), 0, 3)


# ---------------------------------------------------------------------------------------------------------------
# Functions get jax Arrays, as users call them
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_function_indexing_its_input_with_a_traced_counter_is_clean():
    module = _load_data("traced_index.py")
    assert float(module.running_total(jnp.array([1.0, 2.0, 3.0]))) == 12.0  # plain JAX, on a jax Array
    with pytest.raises(jax.errors.TracerArrayConversionError):  # only a NumPy input cannot be indexed so
        module.running_total(np.array([1.0, 2.0, 3.0], np.float32))
    report = jaxdiag.check_batching(f"{DATA / 'traced_index.py'}:running_total", "f32[3]")
    no_internal_errors(report)
    assert not problems(report), problems(report)


# ---------------------------------------------------------------------------------------------------------------
# A custom_vjp over a pytree argument is checked at the values its function passes it (diffrax's adjoint pattern)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_pytree_custom_vjp_is_checked_at_the_values_its_function_passes():
    """diffrax's `_loop_backsolve` false alarm: the nested rule takes a pytree, so jaxdiag checks a flat view of it;
    the observed call is of the original and must still be matched, or bwd runs on random save times and raises."""
    module = _load_data("pytree_vjp_precondition.py")
    y0 = jnp.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(jax.jacrev(module.solve)(y0), 3.0 * np.eye(3), rtol=1e-6)  # plain JAX: fine
    jumbled = {"ts": jnp.array([0.0, 2.0, 1.0, 0.5]), "scale": jnp.asarray(1.5)}
    with pytest.raises(Exception, match="strictly increasing"):  # the precondition is real
        jax.block_until_ready(jax.grad(lambda y: module.integrate(jumbled, y).sum())(y0))
    report = jaxdiag.check_grad(f"{DATA / 'pytree_vjp_precondition.py'}:solve", "f32[3]")
    no_internal_errors(report)
    assert not problems(report), problems(report)
    nested = [t for t in report.targets if t.target.endswith("> integrate")]
    assert nested, [t.target for t in report.targets]
    statuses = {c.name: c.status for c in nested[0].checks}
    assert statuses["vjp-cotangents"] == "passed" and statuses["grad-composition"] == "passed", statuses


@pytest.mark.slow
def test_a_bwd_entry_for_an_argument_without_leaves_is_no_structure_error():
    """Optional inputs as attention kernels take them: bwd returns an array for `gate=None`, which JAX ignores
    (plain JAX: grad and jit(grad) run). JAX reads bwd's result as a tree prefix: one array for a pair of arrays
    runs too (broadcast to both), so it is no structure error, and the wrong gradient it gives the pair's second
    entry is reported by the reference checks. A pair given an array of another shape is one: JAX rejects it."""
    module = _load_data("pytree_vjp_optional.py")
    x = jnp.arange(3.0)
    np.testing.assert_allclose(jax.jit(jax.grad(lambda v: module.recurrence(v).sum()))(x), [3.0, 2.0, 1.0])
    jax.grad(lambda v: module.paired_recurrence(v).sum())(x)  # runs
    with pytest.raises(ValueError, match="Custom VJP bwd rule must produce an output"):
        jax.grad(lambda v: module.misshapen_recurrence(v).sum())(x)
    clean = jaxdiag.check_grad(f"{DATA / 'pytree_vjp_optional.py'}:recurrence", "f32[3]")
    no_internal_errors(clean)
    assert "JXG010" not in clean.codes() and not problems(clean), problems(clean)
    assert any(t.target.endswith("> gated_sum") for t in clean.targets), [t.target for t in clean.targets]
    broadcast = jaxdiag.check_grad(f"{DATA / 'pytree_vjp_optional.py'}:paired_recurrence", "f32[3]")
    assert "JXG010" not in broadcast.codes() and broadcast.codes() & {"JXG024", "JXG014"}, problems(broadcast)
    misshapen = jaxdiag.check_grad(f"{DATA / 'pytree_vjp_optional.py'}:misshapen_recurrence", "f32[3]")
    assert "JXG010" in misshapen.codes(), problems(misshapen)


def test_pytree_custom_vjp_wrong_at_the_observed_values_is_still_reported():
    module = _load_data("pytree_vjp_precondition.py")
    y0 = jnp.array([1.0, 2.0, 3.0])
    assert not np.allclose(jax.jacrev(module.solve_unscaled)(y0), 3.0 * np.eye(3))  # plain JAX: the bwd is wrong
    report = jaxdiag.check_grad(f"{DATA / 'pytree_vjp_precondition.py'}:solve_unscaled", "f32[3]")
    no_internal_errors(report)
    nested = [t for t in report.targets if t.target.endswith("> integrate_unscaled")]
    assert nested, [t.target for t in report.targets]
    # the bwd forgets the constant `scale`: autodiff's cotangent times 1/1.5 for every cotangent probed, a uniform
    # scale no clipping produces, so an error (JXG024) rather than the "may be intended" warning
    found = [f for f in nested[0].findings if f.code == "JXG024"]
    assert found and found[0].location.function == "integrate_unscaled_bwd", problems(report)
    assert "0.6667" in found[0].message


def test_observed_pytree_call_skips_non_array_leaves():
    """optimistix passes its rule pytrees holding NumPy dtypes: a dtype has a `shape` but is no array, and reading it
    as one stopped the whole check with an internal error."""
    from jaxdiag._checks._base import Subject
    from jaxdiag._checks._call_site import call_arrays
    from jaxdiag._loading._inputs import ArgSpec
    from jaxdiag._run._observe import _concrete_at

    def solve(options, y):
        return y * options["scale"]

    subject = Subject("solve", "custom_vjp", object(), [ArgSpec("float32", ()), ArgSpec("float32", (3,))],
                      original=solve)
    options = {"dtype": np.dtype("float32"), "scale": np.float32(2.0), "name": "newton"}
    leaves = call_arrays(subject, solve, (options, np.ones(3, np.float32)), {})
    assert leaves is not None and [np.shape(leaf) for leaf in leaves] == [(), (3,)]
    assert _concrete_at(leaves, [ArgSpec("float32", ()), ArgSpec("float32", (3,))])
    assert call_arrays(subject, lambda o, y: y, (options, np.ones(3)), {}) is None  # another rule's call


def test_rows_near_observed_values_keep_their_order_and_stay_apart():
    """The vmap batch of a rule checked at observed values: row 0 is the observed value, every row keeps its order
    and signs (a precondition the caller keeps still holds), and rows differ by more than the f32 tolerance."""
    from jaxdiag._checks._base import _rows_near

    ts = np.array([0.0, 0.5, 1.0, 2.0], np.float32)
    rows = _rows_near(ts, 5)
    assert rows.shape == (5, 4) and rows.dtype == np.float32 and np.array_equal(rows[0], ts)
    assert all(np.all(np.diff(r) > 0) for r in rows)
    gaps = np.abs(np.diff(rows[:, -1])) / np.abs(rows[:-1, -1])
    assert np.all(gaps > 2e-3), gaps
    counts = np.array([3, 1, 2], np.int32)
    assert np.array_equal(_rows_near(counts, 3), np.stack([counts] * 3))  # integers are repeated as they are
