"""Check derivative-boundary: derivative rules at the edge of the domain with symbolic-zero tangents/cotangents.

A rule that turns a symbolic zero into a dense zero and multiplies it by a partial derivative that is infinite
at the edge of the domain (`0 * inf = NaN`: `t_y * x / (2 sqrt(y))` at y = 0 when only x is differentiated)
returns NaN where the derivative JAX is asked for is finite. Random draws never sit on the edge, so the check puts
every differentiable argument's entries on it in turn (0 for log, sqrt and pow; both ends of a declared `@lo..hi`
domain), then differentiates the target with respect to ONE argument, the others closed over as constants, exactly
as `jax.grad(f, argnums=i)` does: JAX then hands the rule a symbolic zero for every other input's tangent (JVP
rules) and every unused output's cotangent (bwd, transpose rules). Each entry that is NaN/inf where central
differences of the primal, at two step sizes, are finite and bounded is JXG027.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np

from ... import _compat
from ..._core import _locate
from ... import _rules as rules
from ..._loading._inputs import PAIRED, _domain_bounds
from ..._core._report import Finding, Location
from .._base import Context, SkipCheck, check
from .._gradref import (
    JVP_BLOCKERS, VJP_BLOCKERS, WHERE_TRAP_FIX, Arg, GradState, NonFinite, all_finite, host_linear, is_inexact, locate,
    may_be_singular, nonfinite_split, primal_saturates, quiet_call, require, state, to_f64, trap_location, trap_text,
    value_at, where_trap,
)
from ._call import names, rule_location, user_rules

# Relative central-difference steps: only whether the derivative is finite is read, not its value, so the native
# dtype suffices. A derivative that is really infinite at the point (cbrt at 0) grows as the step shrinks; a finite
# one does not (GROWTH bounds the ratio).
_STEPS = (1e-2, 1e-3)
_GROWTH = 3.0


def _rule_functions(st: GradState) -> list[Any]:
    """The user's derivative rules of the subject: bwd, the JVP rule, a primitive's JVP and transpose rules."""
    if st.kind == "custom_vjp":
        return [st.bwd] if st.bwd is not None else []
    fns = [f for f in user_rules(st) if f is not None]
    if st.kind == "primitive":
        rule = _compat.transpose_rule(st.subject.obj)
        fns += [f for f in _compat.rule_user_functions(rule) if f is not None] if rule is not None else []
    return fns


def domain_edges(domain: str) -> tuple[float, ...]:
    """The edges of a value domain where derivatives typically become infinite: 0 for the unbounded ones (log,
    sqrt and pow are singular there), both ends of `@lo..hi` and of `@unit`."""
    bounds = _domain_bounds(domain)
    if bounds is not None:
        return bounds
    return (0.0, 1.0) if domain == "unit" else (0.0,)


def _edge_values(st: GradState, a: Arg) -> np.ndarray | None:
    """`a`'s example with every other entry on an edge of its domain (cycling through the edges); None where the
    argument has no entry to place."""
    specs = st.subject.specs
    array_pos = [i for i in range(len(st.args)) if i not in st.subject.static_args]
    k = array_pos.index(a.pos) if a.pos in array_pos else None
    declared = specs[k].domain if k is not None and k < len(specs) else None
    if declared in PAIRED:  # an end of a bound pair: on an edge, the lower would pass the upper (`low = high = 0`)
        return None
    edges = domain_edges(declared or st.subject.domain)
    value = np.array(np.asarray(a.value))
    flat = value.reshape(-1)
    if flat.size == 0 or not edges:
        return None
    for i in range(0, flat.size, 2):
        flat[i] = edges[(i // 2) % len(edges)]
    return flat.reshape(value.shape)


def _of_one(st: GradState, values: list[Any], a: Arg, k: int | None) -> Callable[[Any], Any]:
    """The target as a function of `a` alone (every other argument a constant): output leaf k, or all leaves."""

    def fn(x: Any) -> Any:
        vals = list(values)
        vals[a.pos] = x
        leaves = jax.tree_util.tree_leaves(st.call_target(vals))
        return leaves if k is None else leaves[k]

    return fn


def _fd_finite(fn: Callable[[Any], Any], x: Any, v: np.ndarray, smooth: bool = False) -> list[np.ndarray] | None:
    """Per output leaf: True where central differences along `v` are finite at both steps and do not grow as the
    step shrinks (a finite derivative there); None when the primal fails. `smooth`: the one-sided differences must
    also agree (no kink at the point: where the point itself is on the edge, |x| at 0 has finite central
    differences but no derivative)."""
    slopes, sides = [], []
    center, e0 = quiet_call(fn, x)
    if e0 is not None:
        return None
    center_l = [to_f64(c) for c in jax.tree_util.tree_leaves(center)]
    for step in _STEPS:
        h = step * float(np.max(np.abs(to_f64(x)), initial=0.0) + 1.0)
        plus, e1 = quiet_call(fn, host_linear(x.dtype, (1.0, x), (h, v)))
        minus, e2 = quiet_call(fn, host_linear(x.dtype, (1.0, x), (-h, v)))
        if e1 is not None or e2 is not None:
            return None
        plus_l, minus_l = jax.tree_util.tree_leaves(plus), jax.tree_util.tree_leaves(minus)
        with np.errstate(invalid="ignore", over="ignore"):
            slopes.append([(to_f64(p) - to_f64(m)) / (2 * h) for p, m in zip(plus_l, minus_l)])
            sides.append([np.abs((to_f64(p) - c) - (c - to_f64(m))) / h
                          for p, m, c in zip(plus_l, minus_l, center_l)])
    out = []
    for s1, s2, _, d2 in zip(*slopes, *sides):
        with np.errstate(invalid="ignore", over="ignore"):
            ok = np.isfinite(s1) & np.isfinite(s2) & (np.abs(s2) <= _GROWTH * np.abs(s1) + 1e-3)
            if smooth:  # the one-sided quotients differ by O(h) where smooth, by the jump at a kink
                ok &= d2 <= 0.1 * (np.abs(s2) + 1.0)
        out.append(ok)
    return out


def _split(got: Any, finite_ref: np.ndarray) -> NonFinite:
    g = np.isfinite(to_f64(got))
    if g.shape != finite_ref.shape:
        return NonFinite(0, 0, int(finite_ref.size))
    bad = ~g & finite_ref
    first = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad.reshape(-1))), bad.shape)) if bad.any() else None
    return NonFinite(int(bad.sum()), 0, int(bad.size), first, None)


# After the transpose check too: its probes run reverse mode, which a defective transpose rule only breaks again.
@check("derivative-boundary", family="grad", kinds={"custom_jvp", "custom_vjp", "primitive"},
       reads=(*VJP_BLOCKERS, *JVP_BLOCKERS, "grad.blocked.primitive-transpose", "grad.reverse_nonfinite"))
def derivative_boundary(ctx: Context) -> Iterator[Finding]:
    """One argument differentiated at a time (the others' tangents symbolic zeros), unused outputs' cotangents
    symbolic zeros, every argument on the edge of its domain: NaN/inf where the derivative is finite (JXG027)."""
    st = state(ctx)
    require(st)
    if not st.diff:
        raise SkipCheck("no floating-point argument to differentiate")
    if not may_be_singular(_rule_functions(st)):
        raise SkipCheck("no rule divides or calls an operation singular at a finite point")
    edged = {a.pos: e for a in st.diff if (e := _edge_values(st, a)) is not None}
    if edged and st.kind != "custom_vjp" and not st.memo.reverse_nonfinite:
        finding = _transposed_on_edge(st, edged)
        if finding is not None:
            yield finding
            return
    if not edged or (len(st.diff) == 1 and len(jax.tree_util.tree_leaves(st.out)) == 1):
        raise SkipCheck("a single argument and output: no symbolic zero reaches the rule")
    forward_hit = False
    for a in st.diff:
        # Only the arguments NOT differentiated sit on the edge: the one differentiated stays at its interior draw,
        # where its derivative exists (at a kink such as hypot's (0, 0) central differences are finite but no
        # derivative is).
        others = {pos: e for pos, e in edged.items() if pos != a.pos}
        values = _on_edge(st, others)
        out, exc = quiet_call(st.call_target, values)
        if exc is not None:
            continue  # the primal fails on the edge
        out_leaves = jax.tree_util.tree_leaves(out)
        inexact = [k for k, leaf in enumerate(out_leaves) if is_inexact(np.asarray(leaf).dtype)]
        edge_text = _edge_text(st, others) or "every argument at its draw"
        x = values[a.pos]
        v = st.direction(a, 0).astype(a.dtype)
        if st.kind != "custom_vjp" and others:
            finding = _forward(st, values, a, x, v, out_leaves, inexact, edge_text)
            if finding is not None and primal_saturates(st, values):
                continue  # singular there, finite only as `clip(x / 0, ...)` is: no derivative to hold a rule to
            if finding is not None:
                forward_hit = True
                yield finding
                return
        for k in inexact if len(out_leaves) > 1 or others else []:
            if not all_finite([out_leaves[k]]):
                continue  # the output itself is NaN/inf there: its derivative says nothing
            finding = _reverse(st, values, a, x, v, k, out_leaves, edge_text, forward_hit)
            if finding is not None and primal_saturates(st, values):
                break
            if finding is not None:
                yield finding
                return
    yield from _own_edge(st, edged, forward_hit)


def _on_edge(st: GradState, edged: dict[int, np.ndarray]) -> list[Any]:
    """Full positional values with the arguments of `edged` on the edge of their domain, the others at their draw."""
    return [_compat.device_array(edged[b.pos]) if b.pos in edged else b.value for b in st.args]


def _transposed_on_edge(st: GradState, edged: dict[int, np.ndarray]) -> Finding | None:
    """Every argument on the edge, all differentiated: reverse mode (JAX transposing the JVP rule's tangent
    computation) NaN/inf where forward mode is finite. Finite `J v` for a dense random `v` means every entry of J is
    finite, so a NaN in `J^T w` is the transposition's own: `jnp.where(x > 0, t / (2 * y), 0.0)` at x = 0."""
    values = _on_edge(st, edged)
    out, exc = quiet_call(st.call_target, values)
    if exc is not None or not all_finite(jax.tree_util.tree_leaves(out)):
        return None  # the primal fails or is NaN on the edge: no derivative to compare
    fn = st.target_at(values)
    x = [values[a.pos] for a in st.diff]
    res, exc = quiet_call(jax.jvp, fn, tuple(x), tuple(st.tangent(a, 0) for a in st.diff))
    if exc is not None or not all_finite(jax.tree_util.tree_leaves(res[1])):
        return None
    pulled, exc = quiet_call(jax.vjp, fn, *x)
    ws = st.cotangents(0)
    if exc is not None or any(not is_inexact(np.asarray(w).dtype) for w in ws):
        return None
    cts, exc = quiet_call(pulled[1], jax.tree_util.tree_unflatten(st.out_treedef, list(ws)))
    if exc is not None:
        return None
    finding = reverse_nonfinite(st, list(cts), f"with {_edge_text(st, edged)}", values)
    # singular on the edge (finite only by saturation): no derivative to compare. Asked last: it runs the primal
    # op by op, a compile per operation, which a rule without a candidate finding never needs
    return None if finding is None or primal_saturates(st, values) else finding


def reverse_nonfinite(st: GradState, cts: list[Any], where: str, values: list[Any] | None = None
                      ) -> Finding | None:
    """JXG027 when a cotangent of reverse mode is NaN/inf while forward mode of the same rule was finite at
    `values` (the caller checked that), naming the select that hides the NaN from forward mode when there is one."""
    for a, ct in zip(st.diff, cts):
        nf = nonfinite_split(ct, np.zeros(np.shape(ct)))
        if not nf.rule_only:
            continue
        _, rule = names(st)
        trap = where_trap(st, values)
        details = (f"{where}, jax.grad's cotangent for {a.name} is {value_at(ct, nf.rule_index)} at index "
                   f"{nf.rule_index} ({nf.rule_only} of {nf.size} entries NaN/inf) while jax.jvp's tangents are "
                   "finite" + (f"; {trap_text(trap)}" if trap is not None else ""))
        fix = WHERE_TRAP_FIX if trap is not None else (
            f"Reverse mode transposes {rule}'s tangent computation: a factor that is NaN/inf where the tangent is "
            "zeroed out still multiplies the cotangent. Compute the factor from inputs made safe where it is not "
            "used.")
        return rules.DERIVATIVE_NONFINITE.finding(
            owner=rule, derivative="cotangent (reverse mode: JAX transposes its tangent computation)",
            reference="its own forward mode (jax.jvp)", details=details,
            consequence="jax.grad returns NaN there, without any error", fix=fix,
            location=trap_location(trap) or rule_location(st))
    return None


def _own_edge(st: GradState, edged: dict[int, np.ndarray], forward_hit: bool) -> Iterator[Finding]:
    """Several outputs: every argument on the edge, the differentiated one too, and one output's cotangent at a
    time (the others' symbolic zeros): `ct_1 * 0.5 / sqrt(x) + ct_2` at x = 0 is NaN when only the second output
    is used, where its derivative (1) is finite. Only outputs smooth at the point count."""
    values = _on_edge(st, edged)
    out, exc = quiet_call(st.call_target, values)
    if exc is not None:
        return
    out_leaves = jax.tree_util.tree_leaves(out)
    if len(out_leaves) < 2:
        return
    edge_text = _edge_text(st, edged)
    for a in st.diff:
        v = st.direction(a, 0).astype(a.dtype)
        for k, leaf in enumerate(out_leaves):
            if not is_inexact(np.asarray(leaf).dtype) or not all_finite([leaf]):
                continue
            finding = _reverse(st, values, a, values[a.pos], v, k, out_leaves, edge_text, forward_hit, smooth=True)
            if finding is not None:
                if not primal_saturates(st, values):
                    yield finding
                return


def _forward(st: GradState, values: list[Any], a: Arg, x: Any, v: np.ndarray, out_leaves: list[Any],
             inexact: list[int], edge_text: str) -> Finding | None:
    fn = _of_one(st, values, a, None)
    res, exc = quiet_call(jax.jvp, fn, (x,), (_compat.device_array(v),))
    if exc is not None:
        return None  # a rule that raises on a symbolic zero is JXG006 (jvp-symbolic-zeros)
    tangents = res[1]
    if all_finite([tangents[k] for k in inexact]):
        return None  # nothing NaN/inf: no difference of the primal to take
    finite = _fd_finite(fn, x, v)
    if finite is None:
        return None
    for k in inexact:
        ok_primal = np.isfinite(to_f64(out_leaves[k]))
        nf = _split(tangents[k], finite[k] & ok_primal)
        if nf.rule_only:
            fun, rule = names(st)
            others = [b.name for b in st.diff if b is not a] + [b.name for b in st.args if not b.diff]
            zero = "symbolic zeros" if others else "none"
            details = (f"with {edge_text} and only {a.name} differentiated (the tangents of "
                       f"{', '.join(others) or 'no other argument'}: {zero}), the tangent of {st.out_names[k]} is "
                       f"{value_at(tangents[k], nf.rule_index)} at index {nf.rule_index} ({nf.rule_only} of "
                       f"{nf.size} entries NaN/inf)")
            loc = rule_location(st, a) if st.kind == "primitive" else rule_location(st)
            return _finding(st, rule, "tangent", f"the central-difference derivative of {fun} in {a.name}", details,
                            "forward mode (jax.jvp, jax.jacfwd, jax.hessian) returns NaN there without any error", loc)
    return None


def _reverse(st: GradState, values: list[Any], a: Arg, x: Any, v: np.ndarray, k: int, out_leaves: list[Any],
             edge_text: str, forward_hit: bool, smooth: bool = False) -> Finding | None:
    fn = _of_one(st, values, a, k)
    res, exc = quiet_call(jax.vjp, fn, x)
    if exc is not None:
        return None
    w = _compat.device_array(st.cotangents(0)[k]) if np.shape(st.cotangents(0)[k]) == np.shape(out_leaves[k]) \
        else None
    if w is None:
        return None
    cts, exc = quiet_call(res[1], w)
    if exc is not None or all_finite([cts[0]]):
        return None
    finite = _fd_finite(fn, x, v, smooth)
    if finite is None or not finite[0].all():
        return None  # a projection <w, J v> needs every entry of output k finite along v
    ct = cts[0]
    nf = _split(ct, np.ones(np.shape(ct), bool))
    if not nf.rule_only:
        return None
    fun, rule = names(st)
    others = [st.out_names[j] for j in range(len(out_leaves)) if j != k]
    details = (f"with {edge_text}, jax.grad of {st.out_names[k]} alone with respect to {a.name} (the cotangents of "
               f"{', '.join(others) or 'no other output'} and the tangents of the other arguments: symbolic zeros) "
               f"is {value_at(ct, nf.rule_index)} at index {nf.rule_index} ({nf.rule_only} of {nf.size} entries "
               "NaN/inf)")
    owner, loc = _reverse_owner(st, rule, forward_hit)
    return _finding(st, owner, "cotangent", f"the central-difference derivative of {fun}", details,
                    "jax.grad returns NaN there, without any error", loc)


def _reverse_owner(st: GradState, jvp_rule: str, forward_hit: bool) -> tuple[str, Location | None]:
    if st.kind == "custom_vjp":
        return rule_name_of(st.bwd, "bwd"), locate(st.bwd)
    if st.kind == "primitive" and not forward_hit:
        rule = _compat.transpose_rule(st.subject.obj)
        fns = [f for f in _compat.rule_user_functions(rule) if f is not None] if rule is not None else []
        if fns:
            user = [f for f in fns if _locate.is_user_code(f)] or fns
            return rule_name_of(user[0], f"{st.subject.obj.name}'s transpose rule"), _locate.locate(user[0])
    return jvp_rule, rule_location(st)


def rule_name_of(fn: Any, default: str) -> str:
    name = getattr(_locate.unwrap(fn), "__name__", "") if fn is not None else ""
    return name if name and name != "<lambda>" else default


def _edge_text(st: GradState, edged: dict[int, np.ndarray]) -> str:
    parts = []
    for a in st.diff:
        if a.pos in edged:
            flat = edged[a.pos].reshape(-1)
            edges = sorted({float(np.real(flat[i])) for i in range(0, flat.size, 2)})
            parts.append(f"{a.name} = {' or '.join(f'{e:g}' for e in edges)} at every other entry")
    return " and ".join(parts)


def _finding(st: GradState, owner: str, derivative: str, reference: str, details: str, consequence: str,
             loc: Location | None) -> Finding:
    zero = "jax.custom_derivatives.SymbolicZero" if st.kind != "primitive" else "ad.Zero"
    return rules.DERIVATIVE_NONFINITE.finding(
        owner=owner, derivative=derivative, reference=reference, details=details, consequence=consequence,
        fix=f"In {owner}, do not multiply a zero {derivative} by a partial derivative that is infinite on the edge "
            f"of the domain (`0 * inf = NaN`): keep symbolic zeros symbolic (`symbolic_zeros=True` and skip a "
            f"`{zero}`), or mask the factor (`jnp.where(t == 0, 0, t * d)`).",
        location=loc)
