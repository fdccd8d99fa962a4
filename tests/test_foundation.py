"""Foundation: target loading, SPEC parsing, inputs, the CLI's error contract, JSON schema, determinism."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import jaxdiag
from jaxdiag import _inputs, _locate
from jaxdiag._cli import app
from jaxdiag._errors import UsageError
from jaxdiag._targets import classify, load_target

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


@pytest.fixture()
def user_files(tmp_path, monkeypatch):
    """A folder of user modules with the mistakes a new user makes."""
    files = {
        "good_mod.py": """
            import jax, jax.numpy as jnp
            number = 3
            class Thing: pass
            @jax.custom_jvp
            def smooth(x):
                return jnp.sin(x)
            @smooth.defjvp
            def smooth_jvp(primals, tangents):
                (x,), (t,) = primals, tangents
                return jnp.sin(x), jnp.cos(x) * t
            def needs_matrix(a):
                return a @ a.T @ a
            def two_args(x, y):
                return x * y
            def never_runs(x):
                raise RuntimeError("nope")
        """,
        "imports_missing.py": "import jax\nimport not_a_real_dependency_xyz\n",
        "raises_on_import.py": "import jax\n\nraise RuntimeError('config file missing')\n",
        "broken_syntax.py": "def f(x:\n    return x\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in files:  # each test gets its own copy of these modules
        sys.modules.pop(name[:-3], None)


# ---------------------------------------------------------------------------------------------------------------
# Bad input: one clear line on stderr, exit 2, never a traceback
# ---------------------------------------------------------------------------------------------------------------

BAD_INPUTS = [
    (["batching", ""], "empty target"),
    (["batching", "good_mod"], "missing ':'"),
    (["batching", "good_mod:"], "expected package.module:attr"),
    (["batching", "good_mod:not-an-attr"], "is not an attribute path"),
    (["batching", "no_such_module_xyz:f"], "module 'no_such_module_xyz' not found"),
    (["batching", "imports_missing:f"], "imports_missing.py:2: ModuleNotFoundError: No module named "
                                        "'not_a_real_dependency_xyz'"),
    (["batching", "raises_on_import.py:f"], "raises_on_import.py:3: RuntimeError: config file missing"),
    (["batching", "broken_syntax.py:f"], "syntax error in broken_syntax.py:1"),
    (["batching", "missing_file.py:f"], "file 'missing_file.py' not found"),
    (["batching", "good_mod:smoth"], "did you mean 'smooth'"),
    (["batching", "good_mod:number"], "is a int object"),
    (["batching", "good_mod:Thing"], "is a class"),
    (["batching", "good_mod:two_args", "--arg", "f32[3"], "bad argument spec 'f32[3'"),
    (["batching", "good_mod:two_args", "--arg", "x32[3]"], "unknown dtype 'x32'"),
    (["batching", "good_mod:two_args", "--arg", "f32[a]"], "bad argument spec 'f32[a]'"),
    (["batching", "good_mod:two_args", "--arg", "f32[3]@weird"], "unknown domain 'weird'"),
    (["batching", "good_mod:two_args", "--param", "axis"], "expected NAME=VALUE"),
    (["batching", "good_mod:two_args", "--param", "axis=not valid"], "bad --param axis value"),
    (["batching", "good_mod:two_args", "--param", "axis=1"], "--param applies to primitives"),
    (["batching", "good_mod:two_args", "--in-axes", "0,x"], "bad --in-axes"),
    (["batching", "good_mod:two_args", "--format", "xml"], "unknown --format 'xml'"),
    (["batching", "good_mod:never_runs"], "could not infer example inputs"),
    (["rules", "JXB999"], "unknown rule code 'JXB999'"),
]


@pytest.mark.parametrize("argv,expected", BAD_INPUTS, ids=[" ".join(a) or "empty" for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_exit_2(user_files, argv, expected):
    result = invoke(*argv)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("jaxdiag: error: ")
    assert expected in lines[0]
    assert "Traceback" not in result.output


def test_inference_failure_names_the_arg_to_pass(user_files):
    result = invoke("batching", "good_mod:never_runs")
    assert "--arg f32[3]" in result.stderr and "RuntimeError: nope" in result.stderr


def test_python_dash_m_reports_errors_without_traceback(user_files):
    proc = subprocess.run([sys.executable, "-m", "jaxdiag", "grad", "raises_on_import.py:f"], capture_output=True,
                          text=True, cwd=user_files)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1


# ---------------------------------------------------------------------------------------------------------------
# Target loading and classification
# ---------------------------------------------------------------------------------------------------------------


def test_classify_kinds(user_files):
    import functools

    import jax
    import jax.numpy as jnp
    from jax.extend.core import Primitive

    assert classify(Primitive("p"))[0] == "primitive"
    target = load_target("good_mod:smooth")
    assert target.kind == "custom_jvp"
    assert classify(jax.jit(target.obj)) == ("custom_jvp", target.obj)
    assert classify(jax.jit(lambda x: x))[0] == "function"
    assert classify(functools.partial(jnp.add, 1.0))[0] == "function"
    assert classify(jnp.add)[0] == "function"
    assert classify(jax.nn.relu)[0] == "custom_jvp"


def test_module_and_file_forms_load_the_same_object(user_files):
    by_name = load_target("good_mod:smooth")
    by_path = load_target("good_mod.py:smooth")
    assert by_name.kind == by_path.kind == "custom_jvp"


def test_app_dir_is_put_on_sys_path(user_files, tmp_path_factory, monkeypatch):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(elsewhere)
    result = invoke("grad", "good_mod:smooth", "--arg", "f32[3]", "--app-dir", str(user_files), "--format", "json")
    assert result.exit_code == 0, result.output


def test_locations_resolve_through_decorators_and_are_relative(user_files):
    target = load_target("good_mod:smooth")
    loc = _locate.locate(target.obj.fun)
    assert loc.path == "good_mod.py"
    assert loc.line == 6  # the `def` line, not the decorator on line 5
    assert loc.function == "smooth"


# ---------------------------------------------------------------------------------------------------------------
# SPECs and inputs
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text,dtype,shape", [
    ("f32[2,3]", "float32", (2, 3)), ("f64[]", "float64", ()), ("i32[5]", "int32", (5,)),
    ("bool[4]", "bool", (4,)), ("bf16[8]", "bfloat16", (8,)), ("f16[3]", "float16", (3,)),
    ("c64[2]", "complex64", (2,)), ("u8[3]", "uint8", (3,)), (" f32 [ 2 , 3 ] ", "float32", (2, 3)),
])
def test_parse_spec(text, dtype, shape):
    spec = _inputs.parse_spec(text)
    assert spec.dtype.name == dtype and spec.shape == shape


@given(st.sampled_from(sorted(_inputs.DTYPES)), st.lists(st.integers(0, 9), max_size=4),
       st.sampled_from([None, "positive", "unit", "small", "normal", "-1..2"]))
def test_spec_round_trips(dtype, dims, domain):
    text = f"{dtype}[{','.join(map(str, dims))}]" + (f"@{domain}" if domain else "")
    spec = _inputs.parse_spec(text)
    assert _inputs.parse_spec(str(spec)) == spec
    assert str(spec) == text


def test_draws_are_seeded_and_distinct_per_example():
    spec = _inputs.parse_spec("f32[3]")
    a = _inputs.draw(spec, np.random.default_rng(0), lead=(7,))
    b = _inputs.draw(spec, np.random.default_rng(0), lead=(7,))
    np.testing.assert_array_equal(a, b)
    assert len({tuple(row) for row in a.tolist()}) == 7


@pytest.mark.parametrize("domain,low,high", [("positive", 0, None), ("unit", 0, 1), ("-2..-1", -2, -1)])
def test_domains(domain, low, high):
    values = _inputs.draw(_inputs.parse_spec(f"f32[100]@{domain}"), np.random.default_rng(1))
    assert values.min() > low and (high is None or values.max() < high)


def test_params_and_axes_parsing():
    assert _inputs.parse_param("axes=(0, 1)") == ("axes", (0, 1))
    assert _inputs.parse_param("dtype=int32") == ("dtype", np.dtype("int32"))
    assert _inputs.parse_param("new_dtype=f32") == ("new_dtype", np.dtype("float32"))
    assert _inputs.parse_axes("0,None", "--in-axes") == (0, None)
    assert _inputs.parse_axes("[0, None]", "--out-axes") == [0, None]
    assert _inputs.parse_axes("1", "--in-axes") == 1
    with pytest.raises(UsageError):
        _inputs.parse_axes("(0, 1.5)", "--in-axes")


def test_batch_size_avoids_every_dimension():
    assert _inputs.choose_batch_size([(5, 6), (7,)]) == 8


def test_domain_fallback_is_reported(user_files):
    import jax.numpy as jnp

    report = jaxdiag.check_grad(jnp.log, "f32[3]")
    notes = [f for f in report.findings if f.code == "JXN002"]
    assert notes and "'positive'" in notes[0].message and "@positive" in notes[0].fix
    pinned = jaxdiag.check_grad(jnp.log, "f32[3]@positive")
    assert not [f for f in pinned.findings if f.code == "JXN002"]


def test_inputs_are_inferred_and_reported(user_files):
    report = jaxdiag.check_grad("good_mod:needs_matrix")
    note = [f for f in report.findings if f.code == "JXN001"][0]
    assert "f32[2,3]" in note.message
    assert report.targets[0].inputs == ["f32[2,3]"]


def test_concrete_arrays_are_accepted_by_the_api(user_files):
    report = jaxdiag.check_grad("good_mod:two_args", np.ones(3, np.float32), "f32[3]")
    assert report.targets[0].inputs == ["f32[3]", "f32[3]"]


# ---------------------------------------------------------------------------------------------------------------
# Catalog, reports, renderers, CLI basics
# ---------------------------------------------------------------------------------------------------------------


def test_catalog_rules_are_complete():
    for code, rule in jaxdiag.RULES.items():
        assert code == rule.code and rule.name and rule.summary and rule.what and rule.why
        assert rule.name == rule.name.lower() and " " not in rule.name
        assert "## What it does" in rule.explanation and "## Why is this bad?" in rule.explanation
    names = [r.name for r in jaxdiag.RULES.values()]
    assert len(names) == len(set(names))


def test_rules_command_lists_and_explains():
    listing = invoke("rules")
    assert listing.exit_code == 0 and "JXB004" in listing.output and "JXG011" in listing.output
    one = invoke("rules", "jxb004")
    assert one.exit_code == 0 and "batch-axis-size-mismatch" in one.output and "What it does" in one.output


def test_version_names_jax_and_jaxlib():
    result = invoke("--version")
    assert result.exit_code == 0
    assert "jaxdiag" in result.output and "jax " in result.output and "jaxlib " in result.output


SCHEMA_TYPES = {"schema": int, "jaxdiag_version": str, "jax_version": str, "targets": list, "summary": dict}
TARGET_TYPES = {"target": str, "kind": str, "inputs": list, "checks": list, "findings": list, "problems": list}
PROBLEM_TYPES = {"kind": str, "message": str, "fix": str, "location": (dict, type(None))}
CHECK_TYPES = {"name": str, "status": str, "seconds": (int, float), "detail": str}
FINDING_TYPES = {"code": str, "name": str, "severity": str, "message": str, "fix": str, "location": (dict, type(None))}
LOCATION_TYPES = {"path": str, "line": int, "function": str}


def _assert_keys(obj: dict, types: dict) -> None:
    assert set(obj) == set(types), (sorted(obj), sorted(types))
    for key, kind in types.items():
        assert isinstance(obj[key], kind), (key, obj[key])


def validate_report_json(data: dict) -> None:
    """Every key and type of the JSON contract in DESIGN.md."""
    _assert_keys(data, SCHEMA_TYPES)
    assert data["schema"] == 1
    _assert_keys(data["summary"], {"targets": int, "errors": int, "warnings": int, "infos": int,
                                   "import_failures": int, "internal_errors": int})
    assert data["summary"]["targets"] == len(data["targets"])
    for target in data["targets"]:
        _assert_keys(target, TARGET_TYPES)
        assert target["kind"] in ("primitive", "custom_vjp", "custom_jvp", "custom_vmap", "function")
        assert all(isinstance(s, str) for s in target["inputs"])
        for check in target["checks"]:
            _assert_keys(check, CHECK_TYPES)
            assert check["status"] in ("passed", "failed", "skipped", "error")
        for problem in target["problems"]:  # blocking: an import failure or jaxdiag's own error, never filtered
            _assert_keys(problem, PROBLEM_TYPES)
            assert problem["kind"] in ("import-failed", "internal-error")
        for finding in target["findings"]:
            _assert_keys(finding, FINDING_TYPES)
            assert finding["severity"] in ("error", "warning", "info")
            assert finding["code"] in jaxdiag.RULES
            if finding["location"] is not None:
                _assert_keys(finding["location"], LOCATION_TYPES)
    counts = {s: sum(f["severity"] == s for t in data["targets"] for f in t["findings"])
              for s in ("error", "warning", "info")}
    assert counts == {"error": data["summary"]["errors"], "warning": data["summary"]["warnings"],
                      "info": data["summary"]["infos"]}


def _without_timings(data: dict) -> dict:
    for target in data["targets"]:
        for check in target["checks"]:
            check["seconds"] = 0
    return data


@pytest.mark.parametrize("argv", [
    ["batching", "samples/seed_batching_published.py:my_sum_p", "--arg", "f32[2,3]"],
    ["grad", "samples/seed_vjp_published.py:test_func", "--arg", "f32[3]", "--arg", "f32[3]"],
    ["grad", "samples/seed_jvp.py:test_func"],
])
def test_json_matches_schema_and_is_deterministic(argv, monkeypatch):
    monkeypatch.chdir(ROOT)
    first = invoke(*argv, "--format", "json")
    second = invoke(*argv, "--format", "json")
    assert first.exit_code in (0, 1), first.output
    data = json.loads(first.stdout)
    validate_report_json(data)
    assert _without_timings(data) == _without_timings(json.loads(second.stdout))


def test_output_file_and_exit_zero(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "report.json"
    result = invoke("grad", "samples/seed_vjp_published.py:test_func", "--arg", "f32[3]", "--arg", "f32[3]",
                    "--format", "json", "--output", str(out), "--exit-zero")
    assert result.exit_code == 0 and result.stdout == ""
    validate_report_json(json.loads(out.read_text()))


def test_text_report_shows_code_source_and_fix_without_colour(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("NO_COLOR", "1")
    result = invoke("grad", "samples/seed_vjp_published.py:test_func", "--arg", "f32[3]", "--arg", "f32[3]")
    assert "\x1b[" not in result.stdout
    assert "samples/seed_vjp_published.py:" in result.stdout
    assert "target checked" in result.stdout


def test_report_api():
    from jaxdiag import Finding, Report
    from jaxdiag._report import TargetReport

    clean = Report([TargetReport("t", "function", findings=[Finding("JXN001", "inputs-inferred", "info", "m")])])
    assert clean.ok
    clean.raise_if_failed()
    bad = Report([TargetReport("t", "function", findings=[Finding("JXB005", "x", "error", "observed")])])
    assert not bad.ok
    with pytest.raises(AssertionError, match="observed"):
        bad.raise_if_failed()


def test_report_does_not_depend_on_the_checkout_folder(tmp_path):
    """Seeds derive from the target without its directories: a clone elsewhere draws the same inputs."""
    import shutil

    copy = tmp_path / "elsewhere" / "seed_vjp_structure_fixed.py"
    copy.parent.mkdir()
    shutil.copy(ROOT / "samples" / "seed_vjp_structure_fixed.py", copy)
    here = jaxdiag.check_grad(f"{ROOT}/samples/seed_vjp_structure_fixed.py:test_func", "f32[3]", "f32[3]")
    there = jaxdiag.check_grad(f"{copy}:test_func", "f32[3]", "f32[3]")
    assert [(f.code, f.message) for f in here.findings] == [(f.code, f.message) for f in there.findings]
    assert here.codes() == {"JXG011"}
