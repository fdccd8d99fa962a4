"""`--repro DIR` scripts (plain JAX: fail on the bad samples, pass on the good ones and after the verified fix),
`--show-jaxpr` (the exposing jaxpr, the user's equation marked with its line) and `--platforms` (JXR015)."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clirun import Runner as CliRunner  # stdout/stderr apart on every click
from fix_samples import FFI_CALL_SAMPLES, FIXABLE, ffi_script_prefix

from jaxdiag import _fixes
from jaxdiag._jobs import _lint
from jaxdiag._evidence import _repro
from jaxdiag._parent._cli import app
from jaxdiag._core._report import Finding
from jaxdiag._evidence._exposure import Exposure, exposure_for, mark_and_truncate

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
BAD = sorted(p.name[:6] for p in SAMPLES.glob("jx*_bad.py"))
FAST: set[str] = set()  # the fast tier keeps test_repro_states_expected_and_actual
runner = CliRunner()


def _fixes_marks(name: str) -> list:
    return [] if name in FAST else [pytest.mark.slow]


def _copy(names: list[str], folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    for support in ("__init__.py", "ffi_kernels.cc", *names):
        if (SAMPLES / support).exists():  # the FFI kernels are built and registered by tests/ffi_build.py
            shutil.copy(SAMPLES / support, folder / support)


def _top_level_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _start(script: Path, *args: str, ffi: bool = False) -> subprocess.Popen:
    """Run a repro script as `python SCRIPT ARGS` would; for the JXB020-JXB022 samples, after registering the FFI
    kernels they call by name (a user's own kernels are registered by their program the same way): the script
    itself stays plain JAX."""
    prefix = ffi_script_prefix() if ffi else []
    return subprocess.Popen([sys.executable, *prefix, str(script), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _run(script: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=300,
                          check=False)


# ---------------------------------------------------------------------------------------------------------------
# --repro
# ---------------------------------------------------------------------------------------------------------------


# Bad samples whose repro is known not to reproduce the finding (strict xfails: each fails the run once closed).
KNOWN_REPRO_GAPS: dict[str, str] = {}


# The samples whose repro runs in CI: one per script template and target kind (vmap vs the loop, vjp of vmap, an FFI
# call, a primitive's JVP, a function's VJP, vmap of grad, second order, a reverse-mode solve, a flat primal, a
# registration under jit, custom_vmap). The rest is the sweep (`-m slow`; scripts/fix_coverage.py measures it too).
REPRO_REPRESENTATIVES = {"jxb001", "jxb017", "jxb020", "jxg001", "jxg014", "jxg016", "jxg019", "jxg030", "jxg033",
                         "jxr003", "jxv001"}


def _repro_marks(name: str) -> list:
    gap = KNOWN_REPRO_GAPS.get(name)
    sweep = [] if name in REPRO_REPRESENTATIVES else [pytest.mark.sweep]
    return _fixes_marks(name) + sweep + ([pytest.mark.xfail(reason=gap, strict=True)] if gap else [])


@pytest.mark.parametrize("name", [pytest.param(n, marks=_repro_marks(n)) for n in BAD])
def test_repro_fails_on_the_bad_sample_and_passes_on_the_good_one_and_after_the_fix(name, tmp_path, monkeypatch,
                                                                                   request):
    ffi = name in FFI_CALL_SAMPLES
    if ffi:
        request.getfixturevalue("ffi_kernels")  # built and registered here, and by each script's run below
        monkeypatch.setattr(_repro, "SCRIPT_PREFIX", ffi_script_prefix())  # the runs verifying each script
    folder = tmp_path / "samples"
    _copy([f"{name}_bad.py", f"{name}_good.py"], folder)
    monkeypatch.chdir(tmp_path)

    report = _lint.check_paths([f"samples/{name}_bad.py"], fixes=name in FIXABLE)
    problems = [f for f in report.findings if f.severity in ("error", "warning")]
    if not problems:
        pytest.skip(f"{name}_bad reports only notes under `check` (no repro for notes)")
    for finding in problems:  # a fix that stays text names what only the user can decide (`Rule.decision`)
        assert finding.fix_verified or "Design decision: " in finding.fix, f"{finding.code}: {finding.fix}"
    # write_all runs each script before writing it: it must fail on the bad module, and pass on the fixed copy for
    # a finding whose fix is verified (`verify_script`, tested on its own below); this test adds the good twin
    written, skipped = _repro.write_verified(report, str(tmp_path / "repro"), _fixes.fixed_sources)
    assert not skipped and len(written) == len(problems), f"one verified script per error or warning: {skipped}"
    good = folder / f"{name}_good.py"
    if f"intended[{name.upper()}]" in good.read_text():
        return  # the twin keeps the batch-wide behaviour and marks it intended: its repro shows that behaviour too
    runs = []
    for script in map(Path, written):
        text = script.read_text()
        assert "jaxdiag" not in re.sub(r'""".*?"""', "", text, flags=re.DOTALL), "plain JAX only"
        attr = re.search(r"for part in '([^']+)'\.split", text)
        if attr and attr.group(1).split(".")[0] in _top_level_names(good):
            runs.append((script, _start(script, str(good), ffi=ffi)))
    for script, process in runs:
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, f"{script.name} fails on the good module:\n{err[-3000:]}"


# The transformation a script applies is read off the finding (no JAX: fast)
@pytest.mark.parametrize("code, kind, message, expected", [
    ("JXB017", "primitive", "vjp of vmap differs: `jax.vjp(jax.vmap(row_mean, in_axes=(None, 0)))` with batch size 5, "
     "a different output cotangent per example", Exposure("vjp_vmap", (None, 0), 0, 5)),
    ("JXG016", "primitive", "Gradient differs under a composed transformation: jax.vjp(jax.vmap(f)) with a different "
     "cotangent per example of row_mean: over a batch of 2 examples", Exposure("vjp_vmap", 0, 0, 2)),
    ("JXG016", "function", "Gradient differs under jax.vmap(jax.grad(f))", Exposure("vmap_grad")),
    ("JXG030", "function", "solve does not invert the transpose of matvec", Exposure("vjp")),
    ("JXG014", "function", "f's gradient (jax.grad) differs from the numerical derivative of f", Exposure("vjp")),
    ("JXG014", "function", "f's JVP (jax.jvp) differs from the numerical derivative of f", Exposure("jvp")),
    ("JXG033", "custom_vjp", "bwd's gradient for logits is nonzero where f is flat in logits", Exposure("flat_primal")),
])
def test_exposure_is_read_off_the_finding(code, kind, message, expected):
    finding = Finding(code=code, name="n", severity="error", message=message)
    assert exposure_for(finding, kind) == expected


# A repro is run before it is written: plain scripts standing in for generated ones (no JAX: fast)
_SCRIPT = "import sys\nMODULE = sys.argv[1] if len(sys.argv) > 1 else {module!r}\n{body}\n"


@pytest.mark.parametrize("body, verdict", [
    ("text = open(MODULE).read()\nassert 'bug' not in text, 'output 0: expected 1, actual 2'", None),
    ("pass", "it passes on the module as it is"),
    ("import module_that_is_not_there", "cannot load the module standalone"),
    ("import os\nos._exit(3)", "exits 3 without a Python error"),
])
def test_a_script_is_kept_only_when_it_fails_as_the_defect(tmp_path, body, verdict):
    module = tmp_path / "mod.py"
    module.write_text("bug = True\n")
    reason = _repro.verify_script(_SCRIPT.format(module=str(module), body=body), str(module))
    assert (reason is None) if verdict is None else (verdict in reason), reason


def test_a_script_must_pass_once_the_verified_fix_is_applied(tmp_path):
    module = tmp_path / "mod.py"
    module.write_text("bug = True\n")
    text = _SCRIPT.format(module=str(module), body="assert 'bug' not in open(MODULE).read(), 'still there'")
    assert _repro.verify_script(text, str(module), {str(module): "fixed = True\n"}) is None
    reason = _repro.verify_script(text, str(module), {str(module): "bug = False\n"})
    assert reason is not None and "still fails once the verified fix is applied" in reason and "still there" in reason


@pytest.mark.slow
def test_pytree_arguments_are_called_with_the_users_structure(tmp_path, monkeypatch):
    """A dict argument is passed as a dict: the script fails on the wrong bwd and passes on the correct twin."""
    data = Path(__file__).resolve().parent / "data" / "fixes"
    for which in ("bad", "good"):
        shutil.copy(data / f"dict_dense_{which}.py", tmp_path / f"dict_dense_{which}.py")
    monkeypatch.chdir(tmp_path)
    report = _lint.check_paths(["dict_dense_bad.py"])
    written, skipped = _repro.write_verified(report, str(tmp_path / "repro"))
    assert len(written) == 1 and not skipped, skipped
    text = Path(written[0]).read_text()
    assert re.search(r"TARGET\(\{'b': args\[\d\], 'w': args\[\d\]\}, args\[\d\]\)", text), text
    assert _run(Path(written[0])).returncode != 0
    assert _run(Path(written[0]), str(tmp_path / "dict_dense_good.py")).returncode == 0


@pytest.mark.slow
def test_a_repro_that_cannot_fail_is_not_written_and_the_reason_is_given(tmp_path, monkeypatch, capsys):
    """A finding whose script passes on the module (here: the script's check made blind to the defect) gets no
    script, and `--repro` says why on stderr."""
    from jaxdiag._run import _views

    _copy(["jxb004_bad.py"], tmp_path / "samples")
    monkeypatch.chdir(tmp_path)
    report = _lint.check_paths(["samples/jxb004_bad.py"])
    monkeypatch.setitem(_repro.CHECKS, "vmap", "print('ok')\n")
    _views.deliver(report, "json", None, repro=str(tmp_path / "repro"))
    err = capsys.readouterr().err
    assert "wrote 0 repro script(s)" in err
    assert "no repro script for JXB004 at samples/jxb004_bad.py:" in err and "passes on the module as it is" in err
    assert not (tmp_path / "repro").exists() or not list((tmp_path / "repro").iterdir())


@pytest.mark.slow
def test_repro_states_expected_and_actual(tmp_path, monkeypatch):
    _copy(["jxb004_bad.py"], tmp_path / "samples")
    monkeypatch.chdir(tmp_path)
    scripts = _repro.write_all(_lint.check_paths(["samples/jxb004_bad.py"]), str(tmp_path / "repro"))
    result = _run(Path(scripts[0]))
    assert "AssertionError: output 1: expected shape (5, 3) (batch of 5 at axis 0), actual (3,)" in result.stderr


# ---------------------------------------------------------------------------------------------------------------
# --show-jaxpr
# ---------------------------------------------------------------------------------------------------------------


def _line(path: Path, needle: str) -> int:
    return next(i for i, t in enumerate(path.read_text().splitlines(), start=1) if needle in t)


def test_show_jaxpr_marks_the_rules_equation(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["batching", "samples/jxb004_bad.py:quantize_p", "--arg", "f32[8]", "--show-jaxpr",
                                 "--format", "json"])
    finding = json.loads(result.stdout)["targets"][0]["findings"][0]
    line = _line(SAMPLES / "jxb004_bad.py", "codes, codebook = quantize_p.bind(x)")
    assert finding["jaxpr"].startswith("jax.make_jaxpr(jax.vmap(quantize_p.bind, in_axes=0)):")
    assert f"<-- samples/jxb004_bad.py:{line} (_quantize_batching)" in finding["jaxpr"]
    assert "c:f32[3]" in finding["jaxpr"]  # the unbatched codebook the rule calls batched


def test_show_jaxpr_when_the_transformation_fails(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["grad", "samples/jxg010_bad.py:smooth_abs", "--show-jaxpr", "--format", "json"])
    finding = next(f for f in json.loads(result.stdout)["targets"][0]["findings"] if f["code"] == "JXG010")
    assert finding["jaxpr"].startswith("jax.make_jaxpr(jax.vjp(smooth_abs, ...)) raised TypeError: Custom VJP bwd")
    assert "custom_vjp_call" in finding["jaxpr"]
    assert f"<-- samples/jxg010_bad.py:{_line(SAMPLES / 'jxg010_bad.py', 'return jnp.sqrt')}" in finding["jaxpr"]


def test_jaxpr_text_is_truncated_around_the_marked_lines():
    body = [f"    v{i}:f32[3] = sin v{i - 1}   # /site-packages/jax/x.py:1:2 (f)" for i in range(1, 200)]
    body[120] = "    v120:f32[3] = my_prim v119   # /home/me/proj/ops.py:42:3 (rule)"
    text = "{ lambda ; v0:f32[3]. let\n" + "\n".join(body) + "\n  in (v199,) }"
    shown = mark_and_truncate(text, limit=40).splitlines()
    assert len(shown) < 20
    assert any("<-- /home/me/proj/ops.py:42 (rule)" in s for s in shown)
    assert any("more line(s)" in s for s in shown)
    assert not any("site-packages" in s for s in shown)


def test_marking_is_linear_in_a_padded_line():
    # JAX pads an equation's source comment into a column: a long equation's line is thousands of spaces and a `#`
    # with no source after it (a solve's jaxprs printed in its params); a whole-line regex search backtracked over
    # the padding at every position (seconds per jaxpr)
    lines = [f"    v{i}:f32[3] = stop_gradient v{i - 1}" + " " * 20_000 + "# " for i in range(1, 21)]
    started = time.perf_counter()
    shown = mark_and_truncate("\n".join(lines), limit=100).splitlines()
    assert time.perf_counter() - started < 1.0
    assert shown[0] == "    v1:f32[3] = stop_gradient v0" and len(shown) == 20


def test_no_jaxpr_without_the_option(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["batching", "samples/jxb004_bad.py:quantize_p", "--arg", "f32[8]", "--format",
                                 "json"])
    finding = json.loads(result.stdout)["targets"][0]["findings"][0]
    assert "jaxpr" not in finding and "diff" not in finding and "fix_verified" not in finding


# ---------------------------------------------------------------------------------------------------------------
# --platforms
# ---------------------------------------------------------------------------------------------------------------


def _undeclared(tmp_path: Path, which: str) -> Path:
    """The sample without its JAXDIAG `platforms` declaration: only --platforms / pyproject declare CUDA."""
    path = tmp_path / f"jxr015_{which}_plain.py"
    text = (SAMPLES / f"jxr015_{which}.py").read_text()
    path.write_text(text.replace(', "platforms": ["cpu", "cuda"]', ""))
    return path


def test_platforms_cuda_flags_a_cpu_only_lowering(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = _undeclared(tmp_path, "bad")
    plain = runner.invoke(app, ["batching", f"{bad.name}:softclip_p", "--arg", "f32[4]", "--format", "json"])
    assert plain.exit_code == 0, plain.stdout
    result = runner.invoke(app, ["batching", f"{bad.name}:softclip_p", "--arg", "f32[4]", "--platforms", "cpu,cuda",
                                 "--format", "json"])
    assert result.exit_code == 1, result.stdout
    finding = next(f for f in json.loads(result.stdout)["targets"][0]["findings"] if f["code"] == "JXR015")
    assert finding["severity"] == "warning"
    assert "no lowering for cuda" in finding["message"]
    assert finding["location"]["line"] == _line(bad, 'mlir.register_lowering(softclip_p')
    assert "without `platform=`" in finding["fix"]


def test_platforms_cuda_passes_a_lower_fun_lowering(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good = _undeclared(tmp_path, "good")
    result = runner.invoke(app, ["batching", f"{good.name}:softclip_p", "--arg", "f32[4]", "--platforms",
                                 "cuda,rocm,tpu", "--format", "json"])
    assert result.exit_code == 0, result.stdout
    assert not [f for f in json.loads(result.stdout)["targets"][0]["findings"] if f["code"] == "JXR015"]


def test_platforms_from_pyproject(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = _undeclared(tmp_path, "bad")
    (tmp_path / "pyproject.toml").write_text('[tool.jaxdiag]\nplatforms = ["cpu", "tpu"]\n')
    result = runner.invoke(app, ["batching", f"{bad.name}:softclip_p", "--arg", "f32[4]", "--format", "json"])
    finding = next(f for f in json.loads(result.stdout)["targets"][0]["findings"] if f["code"] == "JXR015")
    assert "no lowering for tpu" in finding["message"]


@pytest.mark.parametrize("value", ["gpu", "cpu,metal", ""])
def test_bad_platform_is_a_usage_error(value, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["batching", "samples/jxr015_good.py:softclip_p", "--platforms", value])
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("jaxdiag: error: --platforms") and len(result.stderr.splitlines()) == 1


@pytest.mark.slow
def test_show_jaxpr_with_list_out_axes(monkeypatch):
    """The exposing vmap of JXB003 uses `out_axes=[0, None]` (a list, unhashable): shown, with JAX's error."""
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["batching", "samples/jxb003_bad.py:l2_normalize_p", "--arg", "f32[3]",
                                 "--show-jaxpr", "--format", "json"])
    assert result.exit_code == 1, result.output
    finding = next(f for f in json.loads(result.stdout)["targets"][0]["findings"] if f["code"] == "JXB003")
    assert "out_axes=[0, None]" in finding["jaxpr"] and "got axis spec None" in finding["jaxpr"]
