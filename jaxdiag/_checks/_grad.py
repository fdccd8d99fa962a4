"""Grad checks for every kind: the gradient of a function as a whole against finite differences, composition
with jit and vmap (JXG016); `--order 2` (JXG019, JXG023) is in `_grad_second_order.py`.

custom_vjp, custom_jvp and primitive rules are checked rule by rule in `_custom_vjp/`, `_custom_jvp/` and
`_primitive_ad.py`; the shared references (finite differences, autodiff of the primal) are in `_gradref/`.
"""

from __future__ import annotations

import collections
from typing import Any, Callable, Iterator, Sequence, cast

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compat
from .._core import _locate
from .. import _rules as rules
from .._loading._inputs import choose_batch_size
from .._loading._numerics import compare
from .._core._report import Finding, Location
from ._base import Context, SkipCheck, check
from .._harness import call_user
from ._solves import solver_names
from ._composition_faults import (
    batched_transpose_fault, batching_rule_skips_primitive, impl_differentiated, nonfinite_only_composed,
)
from ._custom_jvp import eager_vjp, pullback_at_first_cotangent, rule_location
from ._gradref._compiled import CompiledPrimal
from ._gradref._fd import below_64
from ._gradref._values import example_cotangent, host_example_cotangent
from ._gradref import (
    EVERY_BLOCKER, NOT_COMPUTED, GradState, close, device_zeros, error_text, grad_tol,
    is_float0, locate, nan_at_a_zero_output, quiet_call, require, rule_name, short_dtype, short_message, state,
    to_f64, vjp_against_fd,
)

ALL_KINDS = {"custom_vjp", "custom_jvp", "primitive", "function"}


def display_name(st: GradState) -> str:
    if st.kind == "primitive":
        return st.subject.obj.name
    return rule_name(st.fun if st.fun is not None else st.subject.obj, st.subject.label)


def finding_location(st: GradState) -> Location | None:
    """Where a composition/second-order finding points: bwd, the JVP rule, or the function itself."""
    if st.kind == "custom_vjp":
        return locate(st.bwd)
    if st.kind in ("custom_jvp", "primitive"):
        return rule_location(st)
    return st.subject.location


def _foreign_calls(ctx: Context) -> list[str]:
    """The foreign-call primitives (`ffi_call`, `pure_callback`) in the function's jaxpr: the fix names them only
    when the user's code has them."""
    shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in ctx.specs]
    traced = call_user(jax.make_jaxpr(ctx.subject.call), *shapes, quiet=True)
    if traced.error is not None:  # not traceable: nothing to name
        return []
    closed = traced.value
    return sorted({eqn.primitive.name for eqn in _compat.iter_eqns(closed) if _compat.is_foreign_call(eqn)})


def float_outputs(st: GradState) -> bool:
    return any(st.out_diff(k) for k in range(len(st.out_leaves)))


# ---------------------------------------------------------------------------------------------------------------
# function-grad: the function as a whole
# ---------------------------------------------------------------------------------------------------------------


@check("function-grad", family="grad", kinds={"function"}, provides=("grad.blocked.function-grad",))
def function_grad(ctx: Context) -> Iterator[Finding]:
    """jax.vjp of the whole function against float64 finite differences (dot-product test per argument)."""
    st = state(ctx)
    if not st.diff or not float_outputs(st):
        raise SkipCheck("no floating-point input and output to differentiate")
    name = display_name(st)
    ws, cts, exc = pullback_at_first_cotangent(st)
    if exc is not None:
        st.blocked[rules.DERIVATIVE_RULE_RAISED] = "jax.grad of the function fails"
        if _from_nested_rule(ctx, exc):
            return  # the nested rule's own finding says it (JXG010 for a bwd, JXR006 for a primitive, ...)
        # `jaxdiag check` also walks functions nobody differentiates (an ffi_call, a pure_callback): a note there
        foreign = _foreign_calls(ctx)
        remedy = (f"give the {' and '.join(foreign)} a derivative: wrap it in a function with jax.custom_jvp or "
                  "jax.custom_vjp (JAX cannot differentiate foreign code)" if foreign else
                  f"compute {name} with jax.numpy on traced values (no NumPy conversion, `float()` or Python `if` "
                  "on them), or give that part a derivative with jax.custom_jvp / jax.custom_vjp"
                  if "Tracer" in type(exc).__name__ or "Concretization" in type(exc).__name__ else
                  "fix the operation named in the error, or give the part JAX cannot differentiate a derivative "
                  "with jax.custom_jvp / jax.custom_vjp")
        if ctx.options.command == "check":
            yield rules.FUNCTION_GRAD_NOT_CHECKED.finding(
                function=name, error=error_text(exc), hint=_nested_hint(ctx), remedy=remedy,
                location=st.subject.location)
            return
        yield rules.DERIVATIVE_RULE_RAISED.finding(
            evidence=f"jax.grad of {name} fails: {error_text(exc)}." + _nested_hint(ctx),
            fix=remedy[:1].upper() + remedy[1:] + ".",
            location=st.subject.location)
        return
    custom = _custom_parts(ctx)
    if not custom:
        # JAX's own derivatives are trusted: a difference from finite differences there is a kink next to the
        # example or a deliberate stop_gradient, not a defect
        raise SkipCheck("jax.grad runs; no custom rule inside, so it is not compared with finite differences")
    checks = vjp_against_fd(st, ws, {a.pos: c for a, c in zip(st.diff, cts)})
    bad = [c for c in checks if not c.ok and st.fd.stable(c.arg, c.d)]
    degenerate = [c for c in bad if nan_at_a_zero_output(st, c)]
    if bad and len(degenerate) == len(bad):
        raise SkipCheck("jax.grad returns NaN only where an output is exactly 0 and stays 0 along the step, up to "
                        "rounding (a converged residual's norm): JAX's derivative of norm/sqrt at 0 is NaN by "
                        "convention, while the function is flat there; not compared")
    if not bad:
        return
    worst = max(bad, key=lambda c: abs(c.got - c.expected))
    where = worst.arg.name if worst.arg is not None else "all arguments"
    dtype = worst.arg.dtype if worst.arg is not None else st.diff[0].dtype
    yield rules.CUSTOM_DERIVATIVE_MISMATCH.finding(
        owner=name, derivative="gradient (jax.grad)", function=name,
        details=f"for a step v in {where} and a random output cotangent w, <grad, v> = {worst.got:.6g} but "
                f"{st.fd.describe(worst.arg, worst.d)} give <w, J v> = {worst.expected:.6g} (tolerance "
                f"{worst.tol:.0e} for {short_dtype(dtype)}); {name} uses custom derivative rules "
                f"({', '.join(custom)}), whose own findings say which one differs",
        consequence="jax.grad is silently wrong", where="", correction="fix the custom rule reported below",
        location=st.subject.location)


def _custom_parts(ctx: Context) -> list[str]:
    """Names of the custom_vjp/custom_jvp functions and user primitives the function calls."""
    names = []
    include_jax = ctx.options.include_jax
    for obj, _, _ in ctx.cache.custom_calls:
        fn = getattr(obj, "fun", obj)
        if include_jax or _locate.is_user_code(fn):
            names.append(getattr(fn, "__name__", type(obj).__name__))
    jaxpr = ctx.cache.jaxpr
    if jaxpr is not None:
        for eqn in _compat.iter_eqns(jaxpr):
            prim = eqn.primitive
            if _compat.is_primitive(prim) and not _compat.is_builtin_primitive(prim):
                names.append(prim.name)
    names += solver_names(_compat.solve_calls_in(jaxpr, ctx.cache.custom_calls), include_jax)
    return list(dict.fromkeys(names))


def _from_nested_rule(ctx: Context, exc: BaseException) -> bool:
    """True when jax.grad of the function fails inside one of the custom rules it calls (checked on their own):
    JAX's message names the rule, or the traceback runs through the user's fwd/bwd/JVP/transpose code."""
    parts = _custom_parts(ctx)
    text = str(exc).lower()
    if parts and (any(f"'{part.lower()}'" in text for part in parts) or "custom vjp" in text
                  or "custom jvp" in text):
        return True
    codes = _nested_rule_codes(ctx)
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            return True
        tb = tb.tb_next
    return False


def _nested_rule_codes(ctx: Context) -> set[Any]:
    """Code objects of the user's rules behind the custom_* calls and user primitives inside the function."""
    fns: list[Any] = []
    for obj, _, _ in ctx.cache.custom_calls:
        fns += [getattr(obj, attr, None) for attr in ("fwd", "bwd", "jvp", "vmap_rule")]
    jaxpr = ctx.cache.jaxpr
    if jaxpr is not None:
        for eqn in _compat.iter_eqns(jaxpr):
            if _compat.is_primitive(eqn.primitive) and not _compat.is_builtin_primitive(eqn.primitive):
                for rule in _compat.registered_rules(eqn.primitive).values():
                    fns += _compat.rule_user_functions(rule) if rule is not None else []
    codes = {getattr(_locate.unwrap(fn), "__code__", None) for fn in fns if fn is not None and _locate.is_user_code(fn)}
    return {c for c in codes if c is not None}


def _nested_hint(ctx: Context) -> str:
    parts = _custom_parts(ctx)
    return f" It calls custom rules ({', '.join(parts)}), checked separately below." if parts else ""


# ---------------------------------------------------------------------------------------------------------------
# grad-composition: jit(grad f), vmap(grad f), grad(vmap f) against the eager gradient
# ---------------------------------------------------------------------------------------------------------------

# Compiled composites by subject, so repeated checks of the same target (a test suite, the benchmark) compile
# once, as jax.jit itself caches by function. Holds the object, so its id cannot be reused while cached.
_COMPILED: "collections.OrderedDict[tuple, tuple[Any, Callable]]" = collections.OrderedDict()
_COMPILED_MAX = 64


def _array_positions(st: GradState) -> list[int]:
    return [a.pos for a in st.args if not a.static]


def _gradient_fn(st: GradState, ws: Sequence[Any]) -> Callable[..., list[Any]]:
    """arrays (one per non-static arg) -> cotangents of the differentiable args for output cotangents `ws`."""
    positions = _array_positions(st)
    diff = [positions.index(a.pos) for a in st.diff]
    treedef = st.out_treedef

    def gradient(arrays: Sequence[Any], cotangents: Sequence[Any] | None = None) -> list[Any]:
        def f(*diffs: Any) -> Any:
            values = list(arrays)
            for i, x in zip(diff, diffs):
                values[i] = x
            return st.call_target(st.values(dict(zip(positions, values))))

        _, pullback = jax.vjp(f, *[arrays[i] for i in diff])
        return list(pullback(jax.tree_util.tree_unflatten(treedef, list(ws if cotangents is None else cotangents))))

    return gradient


def _batched_gradient_fn(st: GradState, ws: Sequence[Any]) -> Callable[[Sequence[Any]], list[Any]]:
    """vjp(vmap f): the VJP of the vmapped function, a different cotangent per example (`example_cotangent`):
    the same cotangent for every example would hide a transpose rule that mixes up examples (it flips or sums the
    batch axis of the batched shapes it is called on)."""
    positions = _array_positions(st)
    diff = [positions.index(a.pos) for a in st.diff]
    treedef = st.out_treedef

    def gradient(batch: Sequence[Any]) -> list[Any]:
        size = batch[0].shape[0]

        def per_example(*values: Any) -> Any:
            return st.call_target(st.values(dict(zip(positions, values))))

        def f(*diffs: Any) -> Any:
            values = list(batch)
            for i, x in zip(diff, diffs):
                values[i] = x
            return jax.vmap(per_example)(*values)

        _, pullback = jax.vjp(f, *[batch[i] for i in diff])
        cts = [jnp.stack([example_cotangent(w, j) for j in range(size)]) if not is_float0(w)
               else np.zeros((size, *np.shape(w)), w.dtype) for w in ws]
        return list(pullback(jax.tree_util.tree_unflatten(treedef, cts)))

    return gradient


def _composite(st: GradState, ws: Sequence[Any], size: int) -> Callable:
    gradient = _gradient_fn(st, ws)
    batched = _batched_gradient_fn(st, ws)

    def composite(arrays: list[Any], batch: list[Any]) -> tuple:
        return gradient(arrays), jax.vmap(lambda *a: gradient(a))(*batch), batched(batch)

    # Only the compositions under test are compiled: the per-example loop (the reference) runs eagerly, on the
    # shapes the eager gradient already compiled its operations for (`_per_example_loop`). Unrolling it into
    # this program doubled its compile time.
    return _compat.own_jit(composite)


def _per_example_loop(st: GradState, ws: Sequence[Any], batch: list[Any], size: int,
                      gradient: Callable[..., list[Any]] | None = None) -> tuple[list, list]:
    """The eager per-example gradients: with the cotangents `ws` (for vmap(grad f)) and with each example's own
    cotangent (for vjp(vmap f)); raises what the user's rule raises on one example. `gradient`: the per-example
    gradient to loop (default: the rules called directly, else one compiled program where the gradient loops)."""
    gradient = gradient or _direct_gradient_fn(st, ws) or _looped_gradient_fn(st, ws)
    # NumPy examples, not device arrays: a rule that slices or loops over its inputs in Python runs those steps in
    # NumPy, where on device arrays each is an eager JAX operation (a chunked kernel's grad-composition took 2 s on
    # NumPy examples and over 300 s on device arrays)
    host = [np.asarray(b) for b in batch]
    loop = [gradient([b[j] for b in host], ws) for j in range(size)]
    loop_w = [gradient([b[j] for b in host], [host_example_cotangent(w, j) for w in ws]) for j in range(size)]
    return loop, loop_w


def _looped_gradient_fn(st: GradState, ws: Sequence[Any]) -> Callable[..., list[Any]]:
    """The per-example gradient (arrays, cotangents) -> cotangents, through one compiled program for all 2 x size
    calls when the gradient has a loop or a branch (`CompiledPrimal`). Eagerly, a `while_loop`/`scan`/`cond` traces
    and compiles its body again on every call, so each example's gradient compiled every loop of the rule again
    (quadax's adaptive quadrature: 49 programs for one check). Without loops it stays eager, on the operations the
    eager gradient already compiled; a program that fails falls back to the eager call, which decides."""
    gradient = _gradient_fn(st, ws)
    n = len(_array_positions(st))
    program = CompiledPrimal(lambda values: gradient(values[:n], values[n:]), inline_custom=True)
    return lambda arrays, cotangents: list(program([*arrays, *cotangents]))


def _direct_gradient_fn(st: GradState, ws: Sequence[Any]) -> Callable[..., list[Any]] | None:
    """A custom_vjp's per-example gradient as `jax.vjp` computes it, fwd then bwd, called directly: the eager gradient
    of the rule checks (`eager_grad`) is that same call, so bwd's operations run on programs those checks compiled.
    Through `jax.vjp`, bwd runs inside JAX's backward pass, whose trace context differs (an abstract mesh is
    set), so every operation of bwd was compiled a second time. None (use `jax.vjp`) where JAX does more than call
    the rules: symbolic zeros (fwd gets wrapped primals), nondiff_argnums, or a bwd whose structure was not
    validated."""
    if st.kind != "custom_vjp" or st.symbolic_zeros or st.nondiff or st.memo.bwd_full is NOT_COMPUTED:
        return None
    positions = _array_positions(st)
    treedef = st.out_treedef
    fwd, bwd = st.fwd, st.bwd
    assert fwd is not None and bwd is not None  # "bwd_full" is set only when both ran

    def gradient(arrays: Sequence[Any], cotangents: Sequence[Any] | None = None) -> list[Any]:
        values = st.values(dict(zip(positions, [_compat.device_array(x) for x in arrays])))
        # the user's rules return what vjp-fwd and vjp-bwd-structure validated: a pair, one entry per argument
        _, residuals = cast("tuple[object, object]", fwd(*values))
        cts = cast("Sequence[object]", bwd(residuals, jax.tree_util.tree_unflatten(
            treedef, list(ws if cotangents is None else cotangents))))
        by_pos = {a.pos: ct for a, ct in zip(st.dyn, cts)}
        # as JAX hands them to the caller: None becomes zeros, every cotangent has its argument's dtype
        return [device_zeros(a.shape, a.dtype) if by_pos.get(a.pos) is None
                else np.asarray(by_pos[a.pos]).astype(a.dtype) for a in st.diff]

    return gradient


def _compiled(st: GradState, ws: Sequence[Any], size: int) -> Callable:
    key = (id(st.subject.obj), st.kind, repr(sorted(st.subject.params.items(), key=lambda kv: kv[0])),
           tuple(str(s) for s in st.subject.specs), repr(st.subject.static_args), size, _compat.x64_enabled(),
           tuple(to_f64(w).tobytes() for w in ws))
    hit = _COMPILED.get(key)
    if hit is not None and hit[0] is st.subject.obj:
        _COMPILED.move_to_end(key)
        return hit[1]
    fn = _composite(st, ws, size)
    _COMPILED[key] = (st.subject.obj, fn)
    while len(_COMPILED) > _COMPILED_MAX:
        _COMPILED.popitem(last=False)
    return fn


def _batch(ctx: Context, st: GradState) -> tuple[int, list[Any]]:
    shapes = [a.shape for a in st.args if not a.static] + [tuple(np.shape(x)) for x in st.out_leaves]
    size = choose_batch_size(shapes, start=2)
    draws = ctx.draw_examples(size)
    return size, [_compat.device_array(x) for x in draws]


@check("grad-composition", family="grad", kinds=ALL_KINDS, reads=(*EVERY_BLOCKER, "grad.eager_grad", "grad.bwd_full"),
       provides=("grad.second_order_moot",))
def grad_composition(ctx: Context) -> Iterator[Finding]:
    """jit(grad f), vmap(grad f) and grad(vmap f) against the eager gradient and a per-example loop (JXG016); where
    the gradient fails under them, second derivatives (compiled the same way) would only repeat it: not checked."""
    if found := list(_compositions(ctx)):
        state(ctx).memo.second_order_moot = f"the gradient already fails under jit/vmap ({found[0].code})"
    yield from found


def _compositions(ctx: Context) -> Iterator[Finding]:
    st = state(ctx)
    require(st)
    if not st.diff or not float_outputs(st):
        raise SkipCheck("no floating-point input and output to differentiate")
    if any(a.nondiff and not a.static for a in st.args):
        raise SkipCheck(f"an array in nondiff_argnums cannot be traced ({rules.NONDIFF_ARGNUMS_MISUSE.code})")
    ws = st.cotangents(0)
    # computed by the rule checks where they can (bwd, transpose runs)
    eager = None if st.memo.eager_grad is NOT_COMPUTED else st.memo.eager_grad
    if eager is None:
        vjp, _ = eager_vjp(st)
        eager = vjp(ws) if vjp is not None else None
    if eager is None:
        raise SkipCheck("the eager gradient fails (reported by the rule checks)")
    size, batch = _batch(ctx, st)
    arrays = [st.args[p].value for p in _array_positions(st)]
    result, exc = quiet_call(lambda: jax.block_until_ready(_compiled(st, ws, size)(arrays, batch)))
    if exc is not None:
        # a failure while tracing (most: a loop JAX cannot transpose, NumPy on a tracer) is diagnosed by tracing
        # each composition alone, compiling and running none of them (op by op, an adaptive quadrature's
        # compositions compiled some 200 programs)
        traced, _ = quiet_call(jax.eval_shape, lambda: _compiled(st, ws, size)(arrays, batch))
        yield from _diagnose_failure(st, ws, arrays, batch, exc, trace_only=traced is None)
        return
    g_jit, g_vmap, g_gvmap = result
    loops, exc = quiet_call(_per_example_loop, st, ws, batch, size)
    if exc is not None:
        raise SkipCheck(f"the eager gradient fails on another example ({short_message(exc, 160)}): not a "
                        "composition defect")
    loop, loop_w = loops
    found = list(_compare_compositions(st, eager, g_jit, g_vmap, g_gvmap, loop, loop_w, size,
                                       lambda: _primal_vmap_differs(st, batch, size),
                                       lambda: batching_rule_skips_primitive(st, batch, _array_call(st))))
    if found and _agrees_in_float64(st, ws, arrays, batch, size):
        raise SkipCheck("the compositions differ from the eager gradient in the inputs' precision only: in float64 "
                        "they agree, so rounding decides the difference (a branch or a threshold that rounding "
                        "under jit/vmap tips the other way), not a derivative rule")
    yield from found


def _agrees_in_float64(st: GradState, ws: Sequence[Any], arrays: list[Any], batch: list[Any], size: int) -> bool:
    """True when the same compositions, run in float64 on the same values, agree with the eager and per-example
    gradients: a derivative rule that is wrong under jit or vmap is wrong in every precision, while a decision
    taken on a rounding-level number (a residual against a tolerance float32 barely reaches) flips between
    programs only in low precision. False where nothing is below float64 or the float64 run fails."""
    def wider(x: Any) -> Any:
        return _compat.device_array(to_f64(x)) if hasattr(x, "dtype") and below_64(x) else x

    if not any(below_64(x) for x in [*arrays, *ws] if hasattr(x, "dtype")):
        return False
    with _compat.x64_scope(True):
        ws64, arrays64, batch64 = [wider(w) for w in ws], [wider(x) for x in arrays], [wider(b) for b in batch]
        gradient = _gradient_fn(st, ws64)
        composed, exc = quiet_call(lambda: jax.block_until_ready(_composite(st, ws64, size)(arrays64, batch64)))
        eager, eager_exc = quiet_call(gradient, arrays64)
        loops, loop_exc = quiet_call(_per_example_loop, st, ws64, batch64, size, gradient)
        if exc is not None or eager_exc is not None or loop_exc is not None:
            return False
        loop, loop_w = loops
        g_jit, g_vmap, g_gvmap = composed
        return not any(_compare_compositions(st, eager, g_jit, g_vmap, g_gvmap, loop, loop_w, size, lambda: False))


def _array_call(st: GradState) -> Callable[..., list[Any]]:
    """The function of its array arguments alone, returning its output leaves."""
    positions = _array_positions(st)
    return lambda *arrays: jax.tree_util.tree_leaves(st.call_target(st.values(dict(zip(positions, arrays)))))


def _primal_vmap_differs(st: GradState, batch: list[Any], size: int) -> bool:
    """True when vmap of the function itself (no derivative) already differs from the per-example loop: then a
    vmap(grad f) mismatch comes from the batching rule, not from the derivative rules."""
    f = _array_call(st)
    batched, exc = quiet_call(lambda: jax.vmap(f)(*batch))
    if exc is not None:
        return False
    for j in range(size):
        one, exc = quiet_call(f, *[b[j] for b in batch])
        if exc is not None:
            return False
        for got, want in zip(batched, one):
            cmp = compare(to_f64(got[j]), to_f64(want))
            if not cmp.ok and not cmp.nonfinite:
                return True
    return False


def _composition_finding(st: GradState, how: str, message: str, fix: str = "",
                         location: Location | None = None) -> Finding:
    name = display_name(st)
    rule = {"custom_vjp": rule_name(st.bwd, "bwd"), "custom_jvp": rule_name(st.jvp_rule, "the JVP rule")}.get(
        st.kind, name)
    return rules.COMPOSITION_MISMATCH.finding(
        evidence=f"{how} of {name}: {message}",
        fix=fix or f"Keep {rule} traceable: use jax.numpy instead of NumPy on cotangents/tangents (no np.asarray, "
                   "float(), Python if on values), and do not depend on global state.",
        location=location or finding_location(st))


def _batching_location(st: GradState) -> Location | None:
    """The batching rule of a primitive subject (where a vmap defect lives), else the subject itself."""
    if st.kind == "primitive":
        rule = _compat.batching_rule(st.subject.obj)
        if rule is not None and _locate.is_user_code(rule):
            return _locate.locate(rule)
    return st.subject.location


def _skippable(exc: BaseException) -> bool:
    """Failures that other rules own: a missing lowering (JXR004) or batching rule (JXR005)."""
    text = str(exc)
    return "MLIR translation rule" in text or "Batching rule for" in text


def _explain(exc: BaseException, prefer: Any) -> tuple[str, str]:
    """(what happened, fix) for a composition that fails."""
    text = error_text(exc, prefer)
    if _compat.needs_concrete_values(exc):
        return (f"fails with {text}, although the eager gradient works: the rule only works on concrete arrays "
                "(it converts a traced cotangent or tangent to NumPy or a Python value).", "")
    if "Reverse-mode differentiation does not work for lax.while_loop" in str(exc):
        # the eager gradient works: only under vmap/jit does a loop bound become a tracer (quadax's Romberg loop)
        return (f"fails with {text}, although the eager gradient works: under this transformation the tangent "
                "passes through a loop whose bounds are traced (a fori_loop bound that vmap batches or jit traces "
                "becomes a while_loop), and JAX cannot transpose a while_loop.",
                "Keep every loop on the tangent's path transposable under vmap and jit: give lax.fori_loop bounds "
                "that are Python ints (static), or use lax.scan with a fixed length and mask the extra steps; a "
                "data-dependent count belongs in the primal only, with the tangent computed outside the loop.")
    if _compat.is_callback_failure(exc):
        return (f"fails with {text}, although the eager gradient works: a host callback's function fails on what "
                "this transformation hands it (under vmap, `vmap_method='expand_dims'` or 'broadcast_all' gives "
                "every operand a batch axis, an integer order or a flag too).",
                "Make the callback's host function accept every operand with a leading batch axis, or pass the "
                "values that must stay scalars (an order, a flag) through a closure or functools.partial instead of "
                "as operands, or use `vmap_method='sequential'` (one host call per example).")
    if "Cannot lower jaxpr" in str(exc) or "verifier" in str(exc):
        return (f"fails to compile with {text}: an abstract evaluation (or lowering) disagrees with the impl for "
                "batched inputs, so eager vmap works but jit does not.",
                "Make the abstract eval compute the output shape the impl produces for every input shape it "
                "accepts (e.g. broadcasting: `jnp.broadcast_shapes(x.shape, y.shape)`).")
    return f"fails with {text}, although the eager gradient works.", ""


def _diagnose_failure(st: GradState, ws: Sequence[Any], arrays: list, batch: list, exc: BaseException,
                      trace_only: bool = False) -> Iterator[Finding]:
    """The jitted composite failed: find which composition fails, one at a time (eager ones first). `trace_only`:
    the composite already fails while being traced, so each composition is only traced (`jax.eval_shape`): it
    raises there what it raises when run, before running anything."""
    gradient = _gradient_fn(st, ws)
    batched = _batched_gradient_fn(st, ws)
    attempts = [
        ("jax.jit(jax.grad(f))", lambda: jax.jit(lambda a: gradient(a))(arrays)),
        ("jax.vmap(jax.grad(f))", lambda: jax.vmap(lambda *a: gradient(a))(*batch)),
        ("jax.vjp(jax.vmap(f))", lambda: batched(batch)),
        ("jax.jit(jax.vmap(jax.grad(f)))", lambda: jax.jit(jax.vmap(lambda *a: gradient(a)))(*batch)),
        ("jax.jit(jax.vjp(jax.vmap(f)))", lambda: jax.jit(batched)(batch)),
    ]
    prefer = st.bwd if st.kind == "custom_vjp" else st.jvp_rule
    # traced alone, every composition may pass (the composite failed while tracing something they share): then run
    for how, run, traced in [(how, run, True) for how, run in attempts if trace_only] + \
            [(how, run, False) for how, run in attempts]:
        _, err = quiet_call(jax.eval_shape, run) if traced else quiet_call(run)
        if err is None or _skippable(err):
            continue
        if _primal_fails_too(st, how, arrays, batch, traced):
            raise SkipCheck(f"{how} fails, but so does the function itself under the same transformation without "
                            f"differentiation ({short_message(err, 120)}): not a derivative defect")
        message, fix = _explain(err, prefer)
        yield _composition_finding(st, how, message, fix)
        return
    if _skippable(exc):
        raise SkipCheck(f"not checked under jit/vmap: {short_message(exc, 160)} (a registration finding)")
    message, fix = _explain(exc, prefer)
    yield _composition_finding(st, "jax.jit of jax.vmap/jax.grad", message, fix)


def _primal_fails_too(st: GradState, how: str, arrays: list, batch: list, trace_only: bool = False) -> bool:
    """True when the undifferentiated subject fails under the same jit/vmap (a Python `if` on values, a missing
    batching rule): the batching and registration checks own that."""
    positions = _array_positions(st)

    def f(*values: Any) -> Any:
        return st.call_target(st.values(dict(zip(positions, values))))

    run = (lambda: jax.jit(jax.vmap(f))(*batch)) if "vmap" in how and "jit" in how else \
        (lambda: jax.vmap(f)(*batch)) if "vmap" in how else (lambda: jax.jit(f)(*arrays))
    _, err = quiet_call(jax.eval_shape, run) if trace_only else quiet_call(run)
    return err is not None


def _compare_compositions(st: GradState, eager: list, g_jit: list, g_vmap: list, g_gvmap: list, loop: list,
                          loop_w: list, size: int, primal_vmap_differs: Callable[[], bool],
                          skips_primitive: Callable[[], bool] = lambda: False) -> Iterator[Finding]:
    for a, e, j in zip(st.diff, eager, g_jit):
        if close(j, e, grad_tol(a.dtype)):
            continue
        cmp = compare(to_f64(j), to_f64(e), tol=grad_tol(a.dtype))
        nonfinite = nonfinite_only_composed(j, e, "the eager gradient is")
        if nonfinite or not cmp.ok and not cmp.nonfinite:
            yield _composition_finding(st, "jax.jit(jax.grad(f))", f"the gradient for {a.name} "
                                       f"{nonfinite or 'differs from the eager one: ' + cmp.describe()}.")
            return
    for how, got, per_example in (("jax.vmap(jax.grad(f))", g_vmap, loop),
                                  ("jax.vjp(jax.vmap(f)) with a different cotangent per example", g_gvmap, loop_w)):
        for i, a in enumerate(st.diff):
            expected = np.stack([to_f64(per_example[j][i]) for j in range(size)])
            if close(got[i], expected, grad_tol(a.dtype)):
                continue
            cmp = compare(to_f64(got[i]), expected, tol=grad_tol(a.dtype))
            nonfinite = nonfinite_only_composed(got[i], expected, "the per-example gradients are")
            if nonfinite or not cmp.ok and not cmp.nonfinite:
                message = (f"over a batch of {size} examples the gradient for {a.name} "
                           f"{nonfinite or 'differs from the per-example gradients: ' + cmp.describe()}.")
                fix, location = "", None
                if nonfinite and how.startswith("jax.vjp") and skips_primitive():
                    explained, fix = impl_differentiated(st)
                    message, location = message + explained, _batching_location(st)
                elif primal_vmap_differs():
                    message += (" jax.vmap of the function itself already differs from the per-example loop, so "
                                "the batching rule is at fault, not the derivative rules.")
                    fix = (f"Fix the batching of {display_name(st)} first: `jaxdiag batching` on this target "
                           "shows the rule and the in_axes that break it.")
                    location = _batching_location(st)
                elif how.startswith("jax.vjp") and st.kind == "primitive":
                    message, fix, location = batched_transpose_fault(st, message, finding_location(st))
                yield _composition_finding(st, how, message, fix, location)
                return


CHECKS = [function_grad, grad_composition]
