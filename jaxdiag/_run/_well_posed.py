"""Whether a rung the author's statement of shapes gave is a well-posed example (`_climb`): the stated sizes are tried
in both orders (`_stated_shapes`), and in the wrong one a relation the author left unsaid (fewer equality constraints
than variables) can fail without an error, as a singular system solved in float32: finite, but meaningless.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from .._checks._base import Subject
from .._harness import call_user
from .._loading._inputs import DOMAINS

# the relative change of a stated rung's result, per relative change of its inputs, beyond which the example is
# ill-posed (a float32 solve of a singular system of five equations: about 300); a well-conditioned function of a
# few variables stays within tens. A rung rejected by mistake is still the fallback if no other runs.
ILL_POSED = 100.0


def well_posed(subject: Subject, statements: list[dict[int, Any]]) -> bool:
    """Whether a stated rung that ran is a well-posed example, where the statements name two axes or more
    (`_stated_shapes` tries their sizes in both orders: a relation between them the author left unsaid, such as
    fewer equality constraints than variables, may hold in one order only). Outside it the result is finite but
    meaningless: a singular system solved in float32 moves by far more than its inputs when they move by a part in
    a thousand (relative sensitivity above `ILL_POSED`). Values whose sign matters (a penalty drawn negative) are
    the value domain's question, decided later on the rung kept (`_engine.choose_domain`), not this one's."""
    if not any(len({a for axes in stated.values() for a in axes if not a.isdigit()}) > 1 for stated in statements):
        return True
    for domain in DOMAINS:  # the first domain whose draw it computes finite values on (as `try_call` ran it)
        sensitivity = _relative_sensitivity(subject, domain)
        if sensitivity is not None:
            return sensitivity <= ILL_POSED
    return True  # finite nowhere: nothing to judge here


def _relative_sensitivity(subject: Subject, domain: str) -> float | None:
    """|f(x + dx) - f(x)| / |f(x)| per relative move 10^-3 of every float input (signs at random), on one draw from
    `domain`; None where the draw does not apply, or the target fails or is not finite there. Keys, integers and
    booleans stay as drawn; complex results count by their modulus."""
    from .._loading._inputs import draw

    rng = np.random.default_rng(0)
    try:
        args = [draw(spec, rng, domain) for spec in subject.specs]
    except (ValueError, TypeError):  # a domain that does not apply to these specs
        return None
    moved = [a * (1 + 1e-3 * np.sign(rng.standard_normal(a.shape))).astype(a.dtype)
             if isinstance(a, np.ndarray) and np.issubdtype(a.dtype, np.inexact) else a for a in args]
    results = [call_user(lambda values=values: jax.block_until_ready(subject.call(*values)))
               for values in (args, moved)]
    if any(r.error is not None for r in results):
        return None
    base, shifted = (_inexact_leaves(r.value) for r in results)
    if len(base) != len(shifted) or not all(np.isfinite(x).all() for x in base + shifted):
        return None
    size = sum(float(np.sum(np.abs(x) ** 2)) for x in base) ** 0.5
    change = sum(float(np.sum(np.abs(x - y) ** 2)) for x, y in zip(base, shifted)) ** 0.5
    return change / max(size, 1e-30) / 1e-3


def _inexact_leaves(value: Any) -> list[np.ndarray]:
    """The float and complex leaves of a result, widened (a PRNG key's extended dtype is no float)."""
    out = []
    for leaf in jax.tree_util.tree_leaves(value):
        dtype = getattr(leaf, "dtype", None)
        if dtype is not None and jax.dtypes.issubdtype(dtype, np.inexact):
            array = np.asarray(leaf)
            out.append(array.astype(np.complex128 if np.iscomplexobj(array) else np.float64))
    return out
