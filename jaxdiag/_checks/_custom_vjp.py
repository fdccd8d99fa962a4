"""custom_vjp checks: fwd (JXG012), bwd structure and dtypes (JXG010, JXG004), per-output cotangent probing
(JXG011 ignored cotangent, JXG013 swapped, JXG018 dropped argument, JXG014 numerical mismatch), nondiff_argnums
(JXG015), rules that raise (JXG017) and symbolic zeros (JXG006).

fwd and bwd are called directly, exactly as JAX calls them (`fwd(*args)`, `bwd(*nondiff_args, res, ct)`), so a
defect is found and explained before JAX's own, often confusing, error; composition under jit/vmap is checked in
`_grad.py`.
"""

from __future__ import annotations

import ast
from typing import Any, Iterator, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compat
from .. import _rules as rules
from .._report import Finding
from ._base import Context, SkipCheck, check
from ._gradref import (N_DIRECTIONS, Arg, GradState, aval_text, compare_grad, error_text, fd_reference_nonzero,
                       fmt_values, function_ast, grad_tol, is_inexact, is_zero, leaf_difference, locate, quiet_call,
                       require, return_values, rule_name, short_dtype, short_message, source_of, state, to_f64,
                       vjp_against_fd)

_SCALAR_TYPES = (bool, int, float, complex, np.generic)


# ---------------------------------------------------------------------------------------------------------------
# fwd
# ---------------------------------------------------------------------------------------------------------------


def _fwd_args(st: GradState) -> list[Any]:
    """fwd's arguments: the primal ones, wrapped in CustomVJPPrimal(value, perturbed) with symbolic_zeros."""
    if not st.symbolic_zeros:
        return st.values()
    return [a.value if a.nondiff else _compat.custom_vjp_primal(a.value, a.diff) for a in st.args]


def _names(st: GradState) -> tuple[str, str, str]:
    fun = rule_name(st.fun, "f")
    return fun, rule_name(st.fwd, f"{fun}_fwd"), rule_name(st.bwd, f"{fun}_bwd")


@check("vjp-fwd", family="grad", kinds={"custom_vjp"})
def vjp_fwd(ctx: Context) -> Iterator[Finding]:
    """fwd returns (primal_out, residuals) with primal_out equal to f's output (JXG012); fwd must not raise."""
    st = state(ctx)
    fun, fwd, bwd = _names(st)
    if st.fwd is None or st.bwd is None:
        st.blocked["JXG017"] = "no fwd/bwd"
        yield rules.DERIVATIVE_RULE_RAISED.finding(
            f"{fun} is a custom_vjp without rules: defvjp(fwd, bwd) was never called, so every jax.grad fails with "
            f"`AttributeError: No VJP defined for custom_vjp function {fun} using defvjp`.",
            fix=f"Call `{fun}.defvjp({fun}_fwd, {fun}_bwd)` after defining both rules.", location=locate(st.fun))
        return
    expected = st.out
    result, exc = quiet_call(st.fwd, *_fwd_args(st))
    if exc is not None:
        st.blocked["JXG017"] = f"{fwd} raised"
        yield _fwd_raised(st, exc)
        return
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        st.blocked["JXG012"] = f"{fwd} does not return a pair"
        yield rules.VJP_FWD_MISMATCH.finding(
            f"{fwd} must return a pair (primal_out, residuals) but returned {aval_text(result)}; JAX fails with "
            "`Custom VJP fwd rule ... must produce a pair (list or tuple of length two)`.",
            fix=f"Return the primal output and the residuals bwd needs, e.g. `return out, (x,)`, in {fwd}.",
            location=locate(st.fwd))
        return
    primal, residuals = result
    st.memo["fwd"] = (primal, residuals)
    yield from _fwd_primal_findings(st, primal, expected)
    yield from _residual_findings(st, residuals)


def _fwd_raised(st: GradState, exc: BaseException) -> Finding:
    fun, fwd, _ = _names(st)
    text = error_text(exc, st.fwd)
    if st.symbolic_zeros and "CustomVJPPrimal" in str(exc):
        return rules.SYMBOLIC_ZERO_UNHANDLED.finding(
            f"{fwd} raised {text}: with defvjp(..., symbolic_zeros=True) fwd receives each argument as "
            "CustomVJPPrimal(value, perturbed), not as an array.",
            fix=f"In {fwd}, unwrap the arguments first: `x = x.value` (and use `x.perturbed` to skip work for "
                "arguments that are not differentiated).", location=locate(st.fwd))
    return rules.DERIVATIVE_RULE_RAISED.finding(
        f"{fwd} raised {text} when called as JAX calls it, {fwd}({', '.join(a.text for a in st.args)}).",
        fix=f"Make {fwd} accept the same positional arguments as {fun} and return (primal_out, residuals).",
        location=locate(st.fwd))


def _fwd_primal_findings(st: GradState, primal: Any, expected: Any) -> Iterator[Finding]:
    fun, fwd, _ = _names(st)
    got_tree, want_tree = jax.tree_util.tree_structure(primal), jax.tree_util.tree_structure(expected)
    if got_tree != want_tree:
        st.blocked["JXG012"] = f"{fwd}'s primal output has another structure than {fun}'s"
        yield rules.VJP_FWD_MISMATCH.finding(
            f"{fwd}'s primal output is {aval_text(primal)} but {fun} returns {aval_text(expected)}: under jax.vjp and "
            f"value_and_grad the caller gets {fwd}'s structure, and bwd receives cotangents shaped like it, so code "
            "that works with the plain function breaks (often as an unrelated IndexError or a shape error blamed "
            "on bwd).",
            fix=f"Return exactly what {fun} returns as the first element of {fwd}'s pair "
                f"(`return {fun}_out, residuals`; tuple vs list matters).", location=locate(st.fwd))
        return
    for name, got, want in zip(st.out_names, jax.tree_util.tree_leaves(primal), jax.tree_util.tree_leaves(expected)):
        problem = leaf_difference(got, want)
        if problem is None:
            continue
        if "shape" in problem:
            st.blocked["JXG012"] = f"{fwd}'s primal {name} has another shape than {fun}'s"
        yield rules.VJP_FWD_MISMATCH.finding(
            f"{fwd}'s primal {name} differs from {fun}'s: {problem}. JAX does not check this: under jax.vjp, "
            f"value_and_grad and grad the function silently returns {fwd}'s value.",
            fix=f"Compute the primal {name} in {fwd} exactly as {fun} does (or call {fun} inside {fwd}).",
            location=locate(st.fwd))


def _residual_findings(st: GradState, residuals: Any) -> Iterator[Finding]:
    _, fwd, _ = _names(st)
    bad = [leaf for leaf in jax.tree_util.tree_leaves(residuals)
           if not (isinstance(leaf, (jax.Array, np.ndarray, *_SCALAR_TYPES)) or _compat.is_tracer(leaf))]
    if bad:
        st.blocked["JXG012-residuals"] = "residuals are not arrays"
        yield rules.VJP_FWD_MISMATCH.finding(
            f"{fwd}'s residuals contain {type(bad[0]).__name__} {bad[0]!r:.40}: residuals must be arrays (or "
            f"pytrees of arrays); jax.grad fails with `TypeError: Argument {bad[0]!r:.30} of type "
            f"{type(bad[0])} is not a valid JAX type`.",
            fix="Keep only arrays in the residuals; pass static values through nondiff_argnums or a closure.",
            location=locate(st.fwd))


# ---------------------------------------------------------------------------------------------------------------
# bwd: calling it, its structure and dtypes
# ---------------------------------------------------------------------------------------------------------------


def _zero_ct(st: GradState, k: int) -> Any:
    key = ("zero_ct", k)
    if key not in st.memo:
        st.memo[key] = _make_zero_ct(st, k)
    return st.memo[key]


def _make_zero_ct(st: GradState, k: int) -> Any:
    leaf = st.out_leaves[k]
    if st.symbolic_zeros:
        return _compat.symbolic_zero(np.shape(leaf), leaf.dtype)
    if not st.out_diff(k):
        return _compat.float0_zeros(np.shape(leaf))
    return jnp.zeros(np.shape(leaf), leaf.dtype)


def _cotangent(st: GradState, leaves: Sequence[Any]) -> Any:
    return jax.tree_util.tree_unflatten(st.out_treedef, list(leaves))


def call_bwd(st: GradState, leaves: Sequence[Any]) -> tuple[Any, BaseException | None]:
    """bwd(*nondiff_args, residuals, ct) exactly as JAX calls it (nondiff args in nondiff_argnums order)."""
    _, residuals = st.memo["fwd"]
    nondiff = [st.args[i].value for i in st.nondiff]
    return quiet_call(st.bwd, *nondiff, residuals, _cotangent(st, leaves))


def _as_entries(st: GradState, result: Any) -> dict[int, Any]:
    """bwd's entries by argument position (validated structure)."""
    return {a.pos: e for a, e in zip(st.dyn, result)}


@check("vjp-bwd-structure", family="grad", kinds={"custom_vjp"})
def vjp_bwd_structure(ctx: Context) -> Iterator[Finding]:
    """bwd returns one cotangent per differentiable positional argument, shaped (JXG010) and typed (JXG004) like
    it; a bwd that raises is JXG017 (JXG015 when it is written for another argument order)."""
    st = state(ctx)
    require(st, ("JXG017", "JXG012"))
    ws = st.cotangents(0)
    result, exc = call_bwd(st, ws)
    if exc is not None:
        st.blocked["JXG017"] = "bwd raised"
        yield _bwd_raised(st, exc, ws)
        return
    findings = list(validate_bwd(st, result))
    yield from findings
    if any(f.code == "JXG010" for f in findings):
        st.blocked["JXG010"] = "bwd returns the wrong structure"
        return
    st.memo["bwd_full"] = _as_entries(st, result)
    # bwd called directly with the full cotangent is the eager gradient; the composition check reuses it
    st.memo["eager_grad"] = [jnp.zeros(a.shape, a.dtype) if is_zero(st.memo["bwd_full"].get(a.pos))
                             else st.memo["bwd_full"][a.pos] for a in st.diff]


def _bwd_raised(st: GradState, exc: BaseException, ws: Sequence[Any]) -> Finding:
    fun, _, bwd = _names(st)
    text = error_text(exc, st.bwd)
    if st.nondiff:
        order = _working_order(st, ws)
        if order:
            nondiff_names = ", ".join(st.args[i].name for i in st.nondiff)
            return rules.NONDIFF_ARGNUMS_MISUSE.finding(
                f"{bwd} raised {text}: JAX calls it as {bwd}({nondiff_names}, res, g) (nondiff_argnums "
                f"{st.nondiff} come first), but it is written as {bwd}({order}).",
                fix=f"Put the non-differentiable arguments first: `def {bwd}({nondiff_names}, res, g):`.",
                location=locate(st.bwd))
    return rules.DERIVATIVE_RULE_RAISED.finding(
        f"{bwd} raised {text} when called as JAX calls it, with the residuals from fwd and a cotangent "
        f"{aval_text(_cotangent(st, ws))} shaped like {fun}'s output.",
        fix=f"Make {bwd}(res, g) accept a cotangent for every output of {fun} and return one cotangent per "
            "argument.", location=locate(st.bwd))


def _working_order(st: GradState, ws: Sequence[Any]) -> str | None:
    """The argument order bwd seems written for, when the order JAX uses fails and (res, g, *nondiff) works."""
    _, residuals = st.memo["fwd"]
    nondiff = [st.args[i].value for i in st.nondiff]
    _, exc = quiet_call(st.bwd, residuals, _cotangent(st, ws), *nondiff)
    if exc is None:
        return "res, g, " + ", ".join(st.args[i].name for i in st.nondiff)
    return None


def validate_bwd(st: GradState, result: Any) -> Iterator[Finding]:
    fun, _, bwd = _names(st)
    n = len(st.dyn)
    expected = ", ".join(a.text for a in st.dyn)
    head = (f"{bwd} returned {aval_text(result)}, but {fun} has {n} differentiable positional argument"
            f"{'s' if n != 1 else ''} ({expected}), so bwd must return a tuple with one cotangent per argument")
    if not isinstance(result, (tuple, list)):
        yield _structure_finding(st, f"{head}, not a bare {aval_text(result)}", result)
        return
    if len(result) != n:
        yield _structure_finding(st, f"{head}: {len(result)} entries for {n} arguments{_count_hint(st, result)}",
                                 result)
        return
    # a non-array argument (a dict, a Python scalar) of a nested call gets whatever cotangent fits it
    misplaced = [(arg, entry) for arg, entry in zip(st.dyn, result)
                 if not arg.static and _container_where_array(entry)]
    if misplaced:
        parts = [f"entry {i} is {aval_text(e)} where {a.name} is {aval_text(a.value)}"
                 for i, (a, e) in enumerate(zip(st.dyn, result)) if (a, e) in misplaced]
        parts += [f"entry {i} is None, so {a.name} would get no gradient"
                  for i, (a, e) in enumerate(zip(st.dyn, result)) if e is None]
        yield _structure_finding(st, f"{head}; " + ", and ".join(parts), result)
        return
    for arg, entry in zip(st.dyn, result):
        if not arg.static:
            yield from _entry_findings(st, arg, entry)


def _container_where_array(entry: Any) -> bool:
    if entry is None:
        return False
    return isinstance(entry, (tuple, list)) or not hasattr(entry, "shape") and not isinstance(entry, _SCALAR_TYPES)


def _count_hint(st: GradState, result: Sequence[Any]) -> str:
    hints = []
    if st.nondiff and len(result) == len(st.dyn) + len(st.nondiff):
        names = ", ".join(st.args[i].name for i in st.nondiff)
        hints.append(f"; it seems to include an entry for the nondiff_argnums argument(s) {names}, which get none")
    if len(result) > len(st.dyn) and all(e is None for e in result[len(st.dyn):]):
        hints.append("; the trailing None looks like an entry for keyword arguments, but keyword arguments are "
                     "bound positionally and get no separate entry")
    if len(result) < len(st.dyn):
        missing = ", ".join(a.name for a in st.dyn[len(result):])
        hints.append(f"; no entry for {missing} (return None or zeros for an argument without gradient)")
    return "".join(hints)


def _entry_findings(st: GradState, arg: Arg, entry: Any) -> Iterator[Finding]:
    _, _, bwd = _names(st)
    if entry is None:
        return
    shape = tuple(np.shape(entry))
    if shape != arg.shape:
        yield rules.VJP_BWD_STRUCTURE.finding(
            f"{bwd}'s cotangent for {arg.name} has shape {aval_text(entry)} but {arg.name} is "
            f"{aval_text(arg.value)}; JAX rejects it (`Custom VJP bwd rule must produce an output with the same "
            "type as the args tuple`), broadcastable shapes included.",
            fix=f"Return a cotangent of shape {arg.shape} for {arg.name}: sum over the axes broadcasting added "
                "(`jnp.sum(ct, axis=...)`) or reshape.", location=locate(st.bwd))
        return
    dtype = np.asarray(entry).dtype if not hasattr(entry, "dtype") else np.dtype(entry.dtype)
    if arg.diff and dtype != arg.dtype:
        yield rules.COTANGENT_DTYPE.finding(
            f"{bwd}'s cotangent for {arg.name} is {short_dtype(dtype)} but {arg.name} is {short_dtype(arg.dtype)}: "
            f"JAX does not check this, so jax.grad with respect to {arg.name} silently returns "
            f"{short_dtype(dtype)}" + (" (fractions truncated)" if dtype.kind in "iub" else "") + ".",
            fix=f"Cast the cotangent in {bwd}: `.astype({arg.name}.dtype)` (keep the residuals in the input dtype).",
            location=locate(st.bwd))


def _structure_finding(st: GradState, message: str, result: Any) -> Finding:
    _, _, bwd = _names(st)
    meant = _meant_return(st, result)
    names = [f"d{a.name}" if a.name.isidentifier() else f"ct_{a.pos}" for a in st.dyn]
    generic = f"return ({', '.join(names)}{',' if len(names) == 1 else ''})"
    if meant:
        fix = (f"It looks like you meant `{meant}`: bwd returns exactly one cotangent per positional argument of "
               f"the primal (keyword arguments are bound positionally and get no separate entry; None is fine for "
               f"an argument without gradient).")
    else:
        fix = f"Return one cotangent per positional argument, in order: `{generic}` (None for no gradient)."
    return rules.VJP_BWD_STRUCTURE.finding(
        message + ". JAX fails with `Custom VJP bwd rule must produce an output with the same container (pytree) "
        "structure as the args tuple of the primal function`.", fix=fix, location=locate(st.bwd))


def _meant_return(st: GradState, result: Any) -> str | None:
    """What the user probably meant, from bwd's own `return` expression: `return (dx, dy), None` -> `(dx, dy)`;
    `return g * x` for one argument -> `(g * x,)`."""
    n = len(st.dyn)
    values = return_values(st.bwd)
    if len(values) != 1:
        return None
    node = values[0]
    if isinstance(result, (tuple, list)) and result and isinstance(result[0], (tuple, list)) \
            and len(result[0]) == n and all(e is None for e in result[1:]) \
            and isinstance(node, ast.Tuple) and node.elts:
        inner = node.elts[0]
        text = source_of(inner)
        if isinstance(inner, ast.Tuple) and not text.startswith("("):
            text = f"({text})"
        return f"return {text}"
    if n == 1 and not isinstance(result, (tuple, list)):
        return f"return ({source_of(node)},)"
    if isinstance(result, (tuple, list)) and len(result) > n and all(e is None for e in result[n:]) \
            and isinstance(node, ast.Tuple) and len(node.elts) == len(result):
        return f"return ({', '.join(source_of(e) for e in node.elts[:n])}{',' if n == 1 else ''})"
    return None


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
            leaf = jnp.zeros(np.shape(src), src.dtype) if st.out_diff(j) else _compat.float0_zeros(np.shape(src))
        out.append(leaf)
    return out


@check("vjp-cotangents", family="grad", kinds={"custom_vjp"})
def vjp_cotangents(ctx: Context) -> Iterator[Finding]:
    """Feed a cotangent on one output at a time; compare bwd with autodiff of f and finite differences."""
    st = state(ctx)
    require(st, ("JXG017", "JXG012", "JXG010"))
    if "bwd_full" not in st.memo:
        raise SkipCheck("bwd was not checked")
    if not st.diff:
        raise SkipCheck("no floating-point argument to differentiate")
    outputs = [k for k in range(len(st.out_leaves)) if st.out_diff(k)]
    if not outputs:
        raise SkipCheck("no floating-point output")
    verdicts = []
    for k in outputs:
        result = yield from _probe_output(st, k)
        if result is not None:
            verdicts.append(result)
    yield from _report_mismatches(st, verdicts)


def _call_probe(st: GradState, leaves: list[Any]) -> Iterator[Finding]:
    """bwd on a probe cotangent; a raise is a finding (JXG006 for a symbolic zero it cannot handle)."""
    result, exc = call_bwd(st, leaves)
    if exc is None:
        if isinstance(result, (tuple, list)) and len(result) == len(st.dyn):
            return _as_entries(st, result)
        return None
    _, _, bwd = _names(st)
    if st.symbolic_zeros and any(_compat.is_symbolic_zero(x) for x in leaves):
        st.blocked["JXG006"] = "bwd fails on symbolic zeros"
        yield rules.SYMBOLIC_ZERO_UNHANDLED.finding(
            f"{bwd} raised {error_text(exc, st.bwd)} when only one output has a cotangent: with "
            "symbolic_zeros=True the others arrive as jax.custom_derivatives.SymbolicZero, which happens whenever "
            "a caller uses only some outputs.",
            fix=f"In {bwd}, test `type(ct) is jax.custom_derivatives.SymbolicZero` and treat it as zero (or "
                "drop symbolic_zeros=True).", location=locate(st.bwd))
    else:
        st.blocked["JXG017"] = "bwd raised on a probe"
        yield rules.DERIVATIVE_RULE_RAISED.finding(
            f"{bwd} raised {error_text(exc, st.bwd)} for a cotangent on one output only (the others zero).",
            fix=f"Make {bwd} work for any cotangent, including zeros.", location=locate(st.bwd))
    return None


def _probe_output(st: GradState, k: int) -> Iterator[Finding]:
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
    if depends and same and has_fd and ref1 is None:
        # confirm "the output depends on the inputs": autodiff of the primal agrees, or the difference is stable
        ref1 = st.reference_cotangent(ws1)
        depends = (ref1 is not None and any(np.max(np.abs(to_f64(r)), initial=0) > grad_tol(a.dtype)
                                            for r, a in zip(ref1, st.diff))) \
            or all(st.fd.stable(None, d) for d in range(N_DIRECTIONS) if st.fd.joint(d) is not None)
    if depends and same:
        yield _ignored_finding(st, k, got1, ref1)
        return None
    return _verdict(st, k, ws1, got1, ref1)


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
    ones = [jnp.ones(np.shape(leaf), leaf.dtype) if j == k else _zero_ct(st, j) for j in range(len(st.out_leaves))]
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
        f"{bwd} ignores the cotangent of {name} ({aval_text(leaf)}): two different cotangents on {name} alone give "
        f"the same gradients, although {name} depends on the inputs ({where}). So jax.grad through {name} is "
        f"silently wrong: the gradient of sum({name}) is {'; '.join(parts)}.", fix=fix, location=locate(st.bwd))


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
            if len(elts) == len(st.out) and isinstance(elts[k], ast.Name) and elts[k].id == "_":
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
    status = {}
    for a in st.diff:
        ok = fd_ok[a.pos] or (a.pos in ad_cmp and ad_cmp[a.pos].ok)
        if not ok and not any(c.covers(a) for c in fd_checks) and a.pos not in ad_cmp:
            status[a.pos] = "unknown"
        else:
            status[a.pos] = "ok" if ok else "bad"
    return {"k": k, "ws": ws, "got": got, "ref": ref, "fd": fd_checks, "ad": ad_cmp, "status": status}


def _report_mismatches(st: GradState, verdicts: list[dict]) -> Iterator[Finding]:
    bad = [(v, a) for v in verdicts for a in st.diff if v["status"][a.pos] == "bad"]
    if not bad:
        return
    bad = [(v, a) for v, a in bad if _confirmed(st, v, a)]
    if not bad:
        return
    reported: set[int] = set()
    yield from _swapped(st, bad, reported)
    yield from _dropped(st, bad, reported)
    rest = [(v, a) for v, a in bad if a.pos not in reported]
    if rest:
        yield _mismatch_finding(st, rest)


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
                    f"{bwd} returns the gradients of {a.name} and {b.name} in each other's slots: with a cotangent "
                    f"on {st.out_names[v['k']]}, its entry for {a.name} is {fmt_values(v['got'].get(a.pos))}, which "
                    f"is the derivative with respect to {b.name}, and vice versa. jax.grad(f, argnums=...) silently "
                    "returns the other argument's gradient.",
                    fix=f"Swap the entries in {bwd}'s return: the tuple is ordered like the primal's positional "
                        f"arguments ({', '.join(x.name for x in st.dyn)}).", location=locate(st.bwd))


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
    _, _, bwd = _names(st)
    done: set[int] = set()
    for v, a in bad:
        if a.pos in reported or a.pos in done or not is_zero(v["got"].get(a.pos)):
            continue
        if any(not is_zero(w["got"].get(a.pos)) for w in (x for x, _ in bad)):
            continue
        done.add(a.pos)
        reported.add(a.pos)
        entry = "None" if v["got"].get(a.pos) is None else "zeros"
        ref = v["ref"][st.diff.index(a)] if v["ref"] is not None else None
        ref_text = f" (autodiff of the primal gives {fmt_values(ref)})" if ref is not None else ""
        yield rules.VJP_DROPPED_ARGUMENT_GRADIENT.finding(
            f"{bwd} returns {entry} for {a.text}, but the function depends on {a.name}{ref_text}: with a cotangent "
            f"on {st.out_names[v['k']]}, finite differences give <w, J v> = {_fd_value(v, a):.4g} for a step in "
            f"{a.name}. Everything upstream of {a.name} gets no gradient (e.g. the first layer never trains).",
            fix=f"Return the VJP with respect to {a.name} from {bwd}; if {a.name} is deliberately not "
                f"differentiated, say so with jax.lax.stop_gradient in the primal or suppress with "
                f"`# jaxdiag: ignore[JXG018]` on the def line of {bwd}.", location=locate(st.bwd))


def _fd_value(v: dict, a: Arg) -> float:
    values = [c.expected for c in v["fd"] if c.covers(a)]
    return max(values, key=abs) if values else float("nan")


def _mismatch_finding(st: GradState, bad: list[tuple[dict, Arg]]) -> Finding:
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
                           f"<w, J v> = {worst.expected:.6g} from float64 finite differences "
                           f"(tolerance {worst.tol:.0e} for {short_dtype(a.dtype)})")
    loc = locate(st.bwd)
    where = f" ({loc})" if loc else ""
    return rules.CUSTOM_DERIVATIVE_MISMATCH.finding(
        f"{bwd}'s gradient differs from the derivative of {fun}: " + "; ".join(details) + ". This may be intended "
        "(gradient clipping, straight-through estimators, surrogate gradients); otherwise jax.grad is silently "
        "wrong.",
        fix=f"If deliberate, add `# jaxdiag: ignore[JXG014]` to the def line of {bwd}{where}; otherwise make "
            f"{bwd} return the VJP of {fun} (compare with jax.vjp({fun}.fun, ...)).", location=loc)


# ---------------------------------------------------------------------------------------------------------------
# nondiff_argnums holding arrays (custom_vjp and custom_jvp)
# ---------------------------------------------------------------------------------------------------------------


@check("nondiff-argnums", family="grad", kinds={"custom_vjp", "custom_jvp"})
def nondiff_arrays(ctx: Context) -> Iterator[Finding]:
    """An array in nondiff_argnums works eagerly but fails once it is traced (jit, scan): JXG015."""
    st = state(ctx)
    arrays = [st.args[i] for i in st.nondiff if i < len(st.args) and not st.args[i].static]
    if not arrays:
        raise SkipCheck("no array in nondiff_argnums")
    exc, how = _traced_nondiff_error(st)
    if exc is None:
        return
    fun = rule_name(st.fun, "f")
    names = ", ".join(a.text for a in arrays)
    yield rules.NONDIFF_ARGNUMS_MISUSE.finding(
        f"{fun} has array argument(s) {names} in nondiff_argnums={st.nondiff}: eager calls work, but {how} fails "
        f"with {type(exc).__name__}: {short_message(exc, 160)} nondiff_argnums is for static values (ints, "
        "callables), not arrays.",
        fix=f"Remove {', '.join(a.name for a in arrays)} from nondiff_argnums and make it a regular argument "
            "(return None or a zero cotangent for it), or close over it.", location=locate(st.fun))


def _traced_nondiff_error(st: GradState) -> tuple[BaseException | None, str]:
    """The UnexpectedTracerError of jit(grad) (custom_vjp) or jit(grad(scan)) (custom_jvp, jax#20889) with the
    nondiff arrays passed as traced arguments, or (None, "") when both work."""
    positions = [a.pos for a in st.args if not a.static and (a.diff or a.nondiff)]
    argnums = tuple(positions.index(a.pos) for a in st.diff)
    if not argnums:
        return None, ""

    def total(out: Any) -> Any:
        leaves = [leaf for leaf in jax.tree_util.tree_leaves(out) if is_inexact(np.dtype(leaf.dtype))]
        return sum(jnp.sum(jnp.real(leaf)) for leaf in leaves)

    def loss(*values: Any) -> Any:
        return total(st.call_target(st.values(dict(zip(positions, values)))))

    def loss_in_scan(*values: Any) -> Any:
        def body(carry: Any, diffs: Any) -> tuple[Any, Any]:
            full = dict(zip(positions, values))
            full.update({positions[i]: d for i, d in zip(argnums, diffs)})
            return carry, total(st.call_target(st.values(full)))
        stacked = [values[i][None] for i in argnums]
        return jax.lax.scan(body, 0.0, stacked)[1].sum()

    concrete = [st.args[p].value for p in positions]
    for fn, how in ((loss, "jax.jit(jax.grad(...))"), (loss_in_scan, "jax.jit(jax.grad(...)) around a lax.scan")):
        _, exc = quiet_call(lambda: jax.jit(jax.grad(fn, argnums=argnums))(*concrete))
        if exc is not None and _compat.is_unexpected_tracer_error(exc):
            return exc, how
    return None, ""


CHECKS = [vjp_fwd, vjp_bwd_structure, vjp_cotangents, nondiff_arrays]
