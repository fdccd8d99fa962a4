"""The harness: the one boundary around user code, jaxdiag's own failures as internal errors, JAX state restored,
a user rule called once per evaluation, bind params apart from options, one run at a time."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import jax_state
import pytest
from jax_state import snapshot_changes as jax_state_changes
from jax.custom_batching import custom_vmap
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir
from clirun import Runner as CliRunner  # stdout/stderr apart on every click

import jaxdiag
from jaxdiag import _compat
from jaxdiag._run import _engine
from jaxdiag._checks import _custom_vmap, _primitive_ad
from jaxdiag import _harness
from jaxdiag._checks._batching import _spy
from jaxdiag._harness import JaxdiagBug, Signal, call_user, jaxdiag_code
from jaxdiag._parent._cli import app
from jaxdiag._loading._targets import load_module
from jaxdiag.pytest_plugin import JaxdiagFixture

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
runner = CliRunner()


# ---------------------------------------------------------------------------------------------------------------
# The boundary
# ---------------------------------------------------------------------------------------------------------------


def test_call_user_returns_what_user_code_raised():
    def rule(x):
        raise ValueError("bad rule")

    result = call_user(rule, 1)
    assert not result.ok and isinstance(result.error, ValueError)
    assert call_user(lambda x: x + 1, 1).value == 2


def test_jaxdiag_failures_and_signals_pass_the_boundary_even_when_wrapped():
    class Stop(Signal):
        pass

    def wrapped(inner: Exception) -> None:
        try:
            raise inner
        except Exception as exc:  # what JAX does to an exception raised inside a rule
            raise RuntimeError("JAX wrapped it") from exc

    with pytest.raises(JaxdiagBug):
        call_user(wrapped, JaxdiagBug(KeyError("x")))
    with pytest.raises(Stop):
        call_user(wrapped, Stop())


def test_jaxdiag_code_turns_any_failure_into_a_jaxdiag_bug():
    with pytest.raises(JaxdiagBug) as info:
        with jaxdiag_code("validating"):
            {}["missing"]
    assert isinstance(info.value.original, KeyError)


# ---------------------------------------------------------------------------------------------------------------
# Fault injection: jaxdiag's own failure is an internal error, never the user's defect, never a pass
# ---------------------------------------------------------------------------------------------------------------


def _injected(*args, **kwargs):
    raise RuntimeError("injected jaxdiag bug")


def _assert_internal_error(report: jaxdiag.Report) -> None:
    assert report.internal_errors, "the injected failure must be recorded as an internal error"
    assert not report.ok
    blamed = [f for f in report.findings if f.severity in ("error", "warning")]
    assert not blamed, f"jaxdiag's own bug was blamed on the user: {[(f.code, f.message) for f in blamed]}"
    assert any("injected jaxdiag bug" in c.detail for c in report.internal_errors)
    with pytest.raises(AssertionError):
        report.raise_if_failed()


def test_a_failing_batching_spy_validation_is_an_internal_error(monkeypatch):
    """The spy's validation runs inside the user's vmap: its failure used to be reported as the rule's JXB013."""
    monkeypatch.setattr(_spy, "validate", _injected)
    report = jaxdiag.check_batching(f"{SAMPLES / 'jxb001_good.py'}:norm_p", "f32[3]")
    _assert_internal_error(report)
    with pytest.raises(AssertionError, match="internal error"):
        JaxdiagFixture.assert_clean(report)  # the pytest fixture fails the user's test


def test_a_failing_custom_vmap_validation_is_an_internal_error(monkeypatch):
    monkeypatch.setattr(_custom_vmap, "validate", _injected)
    _assert_internal_error(jaxdiag.check_batching(f"{SAMPLES / 'jxv001_good.py'}:row_norm", "f32[3]"))


def test_a_failing_report_of_a_raising_custom_vmap_rule_is_an_internal_error(monkeypatch):
    """Building the finding for a rule that raised runs inside the user's vmap too: its failure is jaxdiag's."""

    @custom_vmap
    def halve(x):
        return x / 2.0

    @halve.def_vmap
    def halve_rule(axis_size, in_batched, x):
        raise ValueError("the user's rule fails")

    monkeypatch.setattr(_custom_vmap, "_raised", _injected)
    _assert_internal_error(jaxdiag.check_batching(halve, "f32[3]"))


def test_a_failing_batching_interceptor_is_an_internal_error(monkeypatch):
    """The batching-rule interceptor's bookkeeping runs inside the user's vmap: the batching checks hand
    `_compat.intercept_batching_rules` `jaxdiag_code` as its guard, so its failure is jaxdiag's, never JXB013."""
    monkeypatch.setattr(_compat._vmap, "_axis_size", _injected)  # called on every intercepted rule call
    _assert_internal_error(jaxdiag.check_batching(counted_p, "f32[3,2]"))


def test_a_failing_bind_recorder_is_jaxdiags_bug_not_the_users_error(monkeypatch):
    """`_compat.record_primitive_binds` runs its bookkeeping inside the user's function (the engine passes
    `jaxdiag_code` as its guard): a failure there passes the boundary as a JaxdiagBug instead of becoming the
    function's error."""
    monkeypatch.setattr(_compat._vmap, "is_builtin_primitive", _injected)
    seen: list = []
    with _compat.record_primitive_binds(seen, guard=jaxdiag_code):
        with pytest.raises(JaxdiagBug, match="injected jaxdiag bug"):
            call_user(lambda: counted_p.bind(jnp.ones(3)))
    with _compat.record_primitive_binds(seen, guard=lambda where: contextlib.nullcontext()):
        assert not call_user(lambda: counted_p.bind(jnp.ones(3))).ok  # without the guard: taken as the user's


def test_the_cli_exits_3_on_jaxdiag_own_failure(monkeypatch):
    monkeypatch.setattr(_spy, "validate", _injected)
    result = runner.invoke(app, ["batching", f"{SAMPLES / 'jxb001_good.py'}:norm_p", "--arg", "f32[3]"])
    assert result.exit_code == 3, result.stdout
    assert "JXB013" not in result.stdout


@pytest.mark.slow
def test_a_user_rule_that_raises_is_still_the_user_finding():
    """The other side of the boundary: what the user's rule raises stays a finding about the rule."""
    report = jaxdiag.check_batching(f"{SAMPLES / 'jxb013_bad.py'}:safe_log", "f32[3]@positive")
    assert "JXB013" in report.codes() and not report.internal_errors


# ---------------------------------------------------------------------------------------------------------------
# A user rule is called once per evaluation
# ---------------------------------------------------------------------------------------------------------------

counted_p = Primitive("jaxdiag_test_counted")
RULE_CALLS = [0]


def _counted_rule(args, dims):
    RULE_CALLS[0] += 1
    (x,), (d,) = args, dims
    if d is None:
        return counted_p.bind(x), None
    return counted_p.bind(jnp.moveaxis(x, d, 0)), 1  # the wrong dim: the batch axis was moved to 0


counted_p.def_impl(lambda x: jnp.sin(x))
counted_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
batching.primitive_batchers[counted_p] = _counted_rule
mlir.register_lowering(counted_p, mlir.lower_fun(lambda x: jnp.sin(x), multiple_results=False))


def test_a_batching_rule_is_called_once_per_evaluation(monkeypatch):
    """Each time vmap asks the spy, the user's rule runs once; the line of the `return` it took is recorded during
    that call (it used to be run a second time under a profile hook to find it)."""
    asked = [0]
    original = _spy.Spy.handle

    def counting_handle(self, *args, **kwargs):
        if not self.oracle:
            asked[0] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(_spy.Spy, "handle", counting_handle)
    RULE_CALLS[0] = 0
    report = jaxdiag.check_batching(counted_p, "f32[3,2]")
    assert report.findings and asked[0] > 0
    assert RULE_CALLS[0] == asked[0]
    wrong_return = _counted_rule.__code__.co_firstlineno + 5
    located = [f for f in report.findings if f.location and f.location.function == "_counted_rule"]
    assert located and any(f.location.line == wrong_return for f in located), [
        (f.code, f.location) for f in report.findings]


def test_a_custom_vmap_rule_is_called_once_per_evaluation(monkeypatch):
    calls = {"rule": 0, "asked": 0}

    @custom_vmap
    def twice(x):
        return x * 2.0

    @twice.def_vmap
    def twice_rule(axis_size, in_batched, x):
        calls["rule"] += 1
        return x * 2.0, in_batched[0]

    original = _custom_vmap._Spy.make

    def counting_make(self, rule):
        spy = original(self, rule)

        def counted(*args):
            calls["asked"] += 1
            return spy(*args)

        return counted

    monkeypatch.setattr(_custom_vmap._Spy, "make", counting_make)
    report = jaxdiag.check_batching(twice, "f32[3]")
    assert report.ok, report.findings
    direct = 1  # the all-unbatched call the check makes itself
    assert calls["asked"] > 0 and calls["rule"] == calls["asked"] + direct


VJP_CALLS = {"fwd": 0, "bwd": 0}


@jax.custom_vjp
def counted_sin(x):
    return jnp.sin(x)


def counted_sin_fwd(x):
    VJP_CALLS["fwd"] += 1
    return jnp.sin(x), jnp.cos(x)


def counted_sin_bwd(cos_x, g):
    VJP_CALLS["bwd"] += 1
    return (cos_x * g,)


counted_sin.defvjp(counted_sin_fwd, counted_sin_bwd)


def test_custom_vjp_fwd_and_bwd_are_called_once_per_evaluation(monkeypatch):
    """Every fwd/bwd call happens inside one of jaxdiag's evaluations through the boundary (none outside, e.g. to
    find a line), a direct call of a rule runs that rule once, and one `jax.vjp(f, x)` runs fwd once and each call
    of the function it returns runs bwd once: no hidden re-runs."""
    evaluations: list[tuple[object, int, int]] = []  # (callable, fwd calls, bwd calls) per outermost call_user
    vjps: list[tuple[str, int]] = []  # ("fwd", calls) per jax.vjp, ("bwd", calls) per call of its vjp function
    depth = [0]
    real_call_user, real_vjp = _harness.boundary.call_user, jax.vjp

    def counted(run):
        """(what `run()` returned, fwd calls during it, bwd calls during it)."""
        before = dict(VJP_CALLS)
        result = run()
        return result, VJP_CALLS["fwd"] - before["fwd"], VJP_CALLS["bwd"] - before["bwd"]

    def counting_call_user(fn, *args, **kwargs):
        if depth[0]:  # inside an evaluation already counted
            return real_call_user(fn, *args, **kwargs)
        depth[0] += 1
        try:
            result, fwd, bwd = counted(lambda: real_call_user(fn, *args, **kwargs))
        finally:
            depth[0] -= 1
        evaluations.append((fn, fwd, bwd))
        return result

    def counting_vjp(fn, *primals, **kwargs):
        (out, vjp_fn), fwd, _ = counted(lambda: real_vjp(fn, *primals, **kwargs))
        vjps.append(("fwd", fwd))

        def counting_vjp_fn(ct):
            result, _, bwd = counted(lambda: vjp_fn(ct))
            vjps.append(("bwd", bwd))
            return result

        return out, counting_vjp_fn

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("jaxdiag") and getattr(module, "call_user", None) is \
                real_call_user:
            monkeypatch.setattr(module, "call_user", counting_call_user)
    monkeypatch.setattr(jax, "vjp", counting_vjp)
    VJP_CALLS.update(fwd=0, bwd=0)
    report = jaxdiag.check_grad(counted_sin, "f32[3]")
    assert report.ok and not report.findings, report.findings
    assert VJP_CALLS["fwd"] == sum(e[1] for e in evaluations) > 0, "fwd ran outside jaxdiag's evaluations"
    assert VJP_CALLS["bwd"] == sum(e[2] for e in evaluations) > 0, "bwd ran outside jaxdiag's evaluations"
    direct = {(fn.__name__, fwd, bwd) for fn, fwd, bwd in evaluations if fn in (counted_sin_fwd, counted_sin_bwd)}
    assert direct == {("counted_sin_fwd", 1, 0), ("counted_sin_bwd", 0, 1)}, evaluations
    assert {kind for kind, n in vjps if n} == {"fwd", "bwd"}, vjps  # jaxdiag evaluated jax.vjp through the rules
    assert all(n <= 1 for _, n in vjps), vjps


doubled_p = Primitive("jaxdiag_test_doubled")
TRANSPOSE = {"calls": 0, "spied_run": False, "during_spied_runs": 0}


def _doubled_transpose(ct, x):
    TRANSPOSE["calls"] += 1
    TRANSPOSE["during_spied_runs"] += TRANSPOSE["spied_run"]
    return [ct * 2.0]


doubled_p.def_impl(lambda x: x * 2.0)
doubled_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
ad.deflinear2(doubled_p, _doubled_transpose)
batching.defvectorized(doubled_p)
mlir.register_lowering(doubled_p, mlir.lower_fun(lambda x: x * 2.0, multiple_results=False))


def test_a_transpose_rule_is_called_once_per_grad_evaluation(monkeypatch):
    """While the transpose rule is spied on, each time reverse mode asks the spy, the user's rule runs once."""
    asked = [0]
    original_wrap, original_spying = _primitive_ad.Spy.wrap, _compat.spy_transpose_rule

    def counting_wrap(self, rule):
        spy = original_wrap(self, rule)

        def counted(*args, **kwargs):
            asked[0] += 1
            return spy(*args, **kwargs)

        return counted

    @contextlib.contextmanager
    def flagged_spying(prim, wrap):
        with original_spying(prim, wrap):
            TRANSPOSE["spied_run"] = True
            try:
                yield
            finally:
                TRANSPOSE["spied_run"] = False

    monkeypatch.setattr(_primitive_ad.Spy, "wrap", counting_wrap)
    monkeypatch.setattr(_compat, "spy_transpose_rule", flagged_spying)
    TRANSPOSE.update(calls=0, during_spied_runs=0)
    report = jaxdiag.check_grad(doubled_p, "f32[3]")
    assert not report.internal_errors and report.ok, [(f.code, f.message) for f in report.findings]
    assert asked[0] > 0 and TRANSPOSE["during_spied_runs"] == asked[0]


# ---------------------------------------------------------------------------------------------------------------
# JAX state: everything patched is restored
# ---------------------------------------------------------------------------------------------------------------


FAST_SAMPLES = ["jxb001_bad.py", "jxg002_bad.py", "jxv002_bad.py", "jxr008_bad.py"]


def _state_is_restored_around(name: str) -> None:
    """JAX's whole state (every config option, every rule registry, the patchable classes, the sample's objects:
    tests/jax_state.py, not jaxdiag's own snapshot) is the same after checking the sample as before."""
    module = load_module(str(SAMPLES / name))  # the sample's own registrations happen here, before the snapshot
    before = jax_state.whole_state(module)
    jaxdiag.check_module(str(SAMPLES / name), keep_going=True)
    assert not jax_state.changes(before, jax_state.whole_state(module)), name


def test_the_whole_state_comparison_sees_what_jaxdiag_does_not_snapshot():
    """The comparison above can fail on a kind of leak jaxdiag's own snapshot does not know about: any config
    option, any registry entry, any method of a patchable class, any attribute of the user's objects."""
    module = load_module(str(SAMPLES / "jxv002_bad.py"))
    before = jax_state.whole_state(module)
    prim = next(iter(ad.primitive_jvps))
    saved_rule, saved_abs = ad.primitive_jvps[prim], Primitive.__dict__["abstract_eval"]
    saved_option = jax.config.jax_numpy_rank_promotion  # type: ignore[attr-defined]
    target = next(v for v in vars(module).values() if _compat.is_custom_vmap(v))
    saved_vmap_rule = target.vmap_rule
    try:
        jax.config.update("jax_numpy_rank_promotion", "raise" if saved_option != "raise" else "warn")
        ad.primitive_jvps[prim] = lambda *a, **k: saved_rule(*a, **k)
        Primitive.abstract_eval = lambda self, *a, **k: saved_abs(self, *a, **k)
        target.vmap_rule = lambda *a: saved_vmap_rule(*a)
        found = "\n".join(jax_state.changes(before, jax_state.whole_state(module)))
    finally:
        jax.config.update("jax_numpy_rank_promotion", saved_option)
        ad.primitive_jvps[prim] = saved_rule
        Primitive.abstract_eval = saved_abs
        target.vmap_rule = saved_vmap_rule
    for leak in ("config[jax_numpy_rank_promotion]", f"registry jvp[{prim.name}]", "class Primitive[abstract_eval]",
                 "vmap_rule"):
        assert leak in found, leak
    assert not jax_state.changes(before, jax_state.whole_state(module))


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "jxv002_bad.py" else n
                                  for n in FAST_SAMPLES])
def test_jax_state_is_restored_around_representative_samples(name):
    _state_is_restored_around(name)


# Every other sample: the sample table compares JAX's whole state around its one run of each sample
# (tests/test_samples_table.py, `expected_codes.sample_run`).


def test_the_snapshot_sees_every_patch():
    """Each thing a run patches shows in the snapshot comparison (so the sweep above can fail)."""
    from jax._src import core
    from jax._src.interpreters import ad

    @custom_vmap
    def f(x):
        return x

    f.def_vmap(lambda n, b, x: (x, b[0]))
    before = _compat.snapshot_jax_state([f])
    original_bind, original_rule = core.Primitive.bind, f.vmap_rule
    fancy = getattr(ad, "fancy_transposes", {})
    try:
        core.Primitive.bind = lambda self, *a, **k: original_bind(self, *a, **k)
        f.vmap_rule = lambda *a: original_rule(*a)
        with _compat.x64_scope(not _compat.x64_enabled()):
            changed = jax_state_changes(before, _compat.snapshot_jax_state([f]))
        fancy_key = next(iter(fancy), None)
        if fancy_key is not None:
            saved = fancy.pop(fancy_key)
            assert jax_state_changes(before, _compat.snapshot_jax_state([f]))
            fancy[fancy_key] = saved
    finally:
        core.Primitive.bind, f.vmap_rule = original_bind, original_rule
    assert {"primitive_bind changed", f"vmap_rules[{id(f)}] changed", "flags[x64] changed"} <= set(changed), changed
    assert not jax_state_changes(before, _compat.snapshot_jax_state([f]))


def test_x64_is_scoped_not_flipped_globally():
    assert not _compat.x64_enabled()
    seen = []
    with _compat.x64_scope(True):
        seen.append(_compat.x64_enabled())
        thread = threading.Thread(target=lambda: seen.append(_compat.x64_enabled()))
        thread.start()
        thread.join()
    assert seen == [True, False] and not _compat.x64_enabled()


def test_sys_path_is_restored_after_a_run(tmp_path):
    (tmp_path / "pathy.py").write_text("import jax.numpy as jnp\n\ndef f(x):\n    return jnp.sin(x)\n")
    before = list(__import__("sys").path)
    jaxdiag.check_batching(f"{tmp_path / 'pathy.py'}:f", "f32[3]")
    assert __import__("sys").path == before


# ---------------------------------------------------------------------------------------------------------------
# The API: bind params apart from options; one run at a time
# ---------------------------------------------------------------------------------------------------------------

shifted_p = Primitive("jaxdiag_test_shifted")


def _shifted(x, *, seed, order):
    return x + seed * order


shifted_p.def_impl(_shifted)
shifted_p.def_abstract_eval(lambda x, **_: jax.core.ShapedArray(x.shape, x.dtype))
batching.defvectorized(shifted_p)
mlir.register_lowering(shifted_p, mlir.lower_fun(_shifted, multiple_results=False))


def test_bind_params_named_like_options_are_bind_params():
    report = jaxdiag.check_batching(shifted_p, "f32[3]", params={"seed": 2.0, "order": 3})
    assert report.ok, [(f.code, f.message) for f in report.findings]
    with pytest.raises(TypeError):
        jaxdiag.check_batching(shifted_p, "f32[3]", axis=1)  # type: ignore[call-arg]


def test_runs_are_serialized_and_each_report_is_correct(monkeypatch):
    inside = [0]
    overlaps = []
    original = _engine._run_unfiltered

    def tracking_run(*args, **kwargs):
        inside[0] += 1
        overlaps.append(inside[0])
        time.sleep(0.05)
        try:
            return original(*args, **kwargs)
        finally:
            inside[0] -= 1

    monkeypatch.setattr(_engine, "_run_unfiltered", tracking_run)
    targets = [(f"{SAMPLES / 'jxb001_bad.py'}:norm_p", "JXB001"), (f"{SAMPLES / 'jxb001_good.py'}:norm_p", None)]
    results: dict[int, jaxdiag.Report] = {}
    threads = [threading.Thread(target=lambda i=i, t=t: results.__setitem__(i, jaxdiag.check_batching(t, "f32[3]")))
               for i, (t, _) in enumerate(targets)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert max(overlaps) == 1, "two runs were inside the engine at once"
    assert "JXB001" in results[0].codes() and not results[0].ok
    assert "JXB001" not in results[1].codes() and not results[1].internal_errors

