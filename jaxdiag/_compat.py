"""The only module that touches JAX internals.

Every private import, rule-registry access and version difference lives here, so a JAX release that moves
something breaks this one file. Feature detection is preferred over version comparison.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from typing import Any, Callable, Iterator

import jax
import jax.numpy as jnp
import numpy as np
from jax.interpreters import ad, batching, mlir

try:  # jax >= 0.4.36
    from jax.extend.core import Primitive
except ImportError:  # pragma: no cover - very old JAX
    from jax.core import Primitive  # type: ignore[attr-defined,no-redef]

from jax._src import core as _core
from jax._src import custom_derivatives as _custom_derivatives
from jax._src.interpreters import ad as _ad
from jax._src.interpreters import batching as _batching
from jax._src.interpreters import mlir as _mlir

try:
    from jax._src import custom_batching as _custom_batching
except ImportError:  # pragma: no cover
    _custom_batching = None  # type: ignore[assignment]

JAX_VERSION: str = jax.__version__
try:
    import jaxlib

    JAXLIB_VERSION: str = getattr(jaxlib, "__version__", None) or jaxlib.version.__version__  # type: ignore[attr-defined]
except Exception:  # pragma: no cover
    JAXLIB_VERSION = "unknown"

float0 = jax.dtypes.float0
custom_vjp_type = _custom_derivatives.custom_vjp
custom_jvp_type = _custom_derivatives.custom_jvp
custom_vmap_type = getattr(_custom_batching, "custom_vmap", None)
ShapedArray = _core.ShapedArray
ClosedJaxpr = _core.ClosedJaxpr
Jaxpr = _core.Jaxpr
Zero = _ad.Zero
UndefinedPrimal = _ad.UndefinedPrimal
SymbolicZero = getattr(_custom_derivatives, "SymbolicZero", None)
CustomVJPPrimal = getattr(_custom_derivatives, "CustomVJPPrimal", None)
is_undefined_primal = _ad.is_undefined_primal
instantiate_zeros = _ad.instantiate_zeros


def is_primitive(obj: Any) -> bool:
    return isinstance(obj, _core.Primitive)


def is_jit_wrapped(obj: Any) -> bool:
    """A `jax.jit` result: a PjitFunction (C++) or an older Python wrapper with `.lower`."""
    return callable(obj) and hasattr(obj, "lower") and hasattr(obj, "__wrapped__")


# ---------------------------------------------------------------------------------------------------------------
# Rule registries
# ---------------------------------------------------------------------------------------------------------------


def _batching_table() -> dict:
    """The dict vmap actually consults (a write-only proxy fronts it on newer JAX)."""
    fancy = getattr(_batching, "fancy_primitive_batchers", None)
    return fancy if isinstance(fancy, dict) else {}


def _legacy_batching_table() -> dict:
    table = getattr(_batching, "primitive_batchers", None)
    return table if isinstance(table, dict) else {}


def _closure_vars(fn: Any) -> dict[str, Any]:
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    out = {}
    for name, cell in zip(code.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # empty cell
            pass
    return out


def batching_rule(prim: Any) -> Callable | None:
    """The user's batching rule for `prim`, unwrapped from the proxy JAX stores, or None."""
    legacy = _legacy_batching_table()
    if prim in legacy:
        return legacy[prim]
    rule = _batching_table().get(prim)
    if rule is None:
        return None
    inner = _closure_vars(rule).get("batcher")
    return inner if callable(inner) else rule


def batching_rule_is_fancy(prim: Any) -> bool:
    """True when the registered rule takes `axis_data` first (registered directly in the fancy table)."""
    if prim in _legacy_batching_table():
        return False
    rule = _batching_table().get(prim)
    return rule is not None and "batcher" not in _closure_vars(rule)


def has_batching_rule(prim: Any) -> bool:
    return prim in _batching_table() or prim in _legacy_batching_table()


@contextlib.contextmanager
def spy_batching_rule(prim: Any, on_return: Callable[[tuple, tuple, dict, Any], Any]) -> Iterator[None]:
    """Route every call vmap makes to `prim`'s batching rule through `on_return(vals, dims, params, result)`.

    `on_return` sees the rule's raw result before JAX does and returns what JAX should get (or raises). The
    registry entry is restored on exit, even when the body raises.
    """
    for table in (_legacy_batching_table(), _batching_table()):
        if prim in table:
            break
    else:
        yield
        return
    original = table[prim]
    fancy_signature = table is _batching_table() and table is not _legacy_batching_table()

    if fancy_signature:

        def spy(axis_data, vals, dims, **params):
            return on_return(tuple(vals), tuple(dims), params, original(axis_data, vals, dims, **params))

    else:

        def spy(vals, dims, **params):
            return on_return(tuple(vals), tuple(dims), params, original(vals, dims, **params))

    table[prim] = spy
    try:
        yield
    finally:
        table[prim] = original


def jvp_rule(prim: Any) -> Callable | None:
    return _ad.primitive_jvps.get(prim)


def transpose_rule(prim: Any) -> Callable | None:
    rule = _ad.primitive_transposes.get(prim)
    if rule is None:
        rule = getattr(_ad, "fancy_transposes", {}).get(prim)
    return rule


def has_impl(prim: Any) -> bool:
    return "impl" in vars(prim)


def has_abstract_eval(prim: Any) -> bool:
    return "abstract_eval" in vars(prim)


def impl(prim: Any) -> Callable | None:
    return vars(prim).get("impl")


def abstract_eval_rule(prim: Any) -> Callable | None:
    """The user's abstract-eval function (JAX stores a partial around it)."""
    rule = vars(prim).get("abstract_eval")
    if isinstance(rule, functools.partial):
        for arg in rule.args:
            if callable(arg):
                return arg
    inner = _closure_vars(rule).get("abstract_eval")  # def_abstract_eval's effect-free closure
    return inner if callable(inner) else rule


def has_lowering(prim: Any, platform: str = "cpu") -> bool:
    if prim in getattr(_mlir, "_lowerings", {}):
        return True
    per_platform = getattr(_mlir, "_platform_specific_lowerings", {})
    return prim in per_platform.get(platform, {})


def lowering_rule(prim: Any, platform: str = "cpu") -> Callable | None:
    per_platform = getattr(_mlir, "_platform_specific_lowerings", {})
    rule = per_platform.get(platform, {}).get(prim) or getattr(_mlir, "_lowerings", {}).get(prim)
    if rule is None:
        return None
    if not callable(rule) and callable(getattr(rule, "rule", None)):  # jax >= 0.7 stores LoweringRuleEntry
        rule = rule.rule
    return _closure_vars(rule).get("fun") or rule


def registered_rules(prim: Any) -> dict[str, Callable | None]:
    """Every rule jaxdiag knows how to read for `prim`, by role."""
    return {
        "impl": impl(prim),
        "abstract_eval": abstract_eval_rule(prim),
        "batching": batching_rule(prim),
        "jvp": jvp_rule(prim),
        "transpose": transpose_rule(prim),
        "lowering": lowering_rule(prim),
    }


def _module_of(fn: Any) -> str:
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = inspect.unwrap(fn) if callable(fn) else fn
    return getattr(fn, "__module__", "") or ""


def is_builtin_primitive(prim: Any) -> bool:
    """JAX's own primitives are trusted unless asked: their rules live in jax/jaxlib modules."""
    rules = [r for r in registered_rules(prim).values() if r is not None]
    if not rules:
        return True
    return all(_module_of(r).split(".")[0] in ("jax", "jaxlib") for r in rules)


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
def record_custom_calls(seen: list) -> Iterator[None]:
    """Record every custom_vjp / custom_jvp / custom_vmap object called while the body runs.

    Appends (obj, args) for each call. The classes' `__call__` are restored on exit, even on error.
    """
    classes = [c for c in (custom_vjp_type, custom_jvp_type, custom_vmap_type) if c is not None]
    originals = {cls: cls.__dict__["__call__"] for cls in classes if "__call__" in cls.__dict__}

    def make(original):
        @functools.wraps(original)
        def recording_call(self, *args, **kwargs):
            seen.append((self, args, kwargs))
            return original(self, *args, **kwargs)

        return recording_call

    try:
        for cls, original in originals.items():
            cls.__call__ = make(original)
        yield
    finally:
        for cls, original in originals.items():
            cls.__call__ = original


# ---------------------------------------------------------------------------------------------------------------
# Jaxprs
# ---------------------------------------------------------------------------------------------------------------


def sub_jaxprs(eqn: Any) -> Iterator[Any]:
    """The jaxprs nested in an equation's params (jit, scan, cond branches, custom_jvp_call, ...)."""
    for value in eqn.params.values():
        items = value if isinstance(value, (tuple, list)) else (value,)
        for item in items:
            if isinstance(item, _core.ClosedJaxpr):
                yield item.jaxpr
            elif isinstance(item, _core.Jaxpr):
                yield item


def iter_eqns(jaxpr: Any) -> Iterator[Any]:
    """Every equation in `jaxpr` and, depth first, in the jaxprs nested inside it."""
    if isinstance(jaxpr, _core.ClosedJaxpr):
        jaxpr = jaxpr.jaxpr
    for eqn in jaxpr.eqns:
        yield eqn
        for sub in sub_jaxprs(eqn):
            yield from iter_eqns(sub)


def _user_frame(eqn: Any) -> Any:
    """JAX's record of the innermost user frame that created `eqn` (file_name, start_line, function_name)."""
    try:
        from jax._src import source_info_util

        # jax <= 0.5 takes the SourceInfo; newer releases take its traceback (the SourceInfo has no raw_frames).
        first = next(iter(inspect.signature(source_info_util.user_frame).parameters))
        info = eqn.source_info if first == "source_info" else eqn.source_info.traceback
        return source_info_util.user_frame(info)
    except Exception:
        return None


def eqn_source_line(eqn: Any) -> tuple[str, int] | None:
    """The user's (file, line) that created `eqn`, from JAX's source info, if recorded."""
    frame = _user_frame(eqn)
    if frame is None:
        return None
    return frame.file_name, frame.start_line


def eqn_source_function(eqn: Any) -> str | None:
    """The name of the user's function whose line created `eqn`."""
    frame = _user_frame(eqn)
    return getattr(frame, "function_name", None) if frame is not None else None


def aval_of(var: Any) -> Any:
    return var.aval


def axis_size_of(vals: tuple, dims: tuple) -> int | None:
    """The vmap axis size seen by a batching rule, read off the first batched operand."""
    for v, d in zip(vals, dims):
        if d is not None and isinstance(d, int) and 0 <= d < np.ndim(v):
            return int(np.shape(v)[d])
    return None


@contextlib.contextmanager
def jax_config(**flags: Any) -> Iterator[None]:
    """Set JAX config flags for the body and restore them afterwards."""
    old = {name: getattr(jax.config, name) for name in flags}
    try:
        for name, value in flags.items():
            jax.config.update(name, value)
        yield
    finally:
        for name, value in old.items():
            jax.config.update(name, value)


def x64_enabled() -> bool:
    return bool(jax.config.jax_enable_x64)


def tangent_dtype(dtype: Any) -> Any:
    """The tangent dtype JAX uses for a primal dtype (float0 for integers and bools)."""
    dtype = np.dtype(dtype)
    if jnp.issubdtype(dtype, jnp.inexact):
        return dtype
    return float0


def snapshot_registries() -> dict[str, Any]:
    """A copy of every registry jaxdiag may touch, to verify that it leaves JAX as it found it."""
    return {
        "batching": dict(_batching_table()),
        "legacy_batching": dict(_legacy_batching_table()),
        "jvp": dict(_ad.primitive_jvps),
        "transpose": dict(_ad.primitive_transposes),
        "lowerings": dict(getattr(_mlir, "_lowerings", {})),
        "custom_calls": {
            c: c.__dict__.get("__call__") for c in (custom_vjp_type, custom_jvp_type, custom_vmap_type) if c
        },
        "x64": x64_enabled(),
        "enable_checks": bool(jax.config.jax_enable_checks),
    }


def restore_registries(snapshot: dict[str, Any]) -> list[str]:
    """Put back every entry of `snapshot` that changed or disappeared; returns what was restored.

    Entries added since the snapshot are kept: importing the user's modules registers their rules, and those
    registrations belong to the user, not to jaxdiag.
    """
    tables = {"batching": _batching_table(), "legacy_batching": _legacy_batching_table(),
              "jvp": _ad.primitive_jvps, "transpose": _ad.primitive_transposes,
              "lowerings": getattr(_mlir, "_lowerings", {})}
    restored = []
    for name, table in tables.items():
        for key, value in snapshot.get(name, {}).items():
            if table.get(key) is not value:
                table[key] = value
                restored.append(f"{name}[{getattr(key, 'name', key)}]")
    for cls, call in snapshot.get("custom_calls", {}).items():
        if cls.__dict__.get("__call__") is not call and call is not None:
            cls.__call__ = call
            restored.append(f"{cls.__name__}.__call__")
    for name, flag in (("x64", "jax_enable_x64"), ("enable_checks", "jax_enable_checks")):
        if name in snapshot and bool(getattr(jax.config, flag)) != snapshot[name]:
            jax.config.update(flag, snapshot[name])
            restored.append(flag)
    return restored


# ---------------------------------------------------------------------------------------------------------------
# --- custom_vmap / ffi ---
# ---------------------------------------------------------------------------------------------------------------

# `jax.ffi` is public from jax 0.4.38 on (0.5.3 has it); older releases only had `jax.extend.ffi`.
try:
    from jax import ffi as ffi  # noqa: PLC0414 - re-exported for checks, tests and samples
except ImportError:  # pragma: no cover - jax < 0.4.38
    from jax.extend import ffi as ffi  # type: ignore[no-redef]

# Equations whose batching is chosen by a `vmap_method` parameter rather than a batching rule.
FOREIGN_CALL_PRIMITIVES = ("ffi_call", "pure_callback")
VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized")
SEQUENTIAL_VMAP_METHODS = ("sequential", "sequential_unrolled")


def is_foreign_call(eqn: Any) -> bool:
    return getattr(eqn.primitive, "name", None) in FOREIGN_CALL_PRIMITIVES


def vmap_method_of(eqn: Any) -> str | None:
    return eqn.params.get("vmap_method")


def foreign_call_target(eqn: Any) -> str:
    """`target_name` of an ffi_call, or the Python function's name behind a pure_callback."""
    if "target_name" in eqn.params:
        return str(eqn.params["target_name"])
    callback = eqn.params.get("callback")
    func = getattr(callback, "callback_func", callback)  # pure_callback stores a _FlatCallback around it
    func = inspect.unwrap(func) if callable(func) else func
    return getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)


def _rewrite_param(value: Any, rewrite: Callable[[Any], Any]) -> Any:
    if isinstance(value, _core.ClosedJaxpr):
        return value.replace(jaxpr=rewrite(value.jaxpr))
    if isinstance(value, _core.Jaxpr):
        return rewrite(value)
    if isinstance(value, (tuple, list)) and any(isinstance(v, (_core.ClosedJaxpr, _core.Jaxpr)) for v in value):
        return type(value)(_rewrite_param(v, rewrite) for v in value)
    return value


def with_vmap_methods(closed: Any, choose: Callable[[Any], str | None]) -> Any:
    """A copy of `closed` where every ffi_call / pure_callback equation, nested ones included, gets
    `vmap_method=choose(original_eqn)`. Used to re-run a function with one call's vmap_method changed."""

    def rewrite(jaxpr: Any) -> Any:
        eqns = []
        for eqn in jaxpr.eqns:
            params = {k: _rewrite_param(v, rewrite) for k, v in eqn.params.items()}
            if is_foreign_call(eqn):
                params["vmap_method"] = choose(eqn)
            eqns.append(eqn.replace(params=params))
        return jaxpr.replace(eqns=eqns)

    return closed.replace(jaxpr=rewrite(closed.jaxpr))


def jaxpr_as_fun(closed: Any) -> Callable[..., list]:
    """Evaluate a ClosedJaxpr on positional arrays (a list of outputs); traceable by vmap."""
    return _core.jaxpr_as_fun(closed)


@functools.lru_cache(maxsize=None)
def vmap_method_none_raises() -> bool:
    """True when `vmap` of an ffi_call/pure_callback with `vmap_method=None` raises (newer JAX); older releases
    (0.5.x) fall back to a sequential loop with a DeprecationWarning."""
    import warnings

    def callback(x: np.ndarray) -> np.ndarray:
        return np.asarray(x)

    def f(x: Any) -> Any:
        return jax.pure_callback(callback, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method=None)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            jax.vmap(f)(np.zeros((2, 1), np.float32))
        except NotImplementedError:
            return True
    return False


@contextlib.contextmanager
def spy_custom_vmap_rule(obj: Any, make_spy: Callable[[Callable], Callable]) -> Iterator[None]:
    """Replace `obj.vmap_rule` by `make_spy(rule)` for the body; the user's rule is put back even on error.

    custom_vmap reads `self.vmap_rule` at each call (it binds `ClosedRule(self.vmap_rule)`), so calls made in the
    body go through the spy. A jit cache filled during the body would keep the spy: callers must not jit `obj`.
    """
    original = obj.vmap_rule
    obj.vmap_rule = make_spy(original)
    try:
        yield
    finally:
        obj.vmap_rule = original



# ---------------------------------------------------------------------------------------------------------------
# --- grad ---
# ---------------------------------------------------------------------------------------------------------------


def resolve_positional(fun: Callable, args: tuple, kwargs: dict | None = None) -> tuple:
    """`args`/`kwargs` bound to `fun`'s signature with defaults applied, as custom_jvp/custom_vjp do before calling
    rules (so `nondiff_argnums` may point at a defaulted parameter, and keyword arguments become positional).
    `args` unchanged when the signature cannot bind them."""
    try:
        from jax._src.api_util import resolve_kwargs

        return tuple(resolve_kwargs(fun, tuple(args), dict(kwargs or {})))
    except Exception:
        return tuple(args)


def tangent_aval(shape: tuple[int, ...], dtype: Any) -> Any:
    return _core.ShapedArray(tuple(shape), tangent_dtype(dtype))


def ad_zero(shape: tuple[int, ...], dtype: Any) -> Any:
    """The symbolic zero tangent/cotangent JAX passes to primitive rules for an input of this shape and dtype."""
    return _ad.Zero(tangent_aval(shape, dtype))


def symbolic_zero(shape: tuple[int, ...], dtype: Any) -> Any:
    """The `SymbolicZero` custom_jvp/custom_vjp rules receive with `symbolic_zeros=True`."""
    return SymbolicZero(tangent_aval(shape, dtype))


def undefined_primal(shape: tuple[int, ...], dtype: Any) -> Any:
    """What a transpose rule receives for a linear input."""
    return _ad.UndefinedPrimal(_core.ShapedArray(tuple(shape), np.dtype(dtype)))


def custom_vjp_primal(value: Any, perturbed: bool = True) -> Any:
    """What a custom_vjp fwd receives per argument with `symbolic_zeros=True`."""
    return CustomVJPPrimal(value, perturbed)


def is_symbolic_zero(x: Any) -> bool:
    return type(x) is _ad.Zero or (SymbolicZero is not None and type(x) is SymbolicZero)


def float0_zeros(shape: tuple[int, ...]) -> np.ndarray:
    return np.zeros(tuple(shape), dtype=float0)


def is_tracer(x: Any) -> bool:
    return isinstance(x, _core.Tracer)


def is_unexpected_tracer_error(exc: BaseException) -> bool:
    return type(exc).__name__ == "UnexpectedTracerError"


def has_fancy_transpose(prim: Any) -> bool:
    """True when JAX calls a GradAccum-style rule (ad.defbilinear on jax >= 0.7) that jaxdiag cannot spy on."""
    return prim in getattr(_ad, "fancy_transposes", {})


def rule_user_functions(rule: Any) -> list[Callable | None]:
    """The user's functions behind a registered JVP/transpose rule: the per-argument rules of `ad.defjvp`,
    `ad.defjvp2` and `ad.defbilinear` (None where an argument has none), the rule of `ad.deflinear2`, or [rule]."""
    if isinstance(rule, functools.partial):
        name = getattr(rule.func, "__name__", "")
        if name in ("standard_jvp", "standard_jvp2") and rule.args and isinstance(rule.args[0], (tuple, list)):
            return list(rule.args[0])
        if name in ("linear_transpose", "linear_transpose2") and rule.args:
            return [rule.args[0]]
        if name == "bilinear_transpose" and len(rule.args) >= 2:
            return [rule.args[0], rule.args[1]]
        if name == "linear_jvp":  # ad.deflinear2: the JVP re-binds the primitive; the user wrote the transpose
            return []
    return [rule]


@contextlib.contextmanager
def spy_transpose_rule(prim: Any, wrap: Callable[[Callable], Callable]) -> Iterator[None]:
    """Route reverse-mode calls of `prim`'s transpose rule through `wrap(rule)` for the body.

    The wrapper sees `(ct, *args, **params)` exactly as JAX passes them (linear args are `UndefinedPrimal`, `ct`
    may be `ad.Zero`). The registry entries are restored on exit, even when the body raises. No-op for primitives
    without a plain rule.

    `ad.defbilinear` on jax >= 0.7 registers a GradAccum-style rule in `fancy_transposes`, which JAX prefers, *and*
    the plain `bilinear_transpose` of the same user rules in `primitive_transposes`. The fancy entry is taken out
    for the body, so reverse mode runs the plain rule, which JAX falls back to and the wrapper can see (otherwise
    a wrong bilinear transpose would pass unseen on those releases).
    """
    table = _ad.primitive_transposes
    if prim not in table:
        yield
        return
    fancy = getattr(_ad, "fancy_transposes", {})
    fancy_original = fancy.pop(prim, None)
    original = table[prim]
    table[prim] = wrap(original)
    try:
        yield
    finally:
        table[prim] = original
        if fancy_original is not None:
            fancy[prim] = fancy_original



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
def intercept_batching_rules(handlers: dict[Any, Callable[..., Any]]) -> Iterator[None]:
    """Route every call vmap makes to these primitives' batching rules through their handler.

    `handler(vals, dims, params, axis_size, call)` returns what JAX gets; `call()` runs the registered rule (and
    raises JAX's own NotImplementedError when none is registered: a handler may then answer itself). Every table
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
            table[prim] = _interceptor(prim, handler, original, is_fancy)
        yield
    finally:
        for table, prim, original in reversed(changed):
            if original is None:
                table.pop(prim, None)
            else:
                table[prim] = original


def _interceptor(prim: Any, handler: Callable, original: Callable | None, is_fancy: bool) -> Callable:
    def missing() -> Any:
        raise NotImplementedError(f"Batching rule for '{prim}' not implemented")

    if is_fancy:

        def fancy_spy(axis_data, vals, dims, **params):
            size = getattr(axis_data, "size", None)
            if not isinstance(size, int):
                size = axis_size_of(tuple(vals), tuple(dims))
            call = missing if original is None else (lambda: original(axis_data, vals, dims, **params))
            return handler(tuple(vals), tuple(dims), params, size, call)

        return fancy_spy

    def legacy_spy(vals, dims, **params):
        call = missing if original is None else (lambda: original(vals, dims, **params))
        return handler(tuple(vals), tuple(dims), params, axis_size_of(tuple(vals), tuple(dims)), call)

    return legacy_spy


def abstract_eval_output(prim: Any, avals: list[Any], params: dict[str, Any]) -> Any:
    """What the primitive's abstract evaluation returns for `avals` (effects dropped); raises what the rule raises."""
    out = prim.abstract_eval(*avals, **params)
    if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], (set, frozenset)):
        return out[0]
    return out


def is_abstract_value(x: Any) -> bool:
    return isinstance(x, _core.AbstractValue)


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
def record_primitive_binds(seen: list) -> Iterator[None]:
    """Record (primitive, input avals, params) for every user primitive bound while the body runs.

    Used to find user primitives in a function that cannot be traced (no abstract eval); `Primitive.bind` is
    restored on exit, even on error.
    """
    original = _core.Primitive.bind

    def recording_bind(self, *args, **params):
        if not is_builtin_primitive(self):
            try:
                avals = [_core.ShapedArray(np.shape(a), np.asarray(a).dtype if not is_tracer(a) else a.aval.dtype)
                         for a in args]
            except Exception:  # extended dtypes, tokens: not something jaxdiag can draw
                avals = None
            if avals is not None:
                seen.append((self, avals, dict(params)))
        return original(self, *args, **params)

    _core.Primitive.bind = recording_bind
    try:
        yield
    finally:
        _core.Primitive.bind = original


def generic_batcher_name(prim: Any) -> str | None:
    """'defvectorized' / 'defbroadcasting' / 'defreducer' when the primitive's rule is one of JAX's generic
    batchers (a partial of `vectorized_batcher`, ...), else None."""
    # jax <= 0.7 keeps `defvectorized` & co. in the plain `primitive_batchers` dict; newer ones in the fancy table.
    rule = _legacy_batching_table().get(prim) or _batching_table().get(prim)
    func = getattr(rule, "func", None) if isinstance(rule, functools.partial) else None
    name = getattr(func, "__name__", "")
    return {"vectorized_batcher": "defvectorized", "broadcast_batcher": "defbroadcasting",
            "reducer_batcher": "defreducer"}.get(name)


# ---------------------------------------------------------------------------------------------------------------
# --- public JAX attributes that newer releases removed (what an old release cannot show by running a rule) ---
# ---------------------------------------------------------------------------------------------------------------

# Attributes present on jax 0.5.3 and absent from jax 0.10.2, measured by diffing `dir()` of each module on the two
# releases (only those extension code plausibly uses). On a release that removed them, a rule using one raises
# AttributeError when it runs, which the checks report as JXR008. On a release that still has them nothing fails,
# so `removed_api_uses` finds them in the rule's code instead. The value is the replacement, where there is one.
REMOVED_BY_JAX = "0.10"  # the release the table was measured against, for messages (never compared)
REMOVED_IN_NEWER_JAX: dict[str, dict[str, str]] = {
    "jax.interpreters.batching": {
        "not_mapped": "use `None` for an unbatched dim (`d is None`)",
        "NotMapped": "use `None` (`type(None)`) for an unbatched dim",
        "moveaxis": "use `jnp.moveaxis`, or `batching.bdim_at_front(x, bx, size)`",
        "matchaxis": "move the batch axis with `jnp.moveaxis` / `batching.bdim_at_front`",
        "broadcast_batcher": "register with `batching.defbroadcasting(prim)`",
        "vectorized_batcher": "register with `batching.defvectorized(prim)`",
        "reducer_batcher": "register with `batching.defreducer(prim, ...)`",
        "zero_if_mapped": "", "BatchTracer": "", "BatchTrace": "", "batch_jaxpr": "", "batch": "",
        "vtile": "", "Zero": "use `jax.interpreters.ad.Zero`",
    },
    "jax.interpreters.ad": {
        "linear_jvp": "register with `ad.deflinear2(prim, transpose)`",
        "linear_transpose": "register with `ad.deflinear2(prim, transpose)`",
        "linear_transpose2": "register with `ad.deflinear2(prim, transpose)`",
        "standard_jvp": "register with `ad.defjvp(prim, *rules)`",
        "standard_jvp2": "register with `ad.defjvp2(prim, *rules)`",
        "bilinear_transpose": "register with `ad.defbilinear(prim, lhs_rule, rhs_rule)`",
        "defjvp_zero": "", "zeros_like_p": "use `jnp.zeros_like`", "zero_jvp": "", "backward_pass": "",
        "vjp": "use `jax.vjp`", "jvp_jaxpr": "", "call_transpose": "", "map_transpose": "",
    },
    "jax.interpreters.mlir": {
        "custom_call": "use `jax.ffi.ffi_call` / `jax.ffi.ffi_lowering`",
        "hlo": "", "func_dialect": "",
        "dense_bool_elements": "", "dense_bool_array": "", "ReplicaAxisContext": "",
    },
    "jax.core": {
        "get_aval": "use `jax.typeof(x)` or `x.aval`", "concrete_or_error": "", "is_concrete": "",
        "mapped_aval": "", "unmapped_aval": "", "new_jaxpr_eqn": "", "call": "", "call_impl": "",
        "CallPrimitive": "", "UnshapedArray": "use `ShapedArray`", "DShapedArray": "use `ShapedArray`",
        "valid_jaxtype": "", "primal_dtype_to_tangent_dtype": "", "check_jaxpr": "", "subjaxprs": "",
        "find_top_trace": "",
    },
    "jax.interpreters.xla": {"canonicalize_dtype": "use `jax.dtypes.canonicalize_dtype`"},
    "jax.lib": {
        "xla_client": "use `jax.ffi` / `jax.extend` instead of `jax.lib.xla_client`",
        "xla_extension": "", "xla_bridge": "use `jax.devices()` or `jax.extend.backend`",
    },
    "jax.custom_derivatives": {"custom_jvp_call_jaxpr_p": "", "custom_vjp_call_jaxpr_p": ""},
}


def _public_module_name(module: Any) -> str:
    """`jax._src.interpreters.batching` -> `jax.interpreters.batching` (the removals are keyed by public name)."""
    return str(getattr(module, "__name__", "")).replace("jax._src.", "jax.", 1)


def _still_here(public: str, attr: str) -> bool:
    import importlib
    import warnings

    try:
        module = importlib.import_module(public)
    except ImportError:
        return False
    with warnings.catch_warnings():  # deprecated attributes warn on access
        warnings.simplefilter("ignore")
        return hasattr(module, attr)


@functools.lru_cache(maxsize=None)
def removed_apis_still_here() -> tuple[tuple[str, str], ...]:
    """(module, attribute) pairs of REMOVED_IN_NEWER_JAX that this JAX release still has: a rule using one works
    here and breaks on upgrade. Empty on a release that removed them all (the rule then raises, and JXR008 shows)."""
    return tuple((m, a) for m, attrs in REMOVED_IN_NEWER_JAX.items() for a in attrs if _still_here(m, a))


def _code_objects(code: Any) -> Iterator[Any]:
    yield code
    for const in code.co_consts:
        if inspect.iscode(const):
            yield from _code_objects(const)


def removed_api_uses(fn: Any) -> list[tuple[str, str, int | None, str]]:
    """(module, attribute, line, replacement) for each attribute of REMOVED_IN_NEWER_JAX that `fn`'s code reads and
    this JAX still has: `batching.not_mapped`, `jax.interpreters.batching.not_mapped`, or a `not_mapped` imported
    from that module into the function's globals. Read from the bytecode, nested functions included."""
    import dis

    present = set(removed_apis_still_here())
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = inspect.unwrap(fn) if callable(fn) else fn
    code = getattr(fn, "__code__", None)
    if not present or code is None or _module_of(fn).split(".")[0] in ("jax", "jaxlib"):
        return []  # nothing to find, or JAX's own helper (`defvectorized`'s batcher, ...)
    env = dict(getattr(fn, "__globals__", {}))
    env.update(_closure_vars(fn))
    by_name = {a: m for m, a in present}
    found: dict[tuple[str, str], int | None] = {}
    for co in _code_objects(code):
        current: Any = None  # the value the last load produced, when it is a module or an attribute of one
        line = None
        for ins in dis.get_instructions(co):
            if ins.starts_line:
                line = ins.starts_line if isinstance(ins.starts_line, int) else getattr(ins, "line_number", None)
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF"):
                name = ins.argval if isinstance(ins.argval, str) else getattr(ins.argval, "name", None)
                current = env.get(name) if isinstance(name, str) else None
                module = by_name.get(name) if isinstance(name, str) else None
                if module is not None and name in env and not inspect.ismodule(env[name]):
                    imported = _module_attr(module, name)
                    if env[name] is imported:
                        found.setdefault((module, name), line)
            elif ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and inspect.ismodule(current):
                public = _public_module_name(current)
                if (public, ins.argval) in present:
                    found.setdefault((public, ins.argval), line)
                current = getattr(current, ins.argval, None)
            else:
                current = None
    return [(m, a, line, REMOVED_IN_NEWER_JAX[m][a]) for (m, a), line in found.items()]


def _module_attr(module: str, attr: str) -> Any:
    import importlib
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(importlib.import_module(module), attr, object())



__all__ = [name for name in dir() if not name.startswith("__")] + ["ad", "batching", "mlir", "Primitive"]
