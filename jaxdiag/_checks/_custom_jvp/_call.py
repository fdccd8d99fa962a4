"""Calling a JVP rule as JAX calls it (`rule(*nondiff, primals, tangents)` for custom_jvp,
`rule(primals, tangents, **params)` for a primitive) with seeded tangents, and the compiled multi-tangent
evaluators (`T`, `T_many`) the other JVP checks share.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from ... import _compat
from ..._core import _locate
from ..._core._report import Location
from .._gradref import (
    Arg,
    GradState,
    TangentKey,
    device_zeros,
    host_linear,
    is_float0,
    quiet_call,
    rule_name,
    to_f64,
)
from .._gradref._compiled import CompiledPrimal

KINDS = {"custom_jvp", "primitive"}


# ---------------------------------------------------------------------------------------------------------------
# Calling the rule
# ---------------------------------------------------------------------------------------------------------------


def jvp_rule(st: GradState) -> Any:
    return st.jvp_rule if st.kind == "custom_jvp" else _compat.jvp_rule(st.subject.obj)


def user_rules(st: GradState) -> list[Any]:
    """The user's function(s) behind the rule: per-argument rules for `ad.defjvp`."""
    rule = jvp_rule(st)
    return _compat.rule_user_functions(rule) if st.kind == "primitive" else [rule]


def rule_location(st: GradState, arg: Arg | None = None) -> Location | None:
    fns = user_rules(st)
    if arg is not None and st.kind == "primitive" and len(fns) == len(st.args) and fns[arg.pos] is not None:
        return _locate.locate(fns[arg.pos])
    for fn in fns:
        if fn is not None and _locate.is_user_code(fn):
            return _locate.locate(fn)
    for fn in fns:
        if fn is not None:
            return _locate.locate(fn)
    return st.subject.location


def names(st: GradState) -> tuple[str, str]:
    """(function name, rule name) for messages."""
    if st.kind == "primitive":
        prim = st.subject.obj.name
        fns = [f for f in user_rules(st) if f is not None]
        return prim, (rule_name(fns[0], f"{prim}'s JVP rule") if len(fns) == 1 else f"{prim}'s JVP rule")
    fun = rule_name(st.fun, "f")
    return fun, rule_name(st.jvp_rule, f"{fun}_jvp")


def _zero_for(st: GradState, a: Arg, symbolic: bool) -> Any:
    if st.kind == "primitive":
        if symbolic or not a.diff:
            return _compat.ad_zero(a.shape, a.dtype)
        return device_zeros(a.shape, a.dtype)
    if a.static:
        return np.zeros_like(np.asarray(a.value))
    if symbolic or (st.symbolic_zeros and a.unperturbed):  # what JAX passes for an argument it does not perturb
        return _compat.symbolic_zero(a.shape, a.dtype)
    return st.zero_tangent(a)


def call_jvp(st: GradState, tangents: dict[int, Any], symbolic: bool = False) -> tuple[Any, BaseException | None]:
    """The rule on the example primals with `tangents` (by position) and zeros elsewhere (symbolic ones when
    `symbolic`, as JAX passes for arguments it does not differentiate)."""
    rule = jvp_rule(st)
    if st.kind == "primitive":
        primals: Sequence[Any] = tuple(st.values())  # tuples, as JAX passes them
        tans: Sequence[Any] = tuple(tangents[a.pos] if a.pos in tangents else _zero_for(st, a, symbolic)
                                    for a in st.args)
        return quiet_call(rule, primals, tans, **st.subject.params)
    primals = tuple(a.value for a in st.dyn)
    tans = tuple(tangents[a.pos] if a.pos in tangents else _zero_for(st, a, symbolic) for a in st.dyn)
    nondiff = [st.args[i].value for i in st.nondiff]
    return quiet_call(rule, *nondiff, primals, tans)


def _split(st: GradState, result: Any) -> tuple[Any, Any] | None:
    if isinstance(result, (tuple, list)) and len(result) == 2:
        return result[0], result[1]
    return None


def tangent_leaves(st: GradState, tangent_out: Any) -> list[np.ndarray]:
    """The tangent output as dense float64 arrays, one per primal output leaf (symbolic zeros and float0 -> 0)."""
    if st.kind == "primitive" and not st.subject.obj.multiple_results:
        leaves = [tangent_out]
    elif st.kind == "primitive":
        leaves = list(tangent_out)
    else:
        # None is an empty subtree, as in JAX and in the primal's leaves (st.out_leaves), so the two stay aligned.
        leaves = jax.tree_util.tree_leaves(tangent_out, is_leaf=_compat.is_symbolic_zero)
    out = []
    for leaf, primal in zip(leaves, st.out_leaves):
        if leaf is None or _compat.is_symbolic_zero(leaf) or is_float0(leaf):
            out.append(np.zeros(np.shape(primal), np.complex128 if np.asarray(primal).dtype.kind == "c"
                                else np.float64))
        else:
            out.append(to_f64(leaf))
    return out


def T(st: GradState, key: TangentKey, tangents: dict[int, Any]) -> list[np.ndarray] | None:
    """Memoised tangent output for `tangents`; None when the rule raised (reported by jvp-rule-output)."""
    memo = st.memo.jvp_tangents
    key = _norm_key(st, key)  # one argument: joint and per-argument tangents are the same call
    if key not in memo:
        result, exc = _dense_call(st, tangents)
        pair = _split(st, result) if exc is None else None
        memo[key] = st.comparable(tangent_leaves(st, pair[1])) if pair is not None else None
    return memo[key]


def _dense_call(st: GradState, tangents: dict[int, Any]) -> tuple[Any, BaseException | None]:
    """`call_jvp(st, tangents)`, through one compiled program per set of tangent positions where the rule loops or
    branches: called eagerly, such a rule compiles its loops again on every call (new closures each time), and the
    linearity and reference checks call it with a dozen tangent sets of the same types (an adaptive quadrature's
    JVP: 138 compiles, 39 s). A rule without loops stays eager, as does one that cannot be traced or compiled
    (`CompiledPrimal`), so its error is the one the eager call raises. The zeros `call_jvp` would pass a
    differentiable argument without a tangent are passed as inputs instead, so that the joint and the per-argument
    tangent sets share one program (the same values: a dense zero either way)."""
    tangents = _with_dense_zeros(st, tangents)
    positions = tuple(sorted(tangents))
    program = st.memo.jvp_programs.get(positions)
    if program is None:
        count = len(st.args)
        program = st.memo.jvp_programs[positions] = CompiledPrimal(
            lambda values: _call_jvp_with(st, list(values[:count]), dict(zip(positions, values[count:]))))
    return quiet_call(program, [*st.values(), *(tangents[p] for p in positions)])


def _with_dense_zeros(st: GradState, tangents: dict[int, Any]) -> dict[int, Any]:
    """`tangents` with the dense zeros `call_jvp` gives every other differentiable argument; unchanged where one of
    those zeros is symbolic (a different call of the rule, not a value)."""
    zeros = {a.pos: _zero_for(st, a, False) for a in st.diff if a.pos not in tangents}
    if any(_compat.is_symbolic_zero(z) or not hasattr(z, "dtype") or is_float0(z) for z in zeros.values()):
        return tangents
    return {**tangents, **zeros}


def _norm_key(st: GradState, key: TangentKey) -> TangentKey:
    if key[0] == "j" and isinstance(key[1], int) and len(st.diff) == 1:
        return ("a", st.diff[0].pos, key[1])
    return key


# Compiled multi-tangent evaluators by rule: repeated checks of a target (test suites, the benchmark) reuse them.
_COMPILED: "collections.OrderedDict[tuple, tuple[Any, Any]]" = collections.OrderedDict()


def T_many(st: GradState, items: Sequence[tuple[Any, dict[int, Any]]]) -> None:
    """Fill T's memo for several tangent sets. Dense sets run the rule eagerly (`T`): they have the shapes and dtypes
    of the tangents jvp-rule-output already ran it on, so every eager operation is a compiled program reused (one jit
    over them was a new program per target, whose compilation cost far more than the dispatches it saved); only a
    rule that loops runs through one program per set of tangent positions (`_dense_call`). A key
    ("z", pos) asks for the tangent of `pos` alone with the others as symbolic zeros (jvp-symbolic-zeros): the rule
    then runs operations it has not run yet (instantiating the zeros), so those sets share one compiled call, and
    are left to jvp-symbolic-zeros (eager) when the rule cannot be jitted."""
    memo = st.memo.jvp_tangents
    missing = [(_norm_key(st, k), t) for k, t in items if _norm_key(st, k) not in memo]
    symbolic = [(k, t) for k, t in missing if k[0] == "z"]
    if symbolic and not any(a.nondiff and not a.static for a in st.args):
        fn = _compiled_rule(st, tuple(int(k[1]) for k, _ in symbolic))  # ("z", position) keys
        sets = [[t.get(a.pos, device_zeros(a.shape, a.dtype)) for a in st.diff] for _, t in symbolic]
        out, exc = quiet_call(lambda: jax.block_until_ready(fn([a.value for a in st.args if not a.static], sets)))
        if exc is None:
            for (key, _), tangent_out in zip(symbolic, out):
                memo[key] = tangent_leaves(st, tangent_out)
    for key, tangents in missing:
        if key[0] != "z":
            T(st, key, tangents)


def _compiled_rule(st: GradState, only: tuple[int | None, ...]) -> Any:
    """jit of the rule applied to several tangent sets, memoised per rule. Set i passes symbolic zeros for every
    argument but `only[i]` when that is not None."""
    rule = jvp_rule(st)
    key = (id(rule), id(st.subject.obj), repr(sorted(st.subject.params.items(), key=lambda kv: kv[0])),
           tuple(str(s) for s in st.subject.specs), repr(st.subject.static_args),
           tuple(repr(st.args[i].value) for i in st.nondiff), only, _compat.x64_enabled())
    hit = _COMPILED.get(key)
    if hit is not None and hit[0] is rule:
        return hit[1]
    arrays = [a.pos for a in st.args if not a.static]

    def many(values: list[Any], sets: list[list[Any]]) -> list[Any]:
        full = dict(zip(arrays, values))
        primals = [full.get(a.pos, a.value) for a in st.args]
        outs = []
        for ts, pos in zip(sets, only):
            tangents = {a.pos: t for a, t in zip(st.diff, ts) if pos is None or a.pos == pos}
            outs.append(_call_jvp_with(st, primals, tangents, symbolic=pos is not None)[1])
        return outs

    fn = _compat.own_jit(many)
    _COMPILED[key] = (rule, fn)
    while len(_COMPILED) > 64:
        _COMPILED.popitem(last=False)
    return fn


def _call_jvp_with(st: GradState, values: list[Any], tangents: dict[int, Any], symbolic: bool = False) -> Any:
    """The rule on explicit primal values (traceable, no error handling: for jit)."""
    rule = jvp_rule(st)
    if st.kind == "primitive":
        # tuples, as JAX passes them (a rule may use them as a vmap in_axes tree, where a list is another tree)
        tans: Sequence[Any] = tuple(tangents[a.pos] if a.pos in tangents else _zero_for(st, a, symbolic)
                                    for a in st.args)
        return rule(tuple(values), tans, **st.subject.params)
    primals = tuple(values[a.pos] for a in st.dyn)
    tans = tuple(tangents[a.pos] if a.pos in tangents else _zero_for(st, a, symbolic) for a in st.dyn)
    return rule(*[values[i] for i in st.nondiff], primals, tans)


def joint(st: GradState, d: int, scale: float = 1.0) -> dict[int, Any]:
    return {a.pos: host_linear(a.dtype, (scale, st.tangent(a, d))) for a in st.diff}


# ---------------------------------------------------------------------------------------------------------------
# Symbolic zeros (custom_jvp symbolic_zeros=True, primitive ad.Zero)
# ---------------------------------------------------------------------------------------------------------------


def _symbolic_candidates(st: GradState) -> list[Arg]:
    """Arguments differentiated alone while JAX passes symbolic zeros for the others (none for one argument:
    JAX never calls a rule with only zero tangents; none for custom_jvp without symbolic_zeros=True)."""
    if st.kind == "custom_jvp" and not st.symbolic_zeros:
        return []
    others = [a for a in st.dyn if not a.static] if st.kind == "custom_jvp" else st.args
    return list(st.diff) if len(others) >= 2 else []
