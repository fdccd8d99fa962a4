"""The values a function passes to the rules nested inside it, observed by running it once eagerly.

A nested rule is checked at the arguments its function really gives it, not at random ones: a Cholesky-style JVP
inside a function that builds a positive-definite matrix is then checked on that matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from .. import _compat
from .._checks._base import Context, Options, Subject
from .._checks._call_site import call_arrays
from .._harness import call_user, jaxdiag_code
from .._harness.cache import SubjectCache
from .._loading._inputs import ArgSpec, spec_of


def primitive_call_key(prim: Any, params: dict, specs: Sequence[ArgSpec]) -> tuple:
    """Calls of one primitive with the same params and shapes are checked once."""
    return prim, repr(sorted(params.items(), key=lambda kv: kv[0])), tuple(map(str, specs))


def observed_examples(root: Subject, nested: list[Subject], options: Options, cache: SubjectCache
                      ) -> dict[int, list[np.ndarray]]:
    """The concrete arguments each nested subject receives when the function runs eagerly on its own example
    (id(subject) -> one array per spec). Subjects only reached under tracing (inside scan, while_loop) or whose
    observed arguments do not match their specs keep random draws."""
    example = [jax.numpy.asarray(x) for x in Context(root, options, "observe", cache).example()]
    customs: list = []
    binds: list = []
    recording = _compat.record_primitive_binds([], jaxdiag_code, binds)
    with _compat.record_custom_calls(customs, jaxdiag_code), recording, jax.disable_jit():
        call_user(root.call, *example)  # a failure is reported by the function's own checks; keep what was observed
    out: dict[int, list[np.ndarray]] = {}
    for subject in nested:
        if subject.kind == "primitive":
            want = primitive_call_key(subject.obj, subject.params, list(subject.specs))
            calls = [vals for prim, params, vals in binds if prim is subject.obj
                     and primitive_call_key(prim, params, [spec_of(v) for v in vals or []]) == want]
        elif subject.kind in ("custom_jvp", "custom_vjp"):
            _adopt_eager_closure(subject, [obj for obj, _, _ in customs])
            calls = [call_arrays(subject, obj, args, kwargs) for obj, args, kwargs in customs]
            if not any(c is not None for c in calls):  # a rule made anew on every call: its twin of this run's
                calls = [call_arrays(subject, obj, args, kwargs, twin=True) for obj, args, kwargs in customs
                         if _twins(subject.obj, obj)]
        else:
            calls = [[a for a in args if hasattr(a, "shape")] for obj, args, _ in customs if obj is subject.obj]
        wanted = [ArgSpec(s.dtype, s.shape) for s in subject.specs]
        values = next((v for v in calls if v is not None and _concrete_at(v, wanted)), None)
        if values is not None:
            out[id(subject)] = [np.asarray(v) for v in values]
    return out


def _adopt_eager_closure(subject: Subject, eager: list[Any]) -> None:
    """A custom_jvp/custom_vjp made inside the function on each call, closing over arrays the function computed
    (`d = ...; @custom_vjp def f(b): return b / d`): the instance found by tracing the function holds tracers of
    that trace, and calling it again (every check does) raises UnexpectedTracerError. The same rule made by the
    eager run closes over concrete arrays: the subject is checked on that one."""
    user = subject.original if subject.original is not None else subject.obj
    if not _closes_over_tracers(user):
        return
    fresh = next((obj for obj in eager if _twins(user, obj) and not _closes_over_tracers(obj)), None)
    if fresh is None:
        return
    if subject.original is None:
        subject.obj = fresh
    elif subject.layout is not None:  # a flat view of its pytree arguments (`iterative(params: list)`): of the twin
        from .._loading._layout import flat_view

        subject.original, subject.obj = fresh, flat_view(subject.kind, fresh, subject.layout)


def _twins(made: Any, other: Any) -> bool:
    """Two rule objects made by the same code (a function that makes its custom_jvp on each call made `made` while
    it was traced and `other` while it ran eagerly): the calls of one are the calls of the other's call site."""
    code = _rule_code(made)
    return other is not made and type(other) is type(made) and code is not None and _rule_code(other) == code


def _rule_code(obj: Any) -> Any:
    return getattr(getattr(obj, "fun", None), "__code__", None)


def _closes_over_tracers(obj: Any) -> bool:
    for name in ("fun", "fwd", "bwd", "jvp"):
        for cell in getattr(getattr(obj, name, None), "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            # inside a container or an object of arrays too (a linear operator holding its traced matrix)
            if _compat.is_tracer(value) or any(map(_compat.is_tracer, _leaves(value))):
                return True
    return False


def _leaves(value: Any) -> list[Any]:
    """The array leaves of a closed-over value; none where flattening it raises (a user pytree's own flatten)."""
    from .._harness import call_user

    made = call_user(jax.tree_util.tree_leaves, value, quiet=True)
    return list(made.value) if made.error is None else []


def _concrete_at(values: Sequence[Any], wanted: list[ArgSpec]) -> bool:
    """Whether one observed call passed concrete arrays of exactly the subject's specs (a call made while a loop body
    traces holds tracers; a PRNG key has no plain spec)."""
    if any(not hasattr(a, "dtype") or _compat.is_tracer(a) or jax.dtypes.issubdtype(a.dtype, jax.dtypes.extended)
           for a in values):
        return False
    return [spec_of(v) for v in values] == wanted
