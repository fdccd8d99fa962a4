"""`--order 2` for every kind (JXG019, JXG023): jvp-of-vjp against grad-of-grad, a disagreement confirmed against
finite differences of the gradient and autodiff of the undecorated function before it is reported."""

from __future__ import annotations

import linecache
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import jax
import numpy as np

from .. import _compat
from .. import _rules as rules
from .._core import _locate
from .._core._report import Finding
from .._harness.source import docstring_sentences
from .._loading._numerics import FD_EPS, compare
from ._base import Context, SkipCheck, check
from ._grad import ALL_KINDS, display_name, float_outputs, finding_location
from ._gradref._compiled import CompiledPrimal
from ._gradref import (
    EVERY_BLOCKER, WHERE_TRAP_FIX, GradState, absdot, all_finite, close_scalar, dot, error_text, fmt_values, grad_tol,
    is_inexact, locate, quiet_call, require, rough_entries, state, to_f64, trap_location, trap_text, where_trap,
)
from ._shared import first_line, user_frame_location


# ---------------------------------------------------------------------------------------------------------------
# grad-second-order (--order 2): grad of grad and jvp of vjp
# ---------------------------------------------------------------------------------------------------------------


@check("grad-second-order", family="grad", kinds=ALL_KINDS,
       reads=(*EVERY_BLOCKER, "grad.second_order_moot", "grad.second_order_held"))
def grad_second_order(ctx: Context) -> Iterator[Finding]:
    """Differentiate the first-order gradient G(x) = J(x)^T w: jvp(G) vs finite differences of G, vs autodiff
    of the undecorated primal, and the dot-product test between jvp(G) and vjp(G) (JXG019)."""
    st = state(ctx)
    if ctx.options.order < 2 and ctx.options.command != "check":  # `jaxdiag check` runs every check
        raise SkipCheck("first order only (use --order 2)")
    if _jax_internal(st) and not ctx.options.include_jax:
        # e.g. jnp.sinc's _sinc_maclaurin: derivatives valid only at the point where JAX uses the function
        raise SkipCheck("JAX's own rule (trusted; --include-jax checks it)")
    require(st)
    if st.memo.second_order_moot:
        raise SkipCheck(f"{st.memo.second_order_moot}: second derivatives add nothing")
    limit = documented_first_order_only(st.fun) if ctx.options.command == "check" else None
    if limit:  # the author's stated contract; `jaxdiag grad --order 2` still checks (there you ask for it)
        raise SkipCheck(f"its docstring says second derivatives are outside its contract: \"{limit}\"")
    if not st.diff or not float_outputs(st):
        raise SkipCheck("no floating-point input and output to differentiate")
    ws = st.cotangents(0)
    G = _first_order(st, ws, st.call_target)
    x = tuple(st.diff_values)
    v = tuple(_held_or(st, a, st.tangent(a, 0)) for a in st.diff)
    if not all_finite(st.out_leaves):
        # outside the function's domain (a log below 0, lambertw below -1/e) the primal itself is NaN: there are no
        # second derivatives there to compare, and NaN on both sides is no disagreement between modes. A mode that
        # cannot even be traced is still reported, from its trace alone (running it would compute only NaNs)
        yield from _untraceable_modes(st, G, x, v, ctx.options.command)
        raise SkipCheck("the function is NaN or inf at these inputs (outside its domain)")
    u = [st.tangent(a, 1) for a in st.diff]
    both = _both_modes_compiled(st, G, x, v, u)
    if both is not None:
        hv, htu = [to_f64(h) for h in both[0]], both[1]
    else:
        # eagerly, forward over reverse first; reverse over reverse first where only it cannot even be traced (the
        # forward mode would run in full, an adaptive quadrature's gradient op by op, only to meet its failure)
        modes = ((FORWARD, lambda: _eager_forward(G, x, v)), (REVERSE, lambda: _eager_reverse(G, x, u)))
        if _trace_error(G, x, v, u, REVERSE) is not None and _trace_error(G, x, v, u, FORWARD) is None:
            modes = modes[::-1]
        results: dict[str, Any] = {}
        for how, run in modes:
            results[how], exc = run()
            if exc is not None:
                yield _second_order_failed(st, how, exc, ctx.options.command)
                return
        hv, htu = results[FORWARD], results[REVERSE]
    fd_memo: list = []

    def fd_of_gradient() -> GradientDifferences | None:
        if not fd_memo:
            fd_memo.append(_fd_of_gradient(st, G))
        return fd_memo[0]

    yield from _second_order_consistency(st, ws, hv, htu, u, fd_of_gradient)
    yield from _second_order_references(st, ws, hv, fd_of_gradient())


# A docstring sentence about second derivatives that says they are not supported (or that only first order is).
_SECOND_ORDER = re.compile(r"\b(second|higher)[- ]order\b|\bgrad[- ]of[- ]grad\b|\bhessians?\b",
                           re.IGNORECASE)
_UNSUPPORTED = re.compile(r"\b(not|no|never|cannot|unsupported|incorrect|wrong|isn't|aren't)\b|"
                          r"\bonly\s+(the\s+)?first[- ]order\b", re.IGNORECASE)


def documented_first_order_only(fn: Callable[..., object] | None) -> str:
    """The sentence of the primal's docstring that rules out second derivatives ("second-order derivatives
    (grad-of-grad) are not [correct]"), or ""."""
    doc = getattr(_locate.unwrap(fn), "__doc__", None) if fn is not None else None
    if not isinstance(doc, str):
        return ""
    for sentence in docstring_sentences(doc):
        if _SECOND_ORDER.search(sentence) and _UNSUPPORTED.search(sentence):
            return " ".join(sentence.split())[:160]
    return ""


def _jax_internal(st: GradState) -> bool:
    """A custom_jvp/custom_vjp found inside the user's function but defined by JAX itself."""
    if st.subject.parent is None or st.kind not in ("custom_jvp", "custom_vjp"):
        return False
    return not _locate.is_user_code(st.fun)


FORWARD = "jax.jvp of jax.vjp (forward over reverse)"
REVERSE = "jax.grad of jax.grad (reverse over reverse)"


def _untraceable_modes(st: GradState, G: Callable, x: tuple, v: tuple, command: str) -> Iterator[Finding]:
    """The second-order failure of the first mode that does not trace (abstractly: `jax.eval_shape`), if any."""
    u = [st.tangent(a, 1) for a in st.diff]
    for how in (FORWARD, REVERSE):
        exc = _trace_error(G, x, v, u, how)
        if exc is not None:
            yield _second_order_failed(st, how, exc, command)
            return


def _trace_error(G: Callable, x: tuple, v: tuple, u: list[Any], how: str) -> BaseException | None:
    """Why the mode `how` (FORWARD: jvp of G along v, REVERSE: vjp of G at u) cannot be traced at x, or None."""
    if how == FORWARD:
        return quiet_call(lambda: jax.eval_shape(lambda *p: jax.jvp(G, p, v), *x))[1]
    return quiet_call(lambda: jax.eval_shape(lambda *p: jax.vjp(G, *p)[1](list(u)), *x))[1]


def _eager_forward(G: Callable, x: tuple, v: tuple) -> tuple[list[np.ndarray] | None, BaseException | None]:
    out, exc = quiet_call(jax.jvp, G, x, v)
    return ([to_f64(h) for h in out[1]] if exc is None else None), exc


def _eager_reverse(G: Callable, x: tuple, u: list[Any]) -> tuple[Any, BaseException | None]:
    out, exc = quiet_call(jax.vjp, G, *x)
    if exc is not None:
        return None, exc
    return quiet_call(out[1], list(u))  # JAX's convention, as first order: no conjugation


def _both_modes_compiled(st: GradState, G: Callable, x: tuple, v: tuple, u: list[Any]
                         ) -> tuple[list[Any], list[Any]] | None:
    """(jvp(G)(x; v), vjp(G)(x)(u)) through one compiled program where G loops or branches (`CompiledPrimal`):
    eagerly, the two modes of an adaptive quadrature's gradient compiled its loops again op by op (about 110
    programs, 6 s). None where that program does not run, or where the subject calls a custom_vjp function: JAX
    refuses forward mode of a custom_vjp eagerly where it may trace it (equinox's backward_nan), and only the eager
    calls can say so. The eager calls then decide, and name the mode that fails."""
    if st.kind == "custom_vjp":
        return None
    count = len(x)

    def modes(values: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        primals, tangents, cotangents = values[:count], values[count:2 * count], values[2 * count:]
        hv = jax.jvp(G, tuple(primals), tuple(tangents))[1]
        return list(hv), list(jax.vjp(G, *primals)[1](list(cotangents)))

    ran, out = CompiledPrimal(modes).compiled([*x, *v, *u])
    if not ran or _calls_custom_vjp(st):
        return None
    return list(out[0]), list(out[1])


def _calls_custom_vjp(st: GradState) -> bool:
    traced, exc = quiet_call(jax.make_jaxpr(st.diff_fn(st.call_target)), *st.diff_values)
    return exc is not None or _compat.calls_custom_vjp(traced)


def _first_order(st: GradState, ws: Sequence[Any], call: Callable) -> Callable:
    treedef = st.out_treedef

    def G(*diffs: Any) -> list[Any]:
        _, pullback = jax.vjp(st.diff_fn(call), *diffs)
        return list(pullback(jax.tree_util.tree_unflatten(treedef, list(ws))))

    return G


def _second_order_failed(st: GradState, how: str, exc: BaseException, command: str) -> Finding:
    name = display_name(st)
    prefer = st.bwd if st.kind == "custom_vjp" else st.jvp_rule
    recursive = _fwd_calls_itself(st, exc, command)
    if recursive is not None:
        return recursive
    if command == "check":  # many rules never need second derivatives: a note unless they were asked for
        return rules.SECOND_ORDER_NOT_CHECKED.finding(
            how=how, function=name, error=error_text(exc, prefer), location=finding_location(st))
    return rules.SECOND_ORDER_FAILURE.finding(
        evidence=f"{how} of {name} fails: {error_text(exc, prefer)}. First-order gradients work, but Hessians, "
                 "jax.hessian and Newton steps fail.",
        fix="Write the rule with differentiable jax.numpy operations (no NumPy, no Python control flow on values, "
            "no pure_callback without its own derivative).",
        location=finding_location(st))


def _fwd_calls_itself(st: GradState, exc: BaseException, command: str) -> Finding | None:
    """fwd calls the custom_vjp function itself: forward-mode differentiation of fwd (which grad of grad does)
    reaches the custom_vjp and JAX refuses. The defect is that call in fwd, not bwd."""
    if st.kind != "custom_vjp" or st.fwd is None or "forward-mode autodiff" not in str(exc):
        return None
    where = user_frame_location(exc, st.fwd)
    fwd_loc = locate(st.fwd)
    if where is None or fwd_loc is None or where.line == fwd_loc.line:
        return None
    fwd_name = getattr(_locate.unwrap(st.fwd), "__name__", "fwd")
    name = getattr(_locate.unwrap(st.fun), "__name__", "f")
    line_text = linecache.getline(os.path.abspath(where.path), where.line).strip()
    if not re.search(rf"\b{re.escape(name)}\(", line_text):
        return None
    fixed = _inline_primal(st, line_text, name)
    suggestion = f" (line {where.line}): `{fixed}`" if fixed else ""
    evidence = (f"{fwd_name} calls {name} itself (`{line_text}`), so differentiating {fwd_name} in forward mode, as "
                f"grad of grad and jax.hessian do, reaches the custom_vjp {name} and fails: {first_line(exc)}. "
                "First-order gradients work.")
    if command == "check":  # a note, as for any second-order failure under `check`, but at the faulty line
        return rules.SECOND_ORDER_NOT_CHECKED.finding(
            how="grad of grad", function=name, error=f"{fwd_name} calls {name} itself (`{line_text}`)",
            location=where)
    return rules.SECOND_ORDER_FAILURE.finding(
        evidence=evidence,
        fix=f"In {fwd_name}, compute the primal output with the undecorated computation instead of calling {name}"
            f"{suggestion}.", location=where)


def _inline_primal(st: GradState, line_text: str, name: str) -> str | None:
    """The fwd line with `name(args)` replaced by the primal's own `return` expression, when the primal is one
    `return EXPR` and the call passes its parameters by the same names; else by `name.fun(args)`."""
    import ast
    import inspect
    import textwrap

    call = re.search(rf"\b{re.escape(name)}\(([^()]*)\)", line_text)
    if call is None:
        return None
    try:
        node = ast.parse(textwrap.dedent(inspect.getsource(_locate.unwrap(st.fun)))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        node = None
    args = [a.strip() for a in call.group(1).split(",") if a.strip()]
    replacement = f"{name}.fun({call.group(1)})"
    if isinstance(node, ast.FunctionDef) and len(node.body) == 1 and isinstance(node.body[0], ast.Return) \
            and node.body[0].value is not None and [a.arg for a in node.args.args] == args:
        replacement = ast.unparse(node.body[0].value)
    fixed = line_text[:call.start()] + replacement + line_text[call.end():]
    return fixed.split("  #")[0].rstrip()


def _second_order_consistency(st: GradState, ws: Sequence[Any], hv: list, htu: Any, u: list,
                              fd_of_gradient: Callable[[], GradientDifferences | None]
                              ) -> Iterator[Finding]:
    lhs = sum(dot(ui, hi) for ui, hi in zip(u, hv))
    rhs = sum(dot(hu, _held_or(st, a, st.direction(a, 0))) for hu, a in zip(htu, st.diff))
    scale = max(sum(absdot(ui, hi) for ui, hi in zip(u, hv)),
                sum(absdot(hu, _held_or(st, a, st.direction(a, 0))) for hu, a in zip(htu, st.diff)))
    tol = max(grad_tol(a.dtype) for a in st.diff)
    if close_scalar(rhs, lhs, scale, tol):
        return
    references = _second_order_dot_references(st, ws, u, fd_of_gradient(), tol)
    finite = np.isfinite(lhs), np.isfinite(rhs)
    if not any(finite) and not references:
        return  # NaN in both modes and no finite reference: a singular point (sqrt's at 0), not a defect shown
    if _rounding_only(lhs, rhs, tol * scale, references) or _modes_agree_when_widened(st, ws, u):
        return
    seen = "; ".join(f"{how} gives {ref:.6g}" for how, ref, _, _ in references)
    fwd_text, rev_text = f"<u, H v> = {lhs:.6g} by jvp of vjp", f"<H^T u, v> = {rhs:.6g} by grad of grad"
    trap = where_trap(st) if not all(finite) else None
    if all(finite):
        evidence = f"Second derivatives of {display_name(st)} disagree between modes: {fwd_text} but {rev_text}"
    else:
        evidence = (f"Second derivatives of {display_name(st)} are NaN/inf in "
                    + ("both modes" if not any(finite) else "one mode") + f": {fwd_text}, {rev_text}")
    yield rules.SECOND_ORDER_FAILURE.finding(
        evidence=evidence + f" (tolerance {tol:.0e})" + (f"; {seen}" if seen else "")
        + (f"; {trap_text(trap)}" if trap is not None else "") + ".",
        fix=WHERE_TRAP_FIX if trap is not None else
        "A rule inside the gradient is not transposed consistently; check the transpose/JVP rules of the "
        "primitives the rule uses.",
        location=trap_location(trap) or finding_location(st))


def _modes_agree_when_widened(st: GradState, ws: Sequence[Any], u: list) -> bool:
    """Whether forward over reverse and reverse over reverse agree (the dot-product test at float64's tolerance)
    when the differentiated inputs, directions and cotangents are widened to 64 bits under x64. False when they are
    64-bit already, or when the widened run fails (a rule that insists on 32 bits)."""

    def modes(first_order: Callable[[Callable], Callable], x: tuple, v: tuple) -> tuple[list, list]:
        G = first_order(st.call_target)
        hv = jax.jvp(G, x, v)[1]
        htu = jax.vjp(G, *x)[1]([_wide(ui) for ui in u])
        return [to_f64(h) for h in hv], [to_f64(h) for h in htu]

    got = _widened(st, ws, modes)
    if got is None or not all_finite(got[0]) or not all_finite(got[1]):
        return False
    hv, htu = got
    v = [to_f64(_held_or(st, a, st.direction(a, 0))) for a in st.diff]
    lhs = sum(dot(ui, hi) for ui, hi in zip(u, hv))
    rhs = sum(dot(hu, vi) for hu, vi in zip(htu, v))
    scale = max(sum(absdot(ui, hi) for ui, hi in zip(u, hv)), sum(absdot(hu, vi) for hu, vi in zip(htu, v)))
    return close_scalar(rhs, lhs, scale, grad_tol(np.float64))


def _widened_references(st: GradState, ws: Sequence[Any], index: int, rough: np.ndarray | None = None
                        ) -> list[tuple[str, np.ndarray, float]] | None:
    """The second derivative with respect to argument `index` by each reference, computed in float64 with inputs,
    direction and cotangents widened: (how, values, spread) for finite differences of the rule's gradient
    (Richardson over the native steps) and autodiff of the undecorated function. The escalation of the first-order
    finite differences, for the second order: where the native references are inconclusive or disagree, a float32
    gradient's rounding (a large background, a transform summing many terms) may be what they see, and a rule that
    is right agrees with a float64 reference. `rough`: the entries left out of the differences' spread (kinks and
    jumps of the gradient at the point, `rough_entries`). None when nothing can be widened or run in float64."""

    def references(first_order: Callable[[Callable], Callable], x: tuple, v: tuple) -> list:
        G = first_order(st.call_target)

        def central(eps: float) -> np.ndarray:
            plus = G(*(xi + eps * vi for xi, vi in zip(x, v)))[index]
            minus = G(*(xi - eps * vi for xi, vi in zip(x, v)))[index]
            return (to_f64(plus) - to_f64(minus)) / (2 * eps)

        coarse, fine = central(_WIDE_FD_STEP), central(_WIDE_FD_STEP / 2)
        gaps = np.abs(fine - coarse) if rough is None else np.where(rough, 0.0, np.abs(fine - coarse))
        out = [("finite differences of the gradient", (4 * fine - coarse) / 3, float(np.max(gaps, initial=0.0)))]
        if st.fun is not None:
            out.append((_AUTODIFF, to_f64(jax.jvp(first_order(st.call_primal), x, v)[1][index]), 0.0))
        return out

    got = _widened(st, ws, references)
    finite = [r for r in got or () if all_finite([r[1]])]
    return finite or None


# The finite-difference step of the float64 references: that of float32 (_numerics.FD_EPS), so a function that is
# itself an approximation (a tolerance-driven transform) is sampled at the same scale as natively.
_WIDE_FD_STEP = 1e-3


def _wide(x: Any) -> Any:
    x64 = to_f64(x)
    return _compat.device_array(x64.astype(np.complex128 if np.iscomplexobj(x64) else np.float64))


def _widened(st: GradState, ws: Sequence[Any], body: Callable[[Callable[[Callable], Callable], tuple, tuple], Any]
             ) -> Any:
    """body(first_order, x, v) under x64, with the differentiated inputs x, direction 0 (v) and the output
    cotangents widened to 64 bits; first_order(call) is the gradient G(x) = J^T w of `call` there. None when the
    inputs are 64-bit already (nothing to widen) or the widened run fails (a rule that insists on 32 bits)."""
    if not any(np.dtype(a.dtype).itemsize < (16 if np.dtype(a.dtype).kind == "c" else 8) for a in st.diff):
        return None
    treedef = st.out_treedef
    with _compat.x64_scope(True):
        ws64 = [_wide(w) if is_inexact(np.dtype(w.dtype)) else w for w in ws]

        def first_order(call: Callable) -> Callable:
            def G(*diffs: Any) -> list[Any]:
                out, pullback = jax.vjp(st.diff_fn(call), *diffs)
                leaves = jax.tree_util.tree_leaves(out)
                cts = [w.astype(leaf.dtype) if is_inexact(np.dtype(leaf.dtype)) else w
                       for w, leaf in zip(ws64, leaves)]
                return list(pullback(jax.tree_util.tree_unflatten(treedef, cts)))

            return G

        x = tuple(_wide(a.value) for a in st.diff)
        v = tuple(_wide(_held_or(st, a, st.direction(a, 0))) for a in st.diff)
        result, exc = quiet_call(body, first_order, x, v)
    return result if exc is None else None


def _rounding_only(lhs: float, rhs: float, slack: float, references: list[tuple[str, float, float, float]]
                   ) -> bool:
    """Whether two modes that disagree differ by rounding only (a Hessian computed as a difference of terms far
    larger than itself, as in a sharp softmax): each mode agrees with a reference (finite differences of the
    gradient, or the same mode of autodiff of the undecorated function, within that reference's own error), or
    the undecorated function's own two modes disagree at least as much. A rule that is not transposed consistently
    disagrees with the references, while plain autodiff of its function does not."""
    if any(abs(lhs - fwd) <= slack + err for _, fwd, _, err in references) and \
            any(abs(rhs - rev) <= slack + err for _, _, rev, err in references):
        return True
    noise = [abs(fwd - rev) for how, fwd, rev, _ in references if how == _AUTODIFF]
    return bool(noise) and abs(lhs - rhs) <= 2 * noise[0] + slack


_AUTODIFF = "autodiff of the undecorated function"


def _second_order_dot_references(st: GradState, ws: Sequence[Any], u: list,
                                 fd: GradientDifferences | None, tol: float
                                 ) -> list[tuple[str, float, float, float]]:
    """(name, <u, H v> for forward over reverse, <H^T u, v> for reverse over reverse, error bound) by each
    reference that can be computed: finite differences of the gradient along v (one value for both modes; its
    error is how much steps h and h/2 disagree plus their rounding bound), and the two modes of autodiff of the
    undecorated function."""
    out = []
    if fd is not None:
        ref = sum(dot(ui, fi) for ui, fi in zip(u, fd.values))
        err = sum(float(np.sum(np.abs(to_f64(ui)))) * (s + r) for ui, s, r in zip(u, fd.spread, fd.rounding)) + \
            tol * sum(absdot(ui, fi) for ui, fi in zip(u, fd.values))
        out.append(("finite differences of the gradient", ref, ref, err))
    if st.fun is not None:
        G_ref = _first_order(st, ws, st.call_primal)
        got, exc = quiet_call(jax.jvp, G_ref, tuple(st.diff_values),
                              tuple(_held_or(st, a, st.tangent(a, 0)) for a in st.diff))
        pulled, exc2 = quiet_call(jax.vjp, G_ref, *st.diff_values)
        back: Any = None
        exc3 = exc2
        if exc2 is None:
            back, exc3 = quiet_call(pulled[1], list(u))
        if exc is None and exc3 is None and all_finite(got[1]) and all_finite(back):
            fwd = sum(dot(ui, r) for ui, r in zip(u, got[1]))
            rev = sum(dot(b, _held_or(st, a, st.direction(a, 0))) for b, a in zip(back, st.diff))
            out.append((_AUTODIFF, fwd, rev, 0.0))
    return out


def _second_order_references(st: GradState, ws: Sequence[Any], hv: list,
                              fd: GradientDifferences | None) -> Iterator[Finding]:
    ref = None
    if st.fun is not None:
        G_ref = _first_order(st, ws, st.call_primal)
        out, exc = quiet_call(jax.jvp, G_ref, tuple(st.diff_values),
                              tuple(_held_or(st, a, st.tangent(a, 0)) for a in st.diff))
        if exc is None and all_finite(out[1]):
            ref = [to_f64(r) for r in out[1]]
    for i, a in enumerate(st.diff):
        tol = grad_tol(a.dtype)
        if fd is None and ref is None:
            continue
        # where the gradient has a kink or a jump at the point (a ReLU's 0, a binary input on its threshold), no
        # reference has a second derivative to give: those entries are left out of every comparison
        smooth = (lambda x: fd.smooth_only(i, x)) if fd is not None else to_f64  # noqa: B023
        if not np.any(np.isfinite(smooth(hv[i]))):
            continue
        fd_cmp = compare(smooth(hv[i]), smooth(fd.values[i]), tol=tol) if fd is not None else None
        fd_ok = fd is not None and fd_cmp is not None and (fd_cmp.ok or fd_cmp.max_abs <= 2 * fd.spread[i])
        ref_ok = ref is not None and compare(smooth(hv[i]), smooth(ref[i]), tol=tol).ok
        if (fd_ok and fd is not None and fd.conclusive(i, tol)) or ref_ok:
            continue  # agrees with one reference: the other sees a kink or a deliberate stop_gradient
        wide = _widened_references(st, ws, i, fd.rough[i] if fd is not None else None)
        if wide is None and fd_ok:
            continue  # inconclusive differences that agree, and no float64 run to say more
        if wide is not None and any(_agrees(smooth(hv[i]), smooth(values), spread, tol)
                                    for _, values, spread in wide):
            continue  # the native references lost the digits (float32 rounding), not the rule: float64 agrees
        parts = []
        if fd is not None and fd_cmp is not None:
            parts.append(f"finite differences of the gradient give {fmt_values(fd.values[i])} ({fd_cmp.describe()}"
                         + ("" if fd.conclusive(i, tol) else f"; inconclusive in {np.dtype(a.dtype).name}: rounding "
                            f"the gradient alone moves them by up to {fd.rounding[i]:.3g}") + ")")
        if ref is not None:
            parts.append(f"autodiff of the undecorated function gives {fmt_values(ref[i])}")
        parts += [f"in float64, {how}: {fmt_values(values)}" for how, values, _ in wide or ()]
        if fd is not None and _flat_where_it_differs(hv[i], fd, i, tol):
            parts.append("where they differ the gradient does not move at all along the step (exactly equal at "
                         "both steps): it depends on the inputs there only through comparisons, sampling or "
                         "rounding, so the second derivative JAX takes of the rule is a surrogate's (a "
                         "straight-through or event gradient differentiated again), deliberate if the first "
                         "derivative is a surrogate on purpose")
        rough = int(np.sum(fd.rough[i])) if fd is not None else 0
        if rough:
            parts.append(f"{rough} of {np.size(fd.rough[i]) if fd is not None else 0} entries, where the gradient "
                         "has a kink or a jump at the point itself (its one-sided differences disagree at every "
                         "step), are left out")
        yield rules.SECOND_ORDER_MISMATCH.finding(
            evidence=f"The second derivative of {display_name(st)} with respect to {a.name} (jax.jvp of the "
                     f"gradient along "
            f"a random direction) is {fmt_values(hv[i])}, but " + "; ".join(parts) + ". JAX differentiates the "
            "rule's own code; a stop_gradient, NumPy call or rounding in it changes second derivatives silently.",
            fix=f"If deliberate, add `# jaxdiag: ignore[{rules.SECOND_ORDER_MISMATCH.code}]` to the rule's def line; "
                "otherwise compute the gradient with differentiable operations on the primal values.",
            location=finding_location(st))
        return


def _flat_where_it_differs(hv: Any, fd: GradientDifferences, index: int, tol: float) -> bool:
    """Whether every smooth entry where the rule's second derivative differs from the differences is one where the
    gradient does not move at all (`GradientDifferences.flat`)."""
    got, want = fd.smooth_only(index, hv), fd.smooth_only(index, fd.values[index])
    with np.errstate(invalid="ignore"):
        differs = np.abs(got - want) > tol * (1.0 + np.abs(want))
    return bool(np.any(differs)) and bool(np.all(fd.flat[index][differs]))


def _agrees(hv: Any, values: np.ndarray, spread: float, tol: float) -> bool:
    agreement = compare(hv, values, tol=tol)
    return agreement.ok or (spread > 0 and agreement.max_abs <= 2 * spread)


@dataclass
class GradientDifferences:
    """Central differences of the gradient along direction 0 (the Richardson extrapolation of steps h and h/2) per
    argument, with how much the two steps disagree (`spread`: near a singularity, hypot's at 0, truncation error is
    large, and a mismatch within it says nothing about the rule) and a bound on what rounding the gradient to its
    dtype alone makes of them (`rounding`, 1.5 eps |G| / h). A gradient far larger than its change over a step (a
    large affine background) rounds flat in float32: its differences then show nothing either way. `rough` marks
    the entries where the gradient has no derivative along the step at the point itself (`rough_entries`): their
    differences measure a kink or a jump, not a second derivative, and are compared with nothing."""

    values: list[np.ndarray]
    spread: list[float]
    rounding: list[float]
    rough: list[np.ndarray]
    flat: list[np.ndarray]  # entries that do not move at all at either step (exactly equal at x + s v and x - s v)

    def conclusive(self, index: int, tol: float) -> bool:
        smooth = np.abs(self.values[index])[~self.rough[index]]
        return bool(np.all(self.rounding[index] <= tol * (1.0 + smooth)))

    def smooth_only(self, index: int, values: Any) -> np.ndarray:
        """`values` (the rule's or a reference's second derivative for argument `index`) with the rough entries
        NaN: `compare` takes NaN on both sides as agreement, so they are left out of every comparison."""
        return np.where(self.rough[index], np.nan, to_f64(values))


def _fd_of_gradient(st: GradState, G: Callable) -> GradientDifferences | None:
    """Central differences of G along direction 0, in the inputs' own precision (the rules run in it), so with
    the step of that precision (_numerics.FD_EPS: 1e-3 for float32, 1e-1 for bfloat16)."""
    eps = max(max(FD_EPS.get(np.dtype(a.dtype), 1e-1) for a in st.diff), 1e-3)
    center, exc = quiet_call(_gradient_at, st, G, list(st.diff_values))
    center = [to_f64(c) for c in center] if exc is None and all_finite(center) else None
    for _ in range(2):
        coarse, fine = _central(st, G, eps), _central(st, G, eps / 2)
        if coarse is not None and fine is not None:
            richardson = [(4 * f - c) / 3 for c, f in zip(coarse[0], fine[0])]
            rounding = [1.5 * _unit_roundoff(a.dtype) * max(cm, fm) / eps
                        for a, cm, fm in zip(st.diff, coarse[1], fine[1])]
            rough = [rough_entries(center[i], coarse[2][i], fine[2][i], eps, rounding[i] + grad_tol(a.dtype))
                     if center is not None else np.zeros(np.shape(richardson[i]), bool)
                     for i, a in enumerate(st.diff)]
            # a jump's differences grow as 1/h: their spread would excuse every other entry's mismatch
            spread = [float(np.max(np.where(r, 0.0, np.abs(f - c)), initial=0.0))
                      for c, f, r in zip(coarse[0], fine[0], rough)]
            flat = [(c == 0) & (f == 0) & ~r for c, f, r in zip(coarse[0], fine[0], rough)]
            return GradientDifferences(richardson, spread, rounding, rough, flat)
        eps /= 16
    return None


def _unit_roundoff(dtype: Any) -> float:
    return float(jax.numpy.finfo(dtype).eps) if is_inexact(np.dtype(dtype)) else 0.0  # bfloat16 on numpy < 2 too


def _held_or(st: GradState, a: Any, step: Any) -> Any:
    """`step`, or zeros for an argument the JVP rule treats as a constant (`GradMemo.second_order_held`)."""
    return step * 0 if a.pos in st.memo.second_order_held else step


def _central(st: GradState, G: Callable, eps: float
             ) -> tuple[list[np.ndarray], list[float], list[tuple[np.ndarray, np.ndarray]]] | None:
    """(central differences of G along direction 0 at step eps, per argument the largest |G| entry seen, per
    argument G at the two points (x + eps v, x - eps v))."""
    steps = [_held_or(st, a, st.direction(a, 0)) for a in st.diff]
    plus, e1 = quiet_call(_gradient_at, st, G, [_compat.device_array((to_f64(a.value) + eps * d).astype(a.dtype))
                                                for a, d in zip(st.diff, steps)])
    minus, e2 = quiet_call(_gradient_at, st, G, [_compat.device_array((to_f64(a.value) - eps * d).astype(a.dtype))
                                                 for a, d in zip(st.diff, steps)])
    if e1 is None and e2 is None and all_finite(plus) and all_finite(minus):
        pairs = [(to_f64(p), to_f64(m)) for p, m in zip(plus, minus)]
        return ([(p - m) / (2 * eps) for p, m in pairs],
                [float(max(np.max(np.abs(p), initial=0.0), np.max(np.abs(m), initial=0.0))) for p, m in pairs],
                pairs)
    return None


def _gradient_at(st: GradState, G: Callable, diffs: list[Any]) -> Any:
    """G(*diffs) through the subject's compiled gradient (`st.gradient`, the program its VJP already compiled for
    inputs of these types) where that runs, else eagerly (whose error, if any, is the one reported)."""
    ran, out = st.gradient.compiled(diffs)
    return out if ran else G(*diffs)


CHECKS = [grad_second_order]
