"""Re-trying findings on fresh random inputs, so a verdict does not depend on the values one seed happened to draw.

Only what can depend on the values is re-tried, and only as far as needed:
- a finding about structure (a missing or mis-registered rule, a rule's signature, a shape, dtype or pytree
  structure) or about a rule or transformation that raised is the same on any draw: it is never re-tried;
- of the other findings, only the checks that produced them run again (not the whole subject), on fresh seeds,
  with the subject's structural cache entries kept (its trace, nested subjects, abstract output), after the checks
  providing what they declare they need (`@check(needs=...)`: vjp-cotangents gets fwd's residuals from vjp-fwd),
  whose findings are not counted again;
- a check stops being re-run once each of its findings has missed a draw (its "seen on k of n" is then known);
  a finding that keeps reproducing is re-tried on every fresh seed before it is reported as is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from typing import Any

import numpy as np

from .. import _rules as rules
from .._checks._base import Options, Subject
from .._harness.cache import SubjectCache
from .._core._report import Finding

# Seeds of the fresh draws a finding is re-tried on (offsets from --seed).
RETRY_SEEDS = (7919, 104729)

# Rules whose evidence cannot depend on the values drawn (the catalog's `depends_on_values`).
VALUE_INDEPENDENT = frozenset(rule.code for rule in rules.iter_rules() if not rule.depends_on_values)

# run_checks(subject, options, cache, check names) -> {check name: its findings}
RunChecks = Callable[[Subject, Options, SubjectCache, Collection[str]], dict[str, list[Finding]]]


def confirm_on_fresh_draws(subject: Subject, options: Options, cache: SubjectCache,
                           findings_by_check: dict[str, list[Finding]], run_checks: RunChecks) -> list[Finding]:
    """The subject's findings, each value-dependent error or warning re-tried on fresh draws. One every draw shows
    is kept as is; one that only some draws show depends on the values drawn (often an implicit precondition such
    as `lo <= hi`): it is kept with the inputs that reproduce it and how often it appeared."""
    findings = [f for group in findings_by_check.values() for f in group]
    retried = {name: {f.code for f in group if f.severity in ("error", "warning") and f.code not in VALUE_INDEPENDENT}
               for name, group in findings_by_check.items()}
    retried = {name: codes for name, codes in retried.items() if codes}
    if not retried:
        return findings
    tried = {code: 1 for codes in retried.values() for code in codes}
    seen = dict(tried)
    for offset in RETRY_SEEDS:
        undecided = {name: codes for name, codes in retried.items() if any(seen[c] == tried[c] for c in codes)}
        if not undecided:
            break  # every finding has already missed a draw: how often it shows is known
        fresh = SubjectCache(trace=cache.trace, nested_subjects=list(cache.nested_subjects),
                             abstract_output=cache.abstract_output, grown_shapes=cache.grown_shapes,
                             grown_shapes_done=cache.grown_shapes_done, jit_broken=cache.jit_broken)
        again = run_checks(subject, dataclasses.replace(options, seed=options.seed + offset), fresh, list(undecided))
        shown = {f.code for group in again.values() for f in group}
        for code in set().union(*undecided.values()):  # a code several checks report counts once per draw
            tried[code] += 1
            seen[code] += code in shown
    if all(seen[c] == tried[c] for c in tried):
        return findings  # every finding reproduced on every fresh draw: not an artefact of the values
    inputs = inputs_text(cache.example)
    out = []
    for f in findings:
        if f.code in seen and seen[f.code] < tried[f.code]:
            f = dataclasses.replace(f, message=f"{f.message} (Seen on {seen[f.code]} of {tried[f.code]} independent "
                                               f"draws of the inputs, so it depends on their values; it reproduces "
                                               f"with {inputs}.)")
        out.append(f)
    return out


def inputs_text(example: Any) -> str:
    if not example:
        return "the first draw"
    with np.printoptions(precision=4, threshold=8, edgeitems=3):
        return ", ".join(f"arg{i} = {np.asarray(x)!r}".replace("\n", " ") for i, x in enumerate(example))
