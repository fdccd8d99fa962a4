"""Verdicts graded by the evidence a rule's real use gives: nested rules driven with the tangents their function
hands them, second-derivative failures confirmed against a reference, deliberate semantics recognised.

Each defect and each correct case is first confirmed with plain JAX in the test itself."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdiag
from jaxdiag import _compat

DATA = Path(__file__).resolve().parent / "data" / "verdicts"


def load(name: str):
    path = DATA / name
    spec = importlib.util.spec_from_file_location(f"verdicts_data_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def codes(report: jaxdiag.Report, severity: str | None = None) -> set[str]:
    return {f.code for f in report.findings if severity is None or f.severity == severity}


def no_internal_errors(report: jaxdiag.Report) -> None:
    errors = [(c.name, c.detail) for t in report.targets for c in t.checks if c.status == "error"]
    assert not errors, errors


# ---------------------------------------------------------------------------------------------------------------
# Nested rules get the tangents their function gives them
# ---------------------------------------------------------------------------------------------------------------


def _fd(f, x, v, eps=1e-4):
    x64, v64 = np.asarray(x, np.complex128 if np.iscomplexobj(x) else np.float64), np.asarray(v)
    return (np.asarray(f(x64 + eps * v64)) - np.asarray(f(x64 - eps * v64))) / (2 * eps)


@pytest.mark.slow
def test_plain_jax_cholesky_rule_is_right_on_hermitian_tangents_only():
    mod = load("nested_hermitian.py")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 3))
    a = x @ x.T + 3 * np.eye(3)
    t = rng.standard_normal((3, 3))
    with _compat.x64_scope(True):
        rule = lambda v: np.asarray(mod._cholesky_tangent(jnp.asarray(a), jnp.asarray(v), 0.5)[1])  # noqa: E731
        impl = lambda m: jnp.linalg.cholesky(jnp.asarray(m))  # noqa: E731
        sym = (t + t.T) / 2
        np.testing.assert_allclose(rule(sym), _fd(impl, a, sym), atol=1e-6)
        assert np.max(np.abs(rule(t) - _fd(impl, a, t))) > 1e-2  # a non-symmetric tangent: not a derivative
        wrong = np.asarray(mod._cholesky_tangent(jnp.asarray(a), jnp.asarray(sym), 0.0)[1])
        assert np.max(np.abs(wrong - _fd(impl, a, sym))) > 1e-2
        # what the Gram-matrix function hands the primitive: d(x x^T) = dx x^T + x dx^T, symmetric
        _, gram_dot = jax.jvp(lambda y: y @ y.T, (jnp.asarray(x),), (jnp.asarray(t),))
        np.testing.assert_allclose(gram_dot, np.asarray(gram_dot).T)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["f32[3,3]", "c64[3,3]"])
def test_nested_cholesky_gets_the_hermitian_tangents_of_its_gram_matrix(spec):
    good = jaxdiag.check_grad(f"{DATA / 'nested_hermitian.py'}:gram_cholesky", spec)
    no_internal_errors(good)
    assert not codes(good, "error") and not codes(good, "warning"), [f.message for f in good.findings]
    bad = jaxdiag.check_grad(f"{DATA / 'nested_hermitian.py'}:gram_cholesky_wrong", spec)
    assert "JXG001" in codes(bad, "error")


def test_plain_jax_padded_and_tied_rules_are_right_for_their_callers():
    mod = load("nested_hermitian.py")
    x = jnp.asarray([0.3, -1.2, 0.7])
    v = jnp.asarray([1.0, 2.0, -0.5])
    np.testing.assert_allclose(jax.jvp(mod.padded_norm, (x,), (v,))[1],
                               jax.jvp(lambda y: jnp.sum(y * y + y), (x,), (v,))[1], rtol=1e-5)
    np.testing.assert_allclose(jax.jvp(mod.square_tied, (x,), (v,))[1],
                               jax.jvp(lambda y: jnp.sin(y) ** 2, (x,), (v,))[1], rtol=1e-5)
    # the same rules on tangents no caller gives: a non-zero padding, untied tangents
    padded = jnp.concatenate([x, jnp.zeros(5)])
    t = jnp.ones(8)
    assert abs(float(jax.jvp(mod.padded_norm_p.bind, (padded,), (t,))[1]) - float(jnp.sum(2 * padded + 1))) > 1
    y = jnp.sin(x)
    tied = jax.jvp(mod.square_tied_p.bind, (y, y), (v, -v))[1]
    assert np.max(np.abs(np.asarray(tied))) > 0.1  # the true derivative y * v + y * (-v) is 0


@pytest.mark.parametrize("target", ["padded_norm", "square_tied"])
def test_zero_padded_and_tied_tangents_are_kept(target):
    report = jaxdiag.check_grad(f"{DATA / 'nested_hermitian.py'}:{target}", "f32[3]")
    no_internal_errors(report)
    assert not codes(report, "error") and not codes(report, "warning"), [f.message for f in report.findings]


# ---------------------------------------------------------------------------------------------------------------
# Second-derivative failures are confirmed before they are reported
# ---------------------------------------------------------------------------------------------------------------


def _modes(f, x, w, u, v):
    """<u, H v> by forward over reverse and <H^T u, v> by reverse over reverse, H the Jacobian of x -> J(x)^T w."""
    def grad_fn(y):
        return jax.vjp(f, y)[1](w)[0]

    hv = jax.jvp(grad_fn, (x,), (v,))[1]
    htu = jax.vjp(grad_fn, x)[1](u)[0]
    return float(jnp.sum(u * hv)), float(jnp.sum(htu * v))


def _sharp_inputs(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(3).astype(np.float32)


@pytest.mark.slow
def test_plain_jax_sharp_logsumexp_is_right_in_every_mode_and_cube_is_not():
    mod = load("second_order.py")
    rng = np.random.default_rng(1)
    w, u, v = 0.7, rng.standard_normal(3), rng.standard_normal(3)
    with _compat.x64_scope(True):
        for seed in (0, 2, 5):
            x = jnp.asarray(_sharp_inputs(seed), jnp.float64)
            dense = np.asarray(jax.hessian(mod.sharp_logsumexp.fun)(x))  # the undecorated function's Hessian
            for mode in (jax.jacfwd, jax.jacrev):
                np.testing.assert_allclose(mode(jax.grad(mod.sharp_logsumexp))(x), dense, atol=1e-9)
        x = jnp.asarray([0.4, -1.1, 0.8])
        fwd, rev = _modes(mod.cube, x, jnp.ones(3), jnp.asarray(u), jnp.asarray(v))
        exact = float(np.sum(u * 6 * np.asarray(x) * v))  # the Hessian of sum(x^3) is diag(6 x)
        assert abs(fwd - exact) < 1e-9 and abs(rev - exact) > 0.1 * abs(exact)
    # in float32 the two modes of the correct rule differ by far more than 2e-3 of the terms summed
    x32 = jnp.asarray(_sharp_inputs(2))
    fwd, rev = _modes(mod.sharp_logsumexp, x32, jnp.float32(w), jnp.asarray(u, jnp.float32),
                      jnp.asarray(v, jnp.float32))
    assert abs(fwd - rev) > 2e-3 * max(abs(fwd), abs(rev))


@pytest.mark.slow
def test_second_order_disagreement_within_rounding_is_not_reported():
    for seed in (0, 2, 5):
        report = jaxdiag.check_grad(f"{DATA / 'second_order.py'}:sharp_logsumexp", _sharp_inputs(seed), order=2)
        no_internal_errors(report)
        assert "JXG023" not in codes(report), [f.message for f in report.findings]


def test_second_order_disagreement_confirmed_by_the_references_is_reported():
    report = jaxdiag.check_grad(f"{DATA / 'second_order.py'}:cube", "f32[3]", order=2)
    [finding] = [f for f in report.findings if f.code == "JXG023"]
    assert finding.severity == "error" and "finite differences of the gradient gives" in finding.message
    assert finding.location is not None and finding.location.function == "_cube_bwd"


# ---------------------------------------------------------------------------------------------------------------
# Deliberate semantics: warnings that state the other reading, and the `intended` marker
# ---------------------------------------------------------------------------------------------------------------

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def _load_sample(name: str):
    path = SAMPLES / name
    spec = importlib.util.spec_from_file_location(f"verdicts_sample_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_plain_jax_flat_primals_and_ignored_arguments():
    mod = _load_sample("jxg033_bad.py")
    x, key = jnp.array([0.3, -1.2, 0.5, 2.0]), jax.random.key(0)
    assert not np.any(jax.grad(lambda v: mod.bernoulli_mean.fun(v, key).sum())(x))
    assert np.all(np.isfinite(jax.grad(lambda v: mod.bernoulli_mean(v, key).sum())(x)))
    assert np.any(jax.grad(lambda v: mod.bernoulli_mean(v, key).sum())(x))
    data = load("deliberate.py")
    y = jnp.array([0.4, -0.3, 1.1])
    assert not np.any(jax.grad(lambda v: data.hard_step.fun(v).sum())(y))
    assert np.any(jax.grad(lambda v: data.hard_step(v).sum())(y))
    logits = jnp.array([0.5, -1.0, 2.0])
    loss = lambda f, t: f(logits, t)[0]  # noqa: E731
    assert float(jax.grad(lambda t: loss(data.tempered_softmax, t))(0.7)) == 0.0
    assert abs(float(jax.grad(lambda t: loss(data.tempered_softmax.fun, t))(0.7))) > 0.1
    bad = _load_sample("jxg034_bad.py")
    x3 = jnp.array([0.9, -0.2, -1.5])
    assert float(jax.grad(lambda v: jnp.abs(bad.soft_threshold(x3, v)).sum())(0.3)) == 0.0
    assert float(jax.grad(lambda v: jnp.abs(bad.soft_threshold.fun(x3, v)).sum())(0.3)) == pytest.approx(-2.0)


@pytest.mark.parametrize("target,args,code", [
    (f"{SAMPLES / 'jxg033_bad.py'}:bernoulli_mean", ("f32[4]", "key[]"), "JXG033"),
    (f"{DATA / 'deliberate.py'}:hard_step", ("f32[5]",), "JXG033"),
    (f"{DATA / 'deliberate.py'}:tempered_softmax", ("f32[4]", "f32[]@0.5..2"), "JXG034"),
    (f"{DATA / 'deliberate.py'}:resample_p", ("f32[4]", "f32[4]"), "JXG034"),  # a primitive's JVP rule: was JXG001
])
def test_deliberate_semantics_are_warnings_that_name_the_other_reading(target, args, code):
    report = jaxdiag.check_grad(target, *args)
    no_internal_errors(report)
    found = [f for f in report.findings if f.severity in ("error", "warning")]
    assert [f.code for f in found] == [code], [(f.code, f.message[:160]) for f in found]
    assert found[0].severity == "warning" and f"# jaxdiag: intended[{code}]" in found[0].fix
    assert ("estimator" in found[0].message) if code == "JXG033" else ("hyperparameter" in found[0].message)


def test_second_derivatives_hold_the_argument_a_jvp_rule_treats_as_a_constant():
    """The transpose binds the primitive again, whose JVP ignores `points`: the gradient's derivative along a step
    in both arguments lost the `points` term, a JXG019 "with respect to values" restating JXG034. With `points`
    held, second derivatives are checked on `values` alone and agree."""
    report = jaxdiag.check_grad(f"{DATA / 'deliberate.py'}:resample_p", "f32[4]", "f32[4]", order=2)
    assert [f.code for f in report.findings if f.severity != "info"] == ["JXG034"]
    assert [c.status for c in report.targets[0].checks if c.name == "grad-second-order"] == ["passed"]


def test_a_constant_factor_on_the_interior_stays_an_error(tmp_path):
    """`2 x^2` where `3 x^2` is right: consistent and finite, yet a wrong derivative (JXG024), not an estimator."""
    path = tmp_path / "cube_factor.py"
    path.write_text(
        "import jax\n\n\n@jax.custom_vjp\ndef cube(x):\n    return x ** 3\n\n\n"
        "def cube_fwd(x):\n    return x ** 3, x\n\n\n"
        "def cube_bwd(x, g):  # jaxdiag: intended[JXG033]\n    return (2 * x ** 2 * g,)\n\n\n"
        "cube.defvjp(cube_fwd, cube_bwd)\n", encoding="utf-8")
    report = jaxdiag.check_grad(f"{path}:cube", "f32[4]")
    assert "JXG024" in codes(report, "error") and "JXG033" not in codes(report)  # the marker names JXG033 only


def test_the_intended_marker_silences_exactly_its_finding_and_refuses_errors(tmp_path):
    from clirun import Runner

    from jaxdiag._parent._cli import app

    source = (SAMPLES / "jxg033_bad.py").read_text(encoding="utf-8")
    marked = tmp_path / "marked.py"
    marked.write_text(source.replace("# jaxdiag-expect: JXG033", "# jaxdiag: intended[JXG033]"), encoding="utf-8")
    assert not jaxdiag.check_grad(f"{marked}:bernoulli_mean", "f32[4]", "key[]").findings
    ignored = tmp_path / "other_code.py"
    ignored.write_text(source.replace("# jaxdiag-expect: JXG033", "# jaxdiag: intended[JXG034]"), encoding="utf-8")
    assert "JXG033" in jaxdiag.check_grad(f"{ignored}:bernoulli_mean", "f32[4]", "key[]").codes()
    for code in ("JXG024", "JXG033 JXG024"):
        refused = tmp_path / "refused.py"
        listed = ", ".join(code.split())
        refused.write_text(source.replace("# jaxdiag-expect: JXG033", f"# jaxdiag: intended[{listed}]"),
                           encoding="utf-8")
        result = Runner().invoke(app, ["grad", f"{refused}:bernoulli_mean", "--arg", "f32[4]", "--arg", "key[]"])
        assert result.exit_code == 2 and "JXG024 is an error" in result.output, result.output


def test_plain_jax_batch_aggregates_and_a_first_example_rule():
    mod = load("batch_aggregate.py")
    xs = jnp.asarray(np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32))
    loop = lambda f: np.stack([np.asarray(f(x)) for x in xs])  # noqa: E731
    np.testing.assert_allclose(jax.vmap(mod.batch_max)(xs), np.full(5, np.max(loop(mod.batch_max))), rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(mod.batch_mean)(xs), np.full(5, np.mean(loop(mod.batch_mean))), rtol=1e-5)
    np.testing.assert_allclose(jax.vmap(mod.first_only)(xs), np.full(5, loop(mod.first_only)[0]), rtol=1e-6)
    assert np.ptp(loop(mod.batch_max)) > 0.1 and np.ptp(loop(mod.first_only)) > 0.1


@pytest.mark.parametrize("target,code,severity", [("batch_max", "JXG035", "warning"),
                                                  ("batch_mean", "JXG035", "warning"),
                                                  ("first_only", "JXV002", "error")])
def test_custom_vmap_batch_aggregate_is_a_warning_and_one_example_for_all_an_error(target, code, severity):
    report = jaxdiag.check_batching(f"{DATA / 'batch_aggregate.py'}:{target}", "f32[4]")
    no_internal_errors(report)
    found = [(f.code, f.severity) for f in report.findings if f.severity in ("error", "warning")]
    assert found == [(code, severity)], [(f.code, f.message[:160]) for f in report.findings]
    if code == "JXG035":
        [finding] = report.findings
        assert "# jaxdiag: intended[JXG035]" in finding.fix and finding.location.function == f"{target}_rule"


def test_the_intended_marker_silences_a_batch_aggregate(tmp_path):
    source = (DATA / "batch_aggregate.py").read_text(encoding="utf-8")
    marked = tmp_path / "marked_aggregate.py"
    marked.write_text(source.replace("def batch_max_rule(axis_size, in_batched, x):",
                                     "def batch_max_rule(axis_size, in_batched, x):  # jaxdiag: intended[JXG035]"),
                      encoding="utf-8")
    assert not jaxdiag.check_batching(f"{marked}:batch_max", "f32[4]").findings


def test_plain_jax_batching_rules_returning_one_batch_wide_value():
    mod = load("batching_rule_aggregate.py")
    xs = np.random.default_rng(5).standard_normal((5, 3)).astype(np.float32)
    loop = lambda prim, v: np.stack([np.asarray(prim.bind(x)) for x in v])  # noqa: E731
    np.testing.assert_array_equal(jax.vmap(mod.peak_p.bind)(xs), np.full(5, np.max(xs)))
    np.testing.assert_array_equal(jax.vmap(mod.first_peak_p.bind)(xs), np.full(5, np.max(xs[0])))
    signs = xs[:, 0]
    assert np.asarray(jax.vmap(mod.any_positive_p.bind)(signs)).all() and not loop(mod.any_positive_p, signs).all()
    assert jax.vmap(mod.whole_p.bind)(xs).shape == (5, 5, 3)  # every example sees the whole batch
    assert np.ptp(loop(mod.peak_p, xs)) > 0.1


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)])
def test_a_batching_rule_returning_an_aggregate_of_the_batch_is_jxb024_and_one_example_for_all_jxb010(seed):
    """The reading does not depend on the draws: a scalar maximum that is example 0's own value is told apart from
    example 0's result by running the rule again with the examples permuted."""
    report = jaxdiag.check_module(str(DATA / "batching_rule_aggregate.py"), seed=seed)
    no_internal_errors(report)
    found = {t.target.split(":")[1]: [(f.code, f.location.function) for f in t.findings if f.code.startswith("JXB")]
             for t in report.targets}
    assert found == {"peak_p": [("JXB024", "_peak_rule")], "first_peak_p": [("JXB010", "_first_peak_rule")],
                     "any_positive_p": [("JXB024", "_any_positive_rule")],
                     "any_flag_p": [("JXB024", "_any_flag_rule")], "all_flags_p": [("JXB024", "_all_flags_rule")],
                     "whole_p": [("JXB024", "_whole_rule")]}, found  # whole: no JXB009 for the batch axis
    # no inputs declared for any_flag_p: its impl's `jnp.any(flags)` makes the operand booleans, drawn so that
    # examples differ in how many flags are set (a float draw is never zero: `any` would be true for every example)
    assert [t.inputs for t in report.targets if t.target.endswith(":any_flag_p")] == [["bool[3]"]]
    texts = {t.target.split(":")[1]: f.message for t in report.targets for f in t.findings if f.code == "JXB024"}
    assert "the maximum over the batch" in texts["peak_p"] and "logical OR" in texts["any_positive_p"]
    assert "stacked" in texts["whole_p"] and "logical AND" in texts["all_flags_p"]


def test_the_intended_marker_silences_a_batching_rule_aggregate_only(tmp_path):
    source = (DATA / "batching_rule_aggregate.py").read_text(encoding="utf-8")
    marked = tmp_path / "marked_rule_aggregate.py"
    marked.write_text(source.replace("def _peak_rule(args, dims):", "def _peak_rule(args, dims):  # jaxdiag: "
                                     "intended[JXB024]"), encoding="utf-8")
    assert "JXB024" not in jaxdiag.check_batching(f"{marked}:peak_p", "f32[3]").codes()
    assert "JXB010" in jaxdiag.check_batching(f"{marked}:first_peak_p", "f32[3]").codes()


# ---------------------------------------------------------------------------------------------------------------
# A decision taken on a rounding-level number is no derivative defect
# ---------------------------------------------------------------------------------------------------------------


def test_plain_jax_guarded_solve_derivative_is_right_and_its_compositions_agree_in_float64():
    """In float64 the guard always accepts: jit(grad) and vmap(grad) equal the eager gradient, which equals the
    gradient of the same function through a plain solve (the custom_linear_solve rule is right)."""
    module = load("precision_fallback.py")
    rng = np.random.default_rng(0)
    with _compat.x64_scope(True):
        def plain(diag, rhs):
            matrix = jnp.diag(diag) + 0.1 * jnp.ones((3, 3), diag.dtype)
            return jnp.linalg.solve(matrix, rhs)

        def loss(d, r):
            return jnp.sum(module.guarded_solve(d, r)[0] ** 2)

        # traced once each, run on three draws (a lambda made per draw would compile them again every time)
        plain_grad, jit_grad, vmap_grad = (jax.jit(jax.grad(lambda d, r: jnp.sum(plain(d, r) ** 2))),
                                           jax.jit(jax.grad(loss)), jax.jit(jax.vmap(jax.grad(loss))))
        for _ in range(3):
            diag, rhs = jnp.asarray(rng.uniform(0.5, 2.0, 3)), jnp.asarray(rng.standard_normal(3))
            eager = jax.grad(loss)(diag, rhs)
            np.testing.assert_allclose(eager, plain_grad(diag, rhs), rtol=1e-8)
            np.testing.assert_allclose(jit_grad(diag, rhs), eager, rtol=1e-8)
            batched = vmap_grad(jnp.stack([diag, diag]), jnp.stack([rhs, rhs]))
            np.testing.assert_allclose(batched[1], eager, rtol=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_branch_rounding_decides_is_not_reported_as_a_composition_or_gradient_defect(seed):
    """float32 inputs: eager, jit and vmap round the residual differently and take different branches (JXG016, an
    error, before), and where float64 takes the other branch the float32 differences are rounding noise (JXG014
    before). The compositions are confirmed in float64, and a difference within the finite difference's own
    rounding error is no evidence."""
    module = load("precision_fallback.py")
    report = jaxdiag.check_grad(module.guarded_solve, "f32[3]@positive", "f32[3]", seed=seed)
    no_internal_errors(report)
    assert not codes(report, "error") and not codes(report, "warning"), [f.message for f in report.findings]


def test_a_disagreement_within_the_finite_differences_rounding_error_is_no_evidence():
    """The dot-product test against a difference whose rounding error (`noise`, absolute) exceeds the disagreement
    passes; the same disagreement against an accurate difference fails."""
    from types import SimpleNamespace

    from jaxdiag._checks._gradref._compare import _dot_check
    from jaxdiag._checks._gradref._fd import FDResult

    arg = SimpleNamespace(pos=0, dtype=np.dtype(np.float32))
    direction = np.array([1.0, 0.0, 0.0])
    ws = [np.array([0.5, -1.0, 2.0], np.float32)]
    got = {0: np.array([1e-7, 0.0, 0.0])}
    for noise, ok in ((5e-6, True), (1e-9, False)):
        fd = FDResult([np.array([-1.6e-6, 0.0, 0.0])], 1e-3, noise)
        st = SimpleNamespace(fd=SimpleNamespace(along=lambda args, d, fd=fd: fd), direction=lambda a, d: direction)
        assert _dot_check(st, ws, got, [arg], 0, arg).ok is ok


def test_plain_jax_nan_gradient_of_a_converged_residual_comes_from_norm_at_zero():
    module = load("converged_residual.py")
    b = jnp.array([1.0, -2.0, 0.5])
    x, residual = module.halve(b)
    assert float(residual) == 0.0
    np.testing.assert_allclose(jax.grad(lambda b: jnp.sum(module.halve(b)[0] * b))(b), b, rtol=1e-6)  # x = b / 2
    assert np.all(np.isnan(jax.grad(lambda b: module.halve(b)[1])(b)))
    assert np.all(np.isnan(jax.grad(jnp.linalg.norm)(jnp.zeros(3))))  # JAX's convention, no rule involved


@pytest.mark.slow
def test_a_nan_gradient_where_an_output_is_exactly_zero_and_flat_is_not_a_rule_defect():
    """Before: JXG014 ("custom derivative rules differ": <grad, v> = nan) on a correct solve."""
    module = load("converged_residual.py")
    report = jaxdiag.check_grad(module.halve, "f32[3]")
    no_internal_errors(report)
    assert not codes(report, "error") and not codes(report, "warning"), [f.message for f in report.findings]
    skipped = [c.detail for t in report.targets for c in t.checks if c.name == "function-grad"]
    assert skipped and "norm/sqrt at 0" in skipped[0], skipped
