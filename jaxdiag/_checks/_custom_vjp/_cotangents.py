"""Check vjp-cotangents: per-output cotangent probing of bwd (JXG011 ignored cotangent, JXG013 swapped, JXG018
dropped argument, JXG014 numerical mismatch against finite differences).
"""

from __future__ import annotations

import ast
from collections.abc import Generator, Iterator, Sequence
from typing import Any

import jax
import numpy as np

from ... import _compat
from ..._core import _locate
from ... import _rules as rules
from ..._core._report import Finding
from .._base import Context, SkipCheck, check
from .._gradref import (
    NOT_COMPUTED, N_DIRECTIONS, Arg, NonFinite, GradState, aval_text, compare_grad, conjugated, constant_factor,
    deliberate_disagreement, device_zeros, error_text, fd_reference_nonzero, fmt_values, function_ast, grad_tol,
    is_zero, kink_at_point, locate, material_dependence, may_be_singular, moved_values, nonfinite_split,
    passed_through, right_beside_kink, value_at, require, cotangent_in_expectation, sampled_estimate, short_dtype,
    all_unbiased, first_biased, source_of, state, to_f64, vjp_against_fd,
)
from ._fwd_bwd import _as_entries, _names, _zero_ct, call_bwd

# ---------------------------------------------------------------------------------------------------------------
# Per-output cotangent probing
# ---------------------------------------------------------------------------------------------------------------


def _probe(st: GradState, k: int, w: Any) -> list[Any]:
    return [w if j == k else _zero_ct(st, j) for j in range(len(st.out_leaves))]


def _dense(st: GradState, leaves: Sequence[Any]) -> list[Any]:
    """Probe cotangents with symbolic zeros replaced by arrays (for the references and FD)."""
    out = []
    for j, leaf in enumerate(leaves):
        if _compat.is_symbolic_zero(leaf):
            src = st.out_leaves[j]
            leaf = device_zeros(np.shape(src), src.dtype) if st.out_diff(j) else _compat.float0_zeros(np.shape(src))
        out.append(leaf)
    return out


# Needs what vjp-fwd and vjp-bwd-structure provide: the engine runs them first, also when a fresh-draw retry re-runs
# this check alone (without them every retry skipped, and a finding seen on every draw read "seen on 1 of 2 draws").
@check("vjp-cotangents", family="grad", kinds={"custom_vjp"}, needs=("grad.fwd", "grad.bwd_full"),
       reads=("grad.blocked.vjp-fwd", "grad.blocked.vjp-bwd-structure", "grad.blocked.vjp-linearity"),
       provides=("grad.blocked.vjp-cotangents", "grad.second_order_moot"))
def vjp_cotangents(ctx: Context) -> Iterator[Finding]:
    """Feed a cotangent on one output at a time; compare bwd with autodiff of f and finite differences."""
    st = state(ctx)
    require(st, (rules.DERIVATIVE_RULE_RAISED, rules.VJP_FWD_MISMATCH, rules.VJP_BWD_STRUCTURE))
    if st.memo.bwd_full is NOT_COMPUTED:
        raise SkipCheck("bwd was not checked")
    if st.memo.bwd_not_linear:
        raise SkipCheck(f"bwd is not linear in the cotangent ({rules.BWD_NOT_LINEAR.code}): every gradient compared "
                        "here has the part that ignores it")
    if not st.diff:
        raise SkipCheck("no floating-point argument to differentiate")
    outputs = [k for k in range(len(st.out_leaves)) if st.out_diff(k)]
    if not outputs:
        raise SkipCheck("no floating-point output")
    verdicts: list[Any] = []
    for k in outputs:
        result = yield from _probe_output(st, k)
        if result is not None:
            verdicts.append(result)
    yield from report_nonfinite(st, verdicts)
    yield from _report_mismatches(st, verdicts)


def _call_probe(st: GradState, leaves: list[Any]) -> Generator[Finding, None, Any]:
    """bwd on a probe cotangent; a raise is a finding (JXG006 for a symbolic zero it cannot handle)."""
    result, exc = call_bwd(st, leaves)
    if exc is None:
        if isinstance(result, (tuple, list)) and len(result) == len(st.dyn):
            return _as_entries(st, result)
        return None
    _, _, bwd = _names(st)
    if st.symbolic_zeros and any(_compat.is_symbolic_zero(x) for x in leaves):
        st.blocked[rules.SYMBOLIC_ZERO_UNHANDLED] = "bwd fails on symbolic zeros"
        yield rules.SYMBOLIC_ZERO_UNHANDLED.finding(
            evidence=f"{bwd} raised {error_text(exc, st.bwd)} when only one output has a cotangent: with "
            "symbolic_zeros=True the others arrive as jax.custom_derivatives.SymbolicZero, which happens whenever "
            "a caller uses only some outputs.",
            fix=f"In {bwd}, test `type(ct) is jax.custom_derivatives.SymbolicZero` and treat it as zero (or "
                "drop symbolic_zeros=True).",
            location=locate(st.bwd))
    else:
        st.blocked[rules.DERIVATIVE_RULE_RAISED] = "bwd raised on a probe"
        yield rules.DERIVATIVE_RULE_RAISED.finding(
            evidence=f"{bwd} raised {error_text(exc, st.bwd)} for a cotangent on one output only (the others zero).",
            fix=f"Make {bwd} work for any cotangent, including zeros.",
            location=locate(st.bwd))
    return None


def _probe_output(st: GradState, k: int) -> Generator[Finding, None, Any]:
    """Probe output k with two random cotangents; returns a verdict dict, or yields JXG011 and returns None."""
    w1, w2 = st.cotangents(0)[k], st.cotangents(1)[k]
    got1 = yield from _call_probe(st, _probe(st, k, w1))
    if got1 is None:
        return None
    got2 = yield from _call_probe(st, _probe(st, k, w2))
    if got2 is None:
        return None
    ws1 = _dense(st, _probe(st, k, w1))
    # Finite differences first; autodiff of the primal is consulted only where they cannot decide (cheaper).
    has_fd = any(st.fd.joint(d) is not None for d in range(N_DIRECTIONS))
    ref1 = None if has_fd else st.reference_cotangent(ws1)
    depends = fd_reference_nonzero(st, ws1) if has_fd else ref1 is not None and any(
        np.max(np.abs(to_f64(r)), initial=0) > grad_tol(a.dtype) for r, a in zip(ref1, st.diff))
    same = all(_entries_close(got1.get(a.pos), got2.get(a.pos), a) for a in st.diff)
    if depends and same and has_fd:  # ignoring it drops a gradient only above the gradient's own tolerance
        depends = material_dependence(st, ws1)
    if depends and same and has_fd and ref1 is None:
        # confirm "the output depends on the inputs": autodiff of the primal agrees, or the difference is stable
        ref1 = st.reference_cotangent(ws1)
        depends = (ref1 is not None and any(np.max(np.abs(to_f64(r)), initial=0) > grad_tol(a.dtype)
                                            for r, a in zip(ref1, st.diff))) \
            or all(st.fd.stable(None, d) for d in range(N_DIRECTIONS) if st.fd.joint(d) is not None)
    if depends and same:
        yield _ignored_finding(st, k, got1, ref1)
        return None
    verdict = _verdict(st, k, ws1, got1, ref1)
    verdict["got2"], verdict["ws2"] = got2, _dense(st, _probe(st, k, w2))
    return verdict


def _entries_close(a: Any, b: Any, arg: Arg) -> bool:
    if is_zero(a) and is_zero(b):
        return True
    if is_zero(a) or is_zero(b):
        return False
    a64, b64 = to_f64(a), to_f64(b)
    if a64.shape != b64.shape:
        return False
    scale = 1.0 + float(np.max(np.abs(b64), initial=0.0))
    return float(np.max(np.abs(a64 - b64), initial=0.0)) <= grad_tol(arg.dtype) * 1e-2 * scale


def _ignored_finding(st: GradState, k: int, got: dict[int, Any], ref: list[Any] | None) -> Finding:
    fun, _, bwd = _names(st)
    name = st.out_names[k]
    leaf = st.out_leaves[k]
    ones = [_compat.device_array(np.ones(np.shape(leaf), leaf.dtype)) if j == k else _zero_ct(st, j)
            for j in range(len(st.out_leaves))]
    got_ones, _ = call_bwd(st, ones)
    ref_ones = st.reference_cotangent(_dense(st, ones))
    parts = []
    for i, a in enumerate(st.diff):
        g = None
        if isinstance(got_ones, (tuple, list)) and len(got_ones) == len(st.dyn):
            g = _as_entries(st, got_ones).get(a.pos)
        g_text = "None" if g is None else fmt_values(g)
        r_text = f" instead of {fmt_values(ref_ones[i])}" if ref_ones is not None else ""
        parts.append(f"{a.name}: {g_text}{r_text}")
    where = "autodiff of the undecorated function and finite differences" if ref_ones is not None \
        else "finite differences"
    discarded = _discarding_line(st, k)
    if discarded:
        old_line, new_line = discarded
        fix = (f"In {bwd}, `{old_line}` throws away the cotangent of {name}: bind it (`{new_line}`) and add its "
               f"contribution, the VJP of {name}, to each argument's cotangent.")
    else:
        fix = (f"In {bwd}, unpack every output's cotangent (e.g. `ct_1, ct_2 = g`) and add the contribution of "
               f"{name} to each argument's cotangent (the VJP of {name} with respect to that argument).")
    return rules.VJP_IGNORED_COTANGENT.finding(
        bwd=bwd,
        name=name,
        leaf_aval=aval_text(leaf),
        where=where,
        parts='; '.join(parts),
        fix=fix,
        location=locate(st.bwd))


def _discarding_line(st: GradState, k: int) -> tuple[str, str] | None:
    """(`_, ct_2 = g`, `ct_out_1, ct_2 = g`) when bwd unpacks its cotangent argument with `_` in the slot of
    top-level output k."""
    node = function_ast(st.bwd)
    if node is None or not isinstance(st.out, (tuple, list)) or len(st.out_leaves) != len(st.out):
        return None
    params = [a.arg for a in node.args.posonlyargs + node.args.args]
    if not params:
        return None
    for stmt in ast.walk(node):
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.Name)
                and stmt.value.id == params[-1] and isinstance(stmt.targets[0], (ast.Tuple, ast.List))):
            elts = stmt.targets[0].elts
            kth = elts[k] if len(elts) == len(st.out) else None
            if isinstance(kth, ast.Name) and kth.id == "_":
                name = st.out_names[k]
                fixed = [f"ct_{name}" if i == k else source_of(e) for i, e in enumerate(elts)]
                return source_of(stmt), f"{', '.join(fixed)} = {params[-1]}"
    return None


def _verdict(st: GradState, k: int, ws: list[Any], got: dict[int, Any], ref: list[Any] | None) -> dict:
    """Per argument: ok, dropped (zero/None where the reference is not), swapped with another, or mismatched."""
    fd_checks = vjp_against_fd(st, ws, got)
    fd_ok = {a.pos: all(c.ok for c in fd_checks if c.covers(a)) and any(c.covers(a) for c in fd_checks)
             for a in st.diff}
    if ref is None and not all(fd_ok.values()):
        ref = st.reference_cotangent(ws)
    ad_cmp = {a.pos: compare_grad(got.get(a.pos), ref[i], a.dtype) for i, a in enumerate(st.diff)} \
        if ref is not None else {}
    # NaN/inf on one side only, entry by entry: against autodiff of the primal with its own NaNs kept (a NaN entry
    # of the rule where the primal's derivative is finite is a defect, never excused as a numerical corner)
    # (only where autodiff of the primal was consulted anyway, or bwd has a NaN/inf entry: building it otherwise
    # costs compilations on every custom_vjp)
    # (a reference VJP some earlier probe built and that runs: callable, neither None nor NOT_COMPUTED)
    consulted = not fd_checks or not all(fd_ok.values()) or callable(st.memo.reference_vjp) \
        or may_be_singular([st.fun])  # only a singular operation (sqrt, log, a division) makes autodiff NaN
    raw = ref if ref is not None else st.reference_cotangent_raw(ws) if consulted or _has_nonfinite(got) else None
    nonfinite = {a.pos: nonfinite_split(got.get(a.pos), raw[i]) if raw is not None
                 else _nonfinite_against_fd(got.get(a.pos), [c for c in fd_checks if c.covers(a)])
                 for i, a in enumerate(st.diff)}
    status = {}
    for a in st.diff:
        ok = fd_ok[a.pos] or (a.pos in ad_cmp and ad_cmp[a.pos].ok)
        if nonfinite[a.pos].rule_only:
            ok = False
        if not ok and not any(c.covers(a) for c in fd_checks) and a.pos not in ad_cmp:
            status[a.pos] = "unknown"
        else:
            status[a.pos] = "ok" if ok else "bad"
    return {"k": k, "ws": ws, "got": got, "ref": ref, "raw": raw, "fd": fd_checks, "ad": ad_cmp, "status": status,
            "nonfinite": nonfinite}


def _has_nonfinite(got: dict[int, Any]) -> bool:
    return any(v is not None and not is_zero(v) and not np.all(np.isfinite(to_f64(v))) for v in got.values())


def _nonfinite_against_fd(got: Any, checks: Sequence[Any]) -> NonFinite:
    """Without autodiff of the primal: every NaN/inf entry of the rule's value counts where finite differences of
    the primal along every direction are finite (the reference is finite there, entry by entry unknown)."""
    if got is None or is_zero(got) or not checks or not all(np.isfinite(c.expected) for c in checks):
        return NonFinite(0, 0, 0)
    return nonfinite_split(got, np.zeros(np.shape(got)))


def report_nonfinite(st: GradState, verdicts: list[dict]) -> Iterator[Finding]:
    """JXG027 for each argument whose cotangent is NaN/inf where the reference is finite (then left out of the
    mismatch grading), and one JXG028 note where only the reference is."""
    fun, _, bwd = _names(st)
    noted = False
    for a in st.diff:
        hits = [(v, v["nonfinite"][a.pos]) for v in verdicts if v["nonfinite"][a.pos].rule_only]
        if hits:
            v, nf = hits[0]
            reference = f"autodiff of {fun}" if v["raw"] is not None else f"finite differences of {fun}"
            want = value_at(v["raw"][st.diff.index(a)], nf.rule_index) if v["raw"] is not None else "finite"
            details = (f"the cotangent for {a.name} with a cotangent on {st.out_names[v['k']]} has {nf.rule_only} "
                       f"NaN/inf of {nf.size} entries (e.g. index {nf.rule_index}: {bwd} gives "
                       f"{value_at(v['got'].get(a.pos), nf.rule_index)}, {reference} gives {want})")
            for w in verdicts:
                w["status"][a.pos] = "reported"
            yield rules.DERIVATIVE_NONFINITE.finding(
                owner=bwd, derivative="cotangent", reference=reference, details=details,
                consequence="jax.grad returns these NaNs without any error",
                fix=f"Make {bwd} write every entry of its result: a blocked kernel must cover the last, partial "
                    "block; a symbolic or zero cotangent must not be multiplied by an infinite partial derivative "
                    "(`0 * inf = NaN`).",
                location=locate(st.bwd))
            continue
        notes = [(v, v["nonfinite"][a.pos]) for v in verdicts if v["nonfinite"][a.pos].ref_only]
        if notes and not noted:
            noted = True
            v, nf = notes[0]
            yield rules.REFERENCE_NONFINITE.finding(
                function=fun, count=nf.ref_only, size=nf.size, derivative="cotangent", name=a.name, owner=bwd,
                index=nf.ref_index, ref_value=value_at(v["raw"][st.diff.index(a)], nf.ref_index),
                got_value=value_at(v["got"].get(a.pos), nf.ref_index), location=locate(st.bwd))


def _report_mismatches(st: GradState, verdicts: list[dict]) -> Iterator[Finding]:
    bad = [(v, a) for v in verdicts for a in st.diff if v["status"].get(a.pos) == "bad"]
    if not bad:
        return
    bad = [(v, a) for v, a in bad if _confirmed(st, v, a) and not _immaterial_zero(st, v, a)
           and not _chosen_at_kink(st, v, a)]
    if not bad:
        return
    reported: set[int] = set()
    yield from _swapped(st, bad, reported)
    yield from _dropped(st, bad, reported)
    rest = [(v, a) for v, a in bad if a.pos not in reported]
    if rest and (finding := _mismatch_finding(st, rest)) is not None:
        if rules.rule(finding.code).severity == "error":
            st.memo.second_order_moot = f"the first-order derivative is already wrong ({finding.code})"
        yield finding


def _immaterial_zero(st: GradState, v: dict, a: Arg) -> bool:
    """bwd returns zeros (or None) for `a` where the output probed depends on the inputs, or on `a` alone, only far
    below the gradient's own tolerance relative to |w| |v| (a converged residual moving by 1e-10; a solver's
    relaxation weight moving the solution by parts in 10^4): where another argument's cotangent disagrees, each
    argument is compared alone, and a relative comparison of two numbers near zero fails, but no gradient is
    dropped."""
    return is_zero(v["got"].get(a.pos)) and not (material_dependence(st, v["ws"])
                                                 and material_dependence(st, v["ws"], (a,)))


def _chosen_at_kink(st: GradState, v: dict, a: Arg) -> bool:
    """The example sits on a kink of the primal in `a` (`_gradref._kinks`) and, beside it on both sides, bwd's
    cotangent for `a` is autodiff's of the undecorated primal there: bwd only chose its value at the kink."""
    if st.fun is None or not kink_at_point(st, (a,), 0, [v["k"]]):
        return False
    i = st.diff.index(a)
    cotangent = jax.tree_util.tree_unflatten(st.out_treedef, list(v["ws"]))

    def agrees_at(moved: dict[int, np.ndarray]) -> bool:
        values = moved_values(st, moved)
        diffs = [values[b.pos] for b in st.diff]
        got = jax.vjp(st.diff_fn(st.call_target, values), *diffs)[1](cotangent)[i]
        want = jax.vjp(st.diff_fn(st.call_primal, values), *diffs)[1](cotangent)[i]
        return compare_grad(got, want, a.dtype).ok

    return right_beside_kink(st, (a,), 0, agrees_at)


def _confirmed(st: GradState, v: dict, a: Arg) -> bool:
    """A mismatch against finite differences only counts where the difference is stable under a step change
    (no kink or branch next to the example) or autodiff of the primal confirms it."""
    if a.pos in v["ad"] and not v["ad"][a.pos].ok and not v["ad"][a.pos].nonfinite:
        fd_for_a = [c for c in v["fd"] if c.covers(a)]
        return not fd_for_a or not all(c.ok for c in fd_for_a)  # bwd agrees with neither reference
    return all(st.fd.stable(c.arg, c.d) for c in v["fd"] if c.covers(a) and not c.ok)


def _swapped(st: GradState, bad: list[tuple[dict, Arg]], reported: set[int]) -> Iterator[Finding]:
    _, _, bwd = _names(st)
    for v, a in bad:
        for b in st.diff:
            if b is a or b.pos in reported or a.pos in reported or b.shape != a.shape:
                continue
            if _matches_reference_of(st, v, v["got"].get(a.pos), b) and \
                    _matches_reference_of(st, v, v["got"].get(b.pos), a):
                reported.update((a.pos, b.pos))
                yield rules.VJP_SWAPPED_COTANGENTS.finding(
                    bwd=bwd,
                    name=a.name,
                    name_2=b.name,
                    out_names=st.out_names[v['k']],
                    get_values=fmt_values(v['got'].get(a.pos)),
                    dyn_list=', '.join(x.name for x in st.dyn),
                    corrected=_swapped_return(st, a.pos, b.pos),
                    location=locate(st.bwd))


def _swapped_return(st: GradState, i: int, j: int) -> str:
    """` Return: `return (ct_x, ct_w)``: bwd's own single `return (...)` with entries i and j swapped."""
    import inspect
    import textwrap

    try:
        source = textwrap.dedent(inspect.getsource(_locate.unwrap(st.bwd)))
        node = ast.parse(source).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return ""
    returns = [n for n in ast.walk(node) if isinstance(n, ast.Return)]
    if len(returns) != 1 or not isinstance(returns[0].value, ast.Tuple):
        return ""
    items = [ast.get_source_segment(source, e) or ast.unparse(e) for e in returns[0].value.elts]
    offset = len(st.nondiff) if st.nondiff else 0  # bwd's tuple has no entries for nondiff_argnums
    i, j = i - offset, j - offset
    if not (0 <= i < len(items) and 0 <= j < len(items)):
        return ""
    items[i], items[j] = items[j], items[i]
    return f" Return: `return ({', '.join(items)}{',' if len(items) == 1 else ''})`."


def _matches_reference_of(st: GradState, v: dict, got: Any, b: Arg) -> bool:
    """True when `got` equals the reference cotangent of argument `b`."""
    if got is None:
        return False
    if v["ref"] is not None:
        i = st.diff.index(b)
        if compare_grad(got, v["ref"][i], b.dtype).ok:
            return True
    checks = vjp_against_fd(st, v["ws"], {b.pos: got}, [b])
    return bool(checks) and all(c.ok for c in checks)


def _dropped(st: GradState, bad: list[tuple[dict, Arg]], reported: set[int]) -> Iterator[Finding]:
    from ..._core._documented import states_no_gradient

    _, _, bwd = _names(st)
    done: set[int] = set()
    for v, a in bad:
        if a.pos in reported or a.pos in done or not is_zero(v["got"].get(a.pos)):
            continue
        if any(not is_zero(w["got"].get(a.pos)) for w in (x for x, _ in bad)):
            continue
        done.add(a.pos)
        reported.add(a.pos)
        if states_no_gradient([locate(st.bwd), locate(st.fwd), locate(st.fun)], a.name):
            continue  # its documentation says so ("teacher → 0"): the zeros are what it means
        entry = "None" if v["got"].get(a.pos) is None else "zeros"
        ref = v["ref"][st.diff.index(a)] if v["ref"] is not None else None
        ref_text = f" (autodiff of the primal gives {fmt_values(ref)})" if ref is not None else ""
        yield rules.VJP_DROPPED_ARGUMENT_GRADIENT.finding(
            bwd=bwd,
            entry=entry,
            text=a.text,
            name=a.name,
            ref_text=ref_text,
            out_names=st.out_names[v['k']],
            fd_value=_fd_value(v, a),
            location=locate(st.bwd))


def _fd_value(v: dict, a: Arg) -> float:
    values = [c.expected for c in v["fd"] if c.covers(a)]
    return max(values, key=abs) if values else float("nan")


def _mismatch_finding(st: GradState, bad: list[tuple[dict, Arg]]) -> Finding | None:
    """The finding for cotangents that disagree with the reference; None for a sampled function's bwd that is an
    unbiased estimator (`_gradref._expectation`): its disagreement at one key is the estimator's noise."""
    fun, _, bwd = _names(st)
    details = []
    for v, a in bad[:3]:
        name = st.out_names[v["k"]]
        got = v["got"].get(a.pos)
        if a.pos in v["ad"]:
            cmp = v["ad"][a.pos]
            details.append(f"{a.name} with a cotangent on {name}: bwd gives {fmt_values(got)}, autodiff of {fun} "
                           f"gives {fmt_values(v['ref'][st.diff.index(a)])} ({cmp.describe()})")
        worst = max((c for c in v["fd"] if c.covers(a)), key=lambda c: abs(c.got - c.expected), default=None)
        if worst is not None:
            details.append(f"dot-product test for {a.name} on {name}: <bwd(w), v> = {worst.got:.6g} but "
                           f"<w, J v> = {worst.expected:.6g} from {st.fd.describe(worst.arg, worst.d)} "
                           f"(tolerance {worst.tol:.0e} for {short_dtype(a.dtype)})")
    loc = locate(st.bwd)
    where = f" ({loc})" if loc else ""
    conj = [a.name for v, a in bad if v["ref"] is not None
            and conjugated(v["got"].get(a.pos), v["ref"][st.diff.index(a)], a.dtype)]
    correction = f"make {bwd} return the VJP of {fun} (compare with jax.vjp({fun}.fun, ...))"
    if conj:
        details.append(f"{bwd}'s cotangent for {', '.join(dict.fromkeys(conj))} is exactly the complex conjugate of "
                       "autodiff's")
        correction = (f"conjugate {bwd}'s cotangent for {', '.join(dict.fromkeys(conj))}: a `jnp.conj` is missing "
                      "(or one too many). JAX's convention: for a real-valued f, the cotangent of a complex z is "
                      "`g * jnp.conj(df/dz)` (e.g. `2 * g * jnp.conj(z)` for |z|^2), and for `y = c * z` it is "
                      "`c * g`, unconjugated")
    interior = _interior_error(st, bad)
    factor = None
    if interior:
        flat = _flat_primal(st, bad)  # not a surrogate JXG014 explains (straight-through, clip), yet by construction
        if flat is not None:
            v, a = flat
            return rules.FLAT_PRIMAL_SURROGATE.finding(
                owner=bwd, derivative="gradient", name=a.name, got=fmt_values(v["got"].get(a.pos)), function=fun,
                reference=f"autodiff of {fun}", where=where, location=loc)
        factor = next((c for v, a in bad if v["ref"] is not None and (c := _uniform_scale(st, v, a)) is not None),
                      None)
        if factor is not None:
            details.append(f"for both cotangents probed, {bwd}'s result is autodiff's times {factor:.4g}: a uniformly "
                           "scaled gradient, which no clipping produces")
    if factor is None and sampled_estimate(st) and _flat_primal(st, bad) is None:
        # a sampled function's bwd may be an estimator: judged in expectation over keys where that is possible
        judged = [(f"cotangent for {a.name} with a cotangent on {st.out_names[v['k']]}",
                   cotangent_in_expectation(st, v["ws"], a))
                  for v, a in {(a.pos, v["k"]): (v, a) for v, a in bad}.values()]
        biased = first_biased(judged)
        if biased is None and all_unbiased(judged):
            return None
        if biased is not None:
            details.append(biased[1].describe(biased[0], fun))
            interior = True
        elif interior:  # no verdict over keys: the estimator reading is stated, as a warning
            return rules.CUSTOM_DERIVATIVE_MISMATCH.finding(
                owner=bwd, derivative="gradient", function=fun, details="; ".join(details + [sampled_estimate(st)]),
                consequence="jax.grad is silently wrong", where=where, correction=correction, location=loc)
    if interior:
        return rules.CUSTOM_DERIVATIVE_WRONG.finding(
            owner=bwd, derivative="gradient", function=fun, details="; ".join(details),
            consequence="jax.grad is silently wrong", correction=correction, location=loc)
    return rules.CUSTOM_DERIVATIVE_MISMATCH.finding(
        owner=bwd, derivative="gradient", function=fun, details="; ".join(details),
        consequence="jax.grad is silently wrong", where=where, correction=correction, location=loc)


def _flat_primal(st: GradState, bad: list[tuple[dict, Arg]]) -> tuple[dict, Arg] | None:
    """The first mismatch when every one is a finite, nonzero cotangent for an argument in which the primal is flat
    (autodiff of the primal gives exactly zero): a surrogate by construction (JXG033), not a wrong formula."""
    for v, a in bad:
        got = v["got"].get(a.pos)
        if v["ref"] is None or got is None or np.any(to_f64(v["ref"][st.diff.index(a)])):
            return None
        if is_zero(got) or not np.all(np.isfinite(to_f64(got))):
            return None
    return bad[0] if bad else None


def _interior_error(st: GradState, bad: list[tuple[dict, Arg]]) -> bool:
    """True when some argument's cotangent differs from autodiff of the primal in a way no deliberate surrogate
    explains (see `deliberate_disagreement`); without an elementwise reference the evidence stays a warning.

    A bwd that takes an argument the primal does not depend on (zero reference gradient, none returned) is a
    gradient transformation controlled by that argument (optax.scale_gradient, a gradient-reversal layer's
    lambda): deliberate by construction, so a warning whatever the factor."""
    for v, a in bad:
        if v["ref"] is not None and any(_control_argument(st, v, c) for c in st.diff if c is not a):
            return False
    for v, a in bad:
        if v["ref"] is None or a.pos not in v["ad"] or v["ad"][a.pos].nonfinite:
            continue
        passed = v["ws"][v["k"]]
        if not deliberate_disagreement(v["got"].get(a.pos), v["ref"][st.diff.index(a)], passed, a.dtype):
            return True
        if _uniform_scale(st, v, a) is not None and not passed_through(v["got"].get(a.pos), passed, a.dtype):
            return True
    return False


def _uniform_scale(st: GradState, v: dict, a: Arg) -> float | None:
    """The factor `c` when bwd's cotangent for `a` is autodiff's times the same `c` for both seeded cotangents on the
    output (their magnitudes differ, so a norm clip would give two ratios): a scaled gradient, not a clip."""
    if v.get("got2") is None:
        return None
    ref2 = st.reference_cotangent(v["ws2"])
    if ref2 is None:
        return None
    i = st.diff.index(a)
    return constant_factor([(v["got"].get(a.pos), v["ref"][i]), (v["got2"].get(a.pos), ref2[i])], a.dtype)


def _control_argument(st: GradState, v: dict, c: Arg) -> bool:
    """`c` does not influence the primal (autodiff gives it an exactly zero gradient) and bwd returns none for it.
    Not only for the output probed: a recurrence's final state does not depend on its queries, its output does, and
    a bwd wrong for the keys is no gradient transformation controlled by the queries. So the reference is taken
    again with a cotangent on every floating output."""
    if not (is_zero(v["got"].get(c.pos)) and not np.any(to_f64(v["ref"][st.diff.index(c)]))):
        return False
    everywhere = [np.ones(np.shape(w), np.asarray(w).dtype) if np.issubdtype(np.asarray(w).dtype, np.inexact) else w
                  for w in v["ws"]]
    ref = st.reference_cotangent(everywhere)
    return ref is not None and not np.any(to_f64(ref[st.diff.index(c)]))
