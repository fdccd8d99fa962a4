"""A check's errors and warnings stand on the programs the user's code gets, never on jaxdiag's fast compiles.

jaxdiag compiles its own programs (the grad compositions, the jit variants of vmap, a rule over several tangent
sets) with options that halve their compile time (`_compat._own_programs`): the same HLO, not always the same values
(a fused multiply-add rounded once or twice; a NUFFT's gradient 60% off). A difference that only those options make
is not the user's defect. So when a check made an error or a warning after one of those programs ran, it runs once
more with every program at XLA's defaults, the options the user's own programs have, on the same draws (a fresh
context: the check's own seed again), and that run decides. A check that found nothing, or ran no such program,
runs once.

User code must not be able to talk a finding away: a rule that keeps state between calls (wrong on its first call
only) would also be "gone" in the second run. So where the run at XLA's defaults drops an error or warning, the
check runs a third time with the fast options: only if that run shows it again was the difference the options'
(and the run at the defaults is reported); otherwise the first run's findings stand.
"""

from __future__ import annotations

import copy
from typing import Any

from .. import _compat
from .._checks._base import Check, Context
from .._core._report import Finding


def confirmed_findings(chk: Check, ctx: Context) -> list[Finding]:
    """`chk`'s findings on `ctx`, confirmed under XLA's default options where fast-compiled programs made them."""
    before, saved = _compat.fast_runs(), _grad_state(ctx)
    findings = list(chk.run(ctx))
    if _compat.fast_runs() == before or not _reported(findings):
        return findings
    with _compat.default_compiles():
        confirmed = _run_again(chk, ctx, saved)
    if _reported(findings) <= _reported(confirmed):
        return confirmed
    at_defaults = _grad_state(ctx)
    if not _reported(findings) <= _reported(_run_again(chk, ctx, saved)):
        return findings  # not shown again with the same options: the user's code changed, not the compile
    _restore_grad_state(ctx, at_defaults)  # the checks after it start from the run that is reported
    return confirmed


def _run_again(chk: Check, ctx: Context, saved: tuple[Any, ...] | None) -> list[Finding]:
    """`chk` once more from where it first started: the grad state as it found it (what the first run blocked or
    drew is not this run's starting point) and a fresh context (its own seed again: the same draws)."""
    _restore_grad_state(ctx, saved)
    return list(chk.run(Context(ctx.subject, ctx.options, ctx.check_name, ctx.cache)))


def _reported(findings: list[Finding]) -> set[tuple[str, str]]:
    return {(f.code, f.severity) for f in findings if f.severity in ("error", "warning")}


def _grad_state(ctx: Context) -> tuple[Any, ...] | None:
    """The subject's shared grad state as the check found it: what earlier checks blocked and memoised, and where
    its random draws stood (a first run blocks the checks after its own finding, JXG020, and draws on)."""
    st = ctx.cache.grad
    return None if st is None else (st, dict(st.blocked), copy.copy(st.memo), st.rng.bit_generator.state)


def _restore_grad_state(ctx: Context, saved: tuple[Any, ...] | None) -> None:
    if saved is None:  # the first run made it: the second makes it afresh
        ctx.cache.grad = None
        return
    st, blocked, memo, drawn = saved
    st.blocked, st.memo = dict(blocked), copy.copy(memo)  # copies: the snapshot serves every run after the first
    st.rng.bit_generator.state = drawn
    ctx.cache.grad = st
