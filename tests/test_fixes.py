"""Verified fixes (`--diff`, `--fix`): each bad sample whose fix is a local source edit gets a diff that jaxdiag
verified by re-running its checks on an edited copy; `git apply` accepts the diff, and the patched sample is clean.
The fix texts of tutorial-style modules name the right dim at the rule's own line."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
# tests/ is on sys.path (conftest.py)
from fix_samples import FFI_CALL_SAMPLES, FIXABLE, OWNERS, TEXT_ONLY, ffi_script_prefix

from jaxdiag import _fixes
from jaxdiag._jobs import _lint
from jaxdiag._evidence import _repro
from jaxdiag._fixes import Fix, SourceEdit, apply_edits, combined_diff, unified_diff

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
TUTORIAL = Path(__file__).resolve().parent / "data" / "tutorial"

FAST = {"jxb004"}
# What the verified edit of a sample must add on each flagged line (beyond making the sample clean).
EDIT_ADDS = {"jxb020": re.compile(r"vmap_method=\"(sequential|sequential_unrolled|expand_dims|broadcast_all)\""),
             "jxb006": re.compile(r"batching\.bdim_at_front\("), "jxv003": re.compile(r"\.moveaxis\("),
             "jxg001": re.compile(r"return -\("),
             "jxv005": re.compile(r"= \w+ if \w+_batched else jnp\.broadcast_to\(")}


# The fixable samples whose diff CI verifies end to end: each edit kind EDIT_ADDS pins, a return structure and a
# registration (the unit tests below build each other edit); the rest is the sweep (`-m slow`, and
# scripts/fix_coverage.py).
DIFF_REPRESENTATIVES = {*FAST, *EDIT_ADDS, "jxg010", "jxr003"}


def _marks(name: str) -> list:
    if name in FAST:
        return []
    return [pytest.mark.slow] + ([] if name in DIFF_REPRESENTATIVES else [pytest.mark.sweep])


def test_every_bad_sample_is_classified():
    bad = sorted(p.name[:6] for p in SAMPLES.glob("jx*_bad.py"))
    assert sorted(set(FIXABLE) | set(TEXT_ONLY)) == bad
    assert not set(FIXABLE) & set(TEXT_ONLY)


class _Filled:
    """A template field's value that fits any format spec (`{tol:.0e}`, `{name!r}`)."""

    def __format__(self, spec: str) -> str:
        return "X"

    def __repr__(self) -> str:
        return "X"


# Generated from the catalog: every rule whose fix stays text (a bad sample without a computed diff) names the
# design decision it needs, in the one phrase every such fix carries; the rules without one are FIXABLE, whose
# samples must get a verified diff (test_fixable_sample_gets_a_verified_diff_that_makes_it_clean).
@pytest.mark.parametrize("name", sorted(TEXT_ONLY))
def test_every_text_only_fix_names_its_design_decision(name):
    rule = OWNERS[name]
    decision = rule.decision
    assert decision[0].islower() and not decision.endswith(".") and "`" not in decision, \
        f"{rule.code}: a decision is one clause, no code span (a span would be read as a candidate edit)"
    assert any(word in decision for word in ("whether", "which", "where", "how", "what")) or " or " in decision or \
        "cannot" in decision, f"{rule.code}: name the choice (whether/which ... or ...), or why jaxdiag cannot write it"
    fix = rule.finding(**{field: _Filled() for field in rule.fields}).fix
    assert fix.endswith(f"Design decision: {decision}."), fix


# ---------------------------------------------------------------------------------------------------------------
# The edit model and diffs
# ---------------------------------------------------------------------------------------------------------------


def test_apply_edits_replaces_and_inserts():
    source = "a = 1\nb = 2\nc = 3\n"
    edits = [SourceEdit("/x.py", 2, 2, "b = 20\n"), SourceEdit("/x.py", 4, 3, "d = 4\n"), SourceEdit("/x.py", 1, 0,
                                                                                                   "import os\n")]
    assert apply_edits(source, edits) == "import os\na = 1\nb = 20\nc = 3\nd = 4\n"


def test_overlapping_fixes_keep_the_first(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("x = 1\ny = 2\n")
    first = Fix("one", (SourceEdit(str(path), 1, 1, "x = 10\n"),))
    second = Fix("two", (SourceEdit(str(path), 1, 1, "x = 20\n"),))
    third = Fix("three", (SourceEdit(str(path), 2, 2, "y = 30\n"),))
    patch = combined_diff([first, second, third])
    assert "+x = 10" in patch and "+x = 20" not in patch and "+y = 30" in patch


def test_diff_is_accepted_by_git_apply_and_patch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    path = tmp_path / "pkg" / "ops.py"
    path.write_text("def rule(x):\n    return x, 1\n")
    patch = unified_diff(str(path), path.read_text(), "def rule(x):\n    return x, 0\n")
    assert patch.startswith("diff --git a/pkg/ops.py b/pkg/ops.py\n--- a/pkg/ops.py\n+++ b/pkg/ops.py\n")
    (tmp_path / "fix.patch").write_text(patch)
    subprocess.run(["git", "init", "-q"], check=True)
    subprocess.run(["git", "apply", "--check", "fix.patch"], check=True)
    if shutil.which("patch"):
        subprocess.run(["patch", "-p1", "--dry-run", "-i", "fix.patch"], check=True, capture_output=True)


# ---------------------------------------------------------------------------------------------------------------
# Every fixable bad sample: a verified diff that git applies and that leaves the sample clean
# ---------------------------------------------------------------------------------------------------------------


def _copy_sample(name: str, tmp_path: Path) -> Path:
    folder = tmp_path / "samples"
    folder.mkdir(exist_ok=True)
    for support in ("__init__.py", "ffi_kernels.cc"):
        if (SAMPLES / support).exists():  # the FFI kernels are built and registered by tests/ffi_build.py
            shutil.copy(SAMPLES / support, folder / support)
    shutil.copy(SAMPLES / f"{name}_bad.py", folder / f"{name}_bad.py")
    return folder / f"{name}_bad.py"


@pytest.fixture(scope="module")
def fast_verified(tmp_path_factory) -> dict:
    """The fast tier's fixable sample checked with `fixes=True` once, for its verified diff and for what verifying
    left behind (each a run with a repro script in a fresh interpreter: 1.5 s), seen right after that run: the
    sample is imported by a plain check first, outside the comparison."""
    import linecache

    from jaxdiag import _compat

    def registries() -> dict:
        return {k: len(v) if hasattr(v, "__len__") else v for k, v in _compat.snapshot_jax_state().items()}

    (name,) = FAST
    folder = tmp_path_factory.mktemp("verified")
    path = _copy_sample(name, folder)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.chdir(folder)
        source_before = path.read_text()
        modules = set(sys.modules)
        _lint.check_paths([f"samples/{path.name}"])
        registries_before = registries()
        report = _lint.check_paths([f"samples/{path.name}"], fixes=True)
        seen = {"registries_before": registries_before, "registries_after": registries(),
                "new_fix_modules": [m for m in set(sys.modules) - modules if m.startswith("_jaxdiag_fix_")],
                "source_before": source_before, "source_after": path.read_text(),
                "cached": linecache.cache.get(str(path.resolve()))}
    return {"path": path, "report": report, **seen}


def _problems_expected(name: str) -> bool:
    from expected_codes import expected_for

    entry = expected_for(f"{name}_bad.py")
    return bool(entry.get("error") or entry.get("warning"))


def problems(report) -> list:
    return [(f.code, f.severity) for f in report.findings if f.severity in ("error", "warning")]


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n)) for n in FIXABLE])
def test_fixable_sample_gets_a_verified_diff_that_makes_it_clean(name, tmp_path, monkeypatch, request):
    if name in FFI_CALL_SAMPLES:
        request.getfixturevalue("ffi_kernels")  # their ffi_call targets: compiled and registered in this process
        monkeypatch.setattr(_repro, "SCRIPT_PREFIX", ffi_script_prefix())  # and in each repro run verifying a fix
    if name in FAST:  # checked once for this test and test_verification_leaves_no_trace
        verified = request.getfixturevalue("fast_verified")
        path, report = verified["path"], verified["report"]
        tmp_path = path.parent.parent
        monkeypatch.chdir(tmp_path)
    else:
        path = _copy_sample(name, tmp_path)
        monkeypatch.chdir(tmp_path)
        report = _lint.check_paths([f"samples/{path.name}"], fixes=True)
    if not problems(report) and not _problems_expected(name):
        pytest.skip(f"{name}_bad shows no error or warning on this JAX release (see tests/expected_codes.py)")
    assert problems(report), f"{name}_bad reports nothing"
    for finding in report.findings:
        if finding.severity in ("error", "warning"):
            assert finding.fix_verified is True, f"{finding.code}: fix not verified: {finding.fix}"
            assert finding.diff.startswith(f"diff --git a/samples/{path.name} b/samples/{path.name}\n")
            if name in EDIT_ADDS:
                added = [line for line in finding.diff.splitlines() if line.startswith("+") and
                         not line.startswith("+++")]
                assert any(EDIT_ADDS[name].search(line) for line in added), finding.diff
    patch = _fixes.combined_diff(_fixes.verified_fixes(report))
    (tmp_path / "fix.patch").write_text(patch)
    subprocess.run(["git", "init", "-q"], check=True, cwd=tmp_path)
    subprocess.run(["git", "apply", "--check", "fix.patch"], check=True, cwd=tmp_path)
    subprocess.run(["git", "apply", "fix.patch"], check=True, cwd=tmp_path)
    fixed = path.with_name(f"{name}_fixed.py")  # a new file: the loader caches modules by path
    fixed.write_text(path.read_text())
    assert not problems(_lint.check_paths([f"samples/{fixed.name}"])), patch


@pytest.mark.slow  # > 1 s; the fast tier keeps a cheaper test of the same feature
def test_cli_diff_then_fix(tmp_path):
    """`--diff` prints only the patch (stdout), `--fix` writes it and exits 0 when nothing else remains."""
    path = _copy_sample("jxb004", tmp_path)
    cmd = [sys.executable, "-m", "jaxdiag", "check", f"samples/{path.name}"]
    diff = subprocess.run(cmd + ["--diff"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert diff.returncode == 1, diff.stderr
    assert diff.stdout.startswith("diff --git a/samples/jxb004_bad.py"), diff.stdout
    assert "+    return (codes, codebook), (bx, None)" in diff.stdout
    (tmp_path / "fix.patch").write_text(diff.stdout)
    subprocess.run(["git", "init", "-q"], check=True, cwd=tmp_path)
    subprocess.run(["git", "apply", "--check", "fix.patch"], check=True, cwd=tmp_path)
    before = path.read_text()
    fixed = subprocess.run(cmd + ["--fix", "--format", "json"], cwd=tmp_path, capture_output=True, text=True,
                           check=False)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "fixed 1 finding(s)" in fixed.stderr
    line = _line_of(before, "(bx, 0)")
    fixed_line = before.splitlines(True)[line[0] - 1].replace("(bx, 0)", "(bx, None)")  # the user's comment stays
    assert path.read_text() == apply_edits(before, [SourceEdit(str(path), *line, fixed_line)])


def _line_of(text: str, needle: str) -> tuple[int, int]:
    line = next(i for i, t in enumerate(text.splitlines(), start=1) if needle in t)
    return line, line


# ---------------------------------------------------------------------------------------------------------------
# Tutorial-style modules: the fix names the right dim, at the rule's own line
# ---------------------------------------------------------------------------------------------------------------

_EXPECT = re.compile(r"#\s*jaxdiag-expect:\s*(?P<code>JX[A-Z]\d{3})(?:\s+dim\s+(?P<dim>\S+))?")


def _expectation(path: Path) -> tuple[str, int, str | None]:
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        match = _EXPECT.search(text)
        if match:
            return match.group("code"), number, match.group("dim")
    raise AssertionError(f"no jaxdiag-expect marker in {path}")


@pytest.mark.slow
@pytest.mark.parametrize("module", ["reduction_shift", pytest.param("swapaxes_rule", marks=pytest.mark.slow)])
def test_fix_names_the_measured_batch_axis(module, monkeypatch):
    monkeypatch.chdir(ROOT)
    path = TUTORIAL / f"{module}.py"
    code, line, dim = _expectation(path)
    report = _lint.check_paths([str(path.relative_to(ROOT))], fixes=True)
    finding = next(f for f in report.findings if f.code == code)
    assert finding.location is not None and finding.location.line == line
    assert f"batch axis is at dim {dim}" in finding.fix
    assert finding.fix_verified is True
    assert re.search(rf"^\+\s*return out, {dim}\b", finding.diff, re.MULTILINE), finding.diff
    for absent in ("x[0]", "reduces over the batch"):
        assert absent not in finding.fix


@pytest.mark.slow
def test_wrong_values_are_not_blamed_on_the_dim(monkeypatch):
    monkeypatch.chdir(ROOT)
    path = TUTORIAL / "wrong_values.py"
    code, _, _ = _expectation(path)
    report = _lint.check_paths([str(path.relative_to(ROOT))])
    finding = next(f for f in report.findings if f.code == code)
    assert "computes the wrong values, not just the wrong dim" in finding.fix
    assert "batch axis is at 0 and wrong elsewhere" not in finding.fix
    assert "x[0]" not in finding.fix  # the rule does not index


def test_lambda_abstract_eval_is_located_at_its_own_line(monkeypatch):
    monkeypatch.chdir(ROOT)
    path = TUTORIAL / "lambda_abstract_eval.py"
    code, line, _ = _expectation(path)
    finding = next(f for f in _lint.check_paths([str(path.relative_to(ROOT))]).findings if f.code == code)
    assert finding.location is not None and finding.location.line == line


def _finding_at_marker(module: str, fixes: bool = False):
    path = TUTORIAL / f"{module}.py"
    code, line, _ = _expectation(path)
    report = _lint.check_paths([str(path.relative_to(ROOT))], fixes=fixes)
    return next(f for f in report.findings if f.code == code), line


@pytest.mark.slow
def test_defvectorized_with_unbatched_argument(monkeypatch):
    """Located at the `defvectorized` line, fix names `defbroadcasting` (verified), no mixed-up argument names."""
    monkeypatch.chdir(ROOT)
    finding, line = _finding_at_marker("vectorized_two_args", fixes=True)
    assert finding.location is not None and finding.location.line == line
    assert "batching.defbroadcasting(scaled_add_p)" in finding.fix
    assert "axis_data" not in finding.fix and "shape[batched_args" not in finding.fix
    assert finding.fix_verified is True and "+batching.defbroadcasting(scaled_add_p)" in finding.diff


@pytest.mark.slow
def test_defvectorized_on_a_non_elementwise_primitive_is_located_at_the_registration(monkeypatch):
    monkeypatch.chdir(ROOT)
    finding, line = _finding_at_marker("vectorized_not_elementwise")
    assert finding.location is not None and finding.location.line == line
    assert "batching.defvectorized(total_p)" in finding.fix


@pytest.mark.slow
def test_error_in_a_helper_is_located_in_the_rule(monkeypatch):
    """The helper raises; the finding points at the rule's call into it, named after the rule."""
    monkeypatch.chdir(ROOT)
    finding, line = _finding_at_marker("helper_raises")
    assert finding.location is not None
    assert (finding.location.line, finding.location.function) == (line, "_fma_batch")
    assert "unbatched arguments (dim None)" in finding.fix


def test_long_jax_errors_keep_their_operative_part():
    from jaxdiag._checks._shared import first_line

    long = TypeError("dot_general requires contracting dimensions to have the same shape, got (4,) and (5,)."
                     + " Some more context about the call site and the tracer." * 8)
    assert "got (4,) and (5,)" in first_line(long)
    multi = ValueError("Incompatible shapes in the rule output.\nsome detail\nExpected (4, 4), Actual (5, 4).\nmore")
    assert first_line(multi) == "ValueError: Incompatible shapes in the rule output (Expected (4, 4), Actual (5, 4))"
    buried = ValueError("x" * 300 + " Expected (4, 4), Actual (5, 4) " + "y" * 300)
    text = first_line(buried)
    assert "Expected (4, 4), Actual (5, 4)" in text and len(text) < 400


@pytest.mark.slow
def test_fwd_calling_the_custom_vjp_is_located_at_fwd(monkeypatch):
    """grad of grad fails because fwd calls the custom_vjp itself: the finding is at that line of fwd, and the
    verified fix computes the primal directly."""
    from jaxdiag._run import _engine
    from jaxdiag._checks._base import Options

    monkeypatch.chdir(ROOT)
    path = TUTORIAL / "fwd_calls_itself.py"
    code, line, _ = _expectation(path)
    report = _engine.run(f"{path.relative_to(ROOT)}:softplus", [], {}, Options(command="grad", order=2, fixes=True))
    finding = next(f for f in report.findings if f.code == code)
    assert finding.location is not None and (finding.location.line, finding.location.function) == (
        line, "softplus_fwd")
    assert "softplus_fwd calls softplus itself" in finding.message
    assert finding.fix_verified is True and "+    return jnp.logaddexp(x, 0.0), x" in finding.diff


def test_transpose_asserting_the_linear_argument(monkeypatch):
    """`assert ad.is_undefined_primal(y)`: reported as assuming the linear argument, at the assert, with the fix
    "handle the case where y is a known primal", and with every failing direction."""
    from jaxdiag._run import _engine
    from jaxdiag._checks._base import Options

    monkeypatch.chdir(ROOT)
    path = TUTORIAL / "transpose_asserts.py"
    code, line, _ = _expectation(path)
    report = _engine.run(f"{path.relative_to(ROOT)}:mul_p", [], {}, Options(command="grad"))
    finding = next(f for f in report.findings if f.code == code)
    assert finding.location is not None and (finding.location.line, finding.location.function) == (
        line, "_mul_transpose")
    assert "handle the case where y is a known primal" in finding.fix
    assert "jax.grad with respect to x fails; with respect to y it works" in finding.message
    assert "one cotangent per argument" not in finding.fix


@pytest.mark.slow
def test_fixes_never_mention_constructs_absent_from_the_code(monkeypatch):
    """No `ffi_call` in a fix for code without one; the removed `lax.zeros_like_array` is a removed API (JXR008) at
    its own line, not a symbolic-zero defect, with a verified replacement (on a JAX that removed it; one that still
    has it says JXR008 cannot show there)."""
    from jaxdiag import _compat
    from jaxdiag._run import _engine
    from jaxdiag._checks._base import Options

    monkeypatch.chdir(ROOT)
    path = TUTORIAL / "grad_through_numpy.py"
    code, line, _ = _expectation(path)
    report = _engine.run(f"{path.relative_to(ROOT)}:clipped_norm", [], {}, Options(command="grad"))
    finding = next(f for f in report.findings if f.code == code)
    assert "ffi_call" not in finding.fix and "callback" not in finding.fix and "jax.numpy" in finding.fix

    path = TUTORIAL / "removed_zeros_like.py"
    code, line, _ = _expectation(path)
    report = _engine.run(f"{path.relative_to(ROOT)}:multiply_add_p", [], {}, Options(command="grad", fixes=True))
    assert "JXG006" not in report.codes()
    if ("jax.lax", "zeros_like_array") in _compat.removed_apis_still_here():
        # This JAX still has it, so the rule runs and JXR008 cannot show: the report says so in a note that names
        # the line and the replacement, and reports no defect.
        assert not [f for f in report.findings if f.severity in ("error", "warning")], report.findings
        note = next(f for f in report.findings if f.code == "JXN003" and code in f.message)
        assert "jax.lax.zeros_like_array" in note.message and f"(line {line})" in note.message
        assert "jnp.zeros_like" in note.message
        return
    finding = next(f for f in report.findings if f.code == code)
    assert finding.location is not None and finding.location.line == line
    assert "jax.lax.zeros_like_array" in finding.message and "jnp.zeros_like" in finding.fix
    assert finding.fix_verified is True


def test_verification_leaves_no_trace(fast_verified):
    """Re-running on edited copies restores the rule registries, sys.modules and linecache, and never writes."""
    seen = fast_verified
    assert any(f.fix_verified for f in seen["report"].findings)
    assert seen["registries_after"] == seen["registries_before"]
    assert not seen["new_fix_modules"]
    assert seen["source_after"] == seen["source_before"]
    assert seen["cached"] is None or "".join(seen["cached"][2]) == seen["source_before"]


# ---------------------------------------------------------------------------------------------------------------
# Edits derived from the evidence and the user's AST (no JAX run: a finding as a check writes it)
# ---------------------------------------------------------------------------------------------------------------


def _derived(tmp_path: Path, source: str, code: str, message: str, fix: str = "", marker: str = "# here"
             ) -> list[str]:
    """The candidate sources for a finding located at the line carrying `marker`."""
    from jaxdiag._fixes import candidate_fixes
    from jaxdiag._core._report import Finding, Location

    path = tmp_path / "mod.py"
    path.write_text(source)
    line = next(i for i, t in enumerate(source.splitlines(), start=1) if marker in t)
    finding = Finding(code, "name", "error", message, fix, Location(str(path), line, "rule"))
    return [apply_edits(source, fix.edits) for fix in candidate_fixes(finding)]


_JVP = "import jax.numpy as jnp\n\n\ndef _sin_jvp(g, x):  # here\n    return {expr}\n"


@pytest.mark.parametrize("got, want, scaled", [
    ("[0.5, -1.25, 2]", "[-0.5, 1.25, -2]", "return -(g * jnp.cos(x))"),
    ("[1, -2.5, 4]", "[0.5, -1.25, 2]", "return (g * jnp.cos(x)) / 2"),
    ("[0.25, -0.625, 1]", "[0.5, -1.25, 2]", "return (g * jnp.cos(x)) * 2"),
])
def test_a_constant_factor_in_the_evidence_divides_the_derivative(tmp_path, got, want, scaled):
    source = _JVP.format(expr="g * jnp.cos(x)")
    message = f"_sin_jvp disagrees: tangent of output for a step in x: the rule gives {got}, float64 finite " \
              f"differences give {want} (max abs difference 1)"
    assert any(scaled in c for c in _derived(tmp_path, source, "JXG001", message)), scaled


def test_no_factor_when_the_evidence_shows_a_different_formula(tmp_path):
    source = _JVP.format(expr="g * jnp.cos(x)")
    message = "tangent of output for a step in x: the rule gives [0.5, 1.3, 2], float64 finite differences give " \
              "[-0.5, 1.25, -2] (max abs difference 1)"
    assert _derived(tmp_path, source, "JXG001", message) == []


def test_a_custom_jvp_rule_scales_only_its_tangent(tmp_path):
    source = ("import jax.numpy as jnp\n\n\ndef tanh_jvp(primals, tangents):  # here\n    (x,), (t,) = primals, "
              "tangents\n    y = jnp.tanh(x)\n    return y, (y * y - 1.0) * t\n")
    message = "tanh_jvp's tangent is wrong: along every direction the rule's tangent is the reference times -1."
    assert any("return y, -((y * y - 1.0) * t)" in c for c in _derived(tmp_path, source, "JXG024", message))


def test_a_conjugate_cotangent_gets_conj(tmp_path):
    source = "import jax.numpy as np_\n\n\ndef abs2_bwd(z, g):  # here\n    return (2.0 * g * z,)\n"
    message = "abs2_bwd's gradient is wrong: abs2_bwd's cotangent for z is exactly the complex conjugate of autodiff's."
    assert any("return (np_.conj(2.0 * g * z),)" in c for c in _derived(tmp_path, source, "JXG024", message))


def test_broadcast_axes_are_summed_in_the_arguments_entry(tmp_path):
    source = ("import jax\n\n\n@jax.custom_vjp\ndef add_bias(x, b):\n    return x + b\n\n\ndef fwd(x, b):\n"
              "    return x + b, None\n\n\ndef bwd(res, g):  # here\n    return g, g\n\n\nadd_bias.defvjp(fwd, bwd)\n")
    message = "custom_vjp bwd output has the wrong structure: bwd's cotangent for b has shape f32[5,4,3] but b is " \
              "f32[1,3]; JAX rejects it"
    candidates = _derived(tmp_path, source, "JXG010", message)
    assert any("import jax.numpy as jnp\n" in c and "return g, jnp.sum(g, axis=(0, 1)).reshape((1, 3))" in c
               for c in candidates), candidates


def test_an_output_built_batch_last_is_moved_first(tmp_path):
    source = ("import jax.numpy as jnp\n\n\ndef outer_vmap(axis_size, in_batched, x, y):  # here\n"
              "    return jnp.einsum('bi,bj->ijb', x, y), True\n")
    fix = "In `outer_vmap`, put the batch axis first: `out = jnp.moveaxis(out, 2, 0)` before returning."
    candidates = _derived(tmp_path, source, "JXV003", "batch axis last", fix)
    assert any("return jnp.moveaxis(jnp.einsum('bi,bj->ijb', x, y), 2, 0), True" in c for c in candidates)


def test_a_block_in_the_fix_replaces_the_operands_moveaxis(tmp_path):
    source = ("import jax.numpy as jnp\n\n\ndef rule(args, dims):\n    p, q = args\n    bp, bq = dims\n"
              "    p = jnp.moveaxis(p, bp, 0)  # here\n    q = jnp.moveaxis(q, bq, 0)\n    return p @ q, 0\n")
    fix = ("Handle unbatched arguments (dim None), e.g.\n    size = p.shape[bp] if bp is not None else q.shape[bq]\n"
           "    p = batching.bdim_at_front(p, bp, size)\n    q = batching.bdim_at_front(q, bq, size)\nthen return 0.")
    candidates = _derived(tmp_path, source, "JXB006", "raised", fix)
    want = ("    size = p.shape[bp] if bp is not None else q.shape[bq]\n    p = batching.bdim_at_front(p, bp, size)  "
            "# here\n    q = batching.bdim_at_front(q, bq, size)\n    return p @ q, 0\n")
    assert any(c.endswith(want) for c in candidates), candidates


def test_an_output_made_unbatched_is_returned_unbroadcast(tmp_path):
    source = ("import jax.numpy as jnp\n\n\ndef rule(args, dims):\n    (x,), (bx,) = args, dims\n"
              "    n = jnp.broadcast_to(jnp.float32(3), (x.shape[0],))\n    return (x, n), (0, 0)  # here\n")
    fix = "Return None as output 1's dim: `return (x, n), (0, None)`."
    candidates = _derived(tmp_path, source, "JXB003", "unbatched output", fix)
    assert candidates[0].endswith("    n = jnp.float32(3)\n    return (x, n), (0, None)  # here\n"), candidates
    assert "    n = jnp.broadcast_to(" in candidates[1]  # the return alone is tried next


# ---------------------------------------------------------------------------------------------------------------
# End-to-end verification: a candidate the re-run accepts but whose plain-JAX repro still fails is not verified
# ---------------------------------------------------------------------------------------------------------------


def test_a_fix_whose_repro_still_fails_is_not_verified(tmp_path):
    from jaxdiag._fixes._verify import verify_findings
    from jaxdiag._core._report import Finding, Location, Report, TargetReport

    path = tmp_path / "m.py"
    path.write_text("def rule(x):\n    return x, 1\n")
    finding = Finding("JXB001", "name", "error", "wrong dim", "`return x, 0`", Location(str(path), 2, "rule"))
    report = Report([TargetReport("m.py:rule", "primitive", findings=[finding])])
    clean = Report([TargetReport("m.py:rule", "primitive")])
    seen: list[str] = []

    def repro(found, target, sources):
        seen.append(sources[str(path)])
        return "AssertionError: output 0 differs"

    fixes = verify_findings(report, lambda sources: clean, _fixes.candidate_fixes, lambda p: True, repro)
    assert fixes == [] and finding.fix_verified is False and finding.diff == ""
    assert seen == ["def rule(x):\n    return x, 0\n"]  # the repro ran on the edited copy
    assert "fix_verified" in finding.to_dict() and "diff" not in finding.to_dict()
    verified = verify_findings(report, lambda sources: clean, _fixes.candidate_fixes, lambda p: True,
                               lambda *a: None)
    assert len(verified) == 1 and finding.fix_verified is True and "+    return x, 0" in finding.diff


# ---------------------------------------------------------------------------------------------------------------
# Probes under tests/data/fixes: each gets a verified diff (the re-run clean, the repro passing on the edited copy)
# ---------------------------------------------------------------------------------------------------------------

FIX_DATA = Path(__file__).resolve().parent / "data" / "fixes"


@pytest.mark.slow
@pytest.mark.parametrize("module, added", [
    ("nondiff_scale", "return (g * scale,)"),  # a nondiff_argnums argument's cotangent entry dropped
    ("fwd_triple", "return 2.0 * y, (y, x)"),  # fwd's flat residuals paired, with the user's names
    ("bias_unsummed", "return g, jnp.sum(g, axis=0)"),  # the broadcast axis summed
    ("batch_not_moved", "return jnp.flip(values, axis=1), 0"),  # the operand's batch axis moved to the front
])
def test_probe_gets_a_verified_diff_that_makes_it_clean(module, added, tmp_path, monkeypatch):
    shutil.copy(FIX_DATA / f"{module}.py", tmp_path / f"{module}.py")
    monkeypatch.chdir(tmp_path)
    report = _lint.check_paths([f"{module}.py"], fixes=True)
    found = [f for f in report.findings if f.severity in ("error", "warning")]
    assert found and all(f.fix_verified for f in found), [(f.code, f.fix) for f in found]
    assert any(line[1:].strip() == added for f in found for line in f.diff.splitlines()
               if line.startswith("+")), found[0].diff
    fixed = tmp_path / f"{module}_fixed.py"
    fixed.write_text(apply_edits((tmp_path / f"{module}.py").read_text(),
                                 [e for fix in _fixes.verified_fixes(report) for e in fix.edits]))
    assert not problems(_lint.check_paths([fixed.name]))


@pytest.mark.slow
def test_suggested_config_gives_a_static_argument_a_literal(tmp_path, monkeypatch):
    """`check` cannot draw a nondiff_argnums argument: the inputs it suggests hold a Python literal there, and a
    module declaring exactly them checks clean (no array for a static argument, no new error)."""
    shutil.copy(FIX_DATA / "nondiff_inferred.py", tmp_path / "nondiff_inferred.py")
    monkeypatch.chdir(tmp_path)
    report = _lint.check_paths(["nondiff_inferred.py"])
    note = next(f for f in report.findings if "JAXDIAG = " in f.fix)
    declared = re.search(r"(JAXDIAG = \{.*\}) in ", note.fix).group(1)
    assert '"f32[3]", "0.1"' in declared, note.fix
    (tmp_path / "declared.py").write_text((tmp_path / "nondiff_inferred.py").read_text() + f"\n{declared}\n")
    after = _lint.check_paths(["declared.py"])
    assert not problems(after) and "scaled" in " ".join(t.target for t in after.targets), after.findings
    assert not [f for f in after.findings if "could not infer" in f.message]


def test_a_block_of_new_statements_goes_at_the_top_of_the_rule(tmp_path):
    source = ("import jax.numpy as jnp\n\n\ndef dot_vmap(axis_size, in_batched, u, v):  # here\n"
              "    \"\"\"Doc.\"\"\"\n    return jnp.einsum('bj,bj->b', u, v), True\n")
    fix = ("Make `dot_vmap` handle every `in_batched` combination: broadcast it first, e.g.\n"
           "    u_batched, v_batched = in_batched\n"
           "    u = u if u_batched else jnp.broadcast_to(u, (axis_size, *u.shape))\n"
           "    v = v if v_batched else jnp.broadcast_to(v, (axis_size, *v.shape))\nat the top of the rule.")
    candidates = _derived(tmp_path, source, "JXV005", "raised", fix)
    want = ("    \"\"\"Doc.\"\"\"\n    u_batched, v_batched = in_batched\n"
            "    u = u if u_batched else jnp.broadcast_to(u, (axis_size, *u.shape))\n"
            "    v = v if v_batched else jnp.broadcast_to(v, (axis_size, *v.shape))\n    return jnp.einsum(")
    assert any(want in c for c in candidates), candidates


def test_moving_the_batch_axis_first_uses_the_rules_names_and_returns_0(tmp_path):
    source = ("import jax.numpy as jnp\n\n\ndef rule(batched_args, batch_dims):  # here\n"
              "    (values,), (bv,) = batched_args, batch_dims\n    return jnp.flip(values, axis=1), bv\n")
    fix = ("It assumes the batch dim is 0. Move each operand's batch axis to the front, e.g.\n"
           "    values = jnp.moveaxis(values, bv, 0) if bv is not None else values\nthen return 0.")
    candidates = _derived(tmp_path, source, "JXB005", "differs", fix)
    want = ("    (values,), (bv,) = batched_args, batch_dims\n"
            "    values = jnp.moveaxis(values, bv, 0) if bv is not None else values\n"
            "    return jnp.flip(values, axis=1), 0\n")
    assert any(c.endswith(want) for c in candidates), candidates


def test_a_cotangent_cast_to_another_dtype_loses_the_cast(tmp_path):
    source = ("import jax\nimport jax.numpy as jnp\n\n\n@jax.custom_vjp\ndef f(x, w):\n    return x * w\n\n\n"
              "def f_fwd(x, w):\n    return x * w, (x, w)\n\n\ndef f_bwd(res, g):  # here\n    x, w = res\n"
              "    return (g * w).astype(jnp.float16), g * x\n\n\nf.defvjp(f_fwd, f_bwd)\n")
    message = "f_bwd's cotangent for x is f16 but x is f32: JAX does not check cotangent dtypes"
    candidates = _derived(tmp_path, source, "JXG004", message)
    assert any("    return g * w, g * x\n" in c for c in candidates), candidates
    assert any("    return ((g * w).astype(jnp.float16)).astype(x.dtype), g * x\n" in c for c in candidates)


@pytest.mark.slow
def test_a_fix_in_a_package_module_with_relative_imports_is_verified(tmp_path, monkeypatch):
    """The repro that verifies the fix loads the edited copy under the module's own name, so `from .helpers import
    ...` still resolves in its package."""
    shutil.copytree(FIX_DATA / "relpkg", tmp_path / "relpkg")
    monkeypatch.chdir(tmp_path)
    report = _lint.check_paths(["relpkg/ops.py"], fixes=True)
    finding = next(f for f in report.findings if f.code == "JXV003")
    assert finding.fix_verified is True, getattr(finding, "verified_fix", None)
    assert "+    return jnp.moveaxis(outer_batched(x, y), 2, 0), True" in finding.diff


def test_a_fwd_primal_is_computed_as_the_function_computes_it(tmp_path):
    source = ("import jax\nimport jax.numpy as jnp\n\n\n@jax.custom_vjp\ndef my_tanh(u):\n    return jnp.tanh(u)\n\n\n"
              "def my_tanh_fwd(u):  # here\n    t, d = jnp.tanh(u), 1 - jnp.tanh(u) ** 2\n    return d, (d,)\n\n\n"
              "def my_tanh_bwd(res, g):\n    return (g * res[0],)\n\n\nmy_tanh.defvjp(my_tanh_fwd, my_tanh_bwd)\n")
    message = "custom_vjp fwd does not match the function: my_tanh_fwd's primal output differs from my_tanh's: ..."
    candidates = _derived(tmp_path, source, "JXG012", message)
    assert "    return t, (d,)\n" in candidates[0], candidates
    assert "    return jnp.tanh(u), (d,)\n" in candidates[1], candidates
