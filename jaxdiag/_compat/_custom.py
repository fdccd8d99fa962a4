"""custom_vjp / custom_jvp / custom_vmap objects: recognising them, taking them apart, recording their calls
and spying on a custom_vmap rule.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterator
from typing import Any, ContextManager

import numpy as np

from ._base import custom_jvp_type, custom_vjp_type, custom_vmap_type

Guard = Callable[[str], ContextManager[None]]  # the harness's `jaxdiag_code` (this package sits below it)

# ---------------------------------------------------------------------------------------------------------------
# custom_vjp / custom_jvp / custom_vmap objects
# ---------------------------------------------------------------------------------------------------------------


def is_custom_vjp(obj: Any) -> bool:
    return isinstance(obj, custom_vjp_type)


def is_custom_jvp(obj: Any) -> bool:
    return isinstance(obj, custom_jvp_type)


def is_custom_vmap(obj: Any) -> bool:
    return custom_vmap_type is not None and isinstance(obj, custom_vmap_type)


def custom_vjp_parts(obj: Any) -> tuple[Callable, Callable | None, Callable | None, tuple[int, ...], bool]:
    """(fun, fwd, bwd, nondiff_argnums, symbolic_zeros) of a custom_vjp."""
    return (obj.fun, obj.fwd, obj.bwd, tuple(obj.nondiff_argnums), bool(getattr(obj, "symbolic_zeros", False)))


def custom_jvp_parts(obj: Any) -> tuple[Callable, Callable | None, tuple[int, ...], bool]:
    """(fun, jvp rule, nondiff_argnums, symbolic_zeros) of a custom_jvp."""
    return (obj.fun, obj.jvp, tuple(obj.nondiff_argnums), bool(getattr(obj, "symbolic_zeros", False)))


def custom_vmap_parts(obj: Any) -> tuple[Callable, Callable | None]:
    return obj.fun, obj.vmap_rule


@contextlib.contextmanager
def record_custom_calls(seen: list, guard: Guard, differentiable: set[int] | None = None) -> Iterator[None]:
    """Record every custom_vjp / custom_jvp / custom_vmap object called while the body runs.

    Appends (obj, args) for each call, inside `guard(...)` (the harness's `jaxdiag_code`: a failure of the recorder
    is jaxdiag's, never the user's). `differentiable` collects the id of each object called at least once outside
    the call of a custom_jvp/custom_vjp: inside one (its primal function), JAX differentiates the call through that
    rule, never through the inner object's own JVP. The classes' `__call__` are restored on exit, even on error.
    """
    classes = [c for c in (custom_vjp_type, custom_jvp_type, custom_vmap_type) if c is not None]
    originals = {cls: cls.__dict__["__call__"] for cls in classes if "__call__" in cls.__dict__}
    derivative_rules = {c for c in (custom_vjp_type, custom_jvp_type) if c is not None}
    depth = [0]  # custom_jvp/custom_vjp calls in progress

    def make(original):
        @functools.wraps(original)
        def recording_call(self, *args, **kwargs):
            with guard("the custom-call recorder"):
                seen.append((self, args, kwargs))
                if differentiable is not None and not depth[0]:
                    differentiable.add(id(self))
            inner = type(self) in derivative_rules
            depth[0] += inner
            try:
                return original(self, *args, **kwargs)
            finally:
                depth[0] -= inner

        return recording_call

    try:
        for cls, original in originals.items():
            cls.__call__ = make(original)  # type: ignore[method-assign]  # the patch, undone in finally
        yield
    finally:
        for cls, original in originals.items():
            cls.__call__ = original  # type: ignore[method-assign]  # the patch, undone in finally


@contextlib.contextmanager
def spy_custom_vmap_rule(obj: Any, make_spy: Callable[[Callable], Callable]) -> Iterator[None]:
    """Replace `obj.vmap_rule` by `make_spy(rule)` for the body; the user's rule is put back even on error.

    custom_vmap reads `self.vmap_rule` at each call (it binds `ClosedRule(self.vmap_rule)`), so calls made in the
    body go through the spy. A jit cache filled during the body would keep the spy: callers must not jit `obj`.
    """
    original = obj.vmap_rule
    try:
        obj.vmap_rule = make_spy(original)
        yield
    finally:
        obj.vmap_rule = original


def install_call_hooks(on_bind: Callable[[Any, tuple, dict], None],
                       on_custom_call: Callable[[str, Any, tuple, dict], None]) -> None:
    """For the whole process (`jaxdiag record`): call `on_bind(prim, args, params)` before every
    `Primitive.bind` and `on_custom_call(kind, obj, args, kwargs)` before every custom_vjp/custom_jvp/custom_vmap
    call. Never removed: the recording process ends with the user's command."""
    from jax._src import core as _core_module

    original_bind = _core_module.Primitive.bind

    def recording_bind(self: Any, *args: Any, **params: Any) -> Any:
        on_bind(self, args, params)
        return original_bind(self, *args, **params)

    _core_module.Primitive.bind = recording_bind  # type: ignore[method-assign]
    for kind, cls in (("custom_vjp", custom_vjp_type), ("custom_jvp", custom_jvp_type),
                      ("custom_vmap", custom_vmap_type)):
        if cls is None or "__call__" not in cls.__dict__:
            continue
        cls.__call__ = _recording_call(kind, cls.__dict__["__call__"], on_custom_call)  # type: ignore[method-assign]


def _recording_call(kind: str, original: Callable, hook: Callable[[str, Any, tuple, dict], None]) -> Callable:
    def recording_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        hook(kind, self, args, kwargs)
        return original(self, *args, **kwargs)

    return recording_call


# JAX's check of a custom_vjp bwd's output against the primal's differentiable arguments: "... but at output[1] the
# bwd rule produced an output of type float32[] corresponding to an input of type float32[3] ..." (newer JAX), "of
# shape/dtype float32[] corresponding to an input of shape/dtype float32[3]" (0.5).
_BWD_MISMATCH = re.compile(r"at output\[(\d+)\]\S* the bwd rule produced an output of (?:type|shape/dtype) "
                           r"\w+\[([\d,]*)\] corresponding to an input of (?:type|shape/dtype) \w+\[([\d,]*)\]")


# JAX's check of a transpose rule's cotangent against the operand it is for (newer JAX; no check before):
# "Expected cotangent type complex64[4] but got float32[192]".
_TRANSPOSE_MISMATCH = re.compile(r"Expected cotangent type (\w+)\[([\d,]*)\] but got (\w+)\[([\d,]*)\]")


def transpose_cotangent_mismatch(exc: BaseException
                                 ) -> tuple[tuple[str, tuple[int, ...]], tuple[str, tuple[int, ...]]] | None:
    """((dtype name, shape) the operand has, (dtype name, shape) of the cotangent its transpose rule returned) when
    `exc` is JAX rejecting a transpose rule's cotangent; else None."""
    found = _TRANSPOSE_MISMATCH.search(str(exc))
    if found is None:
        return None
    return (found.group(1), _dims(found.group(2))), (found.group(3), _dims(found.group(4)))


def transpose_cotangent_error(operand: Any, cotangent: Any) -> ValueError:
    """JAX's own error for a transpose rule's `cotangent` of another shape than its `operand` (both avals), for a
    release that accepts one silently (before 0.6): `transpose_cotangent_mismatch` reads it back."""
    def aval(x: Any) -> str:
        return f"{np.dtype(x.dtype).name}[{','.join(map(str, x.shape))}]"

    return ValueError(f"Expected cotangent type {aval(operand)} but got {aval(cotangent)}")


def _dims(text: str) -> tuple[int, ...]:
    """The shape of an aval's text between its brackets (`3,4` of `float32[3,4]`)."""
    return tuple(int(d) for d in text.split(",") if d)


def bwd_cotangent_mismatch(exc: BaseException) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
    """(the differentiable argument's index, the shape the bwd returned, the argument's shape) when `exc` is JAX
    rejecting a custom_vjp bwd's output shape; else None."""
    found = _BWD_MISMATCH.search(str(exc))
    if found is None:
        return None
    return int(found.group(1)), _dims(found.group(2)), _dims(found.group(3))
