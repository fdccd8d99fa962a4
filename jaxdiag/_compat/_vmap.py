"""What the batching checks need: intercepting every batching rule during a vmap, abstract evaluation,
output dependence, recording primitive binds and naming JAX's generic batchers.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, ContextManager

import numpy as np
from jax._src import core as _core

from ._autodiff import is_tracer
from ._base import is_primitive
from ._jaxprs import axis_size_of
from ._registries import _batching_table, _legacy_batching_table, is_builtin_primitive

# `guard(where)` wraps jaxdiag's own code that runs inside a user call (the bookkeeping of a patched bind or
# batching table); the checks pass `jaxdiag_code`, so a failure there is jaxdiag's bug, never the user's error. The
# compatibility layer sits below the harness and cannot import it.
Guard = Callable[[str], ContextManager[None]]

# ---------------------------------------------------------------------------------------------------------------
# --- batching ---
# ---------------------------------------------------------------------------------------------------------------


def user_batching_primitives() -> list[Any]:
    """Primitives whose registered batching rule is the user's code (not JAX's own), in registration order."""
    seen: dict[Any, None] = {}
    for table in (_legacy_batching_table(), _batching_table()):
        for prim in table:
            if is_primitive(prim) and not is_builtin_primitive(prim):
                seen.setdefault(prim, None)
    return list(seen)


@contextlib.contextmanager
def intercept_batching_rules(handlers: dict[Any, Callable[..., Any]], guard: Guard) -> Iterator[None]:
    """Route every call vmap makes to these primitives' batching rules through their handler.

    `handler(vals, dims, params, axis_size, call)` returns what JAX gets; `call()` runs the registered rule (and
    raises JAX's own NotImplementedError when none is registered: a handler may then answer itself), and
    `call(other_vals)` runs it again on other operands with the same dims and params (a probe of the rule). Every table
    entry is restored, and temporary ones removed, on exit, even when the body raises.
    """
    fancy, legacy = _batching_table(), _legacy_batching_table()
    changed: list[tuple[dict, Any, Any]] = []  # (table, prim, original or None when the entry was added)
    try:
        for prim, handler in handlers.items():
            if prim in legacy and legacy is not fancy:
                table, is_fancy = legacy, False
            else:
                table, is_fancy = fancy, True
            original = table.get(prim)
            changed.append((table, prim, original))
            table[prim] = _interceptor(prim, handler, original, is_fancy, guard)
        yield
    finally:
        for table, prim, original in reversed(changed):
            if original is None:
                table.pop(prim, None)
            else:
                table[prim] = original


def _interceptor(prim: Any, handler: Callable, original: Callable | None, is_fancy: bool, guard: Guard) -> Callable:
    def missing(again: Any = None) -> Any:
        raise NotImplementedError(f"Batching rule for '{prim}' not implemented")

    if is_fancy:

        def fancy_spy(axis_data, vals, dims, **params):
            with guard("intercepting a batching rule"):
                size = _axis_size(axis_data, vals, dims)
            call = missing if original is None else (
                lambda again=None: original(axis_data, vals if again is None else again, dims, **params))
            return handler(tuple(vals), tuple(dims), params, size, call)

        return fancy_spy

    def legacy_spy(vals, dims, **params):
        call = missing if original is None else (
            lambda again=None: original(vals if again is None else again, dims, **params))
        with guard("intercepting a batching rule"):
            size = _axis_size(None, vals, dims)
        return handler(tuple(vals), tuple(dims), params, size, call)

    return legacy_spy


def _axis_size(axis_data: Any, vals: Any, dims: Any) -> int | None:
    """The vmap's size: from the fancy table's axis data, else from the batched inputs."""
    size = getattr(axis_data, "size", None)
    return size if isinstance(size, int) else axis_size_of(tuple(vals), tuple(dims))


def abstract_eval_output(prim: Any, avals: list[Any], params: dict[str, Any]) -> Any:
    """What the primitive's abstract evaluation returns for `avals` (effects dropped); raises what the rule raises."""
    out = prim.abstract_eval(*avals, **params)
    if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], (set, frozenset)):
        return out[0]
    return out


def is_abstract_value(x: Any) -> bool:
    return isinstance(x, _core.AbstractValue)


def is_foreign_abstract_value(x: Any) -> bool:
    """An abstract value of a type the user's library defines (a quantum measurement, an operator): the primitive
    stands for an operation of that library's own interpreter, and its values are not arrays."""
    return isinstance(x, _core.AbstractValue) and type(x).__module__.split(".")[0] not in ("jax", "jaxlib")


def shaped_array(shape: tuple[int, ...], dtype: Any) -> Any:
    return _core.ShapedArray(tuple(shape), np.dtype(dtype))


def output_dependence(closed: Any) -> list[bool]:
    """For each output of a closed jaxpr, whether it depends on any input (constants and literals do not).

    Conservative: an equation's outputs depend on all of its inputs, nested jaxprs included.
    """
    jaxpr = closed.jaxpr if isinstance(closed, _core.ClosedJaxpr) else closed
    live = set(jaxpr.invars)
    for eqn in jaxpr.eqns:
        if any(isinstance(v, _core.Var) and v in live for v in eqn.invars):
            live.update(eqn.outvars)
    return [isinstance(v, _core.Var) and v in live for v in jaxpr.outvars]


@contextlib.contextmanager
def record_primitive_binds(seen: list, guard: Guard, values: list | None = None, raw: list | None = None
                           ) -> Iterator[None]:
    """Record (primitive, input avals, params) for every user primitive bound while the body runs, in `values`
    (when given) (primitive, params, concrete arguments or None where an argument is traced), and in `raw` (when
    given) (primitive, params, the arguments as bound, tracers included).

    Used to find user primitives in a function that cannot be traced (no abstract eval), and the values a nested
    primitive receives from its function; `Primitive.bind` is restored on exit, even on error.
    """
    original = _core.Primitive.bind

    def recording_bind(self, *args, **params):
        with guard("recording a primitive bind"):
            _record(self, args, params)
        return original(self, *args, **params)

    def _record(prim, args, params):
        if is_builtin_primitive(prim):
            return
        if raw is not None:
            raw.append((prim, dict(params), tuple(args)))
        if values is not None:
            concrete = None if any(is_tracer(a) for a in args) else [np.asarray(a) for a in args]
            values.append((prim, dict(params), concrete))
        try:
            avals = [_core.ShapedArray(np.shape(a), np.asarray(a).dtype if not is_tracer(a) else a.aval.dtype)
                     for a in args]
        except (TypeError, AttributeError, ValueError):  # extended dtypes, tokens: nothing jaxdiag can draw
            return
        seen.append((prim, avals, dict(params)))

    try:
        _core.Primitive.bind = recording_bind  # type: ignore[method-assign]  # the patch, undone in finally
        yield
    finally:
        _core.Primitive.bind = original  # type: ignore[method-assign]  # the patch, undone in finally


def generic_batcher_name(prim: Any) -> str | None:
    """'defvectorized' / 'defbroadcasting' / 'defreducer' when the primitive's rule is one of JAX's generic
    batchers (a partial of `vectorized_batcher`, ...), else None."""
    # jax <= 0.7 keeps `defvectorized` & co. in the plain `primitive_batchers` dict; newer ones in the fancy table.
    rule = _legacy_batching_table().get(prim) or _batching_table().get(prim)
    func = getattr(rule, "func", None) if isinstance(rule, functools.partial) else None
    name = getattr(func, "__name__", "")
    return {"vectorized_batcher": "defvectorized", "broadcast_batcher": "defbroadcasting",
            "reducer_batcher": "defreducer"}.get(name)
