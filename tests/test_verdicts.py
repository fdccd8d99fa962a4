"""Verdicts on correct real-world code and on defects that used to hide: complex values follow JAX's convention,
x64 is scoped to explicitly 64-bit specs, custom derivatives are graded by evidence (JXG014 vs JXG024), JXB011
only where a tuple out_axes is used, integer batch examples that differ, batch sizes beyond int8, spelling-
invariant seeds with fresh-draw confirmation, and JXR006 for primitives reached only through custom_vjp.

Each defect and each correct case is first confirmed with plain JAX in the test itself."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdiag
from jaxdiag import _compat
from jaxdiag._checks._gradref import deliberate_disagreement

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


def load(name: str):
    path = SAMPLES / name
    spec = importlib.util.spec_from_file_location(f"verdict_sample_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def problems(report: jaxdiag.Report) -> list:
    return [(f.code, f.severity, f.message[:200]) for f in report.findings if f.severity in ("error", "warning")]


def codes(report: jaxdiag.Report, severity: str | None = None) -> set[str]:
    return {f.code for f in report.findings if severity is None or f.severity == severity}


def no_internal_errors(report: jaxdiag.Report) -> None:
    errors = [(c.name, c.detail) for t in report.targets for c in t.checks if c.status == "error"]
    assert not errors, errors


# ---------------------------------------------------------------------------------------------------------------
# 1. Complex values: JAX's convention (raw cotangents, bilinear pairing)
# ---------------------------------------------------------------------------------------------------------------


def _complex(rng: np.random.Generator, shape: tuple[int, ...]) -> jnp.ndarray:
    return jnp.asarray((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64))


@pytest.mark.slow
def test_plain_jax_complex_vjp_pairs_bilinearly():
    """The convention the checks follow: Re sum(w * J v) == Re sum(vjp(w) * v), with no conjugation."""
    rng = np.random.default_rng(0)
    z, v, w = (_complex(rng, (4,)) for _ in range(3))
    for f in (lambda z: (2 + 1j) * z, jnp.conj, jnp.fft.fft, lambda z: jnp.sin(z) * jnp.conj(z)):
        jv = jax.jvp(f, (z,), (v,))[1]
        (u,) = jax.vjp(f, z)[1](w)
        assert np.isclose(np.real(np.sum(w * jv)), np.real(np.sum(u * v)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("attr,spec", [("fftn_c", "c64[4,4]"), ("scale_c", "c64[3]"),
                                       pytest.param("loss", "c64[3]", marks=pytest.mark.slow)])
def test_complex_custom_vjp_following_jax_is_clean(attr, spec):
    module = load("complex_vjp_good.py")
    obj = getattr(module, attr)
    z = _complex(np.random.default_rng(1), tuple(int(d) for d in spec[4:-1].split(",")))
    if attr != "loss":  # plain JAX: the custom VJP equals JAX's VJP of the undecorated primal
        w = _complex(np.random.default_rng(2), z.shape)
        got = jax.vjp(obj, z)[1](w)[0]
        want = jax.vjp(obj.fun, z)[1](w)[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    else:  # plain JAX: jit(grad) equals eager grad
        np.testing.assert_allclose(jax.jit(jax.grad(obj))(z), jax.grad(obj)(z), rtol=1e-5, atol=1e-5)
    report = jaxdiag.check_grad(f"{SAMPLES / 'complex_vjp_good.py'}:{attr}", spec)
    no_internal_errors(report)
    assert not problems(report), problems(report)


def test_complex_transpose_with_a_conjugation_bug_is_reported_and_its_fix_is_clean():
    bad, good = load("complex_transpose_bad.py"), load("complex_transpose_good.py")
    z, w = _complex(np.random.default_rng(3), (3,)), _complex(np.random.default_rng(4), (3,))
    want = jax.vjp(lambda z: (2 + 1j) * z, z)[1](w)[0]
    assert not np.allclose(jax.vjp(bad.rotate_p.bind, z)[1](w)[0], want)  # plain JAX: the bug
    np.testing.assert_allclose(jax.vjp(good.rotate_p.bind, z)[1](w)[0], want, rtol=1e-5)
    bad_report = jaxdiag.check_grad(f"{SAMPLES / 'complex_transpose_bad.py'}:rotate_p", "c64[3]")
    assert "JXG002" in codes(bad_report, "error")
    good_report = jaxdiag.check_grad(f"{SAMPLES / 'complex_transpose_good.py'}:rotate_p", "c64[3]")
    no_internal_errors(good_report)
    assert not problems(good_report), problems(good_report)


# ---------------------------------------------------------------------------------------------------------------
# 2. x64 only for an explicitly 64-bit spec, restored afterwards
# ---------------------------------------------------------------------------------------------------------------


def _x64_probe():
    modes: list[bool] = []

    @jax.custom_vjp
    def f(z):
        return 2.0 * z

    def fwd(z):
        modes.append(bool(jax.config.jax_enable_x64))
        return 2.0 * z, None

    def bwd(_, g):
        return (2.0 * g,)

    f.defvjp(fwd, bwd)
    return f, modes


@pytest.mark.parametrize("spec,x64", [("c64[3]", False), ("f32[3]", False), ("f64[3]", True), ("c128[3]", True)])
def test_only_64_bit_specs_turn_on_x64_and_it_is_restored(spec, x64):
    assert not jax.config.jax_enable_x64
    f, modes = _x64_probe()
    report = jaxdiag.check_grad(f, spec)
    no_internal_errors(report)
    assert not problems(report), problems(report)
    assert modes and all(m == x64 for m in modes), modes
    assert not jax.config.jax_enable_x64


# ---------------------------------------------------------------------------------------------------------------
# 10. JXG014 (deliberate-looking surrogate, warning) vs JXG024 (interior sign/factor error)
# ---------------------------------------------------------------------------------------------------------------


def test_deliberate_disagreement_classes():
    ref = np.array([0.5, -2.0, 1.5, -0.1])
    w = np.array([1.0, 1.0, -1.0, 1.0])
    assert deliberate_disagreement(np.clip(ref, -1, 1), ref, None, np.float32)  # clipped
    assert deliberate_disagreement(np.array([0.5, 0.0, 0.0, -0.1]), ref, None, np.float32)  # zeroed
    assert deliberate_disagreement(w, ref, w, np.float32)  # straight-through
    assert deliberate_disagreement(0.3 * ref, ref, None, np.float32)  # norm clipping
    assert not deliberate_disagreement(-ref, ref, None, np.float32)  # sign
    assert not deliberate_disagreement(3.0 * ref, ref, None, np.float32)  # factor
    assert not deliberate_disagreement(w, ref, None, np.float32)  # unrelated values


def test_a_smaller_derivative_is_a_clip_only_when_it_keeps_the_order_of_the_magnitudes():
    """Clipping (hard, soft, of the value or of the derivative factor) never puts a larger derivative below a
    smaller one; `sigmoid(-x)` written for softplus's `sigmoid(x)` is smaller on x > 0 but reverses the order."""
    x = np.array([0.2, 0.9, 1.7, 3.0])
    t = np.array([1.3, -0.4, 0.8, -2.1])  # the tangent the rule received
    sigmoid = 1.0 / (1.0 + np.exp(-x))
    ref = sigmoid * t
    assert deliberate_disagreement(np.tanh(ref), ref, t, np.float32)  # soft clip of the value
    assert deliberate_disagreement(np.minimum(sigmoid, 0.7) * t, ref, t, np.float32)  # clip of the derivative
    assert not deliberate_disagreement((1.0 - sigmoid) * t, ref, t, np.float32)  # sigmoid(-x): order reversed
    derivative = 3 * x ** 2  # a cubic's, clipped at 4, no tangent known: ordered as values
    assert deliberate_disagreement(np.minimum(derivative, 4.0), derivative, None, np.float32)


@pytest.mark.parametrize("attr,code,severity",
                         [pytest.param("clipped_sin", "JXG014", "warning", marks=pytest.mark.slow),
                          ("round_ste", "JXG014", "warning")])
def test_clipping_and_straight_through_stay_warnings(attr, code, severity):
    report = jaxdiag.check_grad(f"{SAMPLES / 'jxg014_bad.py'}:{attr}", "f32[6]")
    assert code in codes(report, severity) and "JXG024" not in codes(report)


@pytest.mark.parametrize("attr,spec", [("softplus", "f32[3]"),
                                       pytest.param("tanh_c", "f32[4]", marks=pytest.mark.slow)])
def test_wrong_sign_or_formula_is_an_error(attr, spec):
    module = load("jxg024_bad.py")
    x = jnp.array([0.3, -1.2, 2.0, 0.7][: int(spec[4:-1])])
    obj = getattr(module, attr)
    assert not np.allclose(jax.grad(lambda x: jnp.sum(obj(x)))(x), jax.grad(lambda x: jnp.sum(obj.fun(x)))(x))
    report = jaxdiag.check_grad(f"{SAMPLES / 'jxg024_bad.py'}:{attr}", spec)
    assert "JXG024" in codes(report, "error") and "JXG014" not in codes(report)


# ---------------------------------------------------------------------------------------------------------------
# 6. JXB011 only where a tuple out_axes is used
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_list_returning_wrapper_is_clean_unless_a_tuple_out_axes_is_used():
    module = load("list_wrapper_good.py")
    xs = jnp.ones((5, 3))
    assert [a.shape for a in module.standardize_rows(xs)] == [(5, 3), ()]  # plain JAX: the wrapper works
    with pytest.raises(ValueError, match="tree prefix"):
        jax.vmap(module.standardize, out_axes=(0, None))(xs)
    target = f"{SAMPLES / 'list_wrapper_good.py'}:standardize_p"
    assert "JXB011" not in codes(jaxdiag.check_batching(target, "f32[3]"))
    assert "JXB011" in codes(jaxdiag.check_batching(target, "f32[3]", out_axes=(0, None)), "warning")


# ---------------------------------------------------------------------------------------------------------------
# 9. Integer examples that differ; batch sizes beyond the int8 range
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_integer_reduction_over_the_batch_axis_is_caught():
    bad, good = load("int_reduce_bad.py"), load("int_reduce_good.py")
    first = np.array([3, -2, 5, 0], np.int32)
    permuted = np.stack([first, first[::-1], np.roll(first, 1)])
    distinct = np.stack([first, np.array([1, 1, -4, 2], np.int32), np.array([-5, 0, 0, -1], np.int32)])
    # plain JAX: permutations hide the bug (every example has the same maximum); distinct examples expose it
    np.testing.assert_array_equal(jax.vmap(bad.imax_p.bind)(permuted), permuted.max(axis=1))
    assert not np.array_equal(jax.vmap(bad.imax_p.bind)(distinct), distinct.max(axis=1))
    np.testing.assert_array_equal(jax.vmap(good.imax_p.bind)(distinct), distinct.max(axis=1))
    assert "JXB005" in codes(jaxdiag.check_batching(f"{SAMPLES / 'int_reduce_bad.py'}:imax_p", "i32[4]"), "error")
    assert not problems(jaxdiag.check_batching(f"{SAMPLES / 'int_reduce_good.py'}:imax_p", "i32[4]"))


@pytest.mark.slow
def test_int8_index_batching_rule_is_checked_beyond_the_int8_range():
    bad, good = load("int8_gather_bad.py"), load("int8_gather_good.py")
    rng = np.random.default_rng(0)
    for size, ok in ((7, True), (150, False)):
        x = rng.standard_normal((size, 6)).astype(np.float32)
        idx = rng.integers(0, 6, (size, 3)).astype(np.int8)
        loop = np.stack([x[i][idx[i]] for i in range(size)])
        assert np.array_equal(np.asarray(jax.vmap(bad.take_p.bind)(x, idx)), loop) == ok
        assert np.array_equal(np.asarray(jax.vmap(good.take_p.bind)(x, idx)), loop)
    report = jaxdiag.check_batching(f"{SAMPLES / 'int8_gather_bad.py'}:take_p", "f32[6]", "i8[3]@0..5")
    found = [f for f in report.findings if f.code == "JXB005"]
    assert found and "batch size 150" in found[0].message and "int8" in found[0].fix
    assert not problems(jaxdiag.check_batching(f"{SAMPLES / 'int8_gather_good.py'}:take_p", "f32[6]", "i8[3]@0..5"))


# ---------------------------------------------------------------------------------------------------------------
# 7. Spelling invariance and fresh-draw confirmation
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_module_and_path_spellings_give_identical_reports(tmp_path):
    package = tmp_path / "src" / "pkgverdicts"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    shutil.copy(SAMPLES / "clip_precondition.py", package / "clipmod.py")
    spellings = [("pkgverdicts.clipmod:clip", str(tmp_path / "src")),
                 ("src/pkgverdicts/clipmod.py:clip", str(tmp_path))]
    reports = []
    for target, app_dir in spellings:
        for seed in (0, 1):
            report = jaxdiag.check_grad(target, "f32[4]", "f32[]", "f32[]", seed=seed, app_dir=app_dir)
            reports.append(sorted((f.code, f.severity, f.message) for f in report.findings))
    assert reports[:2] == reports[2:]


@pytest.mark.slow
def test_a_value_dependent_finding_is_retried_and_reported_with_its_inputs():
    module = load("clip_precondition.py")
    x = jnp.array([0.0, 0.5, 1.5, -1.0])
    # plain JAX: correct for lo <= hi, wrong for lo > hi (the precondition random draws violate)
    grads = [jax.grad(lambda *a, f=f: jnp.sum(f(*a)), argnums=(0, 1, 2)) for f in (module.clip, module.clip.fun)]
    for lo, hi, same in ((-0.5, 1.0, True), (1.0, -0.5, False)):
        got, want = (g(x, jnp.float32(lo), jnp.float32(hi)) for g in grads)
        assert all(np.allclose(a, b) for a, b in zip(got, want)) == same
    report = jaxdiag.check_grad(f"{SAMPLES / 'clip_precondition.py'}:clip", "f32[4]", "f32[]", "f32[]", seed=0)
    flagged = [f for f in report.findings if f.severity in ("error", "warning")]
    assert flagged and all("independent draws" in f.message and "arg1 = " in f.message for f in flagged)


# ---------------------------------------------------------------------------------------------------------------
# 8. A primitive reached only through custom_vjp needs no JVP rule
# ---------------------------------------------------------------------------------------------------------------


def test_primitive_differentiated_only_through_custom_vjp_gets_a_note():
    module = load("ffi_style_custom_vjp_good.py")
    x = jnp.array([0.5, -1.0, 2.0, 0.1])
    np.testing.assert_allclose(jax.grad(module.loss)(x), 3 * x * x, rtol=1e-6)  # plain JAX: grad works
    report = jaxdiag.check_grad(f"{SAMPLES / 'ffi_style_custom_vjp_good.py'}:cube_kernel_p", "f32[4]")
    assert "JXR006" in codes(report, "info") and not problems(report), problems(report)
    missing = jaxdiag.check_grad(f"{SAMPLES / 'jxr006_bad.py'}:{_jxr006_target()}", "f32[3]")
    assert "JXR013" in codes(missing, "error")  # the error variant under `grad`


def _jxr006_target() -> str:
    return next(iter(load("jxr006_bad.py").JAXDIAG))


# ---------------------------------------------------------------------------------------------------------------
# 12. vjp(vmap(f)) with a different cotangent per example, next to vmap(grad f)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_transpose_bug_only_in_vjp_of_vmap_is_reported_at_the_transpose_rule():
    bad, good = load("batched_transpose_bad.py"), load("batched_transpose_good.py")
    rng = np.random.default_rng(0)
    x, w = (jnp.asarray(rng.standard_normal((5, 4)), jnp.float32) for _ in range(2))
    want = np.stack([np.flip(np.cumsum(np.flip(np.asarray(w[j])))) for j in range(5)])
    for module, ok in ((bad, False), (good, True)):
        f = module.cumsum_p.bind
        # plain JAX: vmap(vjp f) is right for both; vjp(vmap f) is wrong only for the bad transpose
        np.testing.assert_allclose(jax.vmap(lambda a, b, f=f: jax.vjp(f, a)[1](b)[0])(x, w), want, rtol=1e-5)
        assert np.allclose(jax.vjp(jax.vmap(f), x)[1](w)[0], want, rtol=1e-5) == ok
    report = jaxdiag.check_grad(f"{SAMPLES / 'batched_transpose_bad.py'}:cumsum_p", "f32[4]")
    found = [f for f in report.findings if f.code == "JXG016"]
    assert found and "jax.vjp(jax.vmap(f))" in found[0].message
    assert found[0].location is not None and found[0].location.function == "_cumsum_transpose"
    assert not problems(jaxdiag.check_grad(f"{SAMPLES / 'batched_transpose_good.py'}:cumsum_p", "f32[4]"))


# ---------------------------------------------------------------------------------------------------------------
# 3. Every batcher registry with its own calling convention
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_axis_primitive_batchers_rule_is_called_with_its_own_convention():
    good, bad = load("axis_batcher_good.py"), load("axis_batcher_bad.py")
    rng = np.random.default_rng(0)
    x, s = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    loop = np.stack([good._rowscale_impl(x[i], s[i]) for i in range(5)])
    np.testing.assert_allclose(jax.vmap(good.rowscale_p.bind)(x, s), loop, rtol=1e-6)  # plain JAX: correct
    np.testing.assert_allclose(jax.vmap(good.rowscale_p.bind, in_axes=(1, 0))(x.T, s), loop, rtol=1e-6)
    with pytest.raises(ValueError):  # plain JAX: the bad rule breaks vmap
        jax.vmap(bad.rowscale_p.bind)(x, s)
    report = jaxdiag.check_batching(f"{SAMPLES / 'axis_batcher_good.py'}:rowscale_p", "f32[3]", "f32[]")
    no_internal_errors(report)
    assert not problems(report), problems(report)
    bad_report = jaxdiag.check_batching(f"{SAMPLES / 'axis_batcher_bad.py'}:rowscale_p", "f32[3]", "f32[]")
    assert "JXB006" in codes(bad_report, "error") and "JXR009" not in codes(bad_report)


# ---------------------------------------------------------------------------------------------------------------
# 5. JXB020 proven by running vmap; whole-function vmap-vs-loop kept for functions with callbacks
# ---------------------------------------------------------------------------------------------------------------


def test_callback_with_unbatched_operands_needs_no_vmap_method():
    module = load("callback_unbatched_good.py")
    xs = jnp.asarray(np.random.default_rng(0).standard_normal((5, 4)), jnp.float32)
    loop = np.stack([module.scale_by_table(x) for x in xs])
    np.testing.assert_allclose(jax.vmap(module.scale_by_table)(xs), loop, rtol=1e-6)  # plain JAX: vmap works
    report = jaxdiag.check_batching(f"{SAMPLES / 'callback_unbatched_good.py'}:scale_by_table", "f32[4]")
    no_internal_errors(report)
    assert not problems(report), problems(report)


@pytest.mark.slow
def test_mismatch_that_persists_with_sequential_callbacks_is_reported():
    module = load("callback_elsewhere_bad.py")
    xs = jnp.asarray(np.random.default_rng(0).uniform(0.5, 2.0, (5, 4)), jnp.float32)
    loop = np.stack([module.normalized_log(x) for x in xs])
    assert not np.allclose(jax.vmap(module.normalized_log)(xs), loop)  # plain JAX: the defect
    report = jaxdiag.check_batching(f"{SAMPLES / 'callback_elsewhere_bad.py'}:normalized_log", "f32[4]@positive")
    root = [f for f in report.targets[0].findings if f.code == "JXB005"]
    assert root and "sequential" in root[0].message


# ---------------------------------------------------------------------------------------------------------------
# 4./11. Nested rules checked at the values their function passes them
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow  # 7 s; the nested_values samples are in the samples table
def test_nested_rule_is_checked_at_the_values_its_function_passes():
    bad, good = load("nested_values_bad.py"), load("nested_values_good.py")  # plain JAX first
    x = jnp.asarray(np.random.default_rng(0).standard_normal((3, 3)), jnp.float32)
    want = jax.grad(lambda x: jnp.linalg.slogdet(x @ x.T + 3 * jnp.eye(3))[1])(x)
    assert not np.allclose(jax.grad(bad.logdet)(x), want, rtol=1e-4, atol=1e-4)  # plain JAX: the bug
    np.testing.assert_allclose(jax.grad(good.logdet)(x), want, rtol=1e-4, atol=1e-4)
    report = jaxdiag.check_grad(f"{SAMPLES / 'nested_values_bad.py'}:logdet", "f32[3,3]")
    nested = [t for t in report.targets if t.target.endswith("> chol")]
    assert nested and "JXG024" in {f.code for f in nested[0].findings}


@pytest.mark.slow
def test_nested_rule_fed_its_functions_values_is_clean_when_right():
    good_report = jaxdiag.check_grad(f"{SAMPLES / 'nested_values_good.py'}:logdet", "f32[3,3]")
    no_internal_errors(good_report)
    assert not problems(good_report), problems(good_report)


def test_gradient_transformation_controlled_by_an_argument_is_a_warning():
    """optax.scale_gradient-style: the primal ignores `scale`, bwd multiplies by it (deliberate by construction)."""

    @jax.custom_vjp
    def scale_gradient(x, scale):
        return x

    scale_gradient.defvjp(lambda x, scale: (x, scale), lambda scale, g: (g * scale, None))
    x, scale = jnp.array([0.5, -1.0, 2.0]), jnp.array([-3.0, 4.0, 0.5])
    assert np.allclose(jax.grad(lambda x: jnp.sum(scale_gradient(x, scale)))(x), scale)  # plain JAX: scaled
    report = jaxdiag.check_grad(scale_gradient, "f32[3]", "f32[3]")
    assert "JXG014" in codes(report, "warning") and "JXG024" not in codes(report)


# ---------------------------------------------------------------------------------------------------------------
# 4. Nested rules see only the tangents JAX gives them at their call site; deliberate refusals are warnings
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_nested_rule_is_not_perturbed_where_jax_never_perturbs_it():
    """`scale` is computed from an integer step, so JAX never perturbs it at the custom_vjp's call site: the fwd's
    `assert not scale.perturbed` holds in plain JAX and the nested rule is clean; passing a differentiable `scale`
    (the bad sample) perturbs it in plain JAX too, and the assertion is reported at fwd."""
    good, bad = load("unperturbed_input_good.py"), load("unperturbed_input_bad.py")
    x, step = jnp.array([0.5, -1.0, 2.0]), jnp.array([1, 2, 3], jnp.int32)
    assert np.all(np.isfinite(jax.grad(good.loss)(x, step)))  # plain JAX: works
    with pytest.raises(AssertionError, match="hyperparameter"):
        jax.grad(bad.loss, argnums=(0, 1))(x, x)  # plain JAX: the bad function perturbs scale
    good_report = jaxdiag.check_grad(f"{SAMPLES / 'unperturbed_input_good.py'}:loss", "f32[3]", "i32[3]")
    no_internal_errors(good_report)
    assert [t.target for t in good_report.targets if t.target.endswith("> scaled")]  # the nested rule was checked
    assert not problems(good_report), problems(good_report)
    bad_report = jaxdiag.check_grad(f"{SAMPLES / 'unperturbed_input_bad.py'}:loss", "f32[3]", "f32[3]")
    nested = [t for t in bad_report.targets if t.target.endswith("> scaled")]
    assert nested and "JXG017" in codes_of(nested[0], "error")


def codes_of(target, severity: str) -> set[str]:
    return {f.code for f in target.findings if f.severity == severity}


def test_a_rule_that_raises_on_purpose_is_a_warning_and_an_accident_stays_an_error():
    """A `raise` written in the rule's own body is a deliberate refusal (JXB014 / JXG025 warnings); an error from a
    call inside the rule (jxb006_bad: `jnp.moveaxis(v, None, 0)`) or an `assert` stays JXB006 / JXG017."""
    bad_b, bad_g = load("jxb014_bad.py"), load("jxg025_bad.py")
    with pytest.raises(ValueError, match="cannot be vmapped"):
        jax.vmap(bad_b.checksum_p.bind)(jnp.ones((2, 4)))  # plain JAX: the rule's own message
    with pytest.raises(RuntimeError, match="must not be differentiated"):
        jax.grad(lambda x: bad_g.frozen(x).sum())(jnp.ones(3))
    refused = jaxdiag.check_batching(f"{SAMPLES / 'jxb014_bad.py'}:checksum_p", "f32[4]")
    assert "JXB014" in codes(refused, "warning") and "JXB006" not in codes(refused)
    assert any(f.code == "JXB014" and "checksum cannot be vmapped" in f.message for f in refused.findings)
    accident = jaxdiag.check_batching(f"{SAMPLES / 'jxb006_bad.py'}:matvec_p", "f32[4,3]", "f32[3]")
    assert "JXB006" in codes(accident, "error") and "JXB014" not in codes(accident)
    refused_g = jaxdiag.check_grad(f"{SAMPLES / 'jxg025_bad.py'}:frozen", "f32[3]")
    assert "JXG025" in codes(refused_g, "warning") and "JXG017" not in codes(refused_g)
    for good in ("jxb014_good.py:checksum_p", "jxg025_good.py:frozen"):
        check = jaxdiag.check_batching if "jxb" in good else jaxdiag.check_grad
        report = check(f"{SAMPLES / good}", "f32[4]" if "jxb" in good else "f32[3]")
        no_internal_errors(report)
        assert not problems(report), problems(report)
    unpacked = jaxdiag.check_grad(f"{SAMPLES / 'jxg017_bad.py'}:scaled_tanh", "f32[3]")
    assert "JXG017" in codes(unpacked, "error") and "JXG025" not in codes(unpacked)


def test_a_transpose_rule_that_raises_on_purpose_is_a_refusal_and_an_accident_stays_an_error():
    """A primitive's transpose rule graded as its JVP and fwd/bwd rules are: a `raise` in the rule's own body
    ("cannot be reverse-mode differentiated") is JXG025, a failed reshape inside it stays JXG017."""
    path = DATA / "verdicts" / "transpose_refusal.py"
    sealed = jaxdiag.check_grad(f"{path}:sealed_p", "f32[3]")
    assert "JXG025" in codes(sealed, "warning") and "JXG017" not in codes(sealed), sealed.findings
    cracked = jaxdiag.check_grad(f"{path}:cracked_p", "f32[3]")
    assert "JXG017" in codes(cracked, "error") and "JXG025" not in codes(cracked), cracked.findings
    for report in (sealed, cracked):
        no_internal_errors(report)


@pytest.mark.slow
def test_a_helper_that_refuses_with_not_implemented_is_deliberate_and_other_helper_errors_stay_errors():
    """A `raise NotImplementedError(...)` in a helper of the user's code that the rule calls is the same deliberate
    refusal as a `raise` in the rule's own body (a batched grid refused while the data batches: the JXN020 note,
    the rule's contract); a ValueError a helper raises on what the rule forgot to handle stays JXB006."""
    path = DATA / "verdicts" / "helper_refusal.py"
    # NotImplementedError; a ValueError whose text refuses; one asking for an issue about the case
    for name in ("refusing_p", "pinning_p", "requesting_p"):
        refused = jaxdiag.check_batching(f"{path}:{name}", "f32[4]", "f32[3]")
        no_internal_errors(refused)
        assert "JXN020" in codes(refused, "info") and not {"JXB006", "JXB014"} & codes(refused), name
        assert not [f for f in refused.findings if f.severity != "info"], name
    misplaced = jaxdiag.check_batching(f"{path}:misplaced_p", "f32[4]", "f32[3]")  # the accepted dims still checked
    assert "JXN020" in codes(misplaced, "info") and codes(misplaced, "error"), misplaced.findings
    for name in ("accidental_p", "buggy_p"):  # an unhandled case; "this is a bug, please open an issue"
        accident = jaxdiag.check_batching(f"{path}:{name}", "f32[4]", "f32[3]")
        no_internal_errors(accident)
        assert "JXB006" in codes(accident, "error") and "JXB014" not in codes(accident), name


def test_an_error_only_under_x64_is_an_x64_only_warning_and_its_fix_is_clean():
    """bwd's hard-coded float32: with f64 inputs (x64 on) jax.grad returns float32; with f32 inputs nothing is
    wrong. The report says so and grades it as the x64-only warning (JXG026) carrying JXG004's evidence."""
    bad, good = load("jxg026_bad.py"), load("jxg026_good.py")
    with _compat.x64_scope(True):
        x = jnp.array([0.5, -1.0, 2.0], jnp.float64)
        assert jax.grad(lambda v: bad.softplus(v).sum())(x).dtype == jnp.float32  # plain JAX: precision lost
        assert jax.grad(lambda v: good.softplus(v).sum())(x).dtype == jnp.float64
    x32 = jnp.array([0.5, -1.0, 2.0], jnp.float32)
    assert jax.grad(lambda v: bad.softplus(v).sum())(x32).dtype == jnp.float32  # 32-bit: nothing to see
    report = jaxdiag.check_grad(f"{SAMPLES / 'jxg026_bad.py'}:softplus", "f64[3]")
    warned = [f for f in report.findings if f.code == "JXG026"]
    assert warned and warned[0].severity == "warning" and "JXG004" in warned[0].message
    assert "only when jax_enable_x64 is on" in warned[0].message and not codes(report, "error")
    assert not problems(jaxdiag.check_grad(f"{SAMPLES / 'jxg026_good.py'}:softplus", "f64[3]"))
    still = jaxdiag.check_grad(f"{SAMPLES / 'jxg017_bad.py'}:scaled_tanh", "f64[3]")  # wrong at any width
    assert "JXG017" in codes(still, "error") and "JXG026" not in codes(still)


# ---------------------------------------------------------------------------------------------------------------
# 9. Index inputs at and beyond their valid range
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_index_rule_wrong_only_out_of_range_is_caught_and_its_fix_is_clean():
    """The bad rule agrees with the loop for every in-range index (what random small integers give) and differs
    for an index >= len(x), where dynamic_index_in_dim clamps and the rule's gather fills 0."""
    bad, good = load("jxb016_bad.py"), load("jxb016_good.py")
    x = jnp.asarray(np.random.default_rng(0).standard_normal((4, 8)), jnp.float32)
    inside, outside = jnp.array([0, 3, -1, 7], jnp.int32), jnp.array([8, 9, -9, 100], jnp.int32)
    for module, agrees_outside in ((bad, False), (good, True)):
        loop = [jnp.stack([module.pick_p.bind(x[b], i[b]) for b in range(4)]) for i in (inside, outside)]
        batched = [jax.vmap(module.pick_p.bind)(x, i) for i in (inside, outside)]
        np.testing.assert_allclose(batched[0], loop[0])  # plain JAX: in range, both agree
        assert np.allclose(batched[1], loop[1]) == agrees_outside  # plain JAX: out of range, only the fix agrees
    report = jaxdiag.check_batching(f"{SAMPLES / 'jxb016_bad.py'}:pick_p", "f32[8]", "i32[]")
    assert "JXB016" in codes(report, "warning") and "JXB005" not in codes(report)  # only out-of-range values
    clean = jaxdiag.check_batching(f"{SAMPLES / 'jxb016_good.py'}:pick_p", "f32[8]", "i32[]")
    no_internal_errors(clean)
    assert not problems(clean), problems(clean)


# ---------------------------------------------------------------------------------------------------------------
# 4. A primitive the user's code binds only under tracing is not called eagerly
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_primitive_bound_only_under_jit_is_not_called_eagerly():
    """The impl refuses to run eagerly; the good module binds the primitive only inside jax.jit (plain JAX: works),
    the bad one eagerly (plain JAX: raises). Only the bad one is reported."""
    good, bad = load("jit_only_good.py"), load("jit_only_bad.py")
    x = jnp.array([1.0, -2.0, 0.5, 3.0])
    np.testing.assert_allclose(good.normalize(x), 2 * x / jnp.linalg.norm(x), rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(good.normalize)(jnp.stack([x, 2 * x])),
                               jnp.stack([2 * x / jnp.linalg.norm(x)] * 2), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="only under jax.jit"):
        bad.normalize(x)
    for target in ("fused_scale_p", "normalize"):
        report = jaxdiag.check_batching(f"{SAMPLES / 'jit_only_good.py'}:{target}", "f32[4]")
        no_internal_errors(report)
        assert not problems(report), (target, problems(report))
        assert any(c.status == "passed" for t in report.targets for c in t.checks if c.name == "batching-vs-loop")
        flagged = jaxdiag.check_batching(f"{SAMPLES / 'jit_only_bad.py'}:{target}", "f32[4]")
        assert "JXR011" in codes(flagged, "error")


# ---------------------------------------------------------------------------------------------------------------
# Pytree outputs compared as JAX compares them: None is an empty subtree, integer outputs take float0 tangents
# ---------------------------------------------------------------------------------------------------------------

DATA = ROOT / "tests" / "data"


def _load_data(name: str):
    path = DATA / name
    spec = importlib.util.spec_from_file_location(f"verdict_data_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("target", ["use_record_zeros", "use_solve_with_steps"])
def test_jvp_output_with_none_and_integer_leaves_is_clean(target):
    """equinox's `_record_symbolic_zeros` ((x, None) in, the tangents back out) and optimistix's `_implicit_impl`
    (an integer step count and a None in the residual, float0 tangent): plain JAX differentiates both."""
    module = _load_data("jvp_tree_leaves.py")
    x = jnp.array([0.5, -1.0, 2.0])
    fun = getattr(module, target)
    np.testing.assert_allclose(jax.jit(jax.grad(lambda v: jnp.sum(fun(v))))(x), [2.0, 2.0, 2.0])  # plain JAX
    report = jaxdiag.check_grad(f"{DATA / 'jvp_tree_leaves.py'}:{target}", "f32[3]")
    no_internal_errors(report)
    assert len(report.targets) == 2  # the function and its nested custom_jvp, both checked
    assert not problems(report), problems(report)


def test_none_tangent_for_an_array_output_is_still_jxg007():
    module = _load_data("jvp_tree_leaves.py")
    x = jnp.array([0.5, -1.0, 2.0])
    with pytest.raises(TypeError, match="equal container"):
        jax.jvp(module.none_tangent, (x,), (x,))  # plain JAX rejects it
    report = jaxdiag.check_grad(f"{DATA / 'jvp_tree_leaves.py'}:none_tangent", "f32[3]")
    assert "JXG007" in codes(report, "error")


@pytest.mark.slow
def test_impl_written_with_jax_numpy_updates_gets_jax_arrays():
    """equinox's `maybe_set_p`: the impl uses `buffer.at[i].set(v)`. Binding jax Arrays (what callers bind) works
    in plain JAX; NumPy buffers would reach the impl unchanged and fail, so jaxdiag must never bind those."""
    module = _load_data("jnp_impl.py")
    np.testing.assert_allclose(module.set_at(jnp.zeros(3), jnp.float32(5), jnp.int32(1)), [0, 5, 0])  # plain JAX
    with pytest.raises(AttributeError, match="at"):
        module.set_at(np.zeros(3, np.float32), np.float32(5), np.int32(1))  # what a NumPy example would do
    report = jaxdiag.check_batching(f"{DATA / 'jnp_impl.py'}:set_at_p", "f32[3]", "f32[]", "i32[]")
    no_internal_errors(report)
    assert not problems(report), problems(report)
    assert any(c.status == "passed" for t in report.targets for c in t.checks if c.name == "batching-vs-loop")


@pytest.mark.slow
def test_float8_output_gets_a_float8_cotangent_under_jit_grad():
    """flax's `fp8_ops.in_q`: float8 is floating to JAX, so `jax.jit(jax.grad(...))` through a float8 output
    works in plain JAX; feeding it a float0 cotangent (as for an integer output) made JXG016/JXG017 false alarms.
    The bwd's deliberate choices (no gradient for x, scale passed through) stay reported as such."""
    module = _load_data("fp8_output.py")
    x, scale = jnp.array([0.5, -1.5, 2.0]), jnp.array(1.0)
    loss = lambda v: module.quantize_e4m3(v, scale)[0].astype(jnp.float32).sum()  # noqa: E731
    np.testing.assert_allclose(jax.jit(jax.grad(loss))(x), [0.0, 0.0, 0.0])  # plain JAX: works
    report = jaxdiag.check_grad(f"{DATA / 'fp8_output.py'}:quantize_e4m3", "f32[3]", "f32[]")
    no_internal_errors(report)
    assert not {"JXG016", "JXG017"} & codes(report), problems(report)
    nested = [t for t in report.targets if t.target.endswith("> quantize")]
    assert nested and any(c.status == "passed" for c in nested[0].checks if "composition" in c.name), \
        [(c.name, c.status) for c in nested[0].checks]


@pytest.mark.slow
def test_rule_whose_primal_fails_on_the_example_is_not_a_symbolic_zero_finding():
    """equinox's `error_if`: the primal raises (from a callback) whenever its predicate holds. Plain JAX
    differentiates the function that guards `a > 10` without raising; a random predicate makes the primal itself
    fail, which is no evidence about symbolic zeros (JXG006 used to be reported)."""
    module = _load_data("raising_guard.py")
    x = jnp.array([0.5, -1.5, 2.0])
    _, tangent = jax.jvp(module.checked, (x, x), (jnp.zeros(3), jnp.ones(3)))  # plain JAX: zero tangent on `a`
    np.testing.assert_allclose(tangent, x)
    report = jaxdiag.check_grad(f"{DATA / 'raising_guard.py'}:guarded", "f32[3]", "f32[3]", "bool[3]")
    assert "JXG006" not in codes(report), problems(report)
    skipped = [c.detail for t in report.targets for c in t.checks if c.name == "jvp-symbolic-zeros"]
    assert skipped and all("fails on the example inputs" in (d or "") for d in skipped), skipped
    function_report = jaxdiag.check_grad(f"{DATA / 'raising_guard.py'}:checked", "f32[3]", "f32[3]")
    no_internal_errors(function_report)
    assert not problems(function_report), problems(function_report)


def test_multiple_results_primitive_whose_impl_returns_a_tuple_is_clean():
    """equinox's `announce_jaxpr_p`: the impl returns a tuple, so the eager bind does; under jax.grad the bind
    returns a list and the cotangent must be a list too. Plain JAX differentiates it (also under jit)."""
    module = _load_data("tuple_impl.py")
    x = jnp.array([0.5, -1.5, 2.0])
    assert isinstance(module.tagged_p.bind(x), tuple)
    np.testing.assert_allclose(jax.jit(jax.grad(lambda v: module.tagged_p.bind(v)[0].sum()))(x), [1.0, 1.0, 1.0])
    report = jaxdiag.check_grad(f"{DATA / 'tuple_impl.py'}:tagged_p", "f32[3]")
    no_internal_errors(report)
    assert not problems(report), problems(report)
    assert any(c.status == "passed" for t in report.targets for c in t.checks if c.name == "primitive-transpose")


def _perturbation_cases():
    """(function, example, the custom rule it calls): stop-gradiented, integer-derived, floored, jitted, branched
    and looped operands of a custom_vjp / custom_jvp."""
    module = _load_path(DATA / "verdicts" / "unperturbed_in_loop.py")
    scaled = module.scaled

    @jax.custom_jvp
    def mul(x, y):
        return x * y

    mul.defjvp(lambda p, t: (mul(*p), t[0] * p[1] + t[1] * p[0]))
    x, step = jnp.array([0.5, -1.0, 2.0]), jnp.array([1, 2, 3], jnp.int32)
    return [
        (module.loss, (x, step), scaled),
        (module.loss_bad, (x, x), scaled),
        (lambda a, b: mul(a, jax.lax.stop_gradient(b)).sum(), (x, x), mul),
        (lambda a, b: mul(jnp.floor(a), b).sum(), (x, x), mul),
        (lambda a, n: jax.jit(mul)(a, n.astype(jnp.float32)).sum(), (x, step), mul),
        (lambda a, b: jax.lax.cond(a[0] > 0, lambda: mul(a, 2.0 * b), lambda: mul(b, b)).sum(), (x, x), mul),
    ]


def _load_path(path: Path):
    spec = importlib.util.spec_from_file_location(f"verdict_data_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_program_reads_the_perturbation_of_a_nested_rule_as_running_the_function_does():
    """Which operands of a nested custom rule JAX perturbs is read from the traced program for a function that
    loops (one trace, where running it op by op costs every iteration): both readers agree on every case."""
    from jaxdiag._checks._base import Subject
    from jaxdiag._checks._call_site import read_by_running, read_from_program
    from jaxdiag._loading._inputs import ArgSpec

    unperturbed_seen = set()
    for fn, example, rule in _perturbation_cases():
        arrays = [jnp.asarray(a) for a in example]
        root = Subject("root", "function", fn, [ArgSpec(a.dtype, a.shape) for a in arrays])
        kind = "custom_vjp" if _compat.is_custom_vjp(rule) else "custom_jvp"
        nested = Subject("nested", kind, rule, [ArgSpec(np.dtype("float32"), (3,))] * 2)
        running = read_by_running(root, [nested], arrays)
        program = read_from_program(jax.make_jaxpr(fn)(*arrays), [nested], [bool(jnp.issubdtype(
            a.dtype, jnp.inexact)) for a in arrays])
        assert running == program, (fn, running, program)
        unperturbed_seen |= set(program.get(id(nested), ()))
    assert unperturbed_seen == {0, 1}  # the cases leave each operand unperturbed somewhere: not vacuous


def test_a_primal_that_fails_on_its_inputs_verifies_nothing(tmp_path):
    """A custom_jvp whose primal raises on the inputs given: every derivative check is skipped, none passes. The JVP
    reference check compared nothing (the rule raised too) and passed, so the target counted as verified."""
    module = tmp_path / "refusing_primal.py"
    module.write_text(
        "import jax\n\n\n"
        "@jax.custom_jvp\n"
        "def f(x):\n"
        "    raise ValueError('not these inputs')\n\n\n"
        "@f.defjvp\n"
        "def f_jvp(primals, tangents):\n"
        "    raise ValueError('not these inputs')\n")
    report = jaxdiag.check_grad(f"{module}:f", "f32[3]")
    assert not report.ok
    ran = {c.name: c.status for t in report.targets for c in t.checks}
    assert ran.get("jvp-reference") == "skipped", ran
    assert not [name for name, status in ran.items() if status == "passed" and name.startswith("jvp-")], ran


def _bare_refusal(scale):
    if scale != 1.0:
        raise NotImplementedError


def _raised_again(scale):
    try:
        return 1.0 / (scale - scale)
    except ZeroDivisionError as err:
        raise err


def test_a_bare_raise_of_an_exception_class_is_deliberate_and_raising_a_caught_error_again_is_not():
    """`raise NotImplementedError` with no arguments (a reference backward pass supporting the default scale only,
    documented under "Raises:") refuses as `raise NotImplementedError(...)` does; `raise err` of a caught error is an
    accident passed on. Before, the bare form was JXG017, a crashed rule."""
    from jaxdiag._checks._shared import raises_on_purpose

    for fn, deliberate in ((_bare_refusal, True), (_raised_again, False)):
        with pytest.raises(Exception) as caught:
            fn(0.5)
        assert raises_on_purpose(caught.value, fn) is deliberate, fn.__name__


@pytest.mark.slow  # two custom_vjps with loops checked (about 4 s)
def test_an_argument_one_output_does_not_depend_on_does_not_make_a_wrong_gradient_look_deliberate():
    """A recurrence's final state does not depend on its queries: with a cotangent on that state, autodiff gives
    the queries a zero gradient and so does bwd. That is no gradient transformation the queries control (they move
    the outputs), so the keys' time-reversed cotangent is JXG024, not a "may be intended" JXG014."""
    path = DATA / "acc" / "recurrence_state.py"
    flipped = jaxdiag.check_grad(f"{path}:recurrence_flipped")
    assert "JXG024" in codes(flipped, "warning") and "JXG014" not in codes(flipped), flipped.findings
    right = jaxdiag.check_grad(f"{path}:recurrence")
    no_internal_errors(right)
    assert not problems(right), problems(right)
