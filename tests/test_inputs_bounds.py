"""Every bad input is one `jaxdiag: error:` line, exit 2, before any check runs, nothing written: SPEC bounds
(length, nesting, rank, elements, domains a dtype cannot hold), pytree keys, non-JAX dtypes, --timeout, pyproject,
--repro, --fix on read-only files, a folder as TARGET, --in-axes and --arg count against the loaded target. And a
module loaded by path follows its file."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from clirun import Runner

from jaxdiag._loading import _cli_values, _inputs
from jaxdiag._parent._cli import app
from jaxdiag._core._errors import UsageError
from jaxdiag._loading._inputs import ArgSpec, draw, parse_arg

OPS = Path(__file__).parent / "data" / "bounds" / "ops.py"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(OPS, tmp_path / "ops.py")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def usage_error(*args: str, report: Path | None = None) -> str:
    """Run the CLI; assert exit 2 with one error line, nothing on stdout and no report written; the line."""
    argv = list(args) + (["--output", str(report)] if report is not None else [])
    result = Runner().invoke(app, argv)
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jaxdiag: error: "), result.stderr
    assert result.stdout == ""
    assert report is None or not report.exists()
    return lines[0]


# ---------------------------------------------------------------------------------------------------------------
# SPEC bounds (A, C): refused when parsed, naming the bound
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, says", [
    ("i32[3]@0.5..0.6", "holds no integer"),
    ("u8[3]@-5..5", "outside what u8 holds (0..255)"),
    ("i8[2]@0..1000", "outside what i8 holds"),
    ("f32[3]@1e39..1e40", "overflows f32: its largest value is 3.40282e+38"),
    ("f16[2]@-1e5..0", "overflows f16: its largest value is 65504"),
    ("c64[2]@0..1e39", "overflows c64"),
    ("{'a': f32[3], 1: f32[3]}", "dict keys must be all strings or all ints"),
    ("{'a': f32[3], 'a': f32[2]}", "dict key 'a' given twice"),
    ("{True: f32[3]}", "dict keys must be strings or ints"),
    ("f32[" + ",".join(["1"] * 65) + "]", f"65 dimensions, more than the bound of {_inputs.MAX_RANK} (MAX_RANK"),
    ("f32[" + ",".join(["1"] * (_inputs.MAX_RANK + 1)) + "]", "MAX_RANK"),
    ("f32[9223372036854775808]", "dimension 9223372036854775808 is larger than the bound"),
    ("f32[0,9223372036854775808]", "MAX_ELEMENTS"),  # no elements, but no array can have that dimension
    ("f32[100000,100000]", f"10000000000 elements (38147 MiB), more than the bound of {_inputs.MAX_ELEMENTS}"),
    ("key[100000,100000]", "MAX_ELEMENTS"),
    ("f32[3]" + " " * 20_000, "more than the bound of 10000 (MAX_SPEC_CHARS)"),
    ("(" * 40 + "f32[3]" + ")" * 40, "(MAX_SPEC_DEPTH)"),
    ("O", "NumPy's dtype object, which JAX arrays cannot have"),
    ("str", "NumPy's dtype str, which JAX arrays cannot have"),
    ("datetime64", "which JAX arrays cannot have"),
    ("float128", "which JAX arrays cannot have"),
    ("f", "NumPy's alias of float32; write float32 (or f32)"),
    ("float", "NumPy's alias of float64"),
])
def test_a_spec_beyond_a_bound_is_refused_naming_it(spec, says):
    with pytest.raises(UsageError, match="bad argument spec") as info:
        parse_arg(spec)
    assert says in str(info.value)
    assert "\n" not in str(info.value) and len(str(info.value)) < 700  # one readable line, even for 20,000 chars


@pytest.mark.parametrize("spec", [
    "i32[3]@-3..3", "u8[2]@0..255", "f16[2]@-65504..65504", "f32[4096,4096]", "f32[" + ",".join(["1"] * 30) + "]",
    "int32", "bfloat16", "float8_e4m3fn", "int4", "{'a': f32[3], 'b': 1}", "{0: f32[3], 1: f32[2]}",
])
def test_specs_within_the_bounds_are_accepted(spec):
    parse_arg(spec)


def test_a_non_jax_dtype_is_refused_as_a_bind_param_too():
    with pytest.raises(UsageError, match="NumPy's dtype object"):
        _cli_values.parse_param("dtype=O")
    assert _cli_values.parse_param("dtype=bfloat16")[1] == np.dtype("bfloat16")


def test_draws_are_those_of_one_float64_draw_converted():
    """Drawn in chunks into the spec's dtype: the same values as drawing everything in float64 and converting."""
    spec = ArgSpec(np.dtype(np.float32), (3, 5))
    old_chunk = _inputs._DRAW_CHUNK
    try:
        _inputs._DRAW_CHUNK = 4  # several chunks
        chunked = draw(spec, np.random.default_rng(7), "normal", (2,))
        complex_chunked = draw(ArgSpec(np.dtype(np.complex64), (5,)), np.random.default_rng(7), "unit")
    finally:
        _inputs._DRAW_CHUNK = old_chunk
    rng = np.random.default_rng(7)
    assert chunked.dtype == np.float32
    np.testing.assert_array_equal(chunked, rng.standard_normal((2, 3, 5)).astype(np.float32))
    rng = np.random.default_rng(7)
    whole = rng.uniform(0.05, 0.95, 5) + 1j * rng.uniform(0.05, 0.95, 5)
    np.testing.assert_array_equal(complex_chunked, whole.astype(np.complex64))


@pytest.mark.slow  # a fresh interpreter
def test_parsing_specs_does_not_import_jax():
    import subprocess

    code = ("import sys; from jaxdiag._loading._inputs import parse_arg; from jaxdiag._jobs import _record_schema; "
            "from jaxdiag._core import _validate;"
            "parse_arg(\"(f32[3]@-1..1, {'a': i32[2]}, 0.5, int32)\"); assert 'jax' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("spec", ["i32[3]@0.5..0.6", "{'a': f32[3], 1: f32[3]}", "f32[100000,100000]",
                                  "f32[3]@1e39..1e40", "O", "f32[9223372036854775808]", "x" * 20_000])
def test_cli_bad_arg_is_exit_2_and_writes_nothing(project, spec):
    line = usage_error("batching", "ops.py:square_p", "--arg", spec, report=project / "report.json")
    assert "bad argument spec" in line


# ---------------------------------------------------------------------------------------------------------------
# Options and configuration (A)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_timeout_must_be_finite(project, value):
    assert "number of seconds >= 0 and finite" in usage_error("check", "ops.py", "--timeout", value,
                                                     report=project / "r.json")


def test_pyproject_timeout_nan_is_exit_2(project):
    (project / "pyproject.toml").write_text("[tool.jaxdiag]\ntimeout = nan\n")
    assert "timeout must be a number of seconds >= 0 and finite" in usage_error("check", "ops.py")


def test_non_utf8_pyproject_is_exit_2(project):
    (project / "pyproject.toml").write_bytes(b"[tool.jaxdiag]\n# caf\xe9\nseed = 1\n")
    assert "not UTF-8" in usage_error("check", "ops.py")


def test_repro_on_an_existing_file_is_exit_2(project):
    (project / "scripts").write_text("")
    line = usage_error("batching", "ops.py:square_p", "--arg", "f32[3]", "--repro", "scripts")
    assert "'scripts' is a file, not a folder" in line
    assert "is a file" in usage_error("check", "ops.py", "--repro", "scripts/deeper")


def test_fix_on_a_read_only_file_is_exit_2_before_any_check(project):
    os.chmod(project / "ops.py", stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    try:
        for argv in (["batching", "ops.py:square_p", "--arg", "f32[3]", "--fix"], ["check", "ops.py", "--fix"]):
            assert "--fix: ops.py is not writable" in usage_error(*argv, report=project / "r.json")
    finally:
        os.chmod(project / "ops.py", stat.S_IRUSR | stat.S_IWUSR)


@pytest.mark.parametrize("target", ["somedir:x", "./somedir:x", "somedir/:x"])
def test_a_folder_as_target_is_exit_2_without_walking_it(project, target):
    folder = project / "somedir"
    (folder / "deep").mkdir(parents=True)
    # a file the walk would read for inline suppressions (an unknown code there is its own exit 2)
    (folder / "deep" / "noise.py").write_text("x = 1  # jaxdiag: ignore[NOPE999]\n")
    line = usage_error("batching", target, "--arg", "f32[3]")
    assert "is a directory" in line and "NOPE999" not in line


def test_a_package_named_as_a_module_is_still_a_module(project):
    from jaxdiag._core._validate import folder_named

    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_text("")
    assert folder_named("pkg", str(project)) is None
    assert folder_named("pkg/", str(project)) == "pkg/"


# ---------------------------------------------------------------------------------------------------------------
# Inputs against the loaded target (B): usage errors, never findings against correct code
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, says", [
    (["batching", "ops.py:square_p", "--arg", "f32[3]", "--arg", "f32[3]"],
     "ops.py:square_p takes 1 array argument(s)"),
    (["grad", "ops.py:square_p", "--arg", "f32[3]", "--arg", "f32[3]", "--arg", "f32[3]"], "but 3 --arg given"),
    (["batching", "ops.py:square_p", "--arg", "f32[3]", "--in-axes", "0,0"], "has 2 entries but 1 --arg given"),
    (["batching", "ops.py:sine", "--arg", "f32[3]", "--in-axes", "0,None"], "has 2 entries but 1 --arg given"),
    (["batching", "ops.py:square_p", "--arg", "f32[3]", "--in-axes", "3"],
     "axis 3 is out of range for argument 0 (f32[3], batched rank 2: valid axes -2..1)"),
    (["batching", "ops.py:add", "--arg", "f32[3]", "--arg", "f32[2,3]", "--in-axes", "0,-4"],
     "axis -4 is out of range for argument 1"),
    (["batching", "ops.py:add", "--arg", "(f32[3], f32[3])", "--arg", "f32[3]", "--in-axes", "(0, 0, 0),0"],
     "does not match its structure"),
])
def test_inputs_that_do_not_fit_the_target_are_exit_2(project, argv, says):
    assert says in usage_error(*argv, report=project / "r.json")


def test_fitting_axes_are_accepted():
    from jaxdiag._loading._fit import check_in_axes

    templates = [parse_arg("f32[3]"), parse_arg("(f32[2,3], 0.5)")]
    for axes in (None, 0, -2, (1, None), (0, (2, None)), [None, 0]):
        check_in_axes(axes, templates)
    check_in_axes((0, 0, 0), [])  # inferred inputs: nothing given to compare with


def test_primitive_arity_is_unknown_for_star_args():
    from jax.extend.core import Primitive

    from jaxdiag._loading._fit import primitive_arity

    p = Primitive("bounds_star")
    p.def_impl(lambda *xs, axis: xs[0])
    assert primitive_arity(p, {}) is None
    q = Primitive("bounds_two")
    q.def_impl(lambda x, axis: x)
    assert primitive_arity(q, {}) == 2 and primitive_arity(q, {"axis": 0}) == 1


# ---------------------------------------------------------------------------------------------------------------
# Modules loaded by path follow their files (E)
# ---------------------------------------------------------------------------------------------------------------


GOOD_JVP = textwrap.dedent("""
    import jax
    import jax.numpy as jnp


    @jax.custom_jvp
    def f(x):
        return jnp.sin(x)


    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), jnp.cos(primals[0]) * tangents[0]
""")


def test_a_path_loaded_module_edited_in_between_is_reported_on_its_new_code(tmp_path):
    import jaxdiag

    path = tmp_path / "edited_op.py"
    path.write_text(GOOD_JVP)
    first = jaxdiag.check_grad(f"{path}:f", "f32[3]")
    mtime = path.stat().st_mtime_ns
    path.write_text(GOOD_JVP.replace("jnp.cos(primals[0])", "jnp.sin(primals[0])"))  # same size: a wrong JVP
    os.utime(path, ns=(mtime, mtime))  # same mtime too: only the content tells the edit
    second = jaxdiag.check_grad(f"{path}:f", "f32[3]")
    assert first.ok
    assert not second.ok and any(f.severity == "error" for f in second.findings)


def test_a_path_loaded_module_is_loaded_again_only_when_its_content_changed(tmp_path):
    from jaxdiag._loading._targets import load_target

    path = tmp_path / "edited_fn.py"
    path.write_text("def g(x):\n    return x + 1\n")
    first = load_target(f"{path}:g")
    assert load_target(f"{path}:g").module is first.module  # unchanged: the same module, not imported again
    mtime = path.stat().st_mtime_ns
    path.write_text("def g(x):\n    return x + 2\n")
    os.utime(path, ns=(mtime, mtime))
    second = load_target(f"{path}:g")
    assert second.module is not first.module and second.obj(1) == 3 and first.obj(1) == 2


@pytest.mark.parametrize("text", ["(" * 300 + "0" + ")" * 300, "0," * 6000])
def test_axes_beyond_the_text_bounds_are_one_short_line(text):
    with pytest.raises(UsageError) as info:
        _cli_values.parse_axes(text, "--in-axes")
    assert "bad --in-axes" in str(info.value) and len(str(info.value)) < 300
