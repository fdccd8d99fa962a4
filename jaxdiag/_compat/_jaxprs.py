"""Jaxprs: walking equations (and their sub-jaxprs) with their source lines, and the foreign calls
(`ffi_call`, `pure_callback`) whose batching is chosen by a `vmap_method` parameter.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
from jax._src import core as _core
from . import _registries

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


def unread_outputs(jaxpr: Any) -> Callable[[Any], frozenset[int]]:
    """For `jaxpr` (nested jaxprs included): a map from any of its equations to the positions of the outputs nothing
    reads, in the jaxpr that holds the equation (no later equation takes them, the jaxpr does not return them).
    What a function drops (`d, W, S = p.bind(...); return d, W`) no derivative of it ever reaches."""
    read: dict[int, set[int]] = {}  # id(jaxpr) -> ids of the variables it reads
    owner: dict[int, int] = {}  # id(eqn) -> id(its jaxpr)
    _reads(jaxpr.jaxpr if isinstance(jaxpr, _core.ClosedJaxpr) else jaxpr, read, owner)

    def unread(eqn: Any) -> frozenset[int]:
        used = read.get(owner.get(id(eqn), -1))
        if used is None:
            return frozenset()
        return frozenset(k for k, v in enumerate(eqn.outvars) if isinstance(v, _core.DropVar) or id(v) not in used)

    return unread


def _reads(jaxpr: Any, read: dict[int, set[int]], owner: dict[int, int]) -> None:
    used = read.setdefault(id(jaxpr), set())
    used.update(id(v) for v in jaxpr.outvars if not isinstance(v, _core.Literal))
    for eqn in jaxpr.eqns:
        owner[id(eqn)] = id(jaxpr)
        used.update(id(v) for v in eqn.invars if not isinstance(v, _core.Literal))
        for sub in sub_jaxprs(eqn):
            _reads(sub, read, owner)


def input_dependent_operands(jaxpr: Any) -> Callable[[Any], list[bool]]:
    """For `jaxpr` traced from a function: a map from any of its equations (nested ones included) to, per operand,
    whether the operand depends on the function's inputs. An operand that does not (a literal, a captured
    constant, anything computed from those alone) is never batched by `vmap` of the function, whatever its in_axes.

    Outputs of an equation with sub-jaxprs (jit, custom_jvp/vjp calls, cond, while, scan) follow the sub-jaxpr's
    outputs; a loop's carry is dependent once any iteration can make it so, and every carry once the predicate is;
    any other equation's outputs are dependent as soon as one operand is, and a sub-jaxpr whose operands cannot
    be matched to the equation's is dependent throughout."""
    closed = jaxpr.jaxpr if isinstance(jaxpr, _core.ClosedJaxpr) else jaxpr
    dependent: set[int] = {id(v) for v in closed.invars}
    _propagate_dependence(closed, dependent)

    def operands(eqn: Any) -> list[bool]:
        return [_operand_dependent(v, dependent) for v in eqn.invars]

    return operands


def _operand_dependent(var: Any, dependent: set[int]) -> bool:
    return not isinstance(var, _core.Literal) and id(var) in dependent


# An equation's outputs from its operands' flags, for an equation the walk does not enter; None: enter it.
Leaf = Callable[[Any, list[bool]], "list[bool] | None"]


def _any_operand(eqn: Any, flags: list[bool]) -> list[bool] | None:
    return None  # `_equation_outputs_dependent`: dependent as soon as one operand is, sub-jaxprs entered


def _propagate_dependence(jaxpr: Any, dependent: set[int], leaf: Leaf = _any_operand) -> None:
    for eqn in jaxpr.eqns:
        flags = [_operand_dependent(v, dependent) for v in eqn.invars]
        outs = leaf(eqn, flags)
        if outs is None:
            outs = _equation_outputs_dependent(eqn, flags, dependent, leaf)
        dependent.update(id(v) for v, flag in zip(eqn.outvars, outs) if flag)


def _equation_outputs_dependent(eqn: Any, flags: list[bool], dependent: set[int],
                                leaf: Leaf = _any_operand) -> list[bool]:
    """Enter the equation's sub-jaxprs with its operands' dependence; per output, whether it is dependent."""
    subs = list(sub_jaxprs(eqn))
    name, params, n_out = eqn.primitive.name, eqn.params, len(eqn.outvars)
    if not subs:
        return [any(flags)] * n_out
    if name == "while" and len(subs) == 2:
        cond_n, body_n = params.get("cond_nconsts", 0), params.get("body_nconsts", 0)
        cond, body = params["cond_jaxpr"].jaxpr, params["body_jaxpr"].jaxpr
        return _loop_carry(flags[cond_n + body_n:], lambda carry: _enter(
            body, flags[cond_n:cond_n + body_n] + carry, dependent, body.outvars, leaf), lambda carry: any(_enter(
                cond, flags[:cond_n] + carry, dependent, cond.outvars, leaf)))
    if name == "scan" and len(subs) == 1:
        n_consts, n_carry = params.get("num_consts", 0), params.get("num_carry", 0)
        body = subs[0]
        consts, xs = flags[:n_consts], flags[n_consts + n_carry:]
        ys: list[bool] = []

        def step(carry: list[bool]) -> list[bool]:
            outs = _enter(body, consts + carry + xs, dependent, body.outvars, leaf)
            ys[:] = outs[n_carry:]
            return outs[:n_carry]

        carry = _loop_carry(flags[n_consts:n_consts + n_carry], step, lambda carry: False)
        return carry + ys
    outs = [False] * n_out
    for sub in subs:
        if len(sub.invars) == len(flags):
            got = _enter(sub, flags, dependent, sub.outvars, leaf)
        elif name == "cond" and len(sub.invars) == len(flags) - 1:  # the branch index is not passed on
            got = _enter(sub, flags[1:], dependent, sub.outvars, leaf)
        else:
            got = _enter(sub, [any(flags)] * len(sub.invars), dependent, sub.outvars, leaf)
            got = [any(flags)] * n_out
        if len(got) != n_out:
            return [any(flags)] * n_out
        outs = [a or b for a, b in zip(outs, got)]
    if name == "cond" and flags and flags[0]:  # a batched branch index batches every output
        return [True] * n_out
    return outs


def _loop_carry(carry: list[bool], step: Callable[[list[bool]], list[bool]],
                predicate_dependent: Callable[[list[bool]], bool]) -> list[bool]:
    """The carry's dependence once no iteration can grow it; a dependent predicate makes all of it dependent."""
    for _ in range(len(carry) + 2):
        grown = [a or b for a, b in zip(carry, step(carry))]
        if predicate_dependent(grown):
            grown = [True] * len(carry)  # a batched predicate batches every carry
        if grown == carry:
            break
        carry = grown
    return carry


def _enter(sub: Any, flags: list[bool], dependent: set[int], outvars: Sequence[Any],
           leaf: Leaf = _any_operand) -> list[bool]:
    dependent.update(id(v) for v, flag in zip(sub.invars, flags) if flag)
    _propagate_dependence(sub, dependent, leaf)
    return [_operand_dependent(v, dependent) for v in outvars]


def custom_call_perturbation(closed: Any, perturbed: Sequence[bool]) -> list[tuple[list[Any], list[bool], list]]:
    """For `closed` traced from a function whose inputs flagged in `perturbed` are differentiated: (the functions
    the call's rule params wrap, per operand after its constants whether JAX's autodiff perturbs it, their shapes)
    for each custom_jvp / custom_vjp call in it, loop bodies included (a carry is perturbed once any iteration
    makes it so).

    Read from the program, as JAX's JVP decides it: an output is perturbed when an operand is, unless it is not a
    float (integers get no tangent) or the primitive's JVP is a symbolic zero (stop_gradient, floor, comparisons,
    ...). A custom call's own body is not walked: autodiff runs its rule, never its body."""
    jaxpr = closed.jaxpr if isinstance(closed, _core.ClosedJaxpr) else closed
    found: list[tuple[list[Any], list[bool], list]] = []

    def leaf(eqn: Any, flags: list[bool]) -> list[bool] | None:
        name = eqn.primitive.name
        if name.startswith(("custom_jvp_call", "custom_vjp_call")):
            consts = eqn.params.get("num_consts", 0)
            shapes = [tuple(getattr(v.aval, "shape", ())) for v in eqn.invars[consts:]]
            found.append((_rule_functions(eqn), flags[consts:], shapes))
        elif name in _ZERO_TANGENT or _zero_jvp(eqn.primitive):
            return [False] * len(eqn.outvars)
        elif any(True for _ in sub_jaxprs(eqn)):
            return None
        return [any(flags) and _is_float(v) for v in eqn.outvars]

    dependent = {id(v) for v, flag in zip(jaxpr.invars, perturbed) if flag}
    _propagate_dependence(jaxpr, dependent, leaf)
    return found


_ZERO_TANGENT = frozenset({"stop_gradient"})


def _zero_jvp(prim: Any) -> bool:
    from jax.interpreters import ad

    rule = ad.primitive_jvps.get(prim)
    return isinstance(rule, functools.partial) and getattr(rule.func, "__name__", "") == "zero_jvp"


def _is_float(var: Any) -> bool:
    dtype = getattr(getattr(var, "aval", None), "dtype", None)
    return dtype is not None and bool(np.issubdtype(dtype, np.inexact))


def _rule_functions(eqn: Any) -> list[Any]:
    """The functions a custom call's rule params wrap (a custom_vjp's bwd, a custom_jvp's jvp thunk), for
    telling which user rule the call is of."""
    return [v for k, v in eqn.params.items() if k in ("bwd", "jvp_jaxpr_fun", "jvp_jaxpr_thunk")]


def wraps(holder: Any, target: Any, depth: int = 6) -> bool:
    """Whether `target` is `holder` or held by it through the wrappers JAX builds around a user's rule
    (`WrappedFun.f`, partials, closures, memoized thunks)."""
    seen: set[int] = set()

    def walk(obj: Any, left: int) -> bool:
        if obj is target:
            return True
        if left == 0 or id(obj) in seen or isinstance(obj, type):
            return False
        seen.add(id(obj))
        kids = [getattr(obj, a) for a in ("f", "func", "__wrapped__", "fun") if getattr(obj, a, None) is not None]
        if isinstance(obj, functools.partial):
            kids += [*obj.args, *obj.keywords.values()]
        for cell in getattr(obj, "__closure__", None) or ():
            with contextlib.suppress(ValueError):
                kids.append(cell.cell_contents)
        return any(walk(kid, left - 1) for kid in kids)

    return walk(holder, depth)


def same_program_as_jit(jitted: Callable, call: Callable, args: Sequence[Any]) -> bool:
    """True when `call(*args)` is one jit call of exactly the program `jitted(*args)` already ran (`vmap(jit(f))`
    against `jit(vmap(f))`: the same batched jaxpr, the same constants), so its result is `jitted`'s and running it
    would only compile that program a second time. Traces `call` (the rules it reaches run, with tracers, as they
    do when it is called); compiles nothing. False wherever this cannot be told: a release whose jit objects have
    no `trace`, anything around the one jit call (a transpose for out_axes), another jaxpr."""
    trace = getattr(jitted, "trace", None)
    if trace is None:
        return False
    ran = trace(*args).jaxpr  # the traced program `jitted(*args)` compiled (a cache hit: no tracing again)
    closed = jax.make_jaxpr(call)(*args)
    if len(closed.jaxpr.eqns) != 1 or closed.consts:
        return False
    eqn = closed.jaxpr.eqns[0]
    inner = eqn.params.get("jaxpr")
    if eqn.primitive.name not in ("jit", "pjit") or not isinstance(inner, _core.ClosedJaxpr):
        return False
    if list(eqn.invars) != list(closed.jaxpr.invars) or list(eqn.outvars) != list(closed.jaxpr.outvars):
        return False
    if str(inner.jaxpr) != str(ran.jaxpr) or len(inner.consts) != len(ran.consts):
        return False
    return all(_same_constant(a, b) for a, b in zip(inner.consts, ran.consts))


def _same_constant(a: Any, b: Any) -> bool:
    try:
        x, y = np.asarray(a), np.asarray(b)
    except (TypeError, ValueError):  # not an array (a token, an opaque constant): cannot compare
        return False
    return x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind in "fc")


def _user_frame(eqn: Any) -> Any:
    """JAX's record of the innermost user frame that created `eqn` (file_name, start_line, function_name)."""
    try:
        from jax._src import source_info_util

        # jax <= 0.5 takes the SourceInfo; newer releases take its traceback (the SourceInfo has no raw_frames).
        first = next(iter(inspect.signature(source_info_util.user_frame).parameters))
        info = eqn.source_info if first == "source_info" else eqn.source_info.traceback
        return source_info_util.user_frame(info)
    except (ImportError, AttributeError, TypeError, ValueError, StopIteration):  # a release without this record
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


def axis_size_of(vals: tuple, dims: tuple) -> int | None:
    """The vmap axis size seen by a batching rule, read off the first batched operand."""
    for v, d in zip(vals, dims):
        if d is not None and isinstance(d, int) and 0 <= d < np.ndim(v):
            return int(np.shape(v)[d])
    return None


# ---------------------------------------------------------------------------------------------------------------
# --- custom_vmap / ffi ---
# ---------------------------------------------------------------------------------------------------------------

# `jax.ffi` is public from jax 0.4.38 on (0.5.3 has it); older releases only had `jax.extend.ffi`.
if TYPE_CHECKING:
    from jax import ffi as ffi  # noqa: PLC0414 - re-exported for checks, tests and samples
else:  # the type checker sees the import above; `jax.extend.ffi` is unknown to the stubs of a newer JAX
    try:
        from jax import ffi as ffi  # noqa: PLC0414 - re-exported for checks, tests and samples
    except ImportError:  # pragma: no cover - jax < 0.4.38
        from jax.extend import ffi as ffi  # noqa: PLC0414

# Equations whose batching is chosen by a `vmap_method` parameter rather than a batching rule.
FOREIGN_CALL_PRIMITIVES = ("ffi_call", "pure_callback")
SEQUENTIAL_VMAP_METHODS = ("sequential", "sequential_unrolled")


def batched_by_custom_rule(jaxpr: Any) -> set[int]:
    """The ids of the equations (nested ones included) inside a `custom_vmap` call: `vmap` of the function never
    batches them, the custom_vmap's own rule does (a foreign call there needs no vmap_method of its own)."""
    out: set[int] = set()
    for eqn in iter_eqns(jaxpr):
        if getattr(eqn.primitive, "name", "") == "custom_vmap_call":
            out.update(id(inner) for sub in sub_jaxprs(eqn) for inner in iter_eqns(sub))
    return out


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


# Primitives that read or write at integer positions, with where their index operands start: they clamp or drop
# positions outside the operand (`gather`/`dynamic_slice` clamp, `scatter` drops), so a rule that treats an
# out-of-range index differently from them is wrong only there.
_INDEX_OPERANDS = {"gather": (1, 2), "dynamic_slice": (1, None), "dynamic_update_slice": (2, None),
                   "scatter": (1, 2), "scatter-add": (1, 2), "scatter_add": (1, 2), "scatter-mul": (1, 2),
                   "scatter_mul": (1, 2), "scatter-min": (1, 2), "scatter_min": (1, 2), "scatter-max": (1, 2),
                   "scatter_max": (1, 2)}


def index_operand_bounds(closed: Any) -> dict[int, int]:
    """Input position -> the largest dimension of an array it indexes, for every integer input of the jaxpr that
    flows (through any equations) into the index operand of a gather, scatter, dynamic_slice or
    dynamic_update_slice. An input reaching a nested jaxpr (jit, scan, cond) that indexes is bounded by the largest
    dimension indexed in there."""
    jaxpr = closed.jaxpr if isinstance(closed, _core.ClosedJaxpr) else closed
    origin: dict[Any, set[int]] = {v: {k} for k, v in enumerate(jaxpr.invars)
                                   if np.issubdtype(np.dtype(getattr(v.aval, "dtype", np.float32)), np.integer)}
    bounds: dict[int, int] = {}

    def note(var: Any, size: int) -> None:
        for k in origin.get(var, ()) if isinstance(var, _core.Var) else ():
            bounds[k] = max(bounds.get(k, 0), size)

    for eqn in jaxpr.eqns:
        sources = set().union(*(origin.get(v, set()) for v in eqn.invars if isinstance(v, _core.Var)))
        name = eqn.primitive.name
        if name in _INDEX_OPERANDS:
            start, stop = _INDEX_OPERANDS[name]
            size = max(getattr(eqn.invars[0].aval, "shape", ()) or (0,))
            for var in eqn.invars[start:stop]:
                note(var, size)
        inner = [e for sub in sub_jaxprs(eqn) for e in iter_eqns(sub) if e.primitive.name in _INDEX_OPERANDS]
        if inner:
            size = max(max(getattr(e.invars[0].aval, "shape", ()) or (0,)) for e in inner)
            for var in eqn.invars:
                note(var, size)
        if sources:
            for out in eqn.outvars:
                origin[out] = set(sources)
    return {k: v for k, v in bounds.items() if v > 0}


# ---------------------------------------------------------------------------------------------------------------
# Evaluating a traced program as JAX runs it eagerly
# ---------------------------------------------------------------------------------------------------------------

# Equations whose bodies JAX compiles even when they are called eagerly: a primitive bound inside them runs through
# its lowering there too, so a traced program keeps them as they are.
_COMPILED_EAGERLY = frozenset({"pjit", "jit", "scan", "while", "cond", "shard_map", "xla_pmap"})


# Loops and branches: an eager call traces their bodies again and compiles them as a new program each time (their
# jaxprs are new objects, the compile cache's key), so a function with one is expensive to call many times eagerly.
_RECOMPILED_EAGERLY = frozenset({"scan", "while", "cond"})


def loops_in(closed: Any) -> bool:
    """Whether the traced function `closed` loops (scan, while, fori): under `jax.disable_jit` each iteration runs
    op by op in Python."""
    return any(eqn.primitive.name in ("scan", "while") for eqn in iter_eqns(closed))


def calls_custom_vjp(closed: Any) -> bool:
    """Whether the traced program `closed` calls a custom_vjp function (nested ones included)."""
    return any(eqn.primitive.name.startswith("custom_vjp_call") for eqn in iter_eqns(closed))


def recompiles_eagerly(closed: Any) -> bool:
    """Whether calling the function `closed` was traced from compiles part of it again on every eager call."""
    return any(eqn.primitive.name in _RECOMPILED_EAGERLY for eqn in iter_eqns(closed))


# Equations JAX evaluates eagerly by calling the primal function inside them (EvalTrace's custom_jvp/custom_vjp
# call): op by op, so a user primitive bound at their top level runs its impl there.
_CALLED_EAGERLY = frozenset({"custom_jvp_call", "custom_vjp_call"})


def eager_semantics(closed: Any, impls: Callable[[Any], Callable | None], inline_custom: bool = False
                    ) -> Callable[..., list] | None:
    """A function evaluating `closed` (a traced program) on its arguments the way JAX runs it eagerly: a top-level
    equation of a primitive for which `impls(prim)` gives an impl is computed by that impl (eagerly, bind calls the
    impl), every other equation is bound as traced, so the jits inside keep the lowering they use eagerly too.
    Traceable by jit. None when such a primitive sits inside an equation JAX evaluates eagerly by interpreting its
    body (custom_jvp_call, custom_vjp_call, ...): there eagerly the impl runs, in a compiled program the lowering.
    `inline_custom`: a custom_jvp_call/custom_vjp_call is evaluated as JAX evaluates it eagerly, its primal body
    with these same semantics (its derivative rules dropped: for a program that is only evaluated, never
    differentiated), so a primitive at its body's top level runs its impl too (equinox's error checks)."""
    if not _eager_evaluable(closed.jaxpr, impls, inline_custom):
        return None

    def run(*args: Any) -> list:
        return _evaluate_eagerly(closed.jaxpr, list(closed.consts), list(args), impls, inline_custom)

    return run


def _custom_body(eqn: Any) -> Any:
    """The primal body (a ClosedJaxpr over all the equation's operands) of a custom_jvp/custom_vjp call, else None."""
    if eqn.primitive.name not in _CALLED_EAGERLY:
        return None
    body = eqn.params.get("call_jaxpr")
    return body if isinstance(body, _core.ClosedJaxpr) and len(body.jaxpr.invars) == len(eqn.invars) else None


def _eager_evaluable(jaxpr: Any, impls: Callable[[Any], Callable | None], inline_custom: bool) -> bool:
    for eqn in jaxpr.eqns:
        if impls(eqn.primitive) is not None or eqn.primitive.name in _COMPILED_EAGERLY:
            continue
        body = _custom_body(eqn) if inline_custom else None
        if body is not None:
            if not _eager_evaluable(body.jaxpr, impls, inline_custom):
                return False
            continue
        if any(impls(inner.primitive) is not None and not _lowered_by_impl(inner.primitive)
               for sub in sub_jaxprs(eqn) for inner in iter_eqns(sub)):
            return False
    return True


def _lowered_by_impl(prim: Any) -> bool:
    """Whether `prim`'s lowering is `mlir.lower_fun` of its impl (the same function): compiled, it computes what
    its impl computes eagerly, so where it sits in a program does not matter."""
    own = _registries.impl(prim)
    return own is not None and _registries.lowering_rule(prim) is own


def evaluation_env(jaxpr: Any, consts: list, args: list) -> tuple[dict[Any, Any], Callable[[Any], Any]]:
    """(variable -> value, its reader) at the start of an evaluation of `jaxpr` on `args`: a literal reads as its
    value."""
    env: dict[Any, Any] = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(v: Any) -> Any:
        return v.val if isinstance(v, _core.Literal) else env[v]

    return env, read


def _evaluate_eagerly(jaxpr: Any, consts: list, args: list, impls: Callable[[Any], Callable | None],
                      inline_custom: bool) -> list:
    env, read = evaluation_env(jaxpr, consts, args)
    for eqn in jaxpr.eqns:
        values = [read(v) for v in eqn.invars]
        impl = impls(eqn.primitive)
        body = _custom_body(eqn) if inline_custom and impl is None else None
        if impl is not None:
            out = impl(*values, **eqn.params)
        elif body is not None:
            out = _evaluate_eagerly(body.jaxpr, list(body.consts), values, impls, inline_custom)
        else:
            with getattr(getattr(eqn, "ctx", None), "manager", contextlib.nullcontext()):
                out = _bind_as_traced(eqn, values)
        env.update(zip(eqn.outvars, out if eqn.primitive.multiple_results else [out]))
    return [read(v) for v in jaxpr.outvars]


def _bind_as_traced(eqn: Any, values: list) -> Any:
    params = eqn.primitive.get_bind_params(eqn.params)
    if isinstance(params, tuple):  # older releases: (subfuns, params)
        subfuns, params = params
        return eqn.primitive.bind(*subfuns, *values, **params)
    return eqn.primitive.bind(*values, **params)
