"""ffi_call / pure_callback `vmap_method` checks (JXB020-JXB022).

A foreign kernel has no batching rule: the `vmap_method` the user declares tells JAX how to batch it, and JAX
trusts it. `"expand_dims"` and `"broadcast_all"` hand the kernel one buffer with the batch axis in front; a kernel
that treats the whole buffer as one example silently mixes examples. This check reads each
call's `vmap_method` and `target_name` from the jaxpr, runs the function under vmap against the per-example loop,
and, on a mismatch, re-runs with only that call's method changed to prove which call is at fault and that
`"sequential"` fixes it. The jaxpr is re-evaluated with rewritten parameters (`_compat.with_vmap_methods`), so the
user's code is never modified.
"""

from __future__ import annotations

import ast
import re
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import jax
import numpy as np

from .. import _compat
from .._core import _locate
from .._loading import _numerics
from .. import _rules as rules
from .._core._report import Finding, Location
from ._base import Context, SkipCheck, check
from .._harness import call_user
from .._harness.tracing import trace_function
from ._vmap_harness import Reference, Variant, first_line, loop_variants, vmapped

# What each method hands the kernel under vmap (B is the batch size), for messages.
HANDS = {
    "expand_dims": "batched operands with the batch axis in front, (B, ...), and unbatched ones with a size-1 axis "
                   "in front, (1, ...)",
    "broadcast_all": "every operand materialised with the batch axis in front, (B, ...)",
    "legacy_vectorized": "batched operands with the batch axis in front, (B, ...), and unbatched ones unchanged",
}


def choices(noun: str) -> str:
    """The vmap_method choices, explained for a kernel or a callback."""
    return (f"'sequential' (one {noun} call per example in a loop: always correct, slowest), 'expand_dims' (one "
            "call; batched operands get the batch axis in front, unbatched ones a leading 1), 'broadcast_all' (one "
            "call; every operand gets the full batch axis in front)")


@dataclass(frozen=True)
class ForeignCall:
    """One `ffi_call` / `pure_callback` site: every equation it produced, its target and declared method."""

    primitive: str
    target: str
    vmap_method: str | None
    location: Location | None
    eqns: tuple[Any, ...] = field(compare=False)

    def describe(self) -> str:
        name = f"'{self.target}'" if self.primitive == "ffi_call" else self.target
        return f"`{self.primitive}({name})`"

    @property
    def noun(self) -> str:
        return "kernel" if self.primitive == "ffi_call" else "callback"

    @property
    def n_operands(self) -> int:
        return len(self.eqns[0].invars)

    def where(self) -> str:
        return f" at {self.location}" if self.location else ""

    def owns(self, eqn: Any) -> bool:
        return any(eqn is e for e in self.eqns)


def find_calls(closed: Any, fallback: Location | None) -> list[ForeignCall]:
    """The foreign calls in the jaxpr (nested jaxprs included), one per source line, target and method; not those
    inside a custom_vmap, which its own rule batches (`jaxdiag` checks that rule as the custom_vmap it is)."""
    groups: dict[tuple, list[Any]] = {}
    ruled = _compat.batched_by_custom_rule(closed)
    for eqn in _compat.iter_eqns(closed):
        if not _compat.is_foreign_call(eqn) or id(eqn) in ruled:
            continue
        where = _compat.eqn_source_line(eqn)
        function = _compat.eqn_source_function(eqn) or eqn.primitive.name
        location = Location(_locate.relative_path(where[0]), where[1], function) if where else fallback
        key = (eqn.primitive.name, _compat.foreign_call_target(eqn), _compat.vmap_method_of(eqn), location)
        groups.setdefault(key, []).append(eqn)
    return [ForeignCall(name, target, method, location, eqns=tuple(eqns))
            for (name, target, method, location), eqns in groups.items()]


# ---------------------------------------------------------------------------------------------------------------
# Running the function with chosen vmap_methods against the per-example loop
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Failure:
    """How vmap with one call's method disagreed with the loop."""

    variant: Variant
    observed: str  # the comparison or the exception
    handed: list[str]  # the operand types the kernel received under vmap


class Runner:
    """Evaluates the traced function with rewritten vmap_methods; caches inputs and loop references."""

    def __init__(self, ctx: Context, closed: Any):
        self.ctx = ctx
        self.closed = closed
        out_shapes = [tuple(v.aval.shape) for v in closed.jaxpr.outvars if hasattr(v.aval, "shape")]
        batch = ctx.batch_size(out_shapes)
        outer = ctx.batch_size(out_shapes + [(batch,)])
        self.variants = loop_variants(len(ctx.specs), batch, outer, ctx.options.in_axes, batch_one=False)
        self._references: dict[tuple[int, ...], Reference] = {}

    def _fn(self, call: ForeignCall, method: str) -> Callable[..., list]:
        """The function with `call` at `method` and every other foreign call sequential (always correct)."""
        rewritten = _compat.with_vmap_methods(self.closed, lambda e: method if call.owns(e) else "sequential")
        return _compat.jaxpr_as_fun(rewritten)

    def _reference(self, variant: Variant, fn: Callable) -> Reference:
        """Examples drawn once per batch shape; their loop does not depend on the vmap_methods (no vmap in it)."""
        key = variant.lead
        if key not in self._references:
            stacked = [self.ctx.draw(s, key) for s in self.ctx.specs]
            self._references[key] = Reference.stacked(self.ctx.subject, fn, stacked, variant)
        return self._references[key]

    def failure(self, call: ForeignCall, method: str, only: Sequence[Variant] = ()) -> Failure | None:
        """The first variant where vmap with `call` at `method` differs from (or fails unlike) the loop."""
        fn = self._fn(call, method)
        for variant in only or self.variants:
            reference = self._reference(variant, fn)
            want = reference.expected(variant)
            if isinstance(want, BaseException):
                exc = want
                raise SkipCheck(f"the function fails on one example ({type(exc).__name__}: {exc})",
                                findings=_cannot_run_here(self.ctx, exc)) from exc
            args = reference.batched_args(variant)
            observed = _observe(vmapped(fn, variant), args, want)
            if observed and not self._repeats(variant):
                name = self.ctx.subject.name
                raise SkipCheck(
                    f"{name} returns other values when called again on the same examples (a callback keeping "
                    "state between calls, which `pure_callback` assumes it does not): no vmap can be compared with "
                    f"a per-example loop, so its batching was not judged ({variant.phrase(name)} {observed})",
                    note=True, location=call.location)
            if observed:
                return Failure(variant, observed, _handed(vmapped(fn, variant), args, call, method))
        return None

    def _repeats(self, variant: Variant) -> bool:
        """Whether the per-example loop gives the values it gave before when run once more on the same examples."""
        return self._reference(variant, _compat.jaxpr_as_fun(self.closed)).repeats(variant)

    def reached_under_vmap(self) -> bool:
        """True when vmap of the function as written (no vmap_method rewritten) fails, warns about a missing
        vmap_method, or differs from the loop for some in_axes: a callback whose operands are unbatched at the call
        site is never batched, so vmap never asks for its vmap_method."""
        fn = _compat.jaxpr_as_fun(self.closed)
        for variant in self.variants:
            reference = self._reference(variant, fn)
            want = reference.expected(variant)
            if isinstance(want, BaseException):  # the function fails on one example: the other checks report that
                return True
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                observed = _observe(vmapped(fn, variant), reference.batched_args(variant), want)
            if observed or any("vmap_method" in str(w.message) for w in caught):
                return True
        return False


def _observe(fn: Callable, args: list[np.ndarray], want: list[np.ndarray]) -> str | None:
    """None when vmap matches the loop, else how it does not (a clause following the variant's description)."""
    ran = call_user(lambda: jax.block_until_ready(fn(*args)))
    if ran.error is not None:  # the kernel rejected the batched buffers (e.g. mismatched element counts)
        return f"raises {first_line(ran.error)}, while calling the function on each example works"
    got = ran.value
    for g, w in zip(got, want):
        comparison = _numerics.compare(g, w)
        if not (comparison.ok or comparison.nonfinite):
            return f"differs from calling the function on each example: {comparison.describe()}"
    return None


def _handed(fn: Callable, args: list[np.ndarray], call: ForeignCall, method: str) -> list[str]:
    """The operand types the batched kernel call receives: read from the batched jaxpr."""
    traced = call_user(jax.make_jaxpr(fn), *args)
    if traced.error is not None:
        return []
    batched = traced.value
    for eqn in _compat.iter_eqns(batched):
        if (_compat.is_foreign_call(eqn) and _compat.foreign_call_target(eqn) == call.target
                and _compat.vmap_method_of(eqn) == method):
            return [v.aval.str_short(short_dtypes=True) for v in eqn.invars if hasattr(v.aval, "str_short")]
    return []


# ---------------------------------------------------------------------------------------------------------------
# Findings
# ---------------------------------------------------------------------------------------------------------------


def _which_methods_work(runner: Runner, call: ForeignCall) -> str:
    """A sentence saying which single-call methods match the loop for this kernel."""
    ok = [m for m in ("broadcast_all", "expand_dims") if runner.failure(call, m) is None]
    if len(ok) == 2:
        return f"jaxdiag tried both on {call.target}: 'broadcast_all' and 'expand_dims' match the per-example loop."
    if ok:
        other = "expand_dims" if ok[0] == "broadcast_all" else "broadcast_all"
        return f"jaxdiag tried them on {call.target}: '{ok[0]}' matches the per-example loop, '{other}' does not."
    return (f"jaxdiag tried them on {call.target}: neither 'broadcast_all' nor 'expand_dims' matches the "
            f"per-example loop (the {call.noun} is not batch-aware), so use 'sequential'.")


def _best_method(runner: Runner, call: ForeignCall) -> str:
    """The single-call method that matches the per-example loop (one call is faster), else 'sequential'."""
    return next((m for m in ("expand_dims", "broadcast_all") if runner.failure(call, m) is None), "sequential")


def missing_method(runner: Runner, call: ForeignCall) -> Finding:
    raises = _compat.vmap_method_none_raises()
    consequence = (f"`jax.vmap` of the function raises `NotImplementedError: vmap is only supported for the "
                   f"{call.primitive} primitive when vmap_method is one of ...`" if raises else
                   f"this JAX ({_compat.JAX_VERSION}) still falls back to a sequential loop with a "
                   "DeprecationWarning; newer JAX raises NotImplementedError under vmap")
    # raising releases: vmap fails (an error); jax 0.5 still falls back to a deprecated sequential loop (a warning)
    rule = rules.FFI_VMAP_METHOD_MISSING if raises else rules.FFI_VMAP_METHOD_FALLBACK
    return rule.finding(
        call_describe=call.describe(),
        call_where=call.where(),
        consequence=consequence,
        primitive=call.primitive,
        line=_line(call),
        choices=choices(call.noun),
        which_methods_work=f"{_which_methods_work(runner, call)} Here: "
                           f"`vmap_method=\"{_best_method(runner, call)}\"`.",
        location=call.location)


def legacy_method(runner: Runner, call: ForeignCall) -> Finding:
    advice = (f"`vmap_method=\"expand_dims\"`, which jaxdiag checked matches the per-example loop for this "
              f"{call.noun}" if runner.failure(call, "expand_dims") is None else
              "`vmap_method=\"sequential\"`: jaxdiag checked that 'expand_dims' does not match the per-example loop "
              "here")
    return rules.FFI_LEGACY_VECTORIZED.finding(
        call_describe=call.describe(),
        call_where=call.where(),
        noun=call.noun,
        handed_what=HANDS['legacy_vectorized'],
        line=_line(call),
        advice=advice,
        location=call.location)


def _line(call: ForeignCall) -> str:
    return f"line {call.location.line}" if call.location else f"the {call.primitive} call"


def not_batch_aware(call: ForeignCall, failure: Failure, fn_name: str) -> Finding:
    method = str(call.vmap_method)
    handed = f" (here {', '.join(failure.handed)})" if failure.handed else ""
    broadcast = (", and broadcast operands that arrive with a leading 1"
                 if method == "expand_dims" and call.n_operands > 1 else "")
    return rules.FFI_KERNEL_NOT_BATCH_AWARE.finding(
        call_describe=call.describe(),
        call_where=call.where(),
        method=method,
        noun=call.noun,
        variant_describe=failure.variant.phrase(fn_name),
        observed=failure.observed,
        buffers=HANDS.get(method, 'batched buffers'),
        handed=handed,
        line=_line(call),
        target=call.target,
        broadcast=broadcast,
        location=call.location)


# a host callback importing a module that is not installed: JAX reports it inside its own runtime error
_NO_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")


def _cannot_run_here(ctx: Context, exc: BaseException) -> list[Finding]:
    """Why the example cannot run on this machine, as the target's note: a JXN011 when the callback needs a module
    that is not installed, a JXN013 when the foreign call has no handler for this platform (a GPU-only FFI target
    on a CPU machine); the target is then unverified for that reason, not for want of a check. [] otherwise."""
    found = _NO_MODULE.search(str(exc))
    if found is not None:
        return [rules.DEPENDENCY_MISSING.finding(error=found.group(0), dependency=found.group(1).partition(".")[0],
                                                 what=ctx.subject.label, location=ctx.subject.location)]
    if _compat.is_platform_error(exc):
        from ._abstract import values_not_compared

        reason = f"running it on {jax.default_backend()} raised {first_line(exc)}"
        return [values_not_compared(ctx.subject, reason, [])]
    return []


@check("ffi-vmap-method", family="batching", kinds={"function"})
def ffi_vmap_method(ctx: Context) -> Iterator[Finding]:
    """Read each foreign call's vmap_method and prove, against the per-example loop, that it is right."""
    traced = trace_function(ctx.subject, ctx.cache)
    if traced.value is None:
        exc = traced.error
        raise SkipCheck(f"the function could not be traced ({type(exc).__name__}: {exc})") from exc
    closed = traced.value.jaxpr
    calls = find_calls(closed, ctx.subject.location)
    if not calls:
        raise SkipCheck("no ffi_call or pure_callback in the function")
    if not ctx.specs:
        raise SkipCheck("the function takes no array arguments: there is nothing to vmap over")
    runner = Runner(ctx, closed)
    for call in calls:
        yield from _check_call(runner, call)
    yield from _elsewhere(runner, calls[0])


def _elsewhere(runner: Runner, call: ForeignCall) -> Iterator[Finding]:
    """The whole function under vmap with every foreign call 'sequential' (always correct for the calls
    themselves): a mismatch that persists is a batching defect elsewhere in the function (JXB005)."""
    failure = runner.failure(call, "sequential")
    if failure is None:
        return
    name = runner.ctx.subject.name
    yield rules.BATCH_RESULT_MISMATCH.finding(
        evidence=f"{failure.variant.describe(name)} {failure.observed}, even with every ffi_call/pure_callback in "
                 f"{name} set to vmap_method='sequential' (one call per example, always correct): the defect is "
                 f"elsewhere in {name}, not in its foreign calls.",
        fix=f"Find the operation in {name} that mixes examples (a reduction or reshape over the batch axis, a "
            "user primitive's batching rule); `jaxdiag batching` on its nested primitives shows which.",
        location=runner.ctx.subject.location)


def _check_call(runner: Runner, call: ForeignCall) -> Iterator[Finding]:
    method = call.vmap_method
    if method is None:
        dispatcher = _batched_by_custom_vmap(runner.ctx.subject)
        if dispatcher:  # the package batches it itself: its custom_vmap's rule is checked as a target of its own
            name = runner.ctx.subject.name
            yield rules.CHECK_SKIPPED.finding(
                check=runner.ctx.check_name, location=call.location,
                reason=f"{call.describe()} has no vmap_method, but {name} is the unbatched half of the custom_vmap "
                       f"{dispatcher} of its module, whose rule batches it: `jax.vmap({name})` directly is outside "
                       f"its design ({rules.FFI_VMAP_METHOD_MISSING.code} not reported)")
        elif runner.reached_under_vmap():  # proven by running vmap, not read from the declaration
            yield missing_method(runner, call)
        return
    if method == "legacy_vectorized":
        yield legacy_method(runner, call)
    if method in _compat.SEQUENTIAL_VMAP_METHODS:
        return  # one kernel call per example: the kernel never sees a batch
    failure = runner.failure(call, method)
    # Blame the kernel only when 'sequential' fixes the same variant; otherwise the difference comes from elsewhere.
    if failure and runner.failure(call, "sequential", only=[failure.variant]) is None:
        yield not_batch_aware(call, failure, runner.ctx.subject.name)


def _batched_by_custom_vmap(subject: Any) -> str | None:
    """The function of the subject's module made a custom_vmap (decorated by it, at module level or inside a
    factory) whose primal calls the subject by name, or None: `vmap` of the subject reaches users through it."""
    from .._harness.source import called_name, module_tree

    name = subject.label.rpartition(":")[2].split(".")[-1]
    tree = module_tree(sys.modules.get(subject.module or "")) if name else None
    if tree is None:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name == name:
            continue
        decorated = any(called_name(d.func if isinstance(d, ast.Call) else d) == "custom_vmap"
                        for d in node.decorator_list)
        if decorated and any(isinstance(c, ast.Call) and called_name(c.func) == name for c in ast.walk(node)):
            return node.name
    return None


CHECKS = [ffi_vmap_method]
