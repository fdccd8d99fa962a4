"""ffi_call / pure_callback vmap_method checks (JXB020-JXB022).

pure_callback cases run everywhere. The ffi_call cases compile `samples/ffi_kernels.cc` with the system C++
compiler (tests/ffi_build.py, cached in a private build folder) and are skipped with a reason when there is none.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxdiag
from jaxdiag import _compat
from jaxdiag._run import _engine
from jaxdiag._loading._inputs import parse_spec
from jaxdiag._loading._targets import load_target
from jaxdiag._harness.cache import SubjectCache
from jaxdiag._harness.tracing import trace_function

SAMPLES = Path(__file__).resolve().parent.parent / "samples"

# A missing vmap_method fails under vmap (JXB020, error) where JAX raises; jax 0.5 still falls back to a sequential
# loop with a DeprecationWarning, reported as the variant JXB023 (warning).
MISSING_METHOD = "JXB020" if _compat.vmap_method_none_raises() else "JXB023"


@pytest.fixture(scope="module")
def kernels(ffi_kernels):
    """The compiled sample kernels, registered (conftest's `ffi_kernels` skips with the reason without a compiler)."""


@functools.lru_cache(maxsize=None)
def run_sample(name: str, attr: str) -> jaxdiag.Report:
    """One run per sample target in this process: several tests read the same report (none changes it)."""
    target = load_target(f"{SAMPLES / name}:{attr}")
    return jaxdiag.check_batching(target, *target.module.JAXDIAG[attr]["args"])


def codes(report: jaxdiag.Report) -> set[str]:
    return {f.code for f in report.findings if f.severity in ("error", "warning")}


def only(report: jaxdiag.Report, code: str) -> jaxdiag.Finding:
    found = [f for f in report.findings if f.code == code]
    assert len(found) == 1, [f"{f.code}: {f.message}" for f in report.findings]
    return found[0]


def call_line(name: str, attr: str) -> int:
    """The line of the ffi_call / pure_callback inside `def attr` in the sample."""
    lines = (SAMPLES / name).read_text().splitlines()
    start = next(i for i, text in enumerate(lines) if text.startswith(f"def {attr}("))
    return next(i + 1 for i in range(start, len(lines)) if re.search(r"ffi_call\(|pure_callback\(", lines[i]))


def internal_errors(report: jaxdiag.Report) -> list[str]:
    return [c.detail for t in report.targets for c in t.checks if c.status == "error"]


# ---------------------------------------------------------------------------------------------------------------
# Compiled kernels: the JXB020-JXB022 samples
# ---------------------------------------------------------------------------------------------------------------

# One bad and one good kernel sample per rule stays in the fast tier; the other variants are the slow tier's.
BAD = [pytest.param("jxb021_bad.py", "cumsum_rows", "JXB021", id="jxb021_bad.py:cumsum_rows"),
       pytest.param("jxb021_bad.py", "cumsum_rows_expand", "JXB021", id="jxb021_bad.py:cumsum_rows_expand",
                    marks=pytest.mark.slow),
       pytest.param("jxb021_bad.py", "add_bias", "JXB021", id="jxb021_bad.py:add_bias", marks=pytest.mark.slow),
       pytest.param("jxb020_bad.py", "cumsum_rows", MISSING_METHOD, id="jxb020_bad.py:cumsum_rows"),
       pytest.param("jxb022_bad.py", "cumsum_rows", "JXB022", id="jxb022_bad.py:cumsum_rows")]
GOOD = [pytest.param("jxb021_good.py", "cumsum_rows", id="jxb021_good.py:cumsum_rows"),
        pytest.param("jxb021_good.py", "cumsum_rows_sequential", id="jxb021_good.py:cumsum_rows_sequential",
                     marks=pytest.mark.slow),
        pytest.param("jxb021_good.py", "add_bias", id="jxb021_good.py:add_bias", marks=pytest.mark.slow),
        pytest.param("jxb020_good.py", "cumsum_rows", id="jxb020_good.py:cumsum_rows"),
        pytest.param("jxb022_good.py", "cumsum_rows", id="jxb022_good.py:cumsum_rows")]


@pytest.mark.parametrize("name,attr,code", BAD)
def test_kernel_bad_sample_fires_at_the_ffi_call(kernels, name, attr, code):
    report = run_sample(name, attr)
    assert not internal_errors(report)
    assert codes(report) == {code}, [f.message for f in report.findings]
    finding = only(report, code)
    assert Path(finding.location.path).name == name and finding.location.line == call_line(name, attr)
    assert finding.location.function == attr and finding.fix


@pytest.mark.parametrize("name,attr", GOOD)
def test_kernel_good_sample_is_clean(kernels, name, attr):
    report = run_sample(name, attr)
    assert not internal_errors(report)
    assert not codes(report), [f.message for f in report.findings]


@pytest.mark.slow
def test_not_batch_aware_message(kernels):
    message = only(run_sample("jxb021_bad.py", "cumsum_rows"), "JXB021").message
    assert "`ffi_call('CumsumFlat')`" in message and "vmap_method='broadcast_all'" in message
    assert "max abs difference" in message and "f32[5,3]" in message and "'sequential' the same call" in message
    finding = only(run_sample("jxb021_bad.py", "add_bias"), "JXB021")
    assert "in_axes=(None, 0)" in finding.message and "f32[1,3]" in finding.message
    assert "must have the same number of elements" in finding.message
    assert 'vmap_method="sequential"' in finding.fix and "leading 1" in finding.fix


def test_missing_method_says_which_choices_work(kernels):
    finding = only(run_sample("jxb020_bad.py", "cumsum_rows"), MISSING_METHOD)
    assert "'broadcast_all' and 'expand_dims' match" in finding.fix
    assert finding.severity == ("error" if _compat.vmap_method_none_raises() else "warning")
    legacy = only(run_sample("jxb022_bad.py", "cumsum_rows"), "JXB022")
    assert legacy.severity == "warning" and '`vmap_method="expand_dims"`, which jaxdiag checked matches' in legacy.fix


# ---------------------------------------------------------------------------------------------------------------
# pure_callback (no compiler needed)
# ---------------------------------------------------------------------------------------------------------------


def _flat(x):
    return np.cumsum(np.asarray(x).ravel()).reshape(np.shape(x)).astype(x.dtype)


def _rows(x):
    return np.cumsum(x, axis=-1).astype(x.dtype)


def callback_fn(kernel, method):
    def fn(x):
        return jax.pure_callback(kernel, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method=method)

    return fn


def _callback(kernel, method, expected, slow=False):
    return pytest.param(kernel, method, expected, id=f"{kernel.__name__}-{method}",
                        marks=[pytest.mark.slow] if slow else [])


# Two callbacks stay in the fast tier (one blamed, one clean); the rest are the slow tier's.
CALLBACKS = [_callback(_flat, "broadcast_all", {"JXB021"}), _callback(_flat, "expand_dims", {"JXB021"}, slow=True),
             _callback(_flat, "sequential", set()), _callback(_rows, "broadcast_all", set()),
             _callback(_rows, "expand_dims", set(), slow=True), _callback(_rows, None, {MISSING_METHOD}, slow=True),
             _callback(_rows, "legacy_vectorized", {"JXB022"}, slow=True),
             _callback(_flat, "legacy_vectorized", {"JXB021", "JXB022"}, slow=True)]


@pytest.mark.parametrize("kernel,method,expected", CALLBACKS)
def test_pure_callback(kernel, method, expected):
    report = jaxdiag.check_batching(callback_fn(kernel, method), "f32[3]")
    assert not internal_errors(report)
    assert codes(report) == expected, [f.message for f in report.findings]
    for finding in report.findings:
        if finding.code.startswith("JXB02"):
            assert finding.location.path.endswith("test_ffi.py") and finding.location.function.endswith("fn")
            assert f"pure_callback({kernel.__name__})" in finding.message


@pytest.mark.slow
def test_blames_only_the_call_that_is_not_batch_aware():
    def two_calls(x):
        a = callback_fn(_rows, "broadcast_all")(x)
        b = callback_fn(_flat, "broadcast_all")(x)  # the culprit
        return a + b

    report = jaxdiag.check_batching(two_calls, "f32[2,3]")
    finding = only(report, "JXB021")
    assert "pure_callback(_flat)" in finding.message


@pytest.mark.slow
def test_call_inside_jit_is_found_and_the_traced_jaxpr_is_not_modified():
    @jax.jit
    def jitted(x):
        return callback_fn(_flat, "expand_dims")(x) * 2.0

    def outer(x):
        return jitted(x) + 1.0

    subject = _engine._root_subject(_engine.resolve(outer), {})
    subject.specs = [parse_spec("f32[3]")]
    closed = trace_function(subject, SubjectCache()).value.jaxpr
    before = [_compat.vmap_method_of(e) for e in _compat.iter_eqns(closed) if _compat.is_foreign_call(e)]
    report = jaxdiag.check_batching(outer, "f32[3]")
    assert only(report, "JXB021")
    after = [_compat.vmap_method_of(e) for e in _compat.iter_eqns(closed) if _compat.is_foreign_call(e)]
    assert before == after == ["expand_dims"]


@pytest.mark.slow
def test_function_without_foreign_calls_skips():
    report = jaxdiag.check_batching(lambda x: x * 2.0, "f32[3]")
    checks = {c.name: c for t in report.targets for c in t.checks}
    assert checks["ffi-vmap-method"].status == "skipped"
    assert "no ffi_call or pure_callback" in checks["ffi-vmap-method"].detail


@pytest.mark.slow
def test_samples_build_nothing_on_import(tmp_path):
    """Importing an FFI sample compiles nothing and writes nothing: the kernels are built by the tests only."""
    import subprocess
    import sys

    code = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('s', sys.argv[1]); "
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); print(sorted(m.JAXDIAG))")
    env = {**os.environ, "TMPDIR": str(tmp_path), "CXX": "/nonexistent-compiler"}
    done = subprocess.run([sys.executable, "-c", code, str(SAMPLES / "jxb021_bad.py")], capture_output=True,
                          text=True, env=env, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    assert "cumsum_rows" in done.stdout and not list(tmp_path.iterdir())


@pytest.mark.slow
def test_a_callback_its_module_batches_through_a_custom_vmap_is_not_blamed_for_lacking_a_vmap_method() -> None:
    """`host_scale_single` is the unbatched half of its module's custom_vmap `scale` (its users vmap `scale`): a
    note, never JXB020. The same callback without a dispatcher keeps JXB020."""
    from clirun import check_json

    data = Path(__file__).parent / "data"
    report = check_json("callbacks.dispatched", data)[1]
    targets = {t["target"].split(":")[-1].split(" ")[0]: t for t in report["targets"]}
    single = targets["host_scale_single"]
    assert {f["code"] for f in single["findings"]} >= {"JXN003"}
    assert not [f for f in single["findings"] if f["severity"] != "info"]
    assert "JXB020" in {f["code"] for f in targets["host_shift_single"]["findings"]}
