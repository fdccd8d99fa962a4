"""Bug classes: NaN/inf where the reference is finite (JXG027, and the JXG028 note for the
reverse), symbolic zeros on the edge of the domain, uniformly scaled derivatives graded as errors, pytree custom_vjp
structures named per argument, complex inputs (conjugates, draws, --repro), float classification from JAX's dtype
categories. Each defect is first shown with plain JAX in the test itself."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import jaxdiag
from jaxdiag._checks._gradref import constant_factor, conjugated, is_inexact, nonfinite_split, uniform_ratio
from jaxdiag._checks._vmap_harness import _same
from tests.markers import expect_line

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
PROBES = ROOT / "tests" / "data" / "acc" / "boundary_probes.py"


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"acc_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def findings(report: jaxdiag.Report, code: str) -> list:
    return [f for f in report.findings if f.code == code]


def no_internal_errors(report: jaxdiag.Report) -> None:
    errors = [(c.name, c.detail) for t in report.targets for c in t.checks if c.status == "error"]
    assert not errors, errors


# ---------------------------------------------------------------------------------------------------------------
# 15. NaN/inf where the reference is finite
# ---------------------------------------------------------------------------------------------------------------


def test_nonfinite_split_counts_each_side():
    got = np.array([1.0, np.nan, np.inf, 2.0, np.nan])
    ref = np.array([1.0, 3.0, 4.0, np.nan, np.nan])
    nf = nonfinite_split(got, ref)
    assert (nf.rule_only, nf.ref_only, nf.size) == (2, 1, 5)
    assert nf.rule_index == (1,) and nf.ref_index == (3,)


@pytest.mark.slow
def test_nan_cotangent_is_an_error_and_nan_reference_a_note():
    bad, good = load(SAMPLES / "jxg027_bad.py"), load(SAMPLES / "jxg027_good.py")
    x = jnp.arange(6.0)
    assert np.isnan(np.asarray(jax.grad(lambda x: jnp.sum(bad.scale(x)))(x))).sum() == 2  # plain JAX first
    assert np.all(np.isfinite(np.asarray(jax.grad(lambda x: jnp.sum(good.scale(x)))(x))))
    report = jaxdiag.check_grad(f"{SAMPLES / 'jxg027_bad.py'}:scale", "f32[6]")
    no_internal_errors(report)
    hits = findings(report, "JXG027")
    assert hits and hits[0].severity == "error" and "2 NaN/inf of 6" in hits[0].message
    assert hits[0].location.line == expect_line("jxg027_bad.py", "JXG027")
    assert "Seen on" not in hits[0].message  # the retry on fresh draws reproduces it
    assert jaxdiag.check_grad(f"{SAMPLES / 'jxg027_good.py'}:scale", "f32[6]").ok

    ref = load(SAMPLES / "jxg028_bad.py")
    z = jnp.array([4.0, -1.0])
    assert np.isnan(jax.grad(lambda x: jnp.sum(jnp.where(x > 0, jnp.sqrt(x), 0.0)))(z)[1])
    assert np.all(np.isfinite(jax.grad(lambda x: jnp.sum(ref.relu_sqrt(x)))(z)))
    note = jaxdiag.check_grad(f"{SAMPLES / 'jxg028_bad.py'}:relu_sqrt", "f32[8]")
    assert note.ok and [f.severity for f in findings(note, "JXG028")] == ["info"]
    assert not findings(jaxdiag.check_grad(f"{SAMPLES / 'jxg028_good.py'}:relu_sqrt", "f32[8]"), "JXG028")


def test_where_trap_reverse_nan_is_found_and_the_select_named():
    """A JVP rule that guards its singular factor with jnp.where on the factor: jax.jvp is finite at x = 0, jax.grad
    is NaN there (the unselected case is inf and gets a zero cotangent). The edge probe puts x on 0; the finding
    points at the select, and the double-where fix is clean."""
    bad, good = load(SAMPLES / "where_trap_bad.py"), load(SAMPLES / "where_trap_good.py")
    x = jnp.array([0.0, 1.0, 4.0])
    assert np.all(np.isfinite(jax.jvp(bad.safe_sqrt, (x,), (jnp.ones(3),))[1]))  # plain JAX first
    assert np.isnan(jax.grad(lambda x: jnp.sum(bad.safe_sqrt(x)))(x)[0])
    assert np.all(np.isfinite(jax.grad(lambda x: jnp.sum(good.safe_sqrt(x)))(x)))
    report = jaxdiag.check_grad(f"{SAMPLES / 'where_trap_bad.py'}:safe_sqrt", "f32[6]@positive")
    no_internal_errors(report)
    (hit,) = findings(report, "JXG027")
    assert hit.location.line == expect_line("where_trap_bad.py", "JXG027")
    assert "x = 0" in hit.message and "inf" in hit.message and "jax.jvp" in hit.message
    assert "double-where" in hit.fix
    assert jaxdiag.check_grad(f"{SAMPLES / 'where_trap_good.py'}:safe_sqrt", "f32[6]@positive").ok


@pytest.mark.slow  # second order, ~4 s
def test_where_trap_in_second_derivatives_names_the_select():
    """The guard is on a primal factor: first order is right in both modes, but grad of grad is NaN where the
    guarded case is (|x| > 1) while jvp of grad is finite."""
    bad = load(SAMPLES / "where_trap_bad.py")
    assert np.isnan(jax.grad(jax.grad(bad.clipped_arcsin))(2.0))  # plain JAX first
    assert np.isfinite(jax.jacfwd(jax.grad(bad.clipped_arcsin))(2.0))
    report = jaxdiag.check_grad(f"{SAMPLES / 'where_trap_bad.py'}:clipped_arcsin", "f32[6]@-2..2", order=2)
    (hit,) = findings(report, "JXG023")
    assert hit.location.line == expect_line("where_trap_bad.py", "JXG023")
    assert "one mode" in hit.message and "nan by grad of grad" in hit.message and "double-where" in hit.fix
    assert jaxdiag.check_grad(f"{SAMPLES / 'where_trap_good.py'}:clipped_arcsin", "f32[6]@-2..2", order=2).ok


def test_a_bwd_term_without_the_cotangent_is_jxg036_and_nonlinear_but_right_bwds_are_not():
    """JXG036 reads bwd at a zero cotangent: a stray residual-only term shows there (plain JAX: a weighted loss gets a
    wrong gradient); a clipped gradient, a reversal and a two-output bwd return zeros there and are not flagged."""
    probes = load(ROOT / "tests" / "data" / "acc" / "bwd_linearity.py")
    x = jnp.array([0.5, -1.0, 2.0])
    weighted = jax.grad(lambda v: (3.0 * probes.log1p_exp(v)).sum())(x)  # plain JAX first
    unit = jax.grad(lambda v: probes.log1p_exp(v).sum())(x)
    assert not np.allclose(weighted, 3.0 * unit)  # a gradient is linear in the cotangent; this one is not
    where = ROOT / "tests" / "data" / "acc" / "bwd_linearity.py"
    bad = jaxdiag.check_grad(f"{where}:log1p_exp", "f32[3]")
    (hit,) = findings(bad, "JXG036")
    assert hit.severity == "error" and hit.location.line == _line_of(where, "stray term")
    for name in ("clip_gradient", "reverse_gradient", "sin_cos"):
        report = jaxdiag.check_grad(f"{where}:{name}", "f32[3]")
        no_internal_errors(report)
        assert not findings(report, "JXG036"), name


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# ---------------------------------------------------------------------------------------------------------------
# 16. Symbolic zeros on the edge of the domain
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_densified_symbolic_zero_tangent_is_found_at_the_edge():
    bad, good = load(SAMPLES / "symbolic_zero_nan_bad.py"), load(SAMPLES / "symbolic_zero_nan_good.py")
    assert np.isnan(jax.jvp(lambda x: bad.scaled_sqrt(x, 0.0), (3.0,), (1.0,))[1])  # forward mode shows it
    assert jax.jvp(lambda x: good.scaled_sqrt(x, 0.0), (3.0,), (1.0,))[1] == 0.0
    report = jaxdiag.check_grad(f"{SAMPLES / 'symbolic_zero_nan_bad.py'}:scaled_sqrt", "f32[4]", "f32[4]@positive")
    hit = findings(report, "JXG027")
    assert hit and "y = 0" in hit[0].message and "symbolic" in hit[0].message
    assert hit[0].location.line == expect_line("symbolic_zero_nan_bad.py", "JXG027")
    assert jaxdiag.check_grad(f"{SAMPLES / 'symbolic_zero_nan_good.py'}:scaled_sqrt", "f32[4]",
                              "f32[4]@positive").ok


@pytest.mark.slow  # 4 targets, ~8 s
def test_symbolic_zero_probes_reverse_and_primitive():
    probes = load(PROBES)
    # plain JAX: only the second output used -> its cotangent is the only one; bwd densifies the first at x = 0
    assert np.isnan(jax.grad(lambda x: probes.root_and_id_bad(x)[1].sum())(jnp.zeros(2))).all()
    assert np.all(jax.grad(lambda x: probes.root_and_id_good(x)[1].sum())(jnp.zeros(2)) == 2.0)
    bad_p, good_p = probes.xsqrty_bad_p, probes.xsqrty_good_p
    jvp_at_edge = lambda p: jax.jvp(lambda x: p.bind(x, jnp.zeros(2)), (jnp.ones(2),), (jnp.ones(2),))[1]  # noqa: E731
    assert np.isnan(jvp_at_edge(bad_p)).all() and np.all(jvp_at_edge(good_p) == 0.0)
    for name, specs, flagged in (("root_and_id_bad", ["f32[4]"], True), ("root_and_id_good", ["f32[4]"], False),
                                 ("xsqrty_bad_p", ["f32[4]", "f32[4]"], True),
                                 ("xsqrty_good_p", ["f32[4]", "f32[4]"], False)):
        report = jaxdiag.check_grad(f"{PROBES}:{name}", *specs)
        no_internal_errors(report)
        assert bool(findings(report, "JXG027")) is flagged, (name, [f.message for f in report.findings])


# ---------------------------------------------------------------------------------------------------------------
# 17. A uniformly scaled derivative is an error, whatever the seed
# ---------------------------------------------------------------------------------------------------------------


def test_constant_factor_needs_the_same_ratio_along_every_direction():
    r1, r2 = np.array([1.0, -2.0, 3.0]), np.array([0.5, 4.0, -1.0])
    assert uniform_ratio(0.1 * r1, r1, np.float32) == pytest.approx(0.1)
    assert constant_factor([(0.1 * r1, r1), (0.1 * r2, r2)], np.float32) == pytest.approx(0.1)
    clip = lambda r: r * min(1.0, 1.0 / np.linalg.norm(r))  # noqa: E731  (norm clipping: one scale per direction)
    assert constant_factor([(clip(r1), r1), (clip(r2), r2)], np.float32) is None
    assert uniform_ratio(np.clip(r1, -1, 1), r1, np.float32) is None  # elementwise clipping varies per entry
    assert constant_factor([(r1, r1), (r2, r2)], np.float32) is None  # ratio 1: no defect at all


@pytest.mark.slow  # three seeds of a nested rule inside scan, ~12 s
def test_scaled_nested_slope_is_an_error_at_every_seed():
    bad = load(SAMPLES / "scaled_slope_bad.py")
    x = jnp.array([0.5, 1.0, 2.0])
    got = jax.jvp(bad.cube, (x,), (jnp.ones(3),))[1]
    assert np.allclose(got / jax.jvp(lambda x: x ** 3, (x,), (jnp.ones(3),))[1], 2 / 3)  # plain JAX first
    for seed in (0, 1, 2):
        report = jaxdiag.check_grad(f"{SAMPLES / 'scaled_slope_bad.py'}:energy", "f32[3]", "f32[6,3]", seed=seed)
        wrong = [f for f in findings(report, "JXG024") if f.location and f.location.function == "cube_jvp"]
        assert wrong and "0.6667" in wrong[0].message, seed
    assert jaxdiag.check_grad(f"{SAMPLES / 'scaled_slope_good.py'}:energy", "f32[3]", "f32[6,3]").ok


# ---------------------------------------------------------------------------------------------------------------
# 18. Pytree custom_vjp structure in the user's terms
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_pytree_bwd_structure_named_per_argument():
    bad = load(SAMPLES / "pytree_bwd_bad.py")
    params = {"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}
    with pytest.raises(TypeError, match="same container"):
        jax.grad(lambda p, x: bad.dense(p, x).sum())(params, jnp.ones((4, 3)))
    report = jaxdiag.check_grad(f"{SAMPLES / 'pytree_bwd_bad.py'}:dense", '{"w": f32[3,2], "b": f32[2]}', "f32[4,3]")
    hit = findings(report, "JXG010")
    assert len(hit) == 1, [f.message for f in report.findings]
    assert "params is a dict with keys b, w" in hit[0].message and "3 entries" in hit[0].message
    assert "params['b']" not in hit[0].message  # never a leaf paired with the wrong expression
    assert '{"b": db, "w": dw}, dx' in hit[0].fix
    assert hit[0].location.line == expect_line("pytree_bwd_bad.py", "JXG010")
    assert jaxdiag.check_grad(f"{SAMPLES / 'pytree_bwd_good.py'}:dense", '{"w": f32[3,2], "b": f32[2]}',
                              "f32[4,3]").ok


# ---------------------------------------------------------------------------------------------------------------
# 19. Complex inputs and float classification
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_missing_conj_is_named_in_the_fix():
    bad = load(SAMPLES / "complex_conj_bad.py")
    z = jnp.array([1 + 2j], jnp.complex64)
    assert np.allclose(jax.grad(lambda z: bad.abs2(z).sum())(z),
                       np.conj(jax.grad(lambda z: (jnp.abs(z) ** 2).sum())(z)))
    assert conjugated(np.array([1 + 2j]), np.array([1 - 2j]), np.complex64)
    assert not conjugated(np.array([1 + 0j]), np.array([1 + 0j]), np.complex64)
    report = jaxdiag.check_grad(f"{SAMPLES / 'complex_conj_bad.py'}:abs2", "c64[4]")
    hit = findings(report, "JXG024")
    assert hit and "jnp.conj" in hit[0].fix
    assert jaxdiag.check_grad(f"{SAMPLES / 'complex_conj_good.py'}:abs2", "c64[4]").ok


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "bfloat16", "float4_e2m1fn"])
def test_float_classes_from_jax_categories(name):
    if not hasattr(ml_dtypes, name):
        pytest.skip(f"ml_dtypes has no {name}")
    dtype = np.dtype(getattr(ml_dtypes, name))
    assert is_inexact(dtype) and bool(jnp.issubdtype(dtype, jnp.inexact))
    values = np.array([1.0, 0.5]).astype(dtype)
    if name != "float4_e2m1fn":  # float4 has no NaN
        values = np.array([1.0, np.nan]).astype(dtype)
    assert _same(values, values.copy())
    assert not is_inexact(jax.dtypes.float0) and not is_inexact(np.int8)


@pytest.mark.slow  # writes and runs a --repro script, ~10 s
def test_repro_draws_complex_and_fails_on_the_bug_only(tmp_path):
    out = tmp_path / "repro"
    run = subprocess.run([sys.executable, "-m", "jaxdiag", "check", str(SAMPLES / "complex_conj_bad.py"),
                          "--repro", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 1, run.stdout + run.stderr
    scripts = sorted(out.glob("*.py"))
    assert scripts
    text = scripts[0].read_text()
    assert "1j * draw_real" in text
    failing = subprocess.run([sys.executable, str(scripts[0])], capture_output=True, text=True, cwd=ROOT)
    assert failing.returncode != 0 and "AssertionError" in failing.stderr
    fixed = subprocess.run([sys.executable, str(scripts[0]), str(SAMPLES / "complex_conj_good.py")],
                           capture_output=True, text=True, cwd=ROOT)
    assert fixed.returncode == 0, fixed.stderr


@pytest.mark.parametrize("mode", ["grad2", "vmap_grad"])
def test_repro_of_a_derivative_differentiates_the_real_part_of_a_complex_output(mode, monkeypatch):
    """jax.grad refuses a complex total: the scripts of the second-order and vmap-of-grad checks sum the real part of
    the floating outputs (as the check's own probes do), so they run on a complex-valued function and fail only on
    the bug."""
    from jaxdiag._evidence import _repro_templates
    from jaxdiag._evidence._repro import _shared_source
    from jaxdiag._loading import _inputs

    def run(attr: str) -> str:
        script = _repro_templates.PRELUDE.format(
            module_file=str(ROOT / "tests/data/acc/complex_phase.py"), module_name="complex_phase",
            root=str(ROOT),
            attr=attr, specs=repr([("float32", (3,), "normal")]), call="TARGET(*args)")
        script += f"\n\n{_shared_source(_inputs.draw_real)}\n\nEDGES = {{}}\n"
        script += _repro_templates.CHECKS[mode].format(in_axes="0", out_axes="0", batch=3, platform="'cuda'",
                                                       code="JXG019")
        printed: list[str] = []
        monkeypatch.setattr("sys.argv", ["repro.py"])
        exec(compile(script, "repro.py", "exec"), {"print": lambda *a: printed.append(" ".join(map(str, a)))})
        return printed[-1]

    assert run("phase").startswith("ok:")
    if mode == "grad2":
        with pytest.raises(AssertionError, match="second derivative"):
            run("phase_held")
