"""What a composed transformation makes of the user's values: a NaN only grad(vmap f) gives is a defect (the same
inputs per example are finite), and a difference only jaxdiag's fast-compiled programs give is not.

The fixture's batching rule evaluates the impl under vmap, so grad of a batched call differentiates the impl and
not the JVP rule (a NUFFT package's type-3 transforms: every gradient of a batched call for the target frequencies
was NaN). The fault-injection test stands for XLA's backend optimisation level 0, which gave the same NUFFT a jit
gradient 60% off: jaxdiag's own programs compiled that way must never make a finding on their own."""

from __future__ import annotations

import collections
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from clirun import check_json

import jaxdiag
from jaxdiag._checks import _grad
from jaxdiag._checks._composition_faults import nonfinite_only_composed
from jaxdiag._compat import _own_programs
from jaxdiag._core._report import Finding
from jaxdiag._run import _confirm

ROOT = Path(__file__).resolve().parent.parent
ACC = ROOT / "tests" / "data" / "acc"


def test_the_fixture_is_nan_only_under_grad_of_vmap(monkeypatch):
    """Plain JAX, no jaxdiag: the twin that evaluates its impl under vmap is NaN under jax.vjp(jax.vmap(f)) outside
    the window, where each example's gradient (the JVP rule) is 0; the twin that binds itself is finite."""
    monkeypatch.syspath_prepend(str(ACC))
    import impl_batching

    x = jnp.asarray([[0.5, 1.5, -0.3], [-2.0, 0.1, 0.7]], jnp.float32)
    w = jnp.ones_like(x)
    for prim, nan_expected in ((impl_batching.semicircle_p, True), (impl_batching.window_p, False)):
        batched = jax.vjp(jax.vmap(prim.bind), x)[1](w)[0]
        per_example = np.stack([jax.vjp(prim.bind, x[i])[1](w[i])[0] for i in range(2)])
        assert np.all(np.isfinite(per_example))
        assert bool(np.isnan(batched).any()) is nan_expected
        np.testing.assert_allclose(np.where(np.isnan(batched), 0.0, batched), per_example, rtol=1e-5)


def test_a_nan_is_named_only_where_the_reference_is_finite():
    got = np.array([[1.0, np.nan], [2.0, 3.0]])
    said = nonfinite_only_composed(got, np.array([[1.0, 0.5], [2.0, 3.0]]), "the per-example gradients are")
    assert said is not None and "nan at index (0, 1)" in said and "(0.5; 1 of 4 entries)" in said
    assert nonfinite_only_composed(got, np.array([[1.0, np.nan], [2.0, 3.0]]), "x is") is None  # NaN there too
    assert nonfinite_only_composed(got, np.array([[np.inf, 0.5], [2.0, 3.0]]), "x is") is None  # a NaN elsewhere
    assert nonfinite_only_composed(np.ones((2, 2)), np.ones((2, 2)), "x is") is None


@pytest.mark.slow  # two primitives checked end to end (about 6 s)
def test_a_batching_rule_that_evaluates_the_impl_is_found_by_the_nan_of_grad_of_vmap():
    code, data = check_json(str(ACC / "impl_batching.py"), ACC)
    by_name = {t["target"].rsplit(":", 1)[-1]: t for t in data["targets"]}
    (finding,) = [f for f in by_name["semicircle_p"]["findings"] if f["severity"] != "info"]
    assert (finding["code"], finding["severity"]) == ("JXG016", "error")
    assert "is nan at index" in finding["message"] and "binds no semicircle" in finding["message"]
    assert finding["location"]["path"].endswith("impl_batching.py") and "bind" in finding["fix"]
    assert not [f for f in by_name["window_p"]["findings"] if f["severity"] != "info"]
    assert code == 1


def _perturb_fast_programs(monkeypatch):
    """Every program compiled with jaxdiag's fast options returns its float outputs plus one: what an option that
    changes values would do. Programs at XLA's defaults are left alone."""
    real = _own_programs._compile

    def perturbed(lowered, options):
        executable, used = real(lowered, options)
        if not used:
            return executable, used

        def run(*args):
            out = executable(*args)
            return jax.tree_util.tree_map(lambda v: v + 1 if jnp.issubdtype(v.dtype, jnp.inexact) else v, out)

        return run, used

    monkeypatch.setattr(_own_programs, "_compile", perturbed)
    monkeypatch.setattr(_own_programs, "_JIT_COMPILER_OPTIONS", True)
    monkeypatch.setattr(_grad, "_COMPILED", collections.OrderedDict())  # no composite compiled by an earlier test


def test_a_difference_only_fast_compiled_programs_make_is_not_a_finding(monkeypatch):
    _perturb_fast_programs(monkeypatch)
    target = f"{ROOT / 'samples' / 'jxg016_good.py'}:clipped_identity"
    before = _own_programs.fast_runs()
    report = jaxdiag.check_grad(target)
    assert _own_programs.fast_runs() > before  # the perturbed programs ran
    assert report.ok and not [f for f in report.findings if f.severity in ("error", "warning")]
    # and without the confirmation at XLA's defaults the perturbation is a finding: the test can fail
    monkeypatch.setattr(_confirm, "confirmed_findings", lambda chk, ctx: list(chk.run(ctx)))
    unconfirmed = jaxdiag.check_grad(target)
    assert "JXG016" in {f.code for f in unconfirmed.findings}


class _FastCheck:
    """A check whose one program is fast-compiled: `wrong(run, defaults)` says whether its n-th run (1-based),
    compiled at XLA's defaults or not, shows the defect."""

    name = "fast-check"

    def __init__(self, wrong):
        self.wrong, self.runs = wrong, 0

    def run(self, ctx):
        self.runs += 1
        defaults = _own_programs._DEFAULTS_ONLY[0]
        _own_programs._FAST_RUNS[0] += not defaults  # as an own program compiled with the fast options does
        if self.wrong(self.runs, defaults):
            yield Finding("JXG016", "transform-composition-failure", "error", "differs under jit")


def _confirmed(wrong) -> tuple[list[str], int]:
    from jaxdiag._checks._base import Context, Options, Subject
    from jaxdiag._harness.cache import SubjectCache

    check = _FastCheck(wrong)
    ctx = Context(Subject("f", "function", len, specs=[]), Options.for_command("grad"), check.name, SubjectCache())
    return [f.code for f in _confirm.confirmed_findings(check, ctx)], check.runs


def test_a_finding_only_the_fast_compile_shows_is_dropped_and_one_the_defaults_show_stands():
    assert _confirmed(lambda run, defaults: not defaults) == ([], 3)  # fast again shows it: the options' doing
    assert _confirmed(lambda run, defaults: True) == (["JXG016"], 2)  # the defaults show it too
    assert _confirmed(lambda run, defaults: False) == ([], 1)  # nothing found: one run


def test_user_code_that_changes_between_runs_cannot_talk_a_finding_away():
    """Wrong on its first call only (a rule keeping state): the run at the defaults is clean, and so is the fast one
    after it, so it was not the compile options: the first run's finding stands."""
    assert _confirmed(lambda run, defaults: run == 1) == (["JXG016"], 3)
