"""Batching checks (JXB): the batching rule's returns, and vmap against a per-example loop.

Every `vmap` jaxdiag runs goes through a spy on the batching rules (`_compat.intercept_batching_rules`): it sees
what the rule returns before JAX does, validates it (a pair; dims that are ints or None, in range, on an axis of the
vmap size; shapes and dtypes that match one example), and aborts that vmap with a private exception when something
is malformed, so the user gets the rule's defect instead of JAX's `IndexError` from deep inside vmap. The same runs
are compared with the subject applied to each example eagerly (the trusted reference), over in_axes variants
chosen so that a mislabelled axis cannot pass by accident: a batch size equal to no dimension, the batch axis first,
last and in the middle, each argument unbatched, pairwise combinations, batch size 1, nested vmap, `jit(vmap f)`
and `vmap(jit f)`.

All runs of a subject happen once (`evidence`, cached in `ctx.cache`); the checks only read them. The runs live in
the harness's `vmap.py` (in_axes variants, per-example reference), `_spy.py` (the rule spy and return validation),
`_evidence.py` (running every variant once), `_fused.py` (all variants as one compiled program, kept when clean)
and `_source.py` (dim names and fixes over the harness's AST of the rule); each check is its own module:
`_rule_returns.py`, `_vs_loop.py`, `_outputs.py`, and `_vjp.py` (reverse mode through vmap against the per-example
VJPs).
"""

from __future__ import annotations

from .._vmap_harness import axes_variants
from ._outputs import out_axes_check, out_axes_none_check, unbatched_outputs_check
from ._rule_returns import rule_returns_check
from ._vjp import batched_vjp_check
from ._vs_loop import vs_loop_check

__all__ = ["CHECKS", "axes_variants"]

CHECKS = [rule_returns_check, vs_loop_check, unbatched_outputs_check, out_axes_check, out_axes_none_check,
          batched_vjp_check]
