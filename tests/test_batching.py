"""Batching checks (JXB001-JXB013): each rule fires on its bad sample and the good sample is clean; the seeds;
what the messages say (in_axes, shapes, file:line, corrected return lines); function targets; user axes; JAX's
registries restored; the CLI."""

from __future__ import annotations

import itertools
import json
import shutil

import pytest
from clirun import Runner as CliRunner  # stdout/stderr apart on every click
from clirun import flat
from jax_state import snapshot_changes as jax_state_changes

import jaxdiag
from jaxdiag import _compat
from jaxdiag._core._errors import UsageError
from jaxdiag._checks._batching import axes_variants
from jaxdiag._parent._cli import app
from jaxdiag._loading._inputs import parse_spec
from jaxdiag._rules import SAMPLES_DIR

# (code, target attribute, args, params): the inputs of the samples' JAXDIAG tables.
CASES = [
    ("JXB001", "norm_p", ["f32[3]"], {}),
    ("JXB002", "softsign_p", ["f32[4,3]"], {}),
    ("JXB003", "l2_normalize_p", ["f32[3]"], {}),
    ("JXB004", "quantize_p", ["f32[8]"], {}),
    ("JXB005", "cumsum_p", ["f32[4,3]"], {"axis": 0}),
    ("JXB006", "matvec_p", ["f32[4,3]", "f32[3]"], {}),
    ("JXB007", "min_max_p", ["f32[4,3]"], {}),
    ("JXB008", "log_softmax_p", ["f32[4,3]"], {}),
    ("JXB009", "sum_sq_p", ["f32[3]"], {}),
    ("JXB010", "normalize_p", ["f32[3]"], {}),
    ("JXB011", "standardize_p", ["f32[3]"], {}),
    ("JXB011", "standardize", ["f32[3]"], {}),
    ("JXB013", "safe_log", ["f32[3]@positive"], {}),
    ("JXB024", "huber_p", ["f32[3]"], {}),
]
IDS = [f"{c[0]}-{c[1]}" for c in CASES]


def sample(name: str, attr: str) -> str:
    return f"{SAMPLES_DIR / name}.py:{attr}"


def serious(report: jaxdiag.Report) -> list[str]:
    return [f.code for f in report.findings if f.severity in ("error", "warning")]


def no_internal_errors(report: jaxdiag.Report) -> None:
    assert not report.internal_errors, [(c.name, c.detail) for c in report.internal_errors]


def finding(report: jaxdiag.Report, code: str) -> jaxdiag.Finding:
    return next(f for f in report.findings if f.code == code)


def _line(location: jaxdiag.Location) -> str:
    """The source line a finding points at, without the sample's `# jaxdiag-expect:` marker."""
    with open(location.path, encoding="utf-8") as handle:
        return handle.read().splitlines()[location.line - 1].split("  # jaxdiag-expect:")[0]


@pytest.fixture(scope="module")
def published() -> jaxdiag.Report:
    return jaxdiag.check_batching(sample("seed_batching_published", "my_sum_p"), "f32[3]")


# ---------------------------------------------------------------------------------------------------------------
# Every rule on its samples
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("code, attr, args, params", [  # every JXB rule in the fast tier (JXB011 once)
    pytest.param(*case, id=i, marks=[pytest.mark.slow] if i == "JXB011-standardize" else [])
    for case, i in zip(CASES, IDS)])
def test_rule_fires_on_bad_sample(code, attr, args, params):
    report = jaxdiag.check_batching(sample(f"{code.lower()}_bad", attr), *args, params=params)
    no_internal_errors(report)
    assert code in serious(report), report.findings
    assert len(set(serious(report))) == 1, "a bad sample shows one defect"


@pytest.mark.parametrize("code, attr, args, params", CASES, ids=IDS)  # every JXB rule, in the fast tier
def test_good_sample_is_clean(code, attr, args, params):
    report = jaxdiag.check_batching(sample(f"{code.lower()}_good", attr), *args, params=params)
    no_internal_errors(report)
    assert serious(report) == [], report.findings


# ---------------------------------------------------------------------------------------------------------------
# The seeds
# ---------------------------------------------------------------------------------------------------------------


def test_published_seed_reports_every_defect(published):
    no_internal_errors(published)
    assert {"JXB001", "JXB011", "JXR002", "JXR004"} <= set(serious(published))


def test_published_seed_message_says_what_in_axes_and_shapes(published):
    f = finding(published, "JXB001")
    assert "in_axes=1" in f.message and "batch size 5" in f.message
    assert "(3, 5)" in f.message and "IndexError" in f.message
    assert f.location.path.endswith("seed_batching_published.py")
    assert _line(f.location).strip() == "return (sum_output, ones_output), (bd_x, None)"
    assert f.location.function == "my_sum_batching_rule"
    assert "`return (sum_output, ones_output), (0, None)`" in f.fix


def test_published_seed_out_axes_tuple(published):
    f = finding(published, "JXB011")
    assert "out_axes=(0, None)" in f.message and "tree prefix" in f.message
    assert "return tuple(my_sum_p.bind(x))" in f.fix and "out_axes=[0, None]" in f.fix
    assert f.location.function == "my_sum" and _line(f.location).strip() == "return my_sum_p.bind(x)"


def test_original_seed_reports_the_constant_output():
    report = jaxdiag.check_batching(sample("seed_batching_original", "my_sum_p"), "f32[3]")
    f = finding(report, "JXB004")
    assert "output 1 has shape (3,)" in f.message and "batch size 5" in f.message
    assert "(0, None)" in f.fix


@pytest.mark.slow
def test_fixed_seed_is_clean():
    for attr in ("my_sum_p", "my_sum"):
        report = jaxdiag.check_batching(sample("seed_batching_fixed", attr), "f32[3]")
        no_internal_errors(report)
        assert serious(report) == [], (attr, report.findings)


def test_published_wrapper_as_a_function_target():
    report = jaxdiag.check_batching(sample("seed_batching_published", "my_sum"), "f32[3]")
    no_internal_errors(report)
    root, nested = report.targets
    assert [f.code for f in root.findings if f.severity != "info"] == ["JXB011"]
    assert {"JXB001", "JXR002", "JXR004"} <= {f.code for f in nested.findings}
    loop = next(c for c in root.checks if c.name == "batching-vs-loop")
    assert loop.status == "skipped" and "my_sum's batching rule" in loop.detail


# ---------------------------------------------------------------------------------------------------------------
# What the findings say
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow  # > 1 s; the fast tier keeps a cheaper test of the same feature
def test_unbatched_constant_names_the_out_axes_failure():
    report = jaxdiag.check_batching(sample("jxb003_bad", "l2_normalize_p"), "f32[3]")
    f = finding(report, "JXB003")
    assert f.severity == "warning"
    assert "got axis spec None but output was batched" in f.message
    assert "`return (y, n), (0, None)`" in f.fix


def test_mismatch_reports_the_difference_and_the_axis_parameter():
    report = jaxdiag.check_batching(sample("jxb005_bad", "cumsum_p"), "f32[4,3]", params={"axis": 0})
    f = finding(report, "JXB005")
    assert "max abs difference" in f.message and "in_axes=0" in f.message
    assert "axis + 1" in f.fix


def test_rule_raising_reports_the_in_axes_and_the_fix():
    report = jaxdiag.check_batching(sample("jxb006_bad", "matvec_p"), "f32[4,3]", "f32[3]")
    f = finding(report, "JXB006")
    assert "in_axes=(None, 0)" in f.message and "TypeError" in f.message
    assert "bdim_at_front" in f.fix and _line(f.location).strip() == "a = jnp.moveaxis(a, ba, 0)"


def test_wrong_dim_type_fix_uses_the_rules_own_names():
    report = jaxdiag.check_batching(sample("jxb002_bad", "softsign_p"), "f32[4,3]")
    assert "`return softsign_p.bind(x), batch_dims[0]`" in finding(report, "JXB002").fix


@pytest.mark.slow
def test_batch_size_is_no_dimension_of_inputs_or_outputs(tmp_path):
    report = jaxdiag.check_batching(sample("jxb009_bad", "sum_sq_p"), "f32[5]")
    assert "batch size 6" in finding(report, "JXB009").message


def test_fancy_rule_called_with_every_input_unbatched(tmp_path):
    path = tmp_path / "fancy_rule.py"
    path.write_text(
        "import jax.numpy as jnp\n"
        "from jax.core import ShapedArray\n"
        "from jax.extend.core import Primitive\n"
        "from jax.interpreters import mlir\n"
        "from jaxdiag import _compat\n"
        "twice_p = Primitive('twice')\n"
        "twice_p.def_impl(lambda x: 2 * x)\n"
        "twice_p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))\n"
        "mlir.register_lowering(twice_p, mlir.lower_fun(lambda x: 2 * x, multiple_results=False))\n"
        "def _twice_batching(axis_data, batched_args, batch_dims):\n"
        "    (x,), (bx,) = batched_args, batch_dims\n"
        "    return 2 * jnp.moveaxis(x, bx, 0), 0\n"
        "_compat._batching_table()[twice_p] = _twice_batching\n")
    report = jaxdiag.check_batching(f"{path}:twice_p", "f32[3]")
    f = finding(report, "JXB006")
    assert "every input of the primitive unbatched" in f.message and "fancy_primitive_batchers" in f.fix


def test_inline_suppression_on_the_def_line(tmp_path):
    source = (SAMPLES_DIR / "jxb001_bad.py").read_text().replace(
        "def _norm_batching(batched_args, batch_dims):",
        "def _norm_batching(batched_args, batch_dims):  # jaxdiag: ignore[JXB001]")
    path = tmp_path / "suppressed.py"
    path.write_text(source)
    report = jaxdiag.check_batching(f"{path}:norm_p", "f32[3]")
    assert "JXB001" not in report.codes()


def test_reports_are_deterministic():
    first = jaxdiag.check_batching(sample("jxb005_bad", "cumsum_p"), "f32[4,3]", params={"axis": 0})
    second = jaxdiag.check_batching(sample("jxb005_bad", "cumsum_p"), "f32[4,3]", params={"axis": 0})
    assert [f.to_dict() for f in first.findings] == [f.to_dict() for f in second.findings]


# ---------------------------------------------------------------------------------------------------------------
# Function targets and user axes
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_function_failure_is_attributed_to_the_nested_primitive(tmp_path):
    path = tmp_path / "uses_cumsum.py"
    path.write_text(
        "import jax.numpy as jnp\n"
        "from jxb005_bad import cumsum_p\n"
        "def running_total(x):\n"
        "    return 2.0 * cumsum_p.bind(jnp.sin(x), axis=0)\n")
    shutil.copy(SAMPLES_DIR / "jxb005_bad.py", tmp_path / "jxb005_bad.py")
    report = jaxdiag.check_batching(f"{path}:running_total", "f32[4,3]")
    no_internal_errors(report)
    root, nested = report.targets
    assert not [f for f in root.findings if f.severity != "info"]
    assert "cumsum" in next(c for c in root.checks if c.name == "batching-vs-loop").detail
    assert "JXB005" in {f.code for f in nested.findings}


def test_user_out_axes_tuple_is_explained():
    report = jaxdiag.check_batching(sample("seed_batching_fixed", "my_sum_p"), "f32[3]", out_axes=(0, None))
    f = finding(report, "JXB012")
    assert "returns a list" in f.message and "--out-axes [0, None]" in f.fix


def test_user_in_axes_out_of_range_is_a_usage_error():
    """Axes that do not fit the given inputs are the user's mistake (exit 2), never a finding against the code."""
    with pytest.raises(UsageError, match=r"axis 3 is out of range .* valid axes -2\.\.1"):
        jaxdiag.check_batching(sample("seed_batching_fixed", "my_sum_p"), "f32[3]", in_axes=3)


def test_user_in_axes_is_the_first_variant_reported():
    report = jaxdiag.check_batching(sample("seed_batching_published", "my_sum_p"), "f32[3]", in_axes=(1,))
    assert "in_axes=(1,)" in finding(report, "JXB001").message.split("Also")[0]


# ---------------------------------------------------------------------------------------------------------------
# JAX state and the variant generator
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, attr, args", [("jxb006_bad", "matvec_p", ["f32[4,3]", "f32[3]"]),
                                              ("jxb001_bad", "norm_p", ["f32[3]"]),
                                              ("seed_batching_published", "my_sum", ["f32[3]"])])
def test_registries_restored_even_when_a_rule_raises(name, attr, args):
    jaxdiag.check_batching(sample(name, attr), *args)  # import the sample before the snapshot
    before = _compat.snapshot_jax_state()
    jaxdiag.check_batching(sample(name, attr), *args)
    assert not jax_state_changes(before, _compat.snapshot_jax_state())


def test_variants_cover_every_pair_and_grow_at_most_quadratically():
    for n in range(2, 9):
        specs = [parse_spec("f32[2,3]")] * n
        variants = axes_variants(specs)
        assert len(variants) <= 4 * n * n
        assert all(any(a is not None for a in v) for v in variants)
        for i, j in itertools.combinations(range(n), 2):
            for a, b in itertools.product((0, 2, None), repeat=2):
                if (a, b) != (None, None) or n > 2:
                    assert any(v[i] == a and v[j] == b for v in variants), (n, i, j, a, b)


def test_many_operands_leave_each_unbatched_through_the_pairwise_covering_in_fewer_variants():
    # a flattened pytree's 21 operands: one variant per operand unbatched alone was 21 more compiles of the rule;
    # the pairwise covering still leaves each operand unbatched beside every other's batched and unbatched choices
    specs = [parse_spec("f32[2]"), *[parse_spec("f32[]")] * 20]
    variants = axes_variants(specs)
    assert len(variants) < len(specs)
    for i, j in itertools.permutations(range(len(specs)), 2):
        for b in (0, None):
            assert any(v[i] is None and v[j] == b for v in variants), (i, j, b)


# ---------------------------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------------------------

runner = CliRunner()


def test_cli_text_report_points_at_the_return_line():
    result = runner.invoke(app, ["batching", sample("seed_batching_published", "my_sum_p"), "--arg", "f32[3]"])
    assert result.exit_code == 1, result.output
    line = next(i for i, text in enumerate((SAMPLES_DIR / "seed_batching_published.py").read_text().splitlines(), 1)
                if "return (sum_output, ones_output)" in text)
    text = flat(result.output)
    assert "JXB001" in text and f"seed_batching_published.py:{line}" in text
    assert "return (sum_output, ones_output), (0, None)" in text


def test_cli_json_with_in_axes_and_exit_codes():
    result = runner.invoke(app, ["batching", sample("seed_batching_fixed", "my_sum_p"), "--arg", "f32[3]",
                                 "--in-axes", "1", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["summary"]["errors"] == 0 and data["targets"][0]["kind"] == "primitive"
    result = runner.invoke(app, ["batching", sample("jxb004_bad", "quantize_p"), "--arg", "f32[8]", "--format",
                                 "json"])
    assert result.exit_code == 1
    assert "JXB004" in {f["code"] for f in json.loads(result.output)["targets"][0]["findings"]}


def _findings(report: jaxdiag.Report) -> list[tuple]:
    return [(f.code, f.severity, f.location.line if f.location else None, f.message, f.fix) for f in report.findings]


def _fused_and_eager(monkeypatch: pytest.MonkeyPatch, target: str, *args: str, params: dict | None = None
                     ) -> tuple[jaxdiag.Report, jaxdiag.Report, dict[str, int]]:
    """The report with every variant in one program first, then with the eager runs only; and how often the
    fused run was kept or dropped for the first (once per subject and draw of examples)."""
    from jaxdiag._checks._batching import _fused

    before = dict(_fused.STATS)
    fused = jaxdiag.check_batching(target, *args, params=params or {})
    used = {k: _fused.STATS[k] - before[k] for k in before}
    monkeypatch.setattr(_fused, "ENABLED", False)
    eager = jaxdiag.check_batching(target, *args, params=params or {})
    return fused, eager, used


def test_a_variant_differing_from_the_loop_drops_the_fused_run_for_the_eager_findings(monkeypatch) -> None:
    fused, eager, used = _fused_and_eager(monkeypatch, sample("jxb005_bad", "cumsum_p"), "f32[4,3]",
                                          params={"axis": 0})
    assert used["fused"] == 0 and used["fallback"] > 0  # once per subject and draw of examples
    assert "JXB005" in serious(fused)
    assert _findings(fused) == _findings(eager)


@pytest.mark.slow
@pytest.mark.parametrize("name, attr, args, kept", [
    ("jxb010_bad", "normalize_p", ["f32[3]"], False),  # an unbatched output that varies: the loop differs
    ("jxb003_bad", "l2_normalize_p", ["f32[3]"], True),  # right values, a constant output reported batched
    ("jxb002_bad", "softsign_p", ["f32[4,3]"], False),  # a malformed return the spy stops at
    ("jxb006_good", "matvec_p", ["f32[4,3]", "f32[3]"], True),
])
def test_fused_and_eager_runs_give_the_same_findings(monkeypatch, name, attr, args, kept) -> None:
    fused, eager, used = _fused_and_eager(monkeypatch, sample(name, attr), *args)
    assert (used["fused"] > 0, used["fallback"] > 0) == (kept, not kept)
    assert _findings(fused) == _findings(eager)
