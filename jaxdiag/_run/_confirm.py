"""A check's errors and warnings stand on the programs the user's code gets, never on jaxdiag's fast compiles.

jaxdiag compiles its own programs (the grad compositions, the jit variants of vmap, a rule over several tangent
sets) with options that halve their compile time (`_compat._own_programs`): the same HLO, not always the same values
(a fused multiply-add rounded once or twice; a NUFFT's gradient 60% off). A difference that only those options make
is not the user's defect. So when a check made an error or a warning after one of those programs ran, it runs once
more with every program at XLA's defaults, the options the user's own programs have, and that run decides. A check
that found nothing, or ran no such program, runs once.
"""

from __future__ import annotations

from .. import _compat
from .._checks._base import Check, Context
from .._core._report import Finding


def confirmed_findings(chk: Check, ctx: Context) -> list[Finding]:
    """`chk`'s findings on `ctx`, confirmed under XLA's default options where fast-compiled programs made them."""
    before = _compat.fast_runs()
    findings = list(chk.run(ctx))
    if _compat.fast_runs() == before or not any(f.severity in ("error", "warning") for f in findings):
        return findings
    with _compat.default_compiles():
        return list(chk.run(ctx))
