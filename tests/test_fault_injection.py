"""jaxdiag's own bugs never pass and are never blamed on the user.

Each test breaks a piece of jaxdiag on purpose (a numerical comparison, the rule catalog's formatting, a renderer)
and runs it on correct code (the good samples). Whatever breaks, the CLI exits 3, the API's `Report.ok` is False
and `raise_if_failed()` raises, the pytest fixture's test fails, and no finding names the user's code as at fault.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from clirun import Runner as CliRunner  # stdout/stderr apart on every click

from jaxdiag._loading import _numerics
from jaxdiag import _rules as rules
from jaxdiag._parent._cli import app
from jaxdiag._jobs._lint import check_paths
from jaxdiag._render import json as json_renderer

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()
# Correct code on which the broken piece runs: a primitive whose batching is compared with a per-example loop,
# and a custom_vjp whose bwd is compared with finite differences.
GOOD = ["samples/jxb005_good.py", "samples/jxg014_good.py"]


class InjectedFault(RuntimeError):
    """Raised by the piece of jaxdiag the test breaks."""


def _boom(*args, **kwargs):
    raise InjectedFault("injected fault in jaxdiag")


def _break_compare(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_numerics, "compare", _boom)
    for module in ("_custom_jvp", "_grad", "_custom_vjp", "_gradref"):  # modules that imported the name itself
        mod = __import__(f"jaxdiag._checks.{module}", fromlist=["x"])
        if hasattr(mod, "compare"):
            monkeypatch.setattr(mod, "compare", _boom)


def _break_templates(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every finding the catalog would build fails: a check whose finding cannot be built must not pass."""
    monkeypatch.setattr(rules.Rule, "finding", _boom)


FAULTS = {"compare": _break_compare, "catalog": _break_templates}


def _user_blamed(report) -> list:
    """Errors or warnings located in the user's sample files: the user's code named as at fault."""
    return [f for f in report.findings if f.severity in ("error", "warning")]


@pytest.fixture()
def in_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("fault", ["compare", pytest.param("catalog", marks=pytest.mark.slow)])
def test_api_report_fails_and_raises(fault, monkeypatch, in_root):
    FAULTS[fault](monkeypatch)
    report = check_paths(GOOD)
    assert report.internal_errors, f"{fault}: the injected fault was not recorded as an internal error"
    assert not report.ok and report.exit_code == 3
    assert not _user_blamed(report), f"{fault}: a user rule was blamed: {_user_blamed(report)}"
    with pytest.raises(AssertionError, match="internal error"):
        report.raise_if_failed()
    assert "internal error" in str(report) and "InjectedFault" in str(report)
    assert "ok" not in repr(report).split(":")[0]


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_cli_exits_3(fault, monkeypatch, in_root):
    FAULTS[fault](monkeypatch)
    # in this process (the fault is patched here, not in spawned workers) and past the result cache
    in_process = ["-j", "1", "--timeout", "0", "--no-cache"]
    result = runner.invoke(app, ["check", *in_process, *GOOD, "--format", "json"])
    assert result.exit_code == 3, result.output
    result = runner.invoke(app, ["check", *in_process, *GOOD, "--exit-zero", "--ignore", "JX"])
    assert result.exit_code == 3, result.output  # neither --exit-zero nor any filter hides jaxdiag's own bug


def test_single_target_command_exits_3(monkeypatch, in_root):
    _break_compare(monkeypatch)
    result = runner.invoke(app, ["batching", "samples/jxb005_good.py:cumsum_p", "--arg", "f32[4,3]",
                                 "--param", "axis=0"])
    assert result.exit_code == 3, result.output
    assert "JXB" not in result.output  # no batching rule blamed


@pytest.mark.slow
def test_a_renderer_that_raises_exits_3(monkeypatch, in_root):
    monkeypatch.setattr(json_renderer, "render", _boom)
    from jaxdiag import _render

    monkeypatch.setitem(_render.FORMATS, "json", _boom)
    result = runner.invoke(app, ["check", "samples/jxr001_good.py", "--format", "json"])
    assert result.exit_code == 3
    assert "internal error" in result.output and "InjectedFault" in result.output


def test_the_text_view_raising_fails_raise_if_failed(monkeypatch, in_root):
    """`raise_if_failed` on a clean report does not render; on a failed one a broken renderer still raises."""
    from jaxdiag._core import _report

    monkeypatch.setattr(_report, "_text_view", _boom)
    _break_compare(monkeypatch)
    report = check_paths(GOOD[:1])
    assert not report.ok
    with pytest.raises(InjectedFault):
        report.raise_if_failed()


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_the_pytest_fixture_fails(fault, pytester, monkeypatch):
    FAULTS[fault](monkeypatch)
    monkeypatch.chdir(ROOT)
    pytester.makepyfile(test_user=textwrap.dedent(f'''
        def test_good_samples(jaxdiag):
            jaxdiag.assert_clean(jaxdiag.check_module({GOOD[0]!r}))
    '''))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", f"--rootdir={os.getcwd()}", str(
        pytester.path / "test_user.py"))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: jaxdiag found problems:*", "*internal error*"])


# ---------------------------------------------------------------------------------------------------------------
# jaxdiag's own code that runs inside a user call (spies, recorders) is guarded: its failure is an internal error
# ---------------------------------------------------------------------------------------------------------------


class _BrokenList(list):
    def append(self, item):
        raise InjectedFault("injected fault in a recorder")


def test_a_broken_transpose_spy_is_an_internal_error_not_the_rule(monkeypatch, in_root):
    from jaxdiag._checks import _primitive_ad

    original = _primitive_ad.Spy.__init__

    def broken_init(self):
        original(self)
        self.calls = _BrokenList()

    monkeypatch.setattr(_primitive_ad.Spy, "__init__", broken_init)
    import jaxdiag

    report = jaxdiag.check_grad("samples/jxg002_good.py:cumsum_p", "f32[5]")
    assert report.internal_errors and report.exit_code == 3
    assert not _user_blamed(report), _user_blamed(report)  # no JXG017 "the transpose rule raised" at the user's line
    assert "transpose-rule spy" in " ".join(c.detail for c in report.internal_errors)


def test_the_custom_call_recorder_is_guarded():
    import jax
    import jax.numpy as jnp

    from jaxdiag import _compat
    from jaxdiag._harness import JaxdiagBug, call_user, jaxdiag_code

    f = jax.custom_jvp(lambda x: jnp.sin(x))
    f.defjvp(lambda p, t: (jnp.sin(p[0]), jnp.cos(p[0]) * t[0]))
    with _compat.record_custom_calls(_BrokenList(), jaxdiag_code):
        with pytest.raises(JaxdiagBug, match="custom-call recorder"):
            call_user(f, jnp.ones(3))  # passes through the boundary: never the user's error


def test_the_partition_callback_spy_is_guarded(monkeypatch):
    from jaxdiag._checks import _sharding
    from jaxdiag._harness import JaxdiagBug

    monkeypatch.setattr(_sharding, "_shardings", _boom)
    spy = _sharding._spy([])("partition", lambda *args: None)
    with pytest.raises(JaxdiagBug, match="partition-callback spy"):
        spy("mesh", "arg_shapes", "result_shape")


def test_the_partitioned_call_recorder_is_guarded():
    import jax
    import jax.numpy as jnp

    from jaxdiag._harness import JaxdiagBug, jaxdiag_code
    from jaxdiag._compat import _sharding as cs

    cp = cs.custom_partitioning_type(lambda x: jnp.sin(x))
    with cs.record_partitioned_calls(_BrokenList(), jaxdiag_code):
        with pytest.raises(JaxdiagBug, match="call recorder"):
            cp(jax.numpy.ones(3))


def test_an_internal_error_keeps_the_jaxdiag_frame_that_caused_it_inside_jax():
    """`bool()` of an array fails in JAX's `Array.__bool__`; the report keeps jaxdiag's own frame that called it
    (the bug), not only the JAX frames it surfaced in."""
    import jax.numpy as jnp

    from jaxdiag._core._errors import internal_error_detail

    own = os.path.join(os.sep, "site", "jaxdiag", "_checks", "_probe.py")  # a frame in jaxdiag's own files
    namespace: dict = {}
    exec(compile("def decide(x):\n    return bool(x)\n", own, "exec"), namespace)
    try:
        namespace["decide"](jnp.ones(3))
    except ValueError as exc:
        detail = internal_error_detail("batching-vs-loop", exc)
    assert detail.startswith("internal error in check batching-vs-loop: ValueError: The truth value"), detail
    assert f'File "{own}", line 2, in decide' in detail, detail
    assert "__bool__" in detail or "check_bool_conversion" in detail, detail  # and where it surfaced


def test_a_supervised_childs_own_error_is_shown_by_its_exception():
    """The renderers show an internal error's first line: the child's last words lead with the exception, not with
    "Traceback (most recent call last):"."""
    from types import SimpleNamespace

    from jaxdiag._jobs._child import _last_words

    try:
        raise TypeError("'PosixPath' object is not iterable")
    except TypeError as exc:
        words = _last_words(SimpleNamespace(label="pkg", kind="module"), exc)
    first, *rest = words["internal_error"].splitlines()
    assert first == "internal error in jaxdiag: TypeError: 'PosixPath' object is not iterable", first
    assert any("Traceback" in line for line in rest)  # the full traceback still follows
