"""`jaxdiag grad`: every JXG rule (and JXR006/JXR007) fires on its bad sample and stays silent on its good one; the
seeds; messages carry numbers and the user's file:line; suppression; --order 2; nested rules inside functions;
`check` severities; JAX state left as found."""

from __future__ import annotations

import importlib.util
import re
import textwrap
from pathlib import Path

import pytest
from markers import expect_line, line_of

import jaxdiag
from jaxdiag import _compat
from jaxdiag._rules import RULES

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
GRAD_CODES = sorted(c for c in RULES if c.startswith("JXG") and not RULES[c].variant_of and RULES[c].bad_sample) + [
    "JXR006", "JXR007"]
# `jaxdiag grad` was asked to differentiate: a missing JVP/transpose rule is its error variant there (JXR006/JXR007
# are what `jaxdiag check` reports).
UNDER_GRAD = {"JXR006": "JXR013", "JXR007": "JXR014"}
SECOND_ORDER = {"JXG019"}  # fires with --order 2 only


def sample_target(name: str) -> tuple[str, list[str], dict]:
    """(TARGET, args, params) from the sample's JAXDIAG dict."""
    path = SAMPLES / name
    spec = importlib.util.spec_from_file_location(f"grad_sample_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    attr, config = next(iter(module.JAXDIAG.items()))  # the first target; the sample table checks the others
    return f"{path}:{attr}", list(config["args"]), dict(config.get("params", {}))


def run_sample(name: str, order: int | None = None, **kwargs) -> jaxdiag.Report:
    target, args, params = sample_target(name)
    order = order or (2 if name[:6].upper() in SECOND_ORDER else 1)
    return jaxdiag.check_grad(target, *args, order=order, **kwargs, params=params)


def problems(report: jaxdiag.Report) -> list:
    return [f for f in report.findings if f.severity in ("error", "warning")]


def internal_errors(report: jaxdiag.Report) -> list:
    return [(c.name, c.detail) for t in report.targets for c in t.checks if c.status == "error"]


def write_module(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------------------------
# Bad fires, good is silent: every rule
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", GRAD_CODES)
def test_bad_sample_reports_its_rule(code):
    report = run_sample(f"{code.lower()}_bad.py")
    assert not internal_errors(report), internal_errors(report)
    code = UNDER_GRAD.get(code, code)
    found = [f for f in report.findings if f.code == code]
    assert found, f"{code} not reported; got {[(f.code, f.message[:120]) for f in report.findings]}"
    finding = found[0]
    assert finding.severity == RULES[code].severity
    assert finding.message and finding.fix
    assert finding.location is not None and finding.location.path.endswith(RULES[code].bad_sample or "?")


@pytest.mark.slow
@pytest.mark.parametrize("code", GRAD_CODES)
def test_good_sample_is_clean(code):
    report = run_sample(f"{code.lower()}_good.py", order=2)  # good samples are clean at second order too
    assert not internal_errors(report), internal_errors(report)
    assert not problems(report), [(f.code, f.message) for f in problems(report)]


def test_every_grad_rule_has_both_samples():
    for code in GRAD_CODES:
        rule = RULES[code]
        assert rule.sample_path("bad").is_file() and rule.sample_path("good").is_file(), code


# ---------------------------------------------------------------------------------------------------------------
# The seeds
# ---------------------------------------------------------------------------------------------------------------


def test_seed_published_bwd_structure_with_the_fix():
    report = jaxdiag.check_grad(f"{SAMPLES / 'seed_vjp_published.py'}:test_func", "f32[3]", "f32[3]")
    (finding,) = [f for f in report.findings if f.code == "JXG010"]
    assert "`return (dx, dy)`" in finding.fix
    assert "((f32[3], f32[3]), None)" in finding.message and "keyword arguments" in finding.fix
    assert finding.location.function == "test_func_bwd"
    assert finding.location.line == expect_line("seed_vjp_published.py", "JXG010")
    assert report.codes() - {"JXG010"} == set()


def test_seed_structure_fixed_ignores_out_1():
    report = jaxdiag.check_grad(f"{SAMPLES / 'seed_vjp_structure_fixed.py'}:test_func", "f32[3]", "f32[3]")
    (finding,) = [f for f in report.findings if f.code == "JXG011"]
    assert "cotangent of out_1" in finding.message
    assert "[0, 0, 0] instead of [1, 1, 1]" in finding.message  # grad of sum(out_1) is 0 instead of 1
    assert finding.location.function == "test_func_bwd"
    assert not [f for f in report.findings if f.code != "JXG011"]


@pytest.mark.parametrize("name", ["seed_vjp_fixed.py", pytest.param("seed_jvp.py", marks=pytest.mark.slow)])
def test_fixed_seeds_are_clean(name):
    report = jaxdiag.check_grad(f"{SAMPLES / name}:test_func", "f32[3]", "f32[3]", order=2)
    assert not problems(report) and not internal_errors(report)


# ---------------------------------------------------------------------------------------------------------------
# Messages: numbers, shapes, dtypes, file:line
# ---------------------------------------------------------------------------------------------------------------


def test_numerical_mismatch_reports_numbers_and_how_to_suppress():
    (finding,) = run_sample("jxg014_bad.py").findings
    assert re.search(r"max abs difference \d", finding.message)
    assert "tolerance" in finding.message and "finite differences" in finding.message
    assert "may be intended" in finding.message
    line = expect_line("jxg014_bad.py", "JXG014")
    assert "# jaxdiag: ignore[JXG014]" in finding.fix and f"jxg014_bad.py:{line}" in finding.fix
    assert (finding.location.line, finding.location.function) == (line, "clipped_sin_bwd")


def test_primitive_jvp_mismatch_points_at_the_rule_and_gives_values():
    (finding,) = [f for f in run_sample("jxg001_bad.py").findings if f.code == "JXG001"]
    assert finding.location.function == "_my_cos_jvp"
    assert re.search(r"rule gives \[-?\d", finding.message) and "finite differences give" in finding.message


def test_rule_that_raises_names_the_users_line():
    (finding,) = run_sample("jxg017_bad.py").findings
    raised_at = line_of("jxg017_bad.py", "t, x = res")
    assert "ValueError" in finding.message and f"jxg017_bad.py:{raised_at}" in finding.message
    assert "`t, x = res`" in finding.message


def test_dtype_drift_names_both_dtypes():
    (finding,) = run_sample("jxg004_bad.py").findings
    assert "f16" in finding.message and "f32" in finding.message


# ---------------------------------------------------------------------------------------------------------------
# Suppression, --select/--ignore, --order 2
# ---------------------------------------------------------------------------------------------------------------


def test_inline_suppression_on_the_def_line(tmp_path):
    source = (SAMPLES / "jxg014_bad.py").read_text(encoding="utf-8")
    source = source.replace("def clipped_sin_bwd(x, g):  # jaxdiag-expect: JXG014",
                            "def clipped_sin_bwd(x, g):  # jaxdiag: ignore[JXG014]")
    path = tmp_path / "clipped.py"
    path.write_text(source, encoding="utf-8")
    report = jaxdiag.check_grad(f"{path}:clipped_sin", "f32[6]")
    assert report.ok and "JXG014" not in report.codes()


def test_ignore_option():
    target, args, _ = sample_target("jxg014_bad.py")
    assert jaxdiag.check_grad(target, *args, ignore=["JXG014"]).ok


def test_second_order_only_with_order_2():
    assert "JXG019" not in run_sample("jxg019_bad.py", order=1).codes()
    assert "JXG019" in run_sample("jxg019_bad.py", order=2).codes()


def test_second_order_is_not_compiled_for_a_gradient_that_already_fails_under_jit_or_vmap():
    """grad-composition's JXG016 (the gradient differs under vmap) makes second derivatives moot: they are the same
    gradient under the same transformations, and compiling them cost seconds on a looping subject."""
    report = run_sample("jxg016_bad.py", order=2)
    assert "JXG016" in report.codes()
    (second,) = [c for t in report.targets for c in t.checks if c.name == "grad-second-order"]
    assert second.status == "skipped" and "already fails under jit/vmap (JXG016)" in second.detail
    good = run_sample("jxg016_good.py", order=2)
    assert [c.status for t in good.targets for c in t.checks if c.name == "grad-second-order"] == ["passed"]


# ---------------------------------------------------------------------------------------------------------------
# Functions, nested rules, nondiff_argnums, symbolic zeros, integer arguments
# ---------------------------------------------------------------------------------------------------------------


def test_function_checks_nested_custom_vjp_and_the_whole(tmp_path):
    write_module(tmp_path, "model_nested", f"""
        import sys
        sys.path.insert(0, {str(SAMPLES)!r})
        import jax.numpy as jnp
        from seed_vjp_structure_fixed import test_func

        def model(x, y):
            a, b = test_func(x, y)
            return jnp.sum(a * b)
        """)
    report = jaxdiag.check_grad(f"{tmp_path / 'model_nested.py'}:model", "f32[3]", "f32[3]")
    kinds = {t.kind for t in report.targets}
    assert kinds == {"function", "custom_vjp"}
    nested = [t for t in report.targets if t.kind == "custom_vjp"][0]
    assert "JXG011" in {f.code for f in nested.findings}
    whole = [t for t in report.targets if t.kind == "function"][0]
    assert "JXG014" in {f.code for f in whole.findings}  # the function's gradient is wrong as a whole


def test_bwd_with_the_wrong_nondiff_order(tmp_path):
    write_module(tmp_path, "apply_fn", """
        from functools import partial
        import jax
        import jax.numpy as jnp

        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def apply(fn, x):
            return fn(x)

        def apply_fwd(fn, x):
            return fn(x), x

        def apply_bwd(res, g, fn):
            return (g * jnp.cos(res),)

        apply.defvjp(apply_fwd, apply_bwd)

        def model(x):
            return apply(jnp.sin, x)
        """)
    report = jaxdiag.check_grad(f"{tmp_path / 'apply_fn.py'}:model", "f32[3]")
    (finding,) = [f for f in report.findings if f.code == "JXG015"]
    assert "def apply_bwd(fn, res, g)" in finding.fix


def test_symbolic_zeros(tmp_path):
    write_module(tmp_path, "symzero", """
        import jax
        import jax.numpy as jnp

        @jax.custom_jvp
        def mul(x, y):
            return x * y

        def mul_jvp(primals, tangents):
            (x, y), (tx, ty) = primals, tangents
            return x * y, tx * y + x * ty

        mul.defjvp(mul_jvp, symbolic_zeros=True)

        @jax.custom_vjp
        def sq(x):
            return x * x

        def sq_fwd(x):
            return x * x, x

        def sq_bwd(x, g):
            return (2 * x * g,)

        sq.defvjp(sq_fwd, sq_bwd, symbolic_zeros=True)
        """)
    jvp_report = jaxdiag.check_grad(f"{tmp_path / 'symzero.py'}:mul", "f32[3]", "f32[3]")
    assert "JXG006" in jvp_report.codes()
    vjp_report = jaxdiag.check_grad(f"{tmp_path / 'symzero.py'}:sq", "f32[3]")
    (finding,) = [f for f in vjp_report.findings if f.code == "JXG006"]
    assert "CustomVJPPrimal" in finding.message and ".value" in finding.fix


def test_integer_argument_none_cotangent_is_fine(tmp_path):
    write_module(tmp_path, "intarg", """
        import jax
        import jax.numpy as jnp

        @jax.custom_vjp
        def scale(x, n):
            return x * n

        def scale_fwd(x, n):
            return x * n, n

        def scale_bwd(n, g):
            return (g * n, None)

        scale.defvjp(scale_fwd, scale_bwd)
        """)
    report = jaxdiag.check_grad(f"{tmp_path / 'intarg.py'}:scale", "f32[3]", "i32[3]")
    assert not problems(report) and not internal_errors(report)


def test_jvp_rule_returning_only_the_tangent_and_a_list(tmp_path):
    write_module(tmp_path, "jvpshape", """
        import jax
        import jax.numpy as jnp

        @jax.custom_jvp
        def only_tangent(x):
            return jnp.sin(x)

        only_tangent.defjvp(lambda p, t: jnp.cos(p[0]) * t[0])

        @jax.custom_jvp
        def pair(x):
            return jnp.sin(x), jnp.cos(x)

        @pair.defjvp
        def pair_jvp(p, t):
            (x,), (tx,) = p, t
            return (jnp.sin(x), jnp.cos(x)), [jnp.cos(x) * tx, -jnp.sin(x) * tx]
        """)
    assert "JXG007" in jaxdiag.check_grad(f"{tmp_path / 'jvpshape.py'}:only_tangent", "f32[3]").codes()
    (finding,) = jaxdiag.check_grad(f"{tmp_path / 'jvpshape.py'}:pair", "f32[3]").findings
    assert finding.code == "JXG007" and "tuple vs list" in finding.message


def test_affine_jvp_explains_forward_and_reverse(tmp_path):
    write_module(tmp_path, "affine", """
        import jax
        import jax.numpy as jnp

        @jax.custom_jvp
        def f(x):
            return jnp.sin(x)

        @f.defjvp
        def f_jvp(p, t):
            return jnp.sin(p[0]), jnp.cos(p[0]) * t[0] + 1.0
        """)
    (finding,) = jaxdiag.check_grad(f"{tmp_path / 'affine.py'}:f", "f32[3]").findings
    assert finding.code == "JXG020" and "zero tangent gives" in finding.message
    assert "forward and reverse mode disagree" in finding.message


# ---------------------------------------------------------------------------------------------------------------
# Dtypes, determinism, `check` severities, JAX state
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["f64[3]", "f16[3]", "bf16[4]", "f32[]", "f32[2,3]"])
def test_good_custom_rules_across_dtypes_and_shapes(spec):
    for name, attr in (("jxg024_good.py", "softplus"), ("jxg020_good.py", "safe_abs"), ("jxg001_good.py", "my_cos_p")):
        report = jaxdiag.check_grad(f"{SAMPLES / name}:{attr}", spec)
        assert not problems(report) and not internal_errors(report), (name, spec, problems(report))


@pytest.mark.slow
def test_domain_fallback_and_steps_near_the_boundary(tmp_path):
    write_module(tmp_path, "domains", """
        import jax
        import jax.numpy as jnp
        import numpy as np

        @jax.custom_vjp
        def safe_sqrt(x):
            return jnp.sqrt(x)

        def safe_sqrt_fwd(x):
            y = jnp.sqrt(x)
            return y, y

        def safe_sqrt_bwd(y, g):
            return (g / (2.0 * y),)

        safe_sqrt.defvjp(safe_sqrt_fwd, safe_sqrt_bwd)

        @jax.custom_jvp
        def log32(x):  # computes in float32 whatever the input: finite differences cannot use float64
            return jnp.log(x.astype(np.float32)).astype(x.dtype)

        @log32.defjvp
        def log32_jvp(p, t):
            return log32(p[0]), t[0] / p[0]
        """)
    inferred = jaxdiag.check_grad(f"{tmp_path / 'domains.py'}:safe_sqrt")  # no --arg: inferred, domain fallback
    assert {"JXN001", "JXN002"} <= inferred.codes() and inferred.ok, inferred.findings
    near_zero = jaxdiag.check_grad(f"{tmp_path / 'domains.py'}:log32", "f32[6]@0.0005..0.002")
    assert near_zero.ok and not internal_errors(near_zero), near_zero.findings


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["f64[4]", "f16[4]", "bf16[4]"])
@pytest.mark.parametrize("name", ["jxg014_bad.py", "jxg021_bad.py", "jxg011_bad.py"])
def test_bad_rules_are_found_in_other_precisions(name, spec):
    """Regression: bfloat16 has numpy kind "V" like float0, and was once compared as zeros (never a finding)."""
    target, _, _ = sample_target(name)
    assert name[:6].upper() in jaxdiag.check_grad(target, spec).codes()


def test_deterministic():
    first = [(f.code, f.message) for f in run_sample("jxg014_bad.py").findings]
    assert first == [(f.code, f.message) for f in run_sample("jxg014_bad.py").findings]


@pytest.mark.slow
def test_check_mode_severities():
    missing_jvp, _, _ = sample_target("jxr006_bad.py")
    missing_transpose, _, _ = sample_target("jxr007_bad.py")
    assert {f.severity for f in jaxdiag.check_all(missing_jvp, "f32[3]").findings if f.code == "JXR006"} == {"info"}
    assert {f.severity for f in jaxdiag.check_all(missing_transpose, "f32[3]").findings
            if f.code == "JXR007"} == {"warning"}


def test_registries_and_config_restored():
    from jaxdiag._loading._targets import load_target

    spied = load_target(sample_target("jxg003_bad.py")[0], str(ROOT)).obj  # its transpose rule is spied on
    x64 = load_target(sample_target("jxg014_bad.py")[0], str(ROOT)).obj  # float64 references under x64
    before = _compat.snapshot_jax_state()
    assert "JXG003" in jaxdiag.check_grad(spied, "f32[3]").codes()
    assert "JXG014" in jaxdiag.check_grad(x64, "f32[3]").codes()
    assert _compat.snapshot_jax_state() == before


def test_cli_grad_exit_codes(tmp_path):
    from clirun import Runner as CliRunner  # stdout/stderr apart on every click

    from jaxdiag._parent._cli import app

    runner = CliRunner()
    bad = runner.invoke(app, ["grad", f"{SAMPLES / 'seed_vjp_published.py'}:test_func", "--arg", "f32[3]",
                              "--arg", "f32[3]", "--format", "json"])
    assert bad.exit_code == 1 and '"JXG010"' in bad.stdout
    good = runner.invoke(app, ["grad", f"{SAMPLES / 'seed_jvp.py'}:test_func", "--arg", "f32[3]", "--arg",
                               "f32[3]", "--order", "2"])
    assert good.exit_code == 0, good.stdout


@pytest.mark.slow
def test_vmap_of_grad_mismatch_from_a_batching_bug_blames_the_batching_rule():
    path = Path(__file__).parent / "data" / "softmax_bad_batching.py"
    report = jaxdiag.check_grad(f"{path}:softmax_p", "f32[3,4]", params={"axis": 1})
    assert {"JXG001", "JXG016"} <= report.codes()
    (composition,) = [f for f in report.findings if f.code == "JXG016"]
    assert "the batching rule is at fault" in composition.message
    assert composition.location.function == "_batch"
    assert "jaxdiag batching" in composition.fix


@pytest.mark.slow
def test_function_whose_grad_fails_inside_a_nested_bwd_is_reported_once(tmp_path):
    """The raising bwd is reported on the nested custom_vjp target; the function itself does not repeat it."""
    module = tmp_path / "layer_model.py"
    module.write_text(textwrap.dedent("""
        import jax, jax.numpy as jnp

        @jax.custom_vjp
        def layer(x, w):
            return jnp.tanh(x @ w)

        def layer_fwd(x, w):
            y = jnp.tanh(x @ w)
            return y, (x, w, y)

        def layer_bwd(res, g):
            x, w, y = res
            gz = g * (1 - y ** 2)
            return gz @ w.T, x.T @ gz.T

        layer.defvjp(layer_fwd, layer_bwd)

        def loss(x, w):
            return jnp.sum(layer(x, w) ** 2)
    """))
    report = jaxdiag.check_grad(f"{module}:loss", "f32[2,3]", "f32[3,4]")
    raised = [(t.kind, f.location.function) for t in report.targets for f in t.findings if f.code == "JXG017"]
    assert raised == [("custom_vjp", "layer_bwd")]


@pytest.mark.slow
def test_a_loop_bound_traced_under_vmap_is_explained_not_blamed_on_numpy():
    """quadax's `_leibniz` JVP: a data-dependent fori_loop count is concrete eagerly (a scan) and traced under vmap
    or jit (a while_loop JAX cannot transpose). The generic "use jax.numpy instead of NumPy" fix was wrong advice."""
    import jax
    import jax.numpy as jnp

    path = ROOT / "tests" / "data" / "traced_loop_bound.py"
    spec = importlib.util.spec_from_file_location("traced_loop_bound_fixture", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = jnp.array([0.5, 2.0, 1.0])
    try:
        eager = jax.grad(lambda v: module.repeated(v).sum())(x)
    except AssertionError:  # jax 0.5: fori_loop with a concrete array bound fails inside a JVP even eagerly
        pytest.skip("this JAX cannot differentiate the fixture eagerly: nothing for the composition check to explain")
    assert eager.tolist() == [2.0, 2.0, 2.0]  # plain JAX: eager works
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        jax.grad(lambda v: jax.vmap(module.repeated)(v).sum())(jnp.stack([x, x[::-1]]))
    report = jaxdiag.check_grad(f"{path}:repeated", "f32[3]")
    (composition,) = [f for f in report.findings if f.code == "JXG016"]
    assert composition.location.function == "repeated_jvp"
    assert "bounds are traced" in composition.message and "NumPy" not in composition.fix
    assert "static" in composition.fix and "lax.scan" in composition.fix
