"""custom_vmap checks (JXV001-JXV006): each rule fires on its bad sample and stays silent on its good one; the rule
is validated before JAX sees its result; the user's rule is restored after every run, even when it raises."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jax_state import snapshot_changes
from jax.custom_batching import custom_vmap
from markers import line_of

import jaxdiag
from jaxdiag import _compat
from jaxdiag._core import _locate
from jaxdiag._loading._targets import load_target

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
JXV_SAMPLES = {  # code -> sample attribute
    "JXV001": "row_norm", "JXV002": "total", "JXV003": "outer", "JXV004": "apply", "JXV005": "dot",
}


def run_sample(name: str, attr: str, command: str = "batching") -> tuple[jaxdiag.Report, object]:
    target = load_target(f"{SAMPLES / name}:{attr}")
    args = target.module.JAXDIAG[attr]["args"]
    check = jaxdiag.check_batching if command == "batching" else jaxdiag.check_grad
    return check(target, *args), target.obj


def codes(report: jaxdiag.Report, severities: tuple[str, ...] = ("error", "warning")) -> set[str]:
    return {f.code for f in report.findings if f.severity in severities}


def only(report: jaxdiag.Report, code: str) -> jaxdiag.Finding:
    found = [f for f in report.findings if f.code == code]
    assert len(found) == 1, [f"{f.code}: {f.message}" for f in report.findings]
    return found[0]


def internal_errors(report: jaxdiag.Report) -> list[str]:
    return [c.detail for t in report.targets for c in t.checks if c.status == "error"]


# ---------------------------------------------------------------------------------------------------------------
# Samples: bad fires (at the rule's def line), good is clean
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("code", sorted(JXV_SAMPLES))
def test_bad_sample_fires_at_the_rule(code):
    report, obj = run_sample(f"{code.lower()}_bad.py", JXV_SAMPLES[code])
    assert not internal_errors(report)
    assert codes(report) == {code}, [f.message for f in report.findings]
    finding = only(report, code)
    assert finding.location == _locate.locate(obj.vmap_rule)
    assert finding.fix and obj.vmap_rule.__name__ in finding.fix


@pytest.mark.parametrize("code", sorted(JXV_SAMPLES))
def test_good_sample_is_clean(code):
    report, _ = run_sample(f"{code.lower()}_good.py", JXV_SAMPLES[code])
    assert not internal_errors(report)
    assert not codes(report), [f.message for f in report.findings]
    assert [c.status for t in report.targets for c in t.checks if c.name == "custom-vmap"] == ["passed"]


@pytest.mark.slow
def test_messages_say_what_was_observed():
    report, _ = run_sample("jxv003_bad.py", "outer")
    message = only(report, "JXV003").message
    assert "(3, 4, 5)" in message and "last (trailing)" in message and "in_batched=[True, True]" in message
    assert "jnp.moveaxis(out, 2, 0)" in only(report, "JXV003").fix
    report, _ = run_sample("jxv002_bad.py", "total")
    assert "shape (5,)" in only(report, "JXV002").message and "(5, 5)" in only(report, "JXV002").message
    report, _ = run_sample("jxv001_bad.py", "row_norm")
    assert "PyTreeDef([*])" in only(report, "JXV001").message
    # the fix keeps the rule's own value and flag, without the list around it
    assert "return jnp.sqrt(jnp.sum(x * x, axis=-1)), x_batched" in only(report, "JXV001").fix
    report, _ = run_sample("jxv004_bad.py", "apply")
    message = only(report, "JXV004").message
    assert "in_axes=(None, 0)" in message and "max abs difference" in message
    report, _ = run_sample("jxv005_bad.py", "dot")
    message = only(report, "JXV005").message
    einsum = line_of("jxv005_bad.py", 'return jnp.einsum("bj,bj->b", x, y)')
    assert "Einstein sum subscript" in message and f"jxv005_bad.py:{einsum}" in message


def test_deterministic():
    first, _ = run_sample("jxv004_bad.py", "apply")
    second, _ = run_sample("jxv004_bad.py", "apply")
    assert [f.to_dict() for f in first.findings] == [f.to_dict() for f in second.findings]


# ---------------------------------------------------------------------------------------------------------------
# Cases beyond the samples
# ---------------------------------------------------------------------------------------------------------------


def make(fun, rule=None):
    obj = custom_vmap(fun)
    if rule is not None:
        obj.def_vmap(rule)
    return obj


def test_no_rule_and_not_a_pair_are_jxv005():
    report = jaxdiag.check_batching(make(lambda x: x * 2), "f32[3]")
    assert "without a vmap rule" in only(report, "JXV005").message

    def only_out(axis_size, in_batched, x):
        return x * 2

    report = jaxdiag.check_batching(make(lambda x: x * 2, only_out), "f32[3]")
    assert "instead of the pair" in only(report, "JXV005").message


def test_rule_failing_only_when_nothing_is_batched():
    def rule(axis_size, in_batched, x):
        assert in_batched[0], "expects a batch"
        return x * 2, True

    report = jaxdiag.check_batching(make(lambda x: x * 2, rule), "f32[3]")
    assert codes(report) == {"JXV005"}
    assert "every in_batched False" in only(report, "JXV005").message


def test_declared_unbatched_but_varies_across_examples():
    def rule(axis_size, in_batched, x):
        # the first example's total for every example, declared per-example-free (a batch statistic such as the
        # mean of the totals is JXG035, a warning: see test_verdicts_evidence.py)
        return jnp.sum(x[0]), False

    report = jaxdiag.check_batching(make(lambda x: jnp.sum(x), rule), "f32[3]")
    finding = only(report, "JXV002")
    assert "differs from example to example" in finding.message and "max abs difference" in finding.message


def test_missing_batch_axis_is_jxv003():
    def rule(axis_size, in_batched, x):
        return jnp.sum(x * 0, axis=0), True  # one example's shape, declared batched

    report = jaxdiag.check_batching(make(lambda x: x * 0, rule), "f32[3]")
    assert "no batch axis" in only(report, "JXV003").message


def test_structure_differs_from_the_function():
    def rule(axis_size, in_batched, x):
        return (x, x), (True, True)

    report = jaxdiag.check_batching(make(lambda x: x, rule), "f32[3]")
    assert "returns PyTreeDef(*) per example" in only(report, "JXV001").message


def test_constant_output_declared_unbatched_is_not_a_false_alarm():
    def fun(x):
        return x * 2, jnp.arange(3.0)

    def rule(axis_size, in_batched, x):
        (x_batched,) = in_batched
        return (x * 2, jnp.arange(3.0)), (x_batched, False)

    report = jaxdiag.check_batching(make(fun, rule), "f32[2,3]")
    assert not codes(report) and not internal_errors(report)


def test_custom_vmap_inside_a_function_is_checked_at_its_rule():
    target = load_target(f"{SAMPLES / 'jxv003_bad.py'}:outer")
    inner = target.obj

    @jax.jit
    def model(x, y):
        return jnp.tanh(inner(x, y)).sum()

    report = jaxdiag.check_batching(model, "f32[3]", "f32[4]")
    nested = [t for t in report.targets if t.kind == "custom_vmap"]
    assert len(nested) == 1 and {f.code for f in nested[0].findings} == {"JXV003"}
    assert nested[0].findings[0].location == _locate.locate(inner.vmap_rule)


def _needs_a_batch(axis_size, in_batched, x):
    (batched,) = in_batched
    return jax.vmap(lambda v: v * 2, in_axes=0 if batched else None)(x), True  # no axis_size: fails unbatched


@pytest.mark.parametrize("wrapped", [True, False])
def test_nothing_batched_is_probed_only_where_jax_can_differentiate_the_call(wrapped):
    """JAX calls a custom_vmap's rule with every in_batched False only under vmap of that call's own `jvp`. Called
    only inside a custom_jvp's primal function, the call is differentiated through the custom_jvp's rule: the probe
    is outside its contract. Called directly by the function, the same rule is a finding."""
    doubled = make(lambda x: x * 2, _needs_a_batch)
    smooth = jax.custom_jvp(lambda x: doubled(x))
    smooth.defjvp(lambda primals, tangents: (smooth(primals[0]), tangents[0] * 2))

    report = jaxdiag.check_batching((lambda x: smooth(x) + 1.0) if wrapped else (lambda x: doubled(x) + 1.0),
                                    "f32[3]")
    nested = [t for t in report.targets if t.kind == "custom_vmap"]
    assert len(nested) == 1 and not internal_errors(report)
    found = {f.code for f in nested[0].findings if f.severity in ("error", "warning")}
    assert found == (set() if wrapped else {"JXV005"}), [f.message for f in nested[0].findings]


# ---------------------------------------------------------------------------------------------------------------
# JXV006 (grad outside vmap) is a note under `grad`, not a batching finding
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_grad_outside_vmap_is_info_under_grad_only():
    report, _ = run_sample("jxv001_good.py", "row_norm", command="grad")
    finding = only(report, "JXV006")
    assert finding.severity == "info" and "known JAX limitation" in finding.message
    assert "works" in finding.message and "jax.custom_vjp" in finding.fix
    assert report.ok
    batching, _ = run_sample("jxv001_good.py", "row_norm")
    assert "JXV006" not in {f.code for f in batching.findings}


@pytest.mark.slow
def test_no_grad_note_when_the_parent_wraps_it_in_custom_vjp():
    target = load_target(f"{SAMPLES / 'jxv001_good.py'}:row_norm")
    inner = target.obj
    norm = jax.custom_vjp(lambda x: inner(x))
    norm.defvjp(lambda x: (inner(x), x), lambda x, g: (g * x / jnp.sqrt(jnp.sum(x * x)),))
    report = jaxdiag.check_grad(lambda x: norm(x) * 2.0, "f32[3]")
    assert "JXV006" not in {f.code for f in report.findings}


# ---------------------------------------------------------------------------------------------------------------
# JAX state: the user's rule is put back, whatever happened
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,attr", [("jxv005_bad.py", "dot"), ("jxv003_bad.py", "outer"),
                                       ("jxv005_good.py", "dot")])
def test_rule_restored_after_run(name, attr):
    target = load_target(f"{SAMPLES / name}:{attr}")
    rule = target.obj.vmap_rule
    registries = _compat.snapshot_jax_state()
    run_sample(name, attr)
    assert target.obj.vmap_rule is rule
    # nothing changed or removed; JAX registers some rules of its own lazily on first use (tests/jax_state.py)
    assert snapshot_changes(registries, _compat.snapshot_jax_state()) == []


def test_rule_restored_when_the_rule_raises_a_base_exception():
    class Stop(BaseException):
        pass

    def rule(axis_size, in_batched, x):
        raise Stop()

    obj = make(lambda x: x, rule)
    report = jaxdiag.check_batching(obj, "f32[3]")  # a result for the target, never an escape or a pass
    assert "JXU003" in report.codes() and not report.ok and report.exit_code == 5
    assert obj.vmap_rule is rule


def test_jax_own_rule_is_trusted():
    seq = jax.custom_batching.sequential_vmap(lambda x: jnp.cumsum(x))
    report = jaxdiag.check_batching(seq, "f32[3]")
    checks = {c.name: c for t in report.targets for c in t.checks}
    assert checks["custom-vmap"].status == "skipped" and "JAX's own" in checks["custom-vmap"].detail
    assert not report.findings
