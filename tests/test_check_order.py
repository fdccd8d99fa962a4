"""The order checks run in comes from what they declare (`@check(needs=, reads=, provides=)`), not from where a
module lists them: a reversed registry gives the same reports, a retry of one check brings back what it needs, and
declarations that cannot be met (a cycle, a need nothing provides) are jaxdiag's own bug."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

import jaxdiag
from jaxdiag import _checks
from jaxdiag._checks import CheckOrderError, order_checks
from jaxdiag._checks._base import Check, check
from jaxdiag._checks._gradref import GradMemo
from jaxdiag._harness.cache import SubjectCache
from jaxdiag._run import _engine

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def _probe(name: str, **declared: tuple[str, ...]) -> Check:
    @check(name, "grad", {"function", "primitive", "custom_jvp", "custom_vjp", "custom_vmap"}, **declared)
    def run(ctx):
        return iter(())

    return run


def _names(checks) -> list[str]:
    return [c.name for c in checks]


# --- the sort itself ------------------------------------------------------------------------------------------

def test_unconstrained_checks_keep_the_given_order():
    checks = [_probe("c"), _probe("a"), _probe("b")]
    assert _names(order_checks(checks)) == ["c", "a", "b"]


def test_a_check_runs_after_what_it_needs_or_reads_and_the_rest_stays_put():
    checks = [_probe("x"), _probe("reader", reads=("grad.eager_grad",)), _probe("y"),
              _probe("user", needs=("grad.fwd",)), _probe("fwd", provides=("grad.fwd", "grad.eager_grad")),
              _probe("z")]
    assert _names(order_checks(checks)) == ["x", "y", "fwd", "reader", "user", "z"]


def test_a_check_providing_what_it_reads_is_not_its_own_predecessor():
    checks = [_probe("a", reads=("grad.blocked.a",), provides=("grad.blocked.a",)), _probe("b")]
    assert _names(order_checks(checks)) == ["a", "b"]


def test_a_cycle_is_reported():
    checks = [_probe("a", needs=("grad.fwd",), provides=("grad.bwd_full",)),
              _probe("b", reads=("grad.bwd_full",), provides=("grad.fwd",)), _probe("c")]
    with pytest.raises(CheckOrderError, match="cycle") as caught:
        order_checks(checks)
    assert "a (after b)" in str(caught.value) and "b (after a)" in str(caught.value)


def test_an_unmet_need_is_reported_but_a_read_is_optional():
    assert _names(order_checks([_probe("a", reads=("grad.fwd",))])) == ["a"]
    with pytest.raises(CheckOrderError, match="a needs grad.fwd"):
        order_checks([_probe("a", needs=("grad.fwd",)), _probe("b", reads=("grad.fwd",))])


def test_only_brings_back_what_the_named_checks_need_not_what_they_read():
    checks = [_probe("fwd", provides=("grad.fwd",)), _probe("bwd", needs=("grad.fwd",), provides=("grad.bwd_full",)),
              _probe("blocker", provides=("grad.blocked.blocker",)),
              _probe("cts", needs=("grad.bwd_full",), reads=("grad.blocked.blocker",)), _probe("other")]
    assert _names(order_checks(checks, only={"cts"})) == ["fwd", "bwd", "cts"]
    assert _names(order_checks(checks, only={"other"})) == ["other"]


def test_a_cycle_in_a_run_is_jaxdiags_own_bug(monkeypatch):
    monkeypatch.setattr(_engine, "ALL_CHECKS", [_probe("a", needs=("grad.fwd",), provides=("grad.bwd_full",)),
                                                _probe("b", needs=("grad.bwd_full",), provides=("grad.fwd",))])
    with pytest.raises(CheckOrderError, match="cycle"):  # never a report that passes: the CLI exits 3 on it
        jaxdiag.check_grad(f"{SAMPLES / 'jxg016_bad.py'}:clipped_identity", "f32[3]")


# --- the declarations of the real checks --------------------------------------------------------------------------

def _declared(chk: Check) -> set[str]:
    return set(chk.needs | chk.reads | chk.provides)


def test_every_declared_name_is_shared_state():
    """"grad.X": a field of GradMemo; "grad.blocked.NAME": provided by check NAME only; else a SubjectCache field."""
    memo = {f.name for f in dataclasses.fields(GradMemo)}
    cache = {f.name for f in dataclasses.fields(SubjectCache)}
    names = {c.name for c in _checks.ALL_CHECKS}
    bad = []
    for chk in _checks.ALL_CHECKS:
        for name in _declared(chk):
            if name.startswith("grad.blocked."):
                stage = name.removeprefix("grad.blocked.")
                ok = stage in names and (name not in chk.provides or stage == chk.name)
            elif name.startswith("grad."):
                ok = name.removeprefix("grad.") in memo
            else:
                ok = name in cache
            if not ok:
                bad.append(f"{chk.name}: {name}")
    assert not bad, bad


def test_every_need_and_read_has_a_provider_and_no_kind_has_a_cycle():
    provided = {name for c in _checks.ALL_CHECKS for name in c.provides}
    dangling = sorted(f"{c.name}: {n}" for c in _checks.ALL_CHECKS for n in c.needs | c.reads if n not in provided)
    assert not dangling, dangling
    kinds = {k for c in _checks.ALL_CHECKS for k in c.kinds}
    for kind in kinds:
        order_checks([c for c in _checks.ALL_CHECKS if kind in c.kinds])  # raises on a cycle or an unmet need


def test_the_blockers_of_a_stage_are_declared_by_the_check_setting_them():
    """A check whose own body puts something in GradState.blocked provides its "grad.blocked.NAME" stage (helpers
    it calls are not read: a spot check of the convention, not a proof)."""
    import inspect

    setting = [chk for chk in _checks.ALL_CHECKS if re.search(r"blocked(\[|\.setdefault)", inspect.getsource(chk.run))]
    assert len(setting) >= 5  # the detector sees them
    assert not [chk.name for chk in setting if f"grad.blocked.{chk.name}" not in chk.provides]


# --- a reversed registry gives the same reports -----------------------------------------------------------------

@pytest.fixture
def reversed_registry(monkeypatch):
    """Every check module, and every module's checks, listed in reverse."""
    real = _checks.module_checks

    def reverse() -> None:
        monkeypatch.setattr(_checks, "MODULES", tuple(reversed(_checks.MODULES)))
        monkeypatch.setattr(_checks, "module_checks", lambda module: list(reversed(real(module))))

    return reverse


def _verdicts(report) -> list:
    return [(t.target, sorted((f.code, f.severity, f.location.line if f.location else 0, f.message)
                              for f in t.findings),
             sorted((c.name, c.status, c.detail) for c in t.checks)) for t in report.targets]


CASES = [
    ("grad", "jxg012_bad.py:my_sin", ("f32[3]",)),  # custom_vjp: fwd's blocker stops the later checks
    ("grad", "jxg010_bad.py:smooth_abs", ("f32[3]",)),  # custom_vjp: bwd's structure
    ("grad", "jxg020_bad.py:safe_abs", ("f32[3]",)),  # custom_jvp
    ("grad", "jxg005_bad.py:mymul_p", ("f32[3]", "f32[3]")),  # a primitive's JVP and transpose rules
    ("grad", "jxg006_bad.py:hypot_p", ("f32[3]", "f32[3]")),  # symbolic zeros: the errors a finding explains
    ("grad", "jxg029_bad.py:scaled_solve", ("f32[3,3]", "f32[3]")),  # a function: solves, then its gradient
    ("batching", "jxr010_bad.py:silu_p", ("f32[4,3]",)),  # jit_broken, read by the batching evidence
]


@pytest.mark.slow
@pytest.mark.parametrize("command,target,args", CASES, ids=[c[1] for c in CASES])
def test_a_reversed_registry_gives_the_same_report(command, target, args, reversed_registry):
    run = getattr(jaxdiag, f"check_{command}")
    before = run(f"{SAMPLES / target}", *args)
    order_before = [c.name for c in before.targets[0].checks]
    reversed_registry()
    after = run(f"{SAMPLES / target}", *args)
    assert _verdicts(after) == _verdicts(before)
    order_after = [c.name for c in after.targets[0].checks]
    for chk in _checks.ALL_CHECKS:  # what a check declares it needs or reads still ran before it
        for name in chk.needs | chk.reads:
            for provider in (c for c in _checks.ALL_CHECKS if name in c.provides and c is not chk):
                if chk.name in order_after and provider.name in order_after:
                    assert order_after.index(provider.name) < order_after.index(chk.name), (provider.name, chk.name)
    if len(set(order_before)) > 2:
        assert order_after != order_before  # the reversal took effect where nothing constrains the order


def test_a_retry_of_one_check_runs_what_it_needs_first(monkeypatch):
    """vjp-cotangents alone (as a fresh-draw retry runs it) gets fwd's residuals and bwd's entries from the checks
    providing them, and only its own findings come back."""
    from jaxdiag._checks._base import Options

    report = jaxdiag.check_grad(f"{SAMPLES / 'jxg013_bad.py'}:{_target('jxg013_bad.py')[0]}",
                                *_target("jxg013_bad.py")[1])
    subject = report.targets[0].subject
    seen: list[str] = []
    monkeypatch.setattr(_engine, "on_check_start", lambda label, name, inputs: seen.append(name))
    found = _engine.run_checks(subject, Options.for_command("grad", seed=1), SubjectCache(), ["vjp-cotangents"])
    assert seen == ["vjp-fwd", "vjp-bwd-structure", "vjp-cotangents"]
    assert set(found) <= {"vjp-cotangents"}


def _target(sample: str) -> tuple[str, list[str]]:
    """The first target of a sample's `JAXDIAG` table and its args."""
    import ast

    tree = ast.parse((SAMPLES / sample).read_text())
    table = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "JAXDIAG" for t in node.targets))
    name, entry = next(iter(ast.literal_eval(table).items()))
    return name, list(entry["args"])


def test_the_provides_table_covers_what_each_module_declares():
    """`_checks.PROVIDES` lets a run import a module only when it must: it may not miss a name a module provides."""
    for module in _checks.MODULES:
        provided = {name for chk in _checks.module_checks(module) for name in chk.provides}
        assert provided <= _checks.PROVIDES.get(module.module, frozenset()), module.module


def test_the_lazy_order_is_the_order_of_the_whole_sort():
    from jaxdiag._checks._base import Options

    for command in ("batching", "grad", "check"):
        options = Options(command=command)
        families = _families(options)
        for kind in ("primitive", "function", "custom_jvp", "custom_vjp", "custom_vmap"):
            whole = order_checks([c for c in _checks.checks_for(kind, options) if c.family in families])
            lazy = _checks.lazy_ordered_checks(kind, options, lambda c, fs=families: c.family in fs)
            assert _names(lazy) == _names(whole), (command, kind)


def _families(options) -> set[str]:
    return {f for f in ("batching", "grad", "sharding") if options.runs(f)}
