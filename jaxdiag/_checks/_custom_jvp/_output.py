"""Check jvp-rule-output: presence, raising, the pair, the primal (JXG021) and the tangents' structure, shape and
dtype (JXG007, JXG017, JXG022, JXG015; JXR006 for a primitive without a rule).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from typing import Any

import jax
import numpy as np

from ... import _compat
from ..._core import _locate
from ... import _rules as rules
from ..._core._report import Finding
from .._base import Context, SkipCheck, check
from .._shared import first_line, raises_on_purpose, tangent_dtype_accepted
from .._gradref import (
    REVERSE_ONLY, GradState, aval_text, error_text, leaf_difference, quiet_call, short_dtype, state,
)
from .._gradref._state import Arg, spec_positions
from ._call import (
    KINDS, _call_jvp_with, _dense_call, _split, _zero_for, call_jvp, joint, jvp_rule, names, rule_location, user_rules,
)
from ._reach import custom_derivative_wrappers

# ---------------------------------------------------------------------------------------------------------------
# jvp-rule-output: presence, raising, pair, primal, tangent structure/shape/dtype
# ---------------------------------------------------------------------------------------------------------------


@check("jvp-rule-output", family="grad", kinds=KINDS,
       provides=("grad.blocked.jvp-rule-output", "grad.reverse_only"))
def jvp_rule_output(ctx: Context) -> Iterator[Finding]:
    st = state(ctx)
    if st.kind == "primitive" and jvp_rule(st) is None:
        yield from _missing_jvp(st, ctx)
        return
    if st.kind == "custom_jvp" and st.jvp_rule is None:
        st.blocked[rules.DERIVATIVE_RULE_RAISED] = "no JVP rule"
        fun, _ = names(st)
        yield rules.DERIVATIVE_RULE_RAISED.finding(
            evidence=f"{fun} is a custom_jvp without a rule: defjvp was never called, so every call fails with "
            f"`AttributeError: No JVP defined for custom_jvp function {fun} using defjvp`.",
            fix=f"Decorate the rule with `@{fun}.defjvp` (or call `{fun}.defjvp(rule)`).",
            location=st.subject.location)
        return
    if not st.diff:
        raise SkipCheck("no floating-point argument to differentiate")
    expected = st.out
    # through the program the linearity and reference checks reuse, where the rule loops (`_dense_call`): eagerly,
    # its first call alone compiled every loop of an adaptive quadrature's JVP (94 programs); its error, if any, is
    # still the eager call's
    result, exc = _dense_call(st, joint(st, 0))
    refused = _refused_alone(st, exc) if exc is not None else []
    if refused and exc is not None:  # outside the rule's contract: held constant from here on, in every check
        yield _refusal_note(st, refused, exc)
        st = _held_constant(ctx, st, refused)
        expected = st.out
        result, exc = _dense_call(st, joint(st, 0))
    tangent = _transpose_only_tangent(st, exc) if exc is not None else None
    if tangent is not None and exc is not None:  # reverse mode only, by design: `reverse-only-reference` checks it
        st.blocked[REVERSE_ONLY] = f"its tangent {tangent.name} can only be transposed (reverse mode only)"
        st.memo.reverse_only = tangent
        _, rule = names(st)
        note = rules.FORWARD_MODE_UNSUPPORTED.finding(
            rule=rule, tangent=tangent.name, prim=st.subject.obj.name, error=first_line(exc),
            location=rule_location(st))
        # no tangent was compared here: the JVP rule cannot run (a pass would verify a target nothing compared)
        raise SkipCheck(st.blocked[REVERSE_ONLY], findings=[note])
    if exc is not None:
        st.blocked[rules.DERIVATIVE_RULE_RAISED] = "the JVP rule raised"
        yield _raised(st, exc)
        return
    pair = _split(st, result)
    if pair is None:
        st.blocked[rules.JVP_OUTPUT_STRUCTURE] = "the rule does not return a pair"
        yield _not_pair(st, result)
        return
    yield from _primal_findings(st, pair[0], expected)
    yield from _tangent_findings(st, pair[0], pair[1])


def _transpose_only_tangent(st: GradState, exc: BaseException) -> Any:
    """The primitive a primitive's JVP rule failed to evaluate, when that is one its rules hold and JAX can only
    transpose (`_compat.transpose_only`): the rule is reverse-mode only by design, not broken."""
    if st.kind != "primitive" or not isinstance(exc, NotImplementedError):
        return None
    tangents = joint(st, 0)
    positions = sorted(tangents)
    # traced, the rule binds it abstractly (an abstract eval is all it needs), however the rule refers to it
    traced, _ = quiet_call(jax.make_jaxpr(lambda *t: _call_jvp_with(st, st.values(), dict(zip(positions, t)))),
                           *(tangents[p] for p in positions))
    bound = [eqn.primitive for eqn in _compat.iter_eqns(traced)] if traced is not None else []
    for prim in bound + _compat.transposed_tangents(st.subject.obj):
        if _compat.transpose_only(prim) and f"'{prim.name}'" in str(exc):
            return prim
    return None


def _missing_jvp(st: GradState, ctx: Context) -> Iterator[Finding]:
    prim = st.subject.obj.name
    if not st.diff:
        raise SkipCheck("no floating-point argument: no JVP rule needed")
    st.blocked[rules.MISSING_JVP_RULE] = "no JVP rule"
    # `grad` was asked to differentiate it (an error); `check` cannot know whether anyone does (a note). A primitive
    # whose every bind sits inside a custom_vjp/custom_jvp function is never differentiated by JAX: a note too.
    wrapped = custom_derivative_wrappers(st.subject.obj, _defining_module(st.subject))
    missing = rules.MISSING_JVP_RULE if ctx.options.command == "check" or wrapped else rules.GRAD_WITHOUT_JVP_RULE
    yield missing.finding(
        prim=prim,
        var=_var(st),
        args=', '.join(a.name for a in st.args),
        location=st.subject.location)


def _defining_module(subject: Any) -> Any:
    """The module that defines the primitive's rules (where its binds are written)."""
    for rule in _compat.registered_rules(subject.obj).values():
        if rule is not None and _locate.is_user_code(rule):
            return inspect.getmodule(_locate.unwrap(rule))
    return sys.modules.get(subject.module)


def _var(st: GradState) -> str:
    loc = st.subject.location
    return loc.function if loc is not None and loc.function.isidentifier() else f"{st.subject.obj.name}_p"


def _raised(st: GradState, exc: BaseException) -> Finding:
    fun, rule = names(st)
    fns = [f for f in user_rules(st) if f is not None]
    text = error_text(exc, fns[0] if fns else None)
    ints = [a for a in st.dyn if not a.diff and not a.static]
    if ints and ("float0" in str(exc) or "('V')" in str(exc) or "'V'" in str(exc)):
        return rules.FLOAT0_TANGENT_UNHANDLED.finding(
            rule=rule,
            text=text,
            ints=', '.join(a.text for a in ints),
            ints_2=', '.join(a.name for a in ints),
            location=rule_location(st))
    if st.kind == "primitive" and "Zero" in str(exc):
        return rules.SYMBOLIC_ZERO_UNHANDLED.finding(
            evidence=f"{rule} raised {text}: the tangent of an integer argument ({', '.join(a.text for a in ints)}) "
                     f"is a "
            "symbolic ad.Zero.",
            fix="Test `type(t) is ad.Zero` or use `ad.instantiate_zeros(t)`.",
            location=rule_location(st))
    if st.kind == "custom_jvp" and st.nondiff and st.jvp_rule is not None:
        nondiff = [st.args[i].value for i in st.nondiff]
        primals = tuple(a.value for a in st.dyn)
        tans = tuple(st.tangent(a, 0) if a.diff else _zero_for(st, a, False) for a in st.dyn)
        _, other = quiet_call(st.jvp_rule, primals, tans, *nondiff)
        if other is None:
            nd = ", ".join(st.args[i].name for i in st.nondiff)
            return rules.NONDIFF_ARGNUMS_MISUSE.finding(
                evidence=f"{rule} raised {text}: JAX calls it as {rule}({nd}, primals, tangents) (nondiff_argnums "
                f"{st.nondiff} come first) but it is written as {rule}(primals, tangents, {nd}).",
                fix=f"Put the non-differentiable arguments first: `def {rule}({nd}, primals, tangents):`.",
                location=rule_location(st))
    refuses = any(raises_on_purpose(exc, fn) for fn in fns)
    return (rules.DERIVATIVE_RULE_REFUSES if refuses else rules.DERIVATIVE_RULE_RAISED).finding(
        evidence=f"{rule} raised {text} when called as JAX calls it (primals {', '.join(a.text for a in st.args)} "
                 f"with random "
        "tangents).",
        fix=f"Make {rule} work for these inputs; it must return (primal_out, tangent_out).",
        location=rule_location(st))


def _refused_alone(st: GradState, exc: BaseException) -> list[Arg]:
    """The differentiable arguments whose tangent alone makes the rule raise on purpose, when it runs with the
    tangent of some other argument alone (a rule that refuses them all is JXG025's)."""
    fns = [f for f in user_rules(st) if f is not None]
    if len(st.diff) < 2 or not any(raises_on_purpose(exc, fn) for fn in fns):
        return []
    refused, runs = [], False
    for a in st.diff:
        _, alone = call_jvp(st, {a.pos: st.tangent(a, 0)}, symbolic=st.kind == "primitive" or st.symbolic_zeros)
        if alone is None:
            runs = True
        elif any(raises_on_purpose(alone, fn) for fn in fns):
            refused.append(a)
    return refused if runs else []


def _refusal_note(st: GradState, refused: list[Arg], exc: BaseException) -> Finding:
    _, rule = names(st)
    fns = [f for f in user_rules(st) if f is not None]
    return rules.TANGENTS_REFUSED.finding(
        rule=rule, refused=", ".join(a.name for a in refused), error=error_text(exc, fns[0] if fns else None),
        them="it" if len(refused) == 1 else "them", location=rule_location(st))


def _held_constant(ctx: Context, st: GradState, refused: list[Arg]) -> GradState:
    """The subject's grad state rebuilt with `refused` unperturbed (`Subject.unperturbed`, by spec index), so that
    no check perturbs them, as for an operand JAX never differentiates at its call site."""
    specs = spec_positions(ctx.subject, len(ctx.example()))
    ctx.subject.unperturbed = ctx.subject.unperturbed | {specs.index(a.pos) for a in refused if a.pos in specs}
    ctx.cache.grad = None
    fresh = state(ctx)
    fresh.blocked.update(st.blocked)
    return fresh


def _not_pair(st: GradState, result: Any) -> Finding:
    fun, rule = names(st)
    return rules.JVP_OUTPUT_STRUCTURE.finding(
        evidence=f"{rule} must return a pair (primal_out, tangent_out) but returned {aval_text(result)}. JAX reports "
                 f"`must "
        "produce a pair`, or, when the tangent's leading dimension is 2, silently unpacks its rows as (primal, "
        "tangent).",
        fix=f"Return both: `return {fun}_out, tangent_out` in {rule}.",
        location=rule_location(st))


def _primal_findings(st: GradState, primal: Any, expected: Any) -> Iterator[Finding]:
    fun, rule = names(st)
    got = _primal_leaves(st, primal)
    if got is None:
        st.blocked[rules.JVP_PRIMAL_MISMATCH] = "primal structure differs"
        yield rules.JVP_PRIMAL_MISMATCH.finding(
            evidence=f"{rule}'s primal output is {aval_text(primal)} but {fun} returns {aval_text(expected)}: JAX "
                     f"does not "
            "check this; under jax.jvp the caller gets the rule's structure and jax.grad later fails (e.g. "
            "`TypeError: iteration over a 0-d array`).",
            fix=f"Return exactly {fun}'s output as the first element of {rule}'s pair (call {fun} on the primals).",
            location=rule_location(st))
        return
    for name, g, want in zip(st.out_names, got, st.out_leaves):
        problem = leaf_difference(g, want)
        if problem is None:
            continue
        if "shape" in problem:
            st.blocked[rules.JVP_PRIMAL_MISMATCH] = "primal shape differs"
        yield rules.JVP_PRIMAL_MISMATCH.finding(
            evidence=f"{rule}'s primal {name} differs from {fun}'s: {problem}. JAX does not check it: under jax.jvp "
                     f"and "
            f"jax.grad the function silently returns the rule's value.",
            fix=f"Compute the primal in {rule} exactly as {fun} does (e.g. `out = {fun}(x)` inside the rule).",
            location=rule_location(st))


def _primal_leaves(st: GradState, primal: Any) -> list[Any] | None:
    if st.kind == "primitive":
        if st.subject.obj.multiple_results:
            ok = isinstance(primal, (tuple, list)) and len(primal) == len(st.out_leaves)
            return list(primal) if ok else None
        return [primal] if hasattr(primal, "shape") else None
    if jax.tree_util.tree_structure(primal) != st.out_treedef:
        return None
    return jax.tree_util.tree_leaves(primal)


def _tangent_findings(st: GradState, primal: Any, tangent: Any) -> Iterator[Finding]:
    fun, rule = names(st)
    if st.kind == "primitive":
        leaves = list(tangent) if st.subject.obj.multiple_results and isinstance(tangent, (tuple, list)) \
            else None if st.subject.obj.multiple_results else [tangent]
        ok = leaves is not None and len(leaves) == len(st.out_leaves)
    else:
        # JAX's own comparison: None is an empty subtree on both sides (a `(x, None)` output takes a
        # `(t, None)` tangent, and a None tangent for an array output is rejected); symbolic zeros are leaves.
        is_leaf = _compat.is_symbolic_zero
        tangent_tree: Any = jax.tree_util.tree_structure(tangent, is_leaf=is_leaf)
        ok = tangent_tree == jax.tree_util.tree_structure(primal)
        leaves = jax.tree_util.tree_leaves(tangent, is_leaf=is_leaf)
    if not ok or leaves is None:
        st.blocked[rules.JVP_OUTPUT_STRUCTURE] = "tangent structure differs"
        yield rules.JVP_OUTPUT_STRUCTURE.finding(
            evidence=f"{rule}'s tangent output is {aval_text(tangent)} but the primal output is {aval_text(primal)}: "
                     f"they "
            "must have the same pytree structure (tuple vs list matters).",
            fix=f"Return the tangents in the primal's container: e.g. `return (a, b), (ta, tb)` in {rule}.",
            location=rule_location(st))
        return
    for name, t, p in zip(st.out_names, leaves, st.out_leaves):
        if t is None or _compat.is_symbolic_zero(t):
            continue
        want_dtype = _compat.tangent_dtype(p.dtype)
        t_shape, t_dtype = tuple(np.shape(t)), np.asarray(t).dtype if not hasattr(t, "dtype") else np.dtype(t.dtype)
        if t_shape != tuple(np.shape(p)):
            st.blocked[rules.JVP_OUTPUT_STRUCTURE] = "tangent shape differs"
            yield rules.JVP_OUTPUT_STRUCTURE.finding(
                evidence=f"{rule}'s tangent for {name} has shape {aval_text(t)} but the primal is {aval_text(p)}: "
                         f"jax.jvp "
                "may accept it silently, and jax.grad then fails with an unrelated IndexError (or `Custom JVP rule "
                "must produce primal and tangent outputs with corresponding shapes and dtypes`).",
                fix=f"Return a tangent of shape {tuple(np.shape(p))} for {name} (no extra or missing axes).",
                location=rule_location(st))
        elif not tangent_dtype_accepted(t_dtype, want_dtype):
            yield rules.JVP_OUTPUT_STRUCTURE.finding(
                evidence=f"{rule}'s tangent for {name} is {short_dtype(t_dtype)} but the primal is {aval_text(p)}, "
                         f"whose "
                f"tangent dtype is {short_dtype(want_dtype)}.",
                fix=f"Cast the tangent: `.astype({short_dtype(want_dtype)})` (float0 for integer outputs).",
                location=rule_location(st))
