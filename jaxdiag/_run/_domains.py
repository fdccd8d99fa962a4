"""Which values a target's inputs are drawn from: standard normal unless the target cannot run on them.

A target may refuse values its shapes allow: a primitive's impl checking `x >= 0`, NumPy's `cholesky` of a matrix
that is not positive definite, a `log` giving NaN. That says the values are outside
its contract, not that it is broken, so inference draws from another domain (`DOMAINS`) and says so (JXN002), as
the user would pin with `--arg f32[3]@positive`. A refusal is told from a shape error by where it was raised: in
code running on host values (`_compat.raised_by_host_code`), on arguments whose shapes `jax.eval_shape` accepts.

One draw that passes by luck decides nothing when the refusal depends on signs (a scalar is positive on half the
draws, and the checks draw many more): a domain is kept when each of its probe draws runs (`_engine.PROBES`): for
normal draws, the first draw, the same draw with every sign flipped (so each entry is tried with both signs) and a
fresh one; for the other domains, three draws. The later draws are skipped for a target whose call takes longer
than `_engine.SLOW_CALL` seconds, which one draw decides, as before. (The probing lives in `_engine`, which runs it
for every target; this module is imported only when a call fails.)
"""

from __future__ import annotations

import jax

from .. import _compat
from .._checks._base import Subject
from .._harness import call_user

# Appended to the error text of a call that refused its values (`_engine._try_call`): the ladder then tries the other
# domains on the same shapes before the next shapes.
VALUES_ONLY = " (on these values only: the same shapes trace)"


def refused_values(subject: Subject, exc: BaseException, args: list) -> bool:
    """Whether `exc`, raised by the target on `args`, is about their values rather than their shapes."""
    if not (_compat.raised_by_host_code(exc) or _compat.raised_by_kernel(exc)):
        return False
    return call_user(lambda: jax.eval_shape(subject.call, *args)).error is None
