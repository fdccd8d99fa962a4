"""custom_vjp fwd and bwd called directly, exactly as JAX calls them (`fwd(*args)`,
`bwd(*nondiff_args, res, ct)`): check vjp-fwd (JXG012, JXG017) and check vjp-bwd-structure (structure and dtypes
of bwd's result: JXG010, JXG004), with `call_bwd` / `validate_bwd` shared by the cotangent probing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from ... import _compat
from ... import _rules as rules
from ..._core._report import Finding
from .._base import Context, check
from .._shared import raises_on_purpose
from ._pytree import pytree_mismatch
from .._gradref import (
    NOT_COMPUTED, RESIDUALS_NOT_ARRAYS, Arg, GradState, aval_text, device_zeros, error_text, is_zero, leaf_difference,
    locate, quiet_call, require, return_values, rule_name, short_dtype, source_of, state,
)

if TYPE_CHECKING:
    from ..._rules import _fields

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


@check("vjp-fwd", family="grad", kinds={"custom_vjp"}, provides=("grad.fwd", "grad.blocked.vjp-fwd"))
def vjp_fwd(ctx: Context) -> Iterator[Finding]:
    """fwd returns (primal_out, residuals) with primal_out equal to f's output (JXG012); fwd must not raise."""
    st = state(ctx)
    fun, fwd, bwd = _names(st)
    if st.fwd is None or st.bwd is None:
        st.blocked[rules.DERIVATIVE_RULE_RAISED] = "no fwd/bwd"
        yield rules.DERIVATIVE_RULE_RAISED.finding(
            evidence=f"{fun} is a custom_vjp without rules: defvjp(fwd, bwd) was never called, so every jax.grad "
                     f"fails with "
            f"`AttributeError: No VJP defined for custom_vjp function {fun} using defvjp`.",
            fix=f"Call `{fun}.defvjp({fun}_fwd, {fun}_bwd)` after defining both rules.",
            location=locate(st.fun))
        return
    expected = st.out
    result, exc = quiet_call(st.fwd, *_fwd_args(st))
    if exc is not None:
        st.blocked[rules.DERIVATIVE_RULE_RAISED] = f"{fwd} raised"
        yield _fwd_raised(st, exc)
        return
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        st.blocked[rules.VJP_FWD_MISMATCH] = f"{fwd} does not return a pair"
        yield rules.VJP_FWD_MISMATCH.finding(
            evidence=f"{fwd} must return a pair (primal_out, residuals) but returned {aval_text(result)}; JAX fails "
                     f"with "
            "`Custom VJP fwd rule ... must produce a pair (list or tuple of length two)`.",
            fix=f"Return the primal output and the residuals bwd needs, e.g. `{_pair_return(st.fwd, result)}`, "
                f"in {fwd}.",
            location=locate(st.fwd))
        return
    primal, residuals = result
    st.memo.fwd = (primal, residuals)
    yield from _fwd_primal_findings(st, primal, expected)
    yield from _residual_findings(st, residuals)


def _pair_return(fwd: Any, result: Any) -> str:
    """The fwd's `return` written as a (primal, residuals) pair with the user's own names: `return y, s, x` ->
    `return y, (s, x)`; `return y` -> `return y, (x,)` (fwd's own arguments as residuals, always available)."""
    from ..._harness import source

    found = source.function_source(fwd)
    returns = [r for _, r in source.return_nodes(fwd)]
    if found is None or len(returns) != 1 or returns[0].value is None:
        return "return out, (x,)"
    value = returns[0].value
    args = [a.arg for a in found.node.args.args]
    if isinstance(value, ast.Tuple) and len(value.elts) > 2:
        rest = ", ".join(ast.unparse(e) for e in value.elts[1:])
        return f"return {ast.unparse(value.elts[0])}, ({rest})"
    if isinstance(value, ast.Tuple) and len(value.elts) == 1:
        value = value.elts[0]
    residuals = f"({', '.join(args)},)" if len(args) == 1 else f"({', '.join(args)})" if args else "None"
    return f"return {ast.unparse(value)}, {residuals}"


def _raised_rule(exc: BaseException, rule: Any) -> rules.Rule[_fields.EvidenceFix]:
    """JXG025 for a deliberate refusal (a `raise` of the rule's own), JXG017 otherwise."""
    return rules.DERIVATIVE_RULE_REFUSES if raises_on_purpose(exc, rule) else rules.DERIVATIVE_RULE_RAISED


def _fwd_raised(st: GradState, exc: BaseException) -> Finding:
    fun, fwd, _ = _names(st)
    text = error_text(exc, st.fwd)
    # an array operation on the wrapper (a TypeError/AttributeError naming it), not an assertion that shows its repr
    if st.symbolic_zeros and isinstance(exc, (TypeError, AttributeError)) and "CustomVJPPrimal" in str(exc):
        return rules.SYMBOLIC_ZERO_UNHANDLED.finding(
            evidence=f"{fwd} raised {text}: with defvjp(..., symbolic_zeros=True) fwd receives each argument as "
            "CustomVJPPrimal(value, perturbed), not as an array.",
            fix=f"In {fwd}, unwrap the arguments first: `x = x.value` (and use `x.perturbed` to skip work for "
                "arguments that are not differentiated).",
            location=locate(st.fwd))
    return _raised_rule(exc, st.fwd).finding(
        evidence=f"{fwd} raised {text} when called as JAX calls it, {fwd}({', '.join(a.text for a in st.args)}).",
        fix=f"Make {fwd} accept the same positional arguments as {fun} and return (primal_out, residuals).",
        location=locate(st.fwd))


def _fwd_primal_findings(st: GradState, primal: Any, expected: Any) -> Iterator[Finding]:
    fun, fwd, _ = _names(st)
    got_tree: Any = jax.tree_util.tree_structure(primal)
    want_tree = jax.tree_util.tree_structure(expected)
    if got_tree != want_tree:
        st.blocked[rules.VJP_FWD_MISMATCH] = f"{fwd}'s primal output has another structure than {fun}'s"
        yield rules.VJP_FWD_MISMATCH.finding(
            evidence=f"{fwd}'s primal output is {aval_text(primal)} but {fun} returns {aval_text(expected)}: under "
                     f"jax.vjp and "
            f"value_and_grad the caller gets {fwd}'s structure, and bwd receives cotangents shaped like it, so code "
            "that works with the plain function breaks (often as an unrelated IndexError or a shape error blamed "
            "on bwd).",
            fix=f"Return exactly what {fun} returns as the first element of {fwd}'s pair "
                f"(`return {fun}_out, residuals`; tuple vs list matters).",
            location=locate(st.fwd))
        return
    again: list[Any] | None = None
    for k, (name, got, want) in enumerate(zip(st.out_names, jax.tree_util.tree_leaves(primal),
                                               jax.tree_util.tree_leaves(expected))):
        problem = leaf_difference(got, want)
        if problem is None:
            continue
        if problem.startswith("value"):
            # an output that is not a function of the inputs (a solver's wall-clock time in its info dict, a call
            # counter): the primal run again on the same values gives another value there too
            again = _primal_again(st) if again is None else again
            if k < len(again) and leaf_difference(again[k], want) is not None:
                continue
        if "shape" in problem:
            st.blocked[rules.VJP_FWD_MISMATCH] = f"{fwd}'s primal {name} has another shape than {fun}'s"
        yield rules.VJP_FWD_MISMATCH.finding(
            evidence=f"{fwd}'s primal {name} differs from {fun}'s: {problem}. JAX does not check this: under jax.vjp, "
            f"value_and_grad and grad the function silently returns {fwd}'s value.",
            fix=f"Compute the primal {name} in {fwd} exactly as {fun} does (or call {fun} inside {fwd}).",
            location=locate(st.fwd))


def _primal_again(st: GradState) -> list[Any]:
    """The leaves of the primal called once more on the example's values ([] where that raises)."""
    out, exc = quiet_call(st.call_primal, st.values())
    return [] if exc is not None else jax.tree_util.tree_leaves(out)


def _residual_findings(st: GradState, residuals: Any) -> Iterator[Finding]:
    _, fwd, _ = _names(st)
    bad = [leaf for leaf in jax.tree_util.tree_leaves(residuals)
           if not (isinstance(leaf, (jax.Array, np.ndarray, *_SCALAR_TYPES)) or _compat.is_tracer(leaf))]
    if bad:
        st.blocked[RESIDUALS_NOT_ARRAYS] = "residuals are not arrays"
        yield rules.VJP_FWD_MISMATCH.finding(
            evidence=f"{fwd}'s residuals contain {type(bad[0]).__name__} {bad[0]!r:.40}: residuals must be arrays (or "
            f"pytrees of arrays); jax.grad fails with `TypeError: Argument {bad[0]!r:.30} of type "
            f"{type(bad[0])} is not a valid JAX type`.",
            fix="Keep only arrays in the residuals; pass static values through nondiff_argnums or a closure.",
            location=locate(st.fwd))


# ---------------------------------------------------------------------------------------------------------------
# bwd: calling it, its structure and dtypes
# ---------------------------------------------------------------------------------------------------------------


def _zero_ct(st: GradState, k: int) -> Any:
    memo = st.memo.zero_cotangents
    if k not in memo:
        memo[k] = _make_zero_ct(st, k)
    return memo[k]


def _make_zero_ct(st: GradState, k: int) -> Any:
    leaf = st.out_leaves[k]
    if st.symbolic_zeros:
        return _compat.symbolic_zero(np.shape(leaf), leaf.dtype)
    if not st.out_diff(k):
        return _compat.float0_zeros(np.shape(leaf))
    return device_zeros(np.shape(leaf), leaf.dtype)  # no compiled zeros program per shape


def _cotangent(st: GradState, leaves: Sequence[Any]) -> Any:
    return jax.tree_util.tree_unflatten(st.out_treedef, list(leaves))


def call_bwd(st: GradState, leaves: Sequence[Any]) -> tuple[Any, BaseException | None]:
    """bwd(*nondiff_args, residuals, ct) exactly as JAX calls it (nondiff args in nondiff_argnums order)."""
    residuals = fwd_residuals(st)
    nondiff = [st.args[i].value for i in st.nondiff]
    assert st.bwd is not None  # a custom_vjp's state
    return quiet_call(st.bwd, *nondiff, residuals, _cotangent(st, leaves))


def fwd_residuals(st: GradState) -> object:
    """fwd's residuals as vjp-fwd recorded them (`grad.fwd`, a need of every check that calls bwd)."""
    if st.memo.fwd is NOT_COMPUTED:
        raise AssertionError("bwd called before vjp-fwd ran: a check calling bwd must declare needs=('grad.fwd',)")
    return st.memo.fwd[1]


def _as_entries(st: GradState, result: Any) -> dict[int, object]:
    """bwd's entries by argument position (validated structure)."""
    return {a.pos: e for a, e in zip(st.dyn, result)}


@check("vjp-bwd-structure", family="grad", kinds={"custom_vjp"}, needs=("grad.fwd",), reads=("grad.blocked.vjp-fwd",),
       provides=("grad.bwd_full", "grad.eager_grad", "grad.blocked.vjp-bwd-structure"))
def vjp_bwd_structure(ctx: Context) -> Iterator[Finding]:
    """bwd returns one cotangent per differentiable positional argument, shaped (JXG010) and typed (JXG004) like
    it; a bwd that raises is JXG017 (JXG015 when it is written for another argument order)."""
    st = state(ctx)
    require(st, (rules.DERIVATIVE_RULE_RAISED, rules.VJP_FWD_MISMATCH))
    ws = st.cotangents(0)
    result, exc = call_bwd(st, ws)
    if exc is not None:
        st.blocked[rules.DERIVATIVE_RULE_RAISED] = "bwd raised"
        yield _bwd_raised(st, exc, ws)
        return
    findings = list(validate_bwd(st, result, ws))
    yield from findings
    if any(f.code == rules.VJP_BWD_STRUCTURE.code for f in findings):
        st.blocked[rules.VJP_BWD_STRUCTURE] = "bwd returns the wrong structure"
        return
    entries = st.memo.bwd_full = _as_entries(st, result)
    # bwd called directly with the full cotangent is the eager gradient; the composition check reuses it
    st.memo.eager_grad = [device_zeros(a.shape, a.dtype) if is_zero(entries.get(a.pos)) else entries[a.pos]
                          for a in st.diff]


def _bwd_raised(st: GradState, exc: BaseException, ws: Sequence[Any]) -> Finding:
    fun, _, bwd = _names(st)
    text = error_text(exc, st.bwd)
    if st.nondiff:
        order = _working_order(st, ws)
        if order:
            nondiff_names = ", ".join(st.args[i].name for i in st.nondiff)
            return rules.NONDIFF_ARGNUMS_MISUSE.finding(
                evidence=f"{bwd} raised {text}: JAX calls it as {bwd}({nondiff_names}, res, g) (nondiff_argnums "
                f"{st.nondiff} come first), but it is written as {bwd}({order}).",
                fix=f"Put the non-differentiable arguments first: `def {bwd}({nondiff_names}, res, g):`.",
                location=locate(st.bwd))
    return _raised_rule(exc, st.bwd).finding(
        evidence=f"{bwd} raised {text} when called as JAX calls it, with the residuals from fwd and a cotangent "
        f"{aval_text(_cotangent(st, ws))} shaped like {fun}'s output.",
        fix=f"Make {bwd}(res, g) accept a cotangent for every output of {fun} and return one cotangent per "
            "argument.",
        location=locate(st.bwd))


def _working_order(st: GradState, ws: Sequence[Any]) -> str | None:
    """The argument order bwd seems written for, when the order JAX uses fails and (res, g, *nondiff) works."""
    residuals = fwd_residuals(st)
    nondiff = [st.args[i].value for i in st.nondiff]
    assert st.bwd is not None  # a custom_vjp's state
    _, exc = quiet_call(st.bwd, residuals, _cotangent(st, ws), *nondiff)
    if exc is None:
        return "res, g, " + ", ".join(st.args[i].name for i in st.nondiff)
    return None


def validate_bwd(st: GradState, result: Any, ws: Sequence[Any] = ()) -> Iterator[Finding]:
    fun, _, bwd = _names(st)
    mismatch = pytree_mismatch(st, _cotangent(st, ws), bwd) if ws else None
    if mismatch is not None:  # a pytree argument: compared per argument, as the user wrote the signature
        evidence, fix = mismatch
        yield rules.VJP_BWD_STRUCTURE.finding(
            evidence=evidence + ". JAX fails with `Custom VJP bwd rule must produce an output with the same container "
            "(pytree) structure as the args tuple of the primal function`.",
            fix=fix, location=locate(st.bwd))
        return
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
            evidence=f"{bwd}'s cotangent for {arg.name} has shape {aval_text(entry)} but {arg.name} is "
            f"{aval_text(arg.value)}; JAX rejects it (`Custom VJP bwd rule must produce an output with the same "
            "type as the args tuple`), broadcastable shapes included.",
            fix=f"Return a cotangent of shape {arg.shape} for {arg.name}: sum over the axes broadcasting added "
                "(`jnp.sum(ct, axis=...)`) or reshape.",
            location=locate(st.bwd))
        return
    dtype = np.asarray(entry).dtype if not hasattr(entry, "dtype") else np.dtype(entry.dtype)
    if arg.diff and dtype != arg.dtype:
        yield rules.COTANGENT_DTYPE.finding(
            owner=bwd, argument=arg.name, got=short_dtype(dtype), want=short_dtype(arg.dtype),
            truncated=" (fractions truncated)" if dtype.kind in "iub" else "", cast=f".astype({arg.name}.dtype)",
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
        evidence=message + ". JAX fails with `Custom VJP bwd rule must produce an output with the same container "
        "(pytree) structure as the args tuple of the primal function`.",
        fix=fix,
        location=locate(st.bwd))


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
