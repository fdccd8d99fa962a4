"""The primal as one compiled program, for the many evaluations finite differences make (`_fd`).

Called eagerly, a primal with a loop or a branch (`lax.scan`, `while_loop`, `cond`, the solves built on them)
traces their bodies again and compiles them as a new XLA program on every call: each finite-difference point
(six per direction in the inputs' precision, two or four in float64) paid a compile. Such a primal is traced once
per precision and input types into one jitted program that every point reuses. It computes what the eager call
computes: the user's primitives bound at its top level run their impls, as eagerly (`_compat.eager_semantics`).

A primal without loops or branches stays eager in the precision it already ran in (its operations' programs are
cached per shape and dtype already, and a program of its own would be one compile more). In a precision it never ran
in (the float64 escalation of a float32 primal) every eager operation would be a fresh program compiled at XLA's
default level, about 20 ms each on CPU: one program of jaxdiag's own (`_compat.own_jit`) costs about as much as one of
them. A primal that cannot be traced or compiled stays eager: the eager call then gives the value, or the error, it
always gave.

The subject's gradient at a cotangent, G(x) = J(x)^T w, is such a program too (`CompiledGradient`): its VJP
(jvp-reverse, function-grad, and the eager reference grad-composition compares its compositions with) and finite
differences of G (grad-second-order) share it. For a subject that loops, that reference is therefore this
program's value, computed as eagerly (user primitives at its top level by their impls).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from ... import _compat
from ..._harness import call_user

if TYPE_CHECKING:
    from ._state import GradState

Call = Callable[[Sequence[Any]], Any]
ENABLED = True  # tests switch it off to compare with the eager evaluations


class CompiledPrimal:
    """`call(values)` (full positional values; those without a dtype are static) through one jitted program per
    precision and input types where that spares compiles, eagerly otherwise."""

    def __init__(self, call: Call, inline_custom: bool = False) -> None:
        self.call = call
        # evaluate custom_jvp/custom_vjp calls as eagerly, by their primal body (`_compat.eager_semantics`): only for
        # a call that is never differentiated further (the per-example gradients of grad-composition)
        self.inline_custom = inline_custom
        self.programs: dict[tuple, Callable[..., Any] | None] = {}

    def __call__(self, values: Sequence[Any], fresh: bool = False) -> Any:
        """`fresh`: these input types are new to the primal (no eager program of its operations is cached yet)."""
        ran, value = self.compiled(values, fresh)
        return value if ran else self.call(values)

    def compiled(self, values: Sequence[Any], fresh: bool = False) -> tuple[bool, Any]:
        """(True, value) where the program of these input types ran; (False, None) where the call stays eager (no
        program spares compiles, or it cannot be traced, compiled or run: the eager call then decides)."""
        arrays = [i for i, v in enumerate(values) if hasattr(v, "dtype")]
        key = (_compat.x64_enabled(), fresh, *((i, np.shape(values[i]), str(values[i].dtype)) for i in arrays))
        if key not in self.programs:
            self.programs[key] = self._program(values, arrays, fresh) if ENABLED else None
        program = self.programs[key]
        if program is not None:
            ran = call_user(program, *[values[i] for i in arrays])
            if ran.error is None:
                return True, ran.value
            self.programs[key] = None  # it fails where the eager call may not: the eager call decides
        return False, None

    def _program(self, values: Sequence[Any], arrays: list[int], fresh: bool) -> Callable[..., Any] | None:
        fixed = list(values)
        tree: list[Any] = []

        def flat(*xs: Any) -> list[Any]:
            full = list(fixed)
            for i, x in zip(arrays, xs):
                full[i] = x
            leaves, treedef = jax.tree_util.tree_flatten(self.call(full))
            tree[:] = [treedef]
            return leaves

        traced = call_user(jax.make_jaxpr(flat), *[values[i] for i in arrays])
        if traced.error is not None:  # not traceable (Python control flow on values, ...): stays eager
            return None
        closed = traced.value
        if not _compat.recompiles_eagerly(closed) and not (fresh and len(closed.jaxpr.eqns) > 1):
            return None
        evaluate = _compat.eager_semantics(closed, _compat.user_impl, self.inline_custom)
        if evaluate is None:
            return None
        jitted = _compat.own_jit(evaluate)
        return lambda *xs: jax.tree_util.tree_unflatten(tree[0], jitted(*xs))


class CompiledGradient:
    """G(x) = J(x)^T w of a subject (`st.call_target`) as one compiled program, by default at the first seeded
    output cotangent w (`st.cotangents(0)`): `CompiledPrimal` of `(x, w) -> pullback(w)` over the differentiable
    arguments and w's floating leaves (the others are float0 zeros, never traced). One per state
    (`GradState.gradient`), shared by the checks that evaluate G (the subject's VJP, finite differences of the
    gradient), so they compile it once."""

    def __init__(self, st: "GradState") -> None:
        self._count = len(st.diff)
        self._first = st.cotangents(0)
        self._dense = [k for k in range(len(st.out_leaves)) if st.out_diff(k)]

        def pullback_at(values: Sequence[Any]) -> list[Any]:
            ws = list(self._first)
            for k, w in zip(self._dense, values[self._count:]):
                ws[k] = w
            _, pullback = jax.vjp(st.diff_fn(st.call_target), *values[:self._count])
            return list(pullback(jax.tree_util.tree_unflatten(st.out_treedef, ws)))

        self._program = CompiledPrimal(pullback_at)

    def compiled(self, diffs: Sequence[Any], ws: Sequence[Any] | None = None) -> tuple[bool, Any]:
        """(True, G at `diffs` for cotangents `ws`) where the program runs, else (False, None): see
        `CompiledPrimal.compiled`."""
        ws = self._first if ws is None else ws
        return self._program.compiled([*diffs, *(ws[k] for k in self._dense)])
