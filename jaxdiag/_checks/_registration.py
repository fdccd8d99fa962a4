"""Registration checks (JXR): is every rule a primitive needs there, and do the rules agree with the impl?

A primitive works eagerly with an impl alone, so eager-only tests pass while `jit`, `vmap` and `grad` fail.
These checks look at what is registered, call the impl once on the example as the trusted
reference, and compare the abstract eval and the jitted lowering with it. The helpers they share with the batching
checks (the reference call, the example's output, the abstract eval's output) are in `_shared.py`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np

from .. import _compat
from .._core import _locate
from .._loading import _numerics
from .. import _rules as rules
from .._loading._inputs import draw
from .._core._report import Finding, Location
from ._base import Context, SkipCheck, Subject, check
from .._harness import call_user
from ._shared import (
    AbstractOutput, abstract_output, aval_text, avals_text, bind_fn, example_output, first_line, flat_outputs,
    foreign_values,
    has_jit_path, runs_eagerly, traced_only, inputs_text, is_user_primitive, own_jitted, prim_var, primitive_module,
    reference_fn, removed_api, removed_api_finding, rule_location, signature_problem, stated_precondition,
    user_frame_location,
)


def _user_prim(ctx: Context) -> None:
    if not is_user_primitive(ctx.subject):
        raise SkipCheck("JAX's own primitive: its registration is trusted")


# ---------------------------------------------------------------------------------------------------------------
# JXR001 / JXR011: impl present and running
# ---------------------------------------------------------------------------------------------------------------


@check("registration-impl", family="batching", kinds={"primitive", "function"})
def impl_check(ctx: Context) -> Iterator[Finding]:
    subject = ctx.subject
    if subject.kind == "primitive" and traced_only(subject) and has_jit_path(subject.obj):
        pass  # its impl never runs in the user's code: no eager call; the reference below runs it under jax.jit
    elif subject.kind == "primitive" and not _compat.has_impl(subject.obj):
        yield _missing_impl(ctx)
        if not has_jit_path(subject.obj):
            return
    elif is_user_primitive(subject):
        impl = _compat.impl(subject.obj)
        problem = signature_problem(impl, tuple(ctx.example()), subject.params)
        if problem:
            yield rules.WRONG_RULE_SIGNATURE.finding(
                evidence=f"{subject.obj.name}'s impl cannot be called as JAX calls it, `impl(*args, **params)` with "
                f"{inputs_text(subject)}: {problem}.",
                fix=_params_fix(impl, subject.params, "impl"),
                location=rule_location(impl, subject.location))
            return
    out = example_output(ctx)
    if out.error is not None:
        yield _raised(ctx, out.error)
    elif subject.kind == "function" and (returned := foreign_values(ctx)):
        raise SkipCheck(f"{subject.name} ran, but {returned}, not arrays: no check applies to it (the function it "
                        "returns is what computes arrays; check a call of that)", note=True, location=subject.location)


def _missing_impl(ctx: Context) -> Finding:
    prim, var = ctx.subject.obj, prim_var(ctx.subject)
    also = (" jaxdiag used `jax.jit` (abstract eval + lowering) as the per-example reference instead."
            if has_jit_path(prim) else " Nothing else can run it, so its batching was not checked.")
    unregistered = _unregistered_impl(ctx)
    fix = (f"Register it: `{var}.def_impl({unregistered})` ({unregistered} is defined in the same module but never "
           "registered)." if unregistered else
           f"Register the eager computation: `def {prim.name}_impl(...): ...` (in jax.numpy) and "
           f"`{var}.def_impl({prim.name}_impl)`.")
    return rules.MISSING_IMPL.finding(
        var=var,
        prim_name=prim.name,
        also=also,
        fix=fix,
        location=ctx.subject.location)


def _unregistered_impl(ctx: Context) -> str | None:
    module = primitive_module(ctx.subject)
    if module is None:
        return None
    name = ctx.subject.obj.name
    for attr, value in vars(module).items():
        if inspect.isfunction(value) and "impl" in attr and name in attr:
            return attr
    return None


def _raised(ctx: Context, exc: BaseException) -> Finding:
    subject = ctx.subject
    fn = _compat.impl(subject.obj) if subject.kind == "primitive" else _locate.unwrap(subject.obj)
    where = "impl" if subject.kind == "primitive" else "function"
    location = user_frame_location(exc, fn) if fn is not None else subject.location
    if removed_api(exc):
        return removed_api_finding(exc, f"{subject.name}'s {where}", location or subject.location)
    stated = stated_precondition(exc) if subject.provenance == "inferred" else ""
    if stated:  # values jaxdiag drew break a precondition the package states: the inputs are at fault, not it
        return rules.TARGET_NOT_CHECKABLE.finding(
            reason=f"{subject.name}'s {where} refuses the inferred inputs ({inputs_text(subject)}) with a "
                   f"precondition its code states on their values, {first_line(exc)} (`raise` at {stated})",
            fix="Declare inputs that meet it: a domain such as f32[3]@0..1 or @positive in --arg or "
                "[tool.jaxdiag.targets] `args`, or record your own calls with `jaxdiag record -- pytest`.",
            location=location or subject.location)
    return rules.TARGET_RAISED.finding(
        subject_name=subject.name,
        where=where,
        exc_error=first_line(exc),
        inputs_text=inputs_text(subject),
        location=location or subject.location)


def _params_fix(fn: Any, params: dict[str, Any], what: str) -> str:
    name = getattr(_locate.unwrap(fn), "__name__", what)
    if params:
        return (f"JAX passes the bind parameters ({', '.join(sorted(params))}) as keyword arguments: give "
                f"`{name}` matching keyword parameters, or add `**params` to its signature.")
    return f"Give `{name}` one positional parameter per primitive argument (and `**params`)."


# ---------------------------------------------------------------------------------------------------------------
# JXR002 / JXR003: abstract eval present and agreeing with the impl
# ---------------------------------------------------------------------------------------------------------------


@check("registration-abstract-eval", family="batching", kinds={"primitive"})
def abstract_eval_check(ctx: Context) -> Iterator[Finding]:
    _user_prim(ctx)
    subject, prim = ctx.subject, ctx.subject.obj
    if not _compat.has_abstract_eval(prim):
        yield _missing_abstract_eval(ctx)
        return
    rule = _compat.abstract_eval_rule(prim)
    location = rule_location(rule, subject.location)
    avals = [_compat.shaped_array(s.shape, s.dtype) for s in subject.specs]
    problem = signature_problem(rule, tuple(avals), subject.params) if _locate.is_user_code(rule) else None
    if problem:
        yield rules.WRONG_RULE_SIGNATURE.finding(
            evidence=f"{prim.name}'s abstract eval cannot be called as JAX calls it, `abstract_eval(*avals, **params)` "
            f"with {inputs_text(subject)}: {problem}.",
            fix=_params_fix(rule, subject.params, "abstract_eval"),
            location=location)
        return
    result = abstract_output(ctx)
    if result.problem == "raised":
        assert result.error is not None
        if removed_api(result.error):
            yield removed_api_finding(result.error, f"{prim.name}'s abstract eval",
                                      user_frame_location(result.error, rule) or location)
            return
        yield rules.ABSTRACT_EVAL_MISMATCH.finding(
            evidence=f"{prim.name}'s abstract eval raised {first_line(result.error)} for {inputs_text(subject)}; every "
            "jit, vmap and grad trace fails the same way.",
            fix="Make the abstract eval accept these shapes and return `ShapedArray(shape, dtype)` per output.",
            location=user_frame_location(result.error, rule) or location)
        return
    if result.problem == "foreign":
        return  # its library's own abstract values (`_shared.foreign_values`): the engine says so once
    if result.problem:
        yield _form_finding(ctx, result, location)
        return
    yield from _compare_with_impl(ctx, result, location)


def _missing_abstract_eval(ctx: Context) -> Finding:
    subject, prim, var = ctx.subject, ctx.subject.obj, prim_var(ctx.subject)
    out = example_output(ctx)
    observed = (f" For {inputs_text(subject)} the impl returns {avals_text(out.avals)}." if out.leaves is not None
                else "")
    if out.leaves is not None:
        names = _arg_names(ctx)
        grown: list[Any] = grown_shapes(ctx) or [None] * len(out.avals)
        shaped = [f"ShapedArray({shape_expr(s, subject, names, g)}, {_dtype_expr(d, subject, names)})"
                  for (s, d), g in zip(out.avals, grown)]
        body = f"({', '.join(shaped)}{',' if len(shaped) == 1 else ''})" if prim.multiple_results else shaped[0]
        args = ", ".join(names)
        fix = (f"Register one: `{var}.def_abstract_eval(lambda {args}, **params: {body})` (from jax.core import "
               "ShapedArray), computing the shapes from the inputs' for other sizes.")
    else:
        fix = f"Register one with `{var}.def_abstract_eval(...)`, returning a ShapedArray per output."
    return rules.MISSING_ABSTRACT_EVAL.finding(
        var=var,
        prim_name=prim.name,
        observed=observed,
        fix=fix,
        location=subject.location)


def _arg_names(ctx: Context) -> list[str]:
    impl = _compat.impl(ctx.subject.obj)
    n = len(ctx.subject.specs)
    try:
        if impl is None:
            raise TypeError("no impl")
        names = [p.name for p in inspect.signature(impl).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][:n]
    except (TypeError, ValueError):
        names = []
    return names if len(names) == n else [f"x{i}" for i in range(n)] if n > 1 else ["x"]


def _dtype_expr(dtype: np.dtype, subject: Subject, names: list[str]) -> str:
    for name, spec in zip(names, subject.specs):
        if spec.dtype == dtype:
            return f"{name}.dtype"
    return f"jnp.{np.dtype(dtype).name}"


def shape_expr(shape: tuple[int, ...], subject: Subject, names: list[str], grown: tuple[int, ...] | None = None
               ) -> str:
    """`shape` written in terms of the inputs' shapes when it is a simple slice of one (`x.shape[:-1]`), and the
    same slice also gives `grown`, the output's shape for inputs one larger in every dimension (so a constant
    shape that happens to match is not mistaken for one); otherwise the literal shape."""
    if grown is None:
        return repr(tuple(shape))
    for name, spec in zip(names, subject.specs):
        small, big = tuple(spec.shape), tuple(d + 1 for d in spec.shape)
        for text, cut in ((f"{name}.shape", slice(None)), (f"{name}.shape[:-1]", slice(None, -1)),
                          (f"{name}.shape[1:]", slice(1, None)), (f"{name}.shape[:1]", slice(None, 1))):
            if small[cut] == tuple(shape) and big[cut] == tuple(grown):
                return text
    return repr(tuple(shape))


def grown_shapes(ctx: Context) -> list[tuple[int, ...]] | None:
    """The impl's output shapes for inputs one larger in every dimension (None when it does not run on them)."""
    if not ctx.cache.grown_shapes_done:
        subject = ctx.subject
        result = None
        fn = reference_fn(subject)
        if fn is not None and subject.kind == "primitive" and runs_eagerly(subject):
            args = [np.zeros(tuple(d + 1 for d in s.shape), s.dtype) for s in subject.specs]
            ran = call_user(lambda: flat_outputs(subject, fn(*args)))
            # shapes the impl rejects: fall back to literal shapes
            result = [tuple(x.shape) for x in ran.value[0]] if ran.value is not None else None
        ctx.cache.grown_shapes, ctx.cache.grown_shapes_done = result, True
    return ctx.cache.grown_shapes


def _form_finding(ctx: Context, result: AbstractOutput, location: Location | None) -> Finding:
    prim = ctx.subject.obj
    raw = result.raw
    if result.problem == "structure":
        if prim.multiple_results:
            what = (f"{prim.name}.multiple_results is True but the abstract eval returned one "
                    f"{type(raw).__name__}, not a sequence")
            fix = "Return a tuple (or list) with one ShapedArray per output, even for a single output."
        else:
            what = (f"the abstract eval returned a {type(raw).__name__} of {len(raw)} but {prim.name}."
                    "multiple_results is False")
            fix = (f"Set `{prim_var(ctx.subject)}.multiple_results = True` if the primitive has several outputs, "
                   "otherwise return a single ShapedArray.")
        message = (f"{what}; JAX fails with `{prim.name}.abstract_eval() method should return a tuple or a list iff "
                   f"{prim.name}.multiple_results.` under every trace.")
    else:
        kinds = sorted({type(o).__name__ for o in (raw if isinstance(raw, (list, tuple)) else [raw])})
        message = (f"the abstract eval returned {'/'.join(kinds)} instead of `ShapedArray`; jit fails with a bare "
                   f"`AssertionError` (for {inputs_text(ctx.subject)}).")
        fix = "Return `jax.core.ShapedArray(shape, dtype)` (not an array, not a ShapeDtypeStruct)."
    return rules.ABSTRACT_EVAL_MISMATCH.finding(
        evidence=f"{prim.name}: {message}",
        fix=fix,
        location=location)


def _compare_with_impl(ctx: Context, result: AbstractOutput, location: Location | None) -> Iterator[Finding]:
    prim, subject = ctx.subject.obj, ctx.subject
    out = example_output(ctx)
    if out.leaves is None or out.via_jit or result.avals is None:
        return  # the impl check reports the failure; the jit reference is the abstract eval itself
    impl_mr = out.structure == "list"
    if impl_mr != bool(prim.multiple_results):
        yield rules.ABSTRACT_EVAL_MISMATCH.finding(
            evidence=f"{prim.name}'s impl returns "
                     f"{'a sequence of ' + str(len(out.leaves)) if impl_mr else 'one array'} but "
            f"{prim.name}.multiple_results is {bool(prim.multiple_results)}: eager calls return the impl's value "
            "unchanged, every trace plans with the other structure.",
            fix=f"Set `{prim_var(subject)}.multiple_results = True` and return one ShapedArray per output."
                 if impl_mr else "Return a tuple from the impl, or set multiple_results = False.",
            location=location)
        return
    if len(out.leaves) != len(result.avals):
        yield rules.ABSTRACT_EVAL_MISMATCH.finding(
            evidence=f"{prim.name}'s abstract eval gives {len(result.avals)} output(s) ({avals_text(result.avals)}) "
                     f"but the "
            f"impl returns {len(out.leaves)} ({avals_text(out.avals)}) for {inputs_text(subject)}.",
            fix=f"Return exactly {len(out.leaves)} ShapedArrays: "
                f"{_shaped_list(out.avals, subject, _arg_names(ctx), grown_shapes(ctx))}.",
            location=location)
        return
    bad = [k for k, (a, i) in enumerate(zip(result.avals, out.avals)) if a[0] != i[0] or a[1] != i[1]]
    if bad:
        parts = [f"output {k}: abstract eval says {aval_text(*result.avals[k])}, the impl returns "
                 f"{aval_text(*out.avals[k])}" for k in bad]
        yield rules.ABSTRACT_EVAL_MISMATCH.finding(
            evidence=f"{prim_var(subject)}'s abstract eval disagrees with its impl for {inputs_text(subject)}: "
            f"{'; '.join(parts)}. "
            "Eager calls silently use the impl's result; under jit lowering fails with an MLIR verifier error "
            "(`type of return operand 0 ... doesn't match function result type`).",
            fix="Return what the impl returns: " + _as_return(_shaped_list(
                [out.avals[k] for k in bad], subject, _arg_names(ctx), _pick(grown_shapes(ctx), bad)),
                len(out.avals) == 1 and not subject.obj.multiple_results) + ".",
            location=location)


def _pick(items: list[Any] | None, indices: list[int]) -> list[Any] | None:
    return [items[k] for k in indices] if items is not None and max(indices) < len(items) else None


def _as_return(shaped: str, whole: bool) -> str:
    """`return ShapedArray(...)` when it is the rule's whole result (a statement jaxdiag can verify as a fix)."""
    return f"`return {shaped.strip('`')}`" if whole and shaped.count("`ShapedArray(") == 1 else shaped


def _shaped_list(avals: list[tuple[tuple[int, ...], Any]], subject: Subject, names: list[str],
                 grown: list[Any] | None) -> str:
    grown = grown if grown is not None and len(grown) == len(avals) else [None] * len(avals)
    return ", ".join(f"`ShapedArray({shape_expr(s, subject, names, g)}, {_dtype_expr(d, subject, names)})`"
                     for (s, d), g in zip(avals, grown))


# ---------------------------------------------------------------------------------------------------------------
# JXR004 / JXR010: a CPU lowering that agrees with the impl
# ---------------------------------------------------------------------------------------------------------------


@check("registration-lowering", family="batching", kinds={"primitive"}, provides=("jit_broken",))
def lowering_check(ctx: Context) -> Iterator[Finding]:
    _user_prim(ctx)
    prim = ctx.subject.obj
    if not _compat.has_lowering(prim, "cpu"):
        from ._interpreted import lowered_by_own_interpreter

        interpreter = lowered_by_own_interpreter(prim, primitive_module(ctx.subject) or ctx.subject.module)
        if interpreter is not None:
            raise SkipCheck(f"{prim.name} has no MLIR lowering, and its package interprets jaxprs equation by "
                            f"equation itself ({interpreter.path}:{interpreter.line}): jax.jit never meets it")
        yield _missing_lowering(ctx)
        return
    yield from _jit_agrees(ctx)


def _missing_lowering(ctx: Context) -> Finding:
    prim, var = ctx.subject.obj, prim_var(ctx.subject)
    impl = _compat.impl(prim)
    impl_name = getattr(_locate.unwrap(impl), "__name__", "impl") if impl is not None else f"{prim.name}_impl"
    traceable = impl is not None and _traceable(impl, ctx)
    fix = (f"If the impl is written in jax.numpy (it traces), register it as the lowering: "
           f"`mlir.register_lowering({var}, mlir.lower_fun({impl_name}, "
           f"multiple_results={bool(prim.multiple_results)}))` (from jax.interpreters import mlir)."
           if traceable else
           f"Register a lowering with `mlir.register_lowering({var}, rule)` (for foreign code: `jax.ffi.ffi_call` "
           "or `jax.pure_callback` in a `mlir.lower_fun`).")
    return rules.MISSING_LOWERING.finding(
        var=var,
        prim_name=prim.name,
        fix=fix,
        location=ctx.subject.location)


def _traceable(fn: Callable, ctx: Context) -> bool:
    shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in ctx.subject.specs]
    return call_user(jax.make_jaxpr(lambda *a: fn(*a, **ctx.subject.params)), *shapes).ok


def _impl_repeats(ctx: Context, k: int, first: Any) -> bool:
    """Whether the eager impl, run again on the example, gives output k exactly as it did the first time."""
    subject = ctx.subject
    again = call_user(lambda: flat_outputs(subject, bind_fn(subject.obj, subject.params)(*ctx.example()))[0])
    if again.error is not None or k >= len(again.value):
        return True
    return bool(np.array_equal(np.asarray(again.value[k]), np.asarray(first), equal_nan=True))


def _jit_agrees(ctx: Context) -> Iterator[Finding]:
    """jit the primitive once and compare with the impl: catches a lowering written for another function."""
    subject, prim = ctx.subject, ctx.subject.obj
    out = example_output(ctx)
    absval = abstract_output(ctx)
    if out.leaves is None or out.via_jit or absval.avals is None:
        return  # nothing trusted to compare with, or the abstract eval check already explains the failure
    if [s for s, _ in absval.avals] != [s for s, _ in out.avals]:
        return  # JXR003 explains the verifier error jit would give
    rule = _compat.lowering_rule(prim)
    location = rule_location(rule, subject.location)
    ran = call_user(lambda: jax.block_until_ready(own_jitted(bind_fn(prim, subject.params))(*ctx.example())))
    if ran.error is not None:
        exc = ran.error
        ctx.cache.jit_broken = True
        yield rules.LOWERING_MISMATCH.finding(
            evidence=f"`jax.jit` of {prim_var(subject)} fails for {inputs_text(subject)} although the impl runs: "
            f"{first_line(exc)}.",
            fix="Make the lowering compute what the impl computes; if the impl is in jax.numpy, register "
                "`mlir.lower_fun(impl, multiple_results=...)` as the lowering.",
            location=location)
        return
    leaves, _ = flat_outputs(subject, ran.value)
    for k, (actual, expected) in enumerate(zip(leaves, out.leaves)):
        comparison = _numerics.compare(actual, expected)
        if not comparison.ok and not comparison.nonfinite:
            if not _impl_repeats(ctx, k, expected):
                raise SkipCheck(f"the impl of {prim.name} returns other values for output {k} when called again on "
                                "the same inputs (not a function of them: part of its output left unwritten, or "
                                "state kept between calls): jit was not compared with it", note=True,
                                location=subject.location)
            ctx.cache.jit_broken = True
            yield rules.LOWERING_MISMATCH.finding(
                evidence=f"`jax.jit` of {prim_var(subject)} differs from its eager impl for {inputs_text(subject)}, "
                         f"output {k}: "
                f"{comparison.describe()}. Jitted callers silently compute something else than eager ones.",
                fix="Lower the same computation as the impl: `mlir.register_lowering(prim, mlir.lower_fun(impl, "
                    "multiple_results=...))`, or fix whichever of the two is wrong.",
                location=location)
            return


# ---------------------------------------------------------------------------------------------------------------
# JXR005: a batching rule is registered
# ---------------------------------------------------------------------------------------------------------------


@check("registration-batching-rule", family="batching", kinds={"primitive"})
def batching_rule_check(ctx: Context) -> Iterator[Finding]:
    subject, prim = ctx.subject, ctx.subject.obj
    if _compat.has_batching_rule(prim):
        return
    if not is_user_primitive(subject):
        raise SkipCheck(f"JAX's {prim.name} has no batching rule")
    var = prim_var(subject)
    vectorizable = _elementwise(ctx)
    if vectorizable:
        helper = "defvectorized" if len(subject.specs) == 1 else "defbroadcasting"
        fix = (f"{var} is elementwise and its impl already handles a leading batch axis, so "
               f"`batching.{helper}({var})` is enough (from jax.interpreters import batching).")
    else:
        fix = "Register a rule; a correct (if slow) starting point:\n" + _rule_skeleton(ctx)
    # `check` cannot know whether the primitive is ever vmapped (a warning); `batching` was asked to vmap it
    missing = rules.MISSING_BATCHING_RULE if ctx.options.command == "check" else rules.VMAP_WITHOUT_BATCHING_RULE
    yield missing.finding(
        var=var,
        prim_name=prim.name,
        fix=fix,
        location=subject.location)


def _elementwise(ctx: Context) -> bool:
    """Same-shape inputs and output, the impl accepts a stacked batch, and it commutes with a permutation."""
    subject = ctx.subject
    out = example_output(ctx)
    shapes = {s.shape for s in subject.specs}
    if (subject.obj.multiple_results or out.leaves is None or out.via_jit or len(out.leaves) != 1
            or len(shapes) != 1 or out.leaves[0].shape != next(iter(shapes)) or not out.leaves[0].ndim):
        return False
    example = ctx.example()
    rng = np.random.default_rng(7)
    other = [draw(s, rng, subject.domain) for s in subject.specs]
    perm = rng.permutation(out.leaves[0].size)
    calls = call_user(lambda: [np.asarray(subject.call(*args)) for args in (
        other, [np.stack([a, b]) for a, b in zip(example, other)],
        [np.asarray(a).reshape(-1)[perm].reshape(a.shape) for a in example])])
    if calls.value is None:
        return False
    second, stacked, permuted = calls.value
    expected_perm = out.leaves[0].reshape(-1)[perm].reshape(out.leaves[0].shape)
    return (_numerics.compare(stacked, np.stack([out.leaves[0], second])).ok
            and _numerics.compare(permuted, expected_perm).ok)


def _rule_skeleton(ctx: Context) -> str:
    prim, var = ctx.subject.obj, prim_var(ctx.subject)
    n = len(ctx.subject.specs)
    names = _arg_names(ctx)
    dims = [f"b{name}" for name in names]
    mr = bool(prim.multiple_results)
    lines = [
        f"def {prim.name}_batching(batched_args, batch_dims, **params):",
        f"    {', '.join(names)}{',' if n == 1 else ''} = batched_args",
        f"    {', '.join(dims)}{',' if n == 1 else ''} = batch_dims",
        "    size = next(a.shape[d] for a, d in zip(batched_args, batch_dims) if d is not None)",
        *[f"    {x} = batching.bdim_at_front({x}, {d}, size)  # moves the batch axis to 0; broadcasts if None"
          for x, d in zip(names, dims)],
        "    # one example at a time (needs an abstract eval and a lowering); replace with a vectorised version",
        f"    out = jax.lax.map(lambda xs: {var}.bind(*xs, **params), ({', '.join(names)}{',' if n == 1 else ''}))",
        f"    return out, {'[0] * len(out)' if mr else '0'}",
        f"batching.primitive_batchers[{var}] = {prim.name}_batching",
    ]
    return "\n".join(lines)


CHECKS = [impl_check, abstract_eval_check, lowering_check, batching_rule_check]
