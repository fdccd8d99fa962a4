"""The spy on batching rules: it sees what a rule returns before JAX does and validates it.

`Spy` records every call of a spied rule as a `RuleCall`; `validate` checks the return (a pair; dims that are ints
or None, in range, on an axis of the vmap size; shapes and dtypes that match one example) and records a `Problem`.
A malformed return raises the private `_Abort`, so vmap stops before JAX trips over it and the user gets the rule's
defect instead of JAX's `IndexError` from deep inside vmap.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from ... import _compat
from ..._core import _locate
from ... import _rules as rules
from .._base import Subject
from ..._harness import Signal, call_user, jaxdiag_code
from .._shared import aval_text, params_key, signature_problem
from .._vmap_harness import Aval, Variant
from .._vmap_harness import axes_repr as _axes_repr
from ..._harness.source import return_nodes

if TYPE_CHECKING:
    from ..._rules import _fields


class _Abort(Signal):
    """Raised inside a spied rule once its problem is recorded, so vmap stops before JAX trips over it."""

    def __init__(self, call: "RuleCall"):
        super().__init__(f"jaxdiag stopped vmap at {call.prim}'s batching rule")
        self.call = call


# ---------------------------------------------------------------------------------------------------------------
# The spy: validate every rule return before JAX sees it
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Problem:
    rule: rules.Rule[_fields.EvidenceFix]  # every rule a spied return can break takes {evidence} and {fix}
    output: int | None
    text: str


@dataclass
class RuleCall:
    """One call vmap made into a spied batching rule, with what it returned and what was wrong with it."""

    prim: Any
    params: dict[str, Any]
    in_shapes: list[tuple[int, ...]]
    in_dims: tuple
    size: int | None
    variant: Variant
    top: bool  # the subject's own primitive at the variant's only vmap level
    expected: list[Aval] | None = None
    out_shapes: list[tuple[int, ...]] | None = None
    out_dims: list[Any] | None = None
    result: Any = None
    problems: list[Problem] = field(default_factory=list)
    error: BaseException | None = None
    return_line: int | None = None
    # the rule called again on other operands (same dims and params), kept for a top call on concrete operands:
    # a probe such as "is the one value it returns the same with the batch permuted?"
    rerun: Callable[[tuple], Any] | None = field(default=None, repr=False, compare=False)
    operands: tuple | None = field(default=None, repr=False, compare=False)

    def describe(self) -> str:
        ins = ", ".join(str(s) for s in self.in_shapes)
        text = f"the rule got batch_dims {_axes_repr(tuple(self.in_dims))} for inputs of shape {ins}"
        if self.out_dims is not None and self.out_shapes is not None:
            outs = ", ".join(str(s) for s in self.out_shapes)
            dims = self.out_dims[0] if len(self.out_dims) == 1 and not self.prim.multiple_results else self.out_dims
            text += f" and returned dims {_axes_repr(dims)} for outputs of shape {outs}"
        return text


class Spy:
    """Handlers for `_compat.intercept_batching_rules`: record and validate every call."""

    def __init__(self, subject: Subject, expected_at_subject: list[Aval] | None,
                 oracle: bool = False, trust_abstract_eval: bool = True):
        self.subject = subject
        self.expected_at_subject = expected_at_subject
        self.oracle = oracle
        self.trust_abstract_eval = trust_abstract_eval
        self.calls: list[RuleCall] = []
        self.variant: Variant | None = None
        self._expected: dict[tuple, list[Aval] | None] = {}
        self._rules: dict[Any, tuple[Callable | None, int]] = {}

    def handlers(self, prims: Sequence[Any]) -> dict[Any, Callable]:
        # read the user's rules now: while intercepted, the registry holds the spy
        for prim in prims:
            self._rules[prim] = (_compat.batching_rule(prim), _compat.batching_rule_leading_args(prim))
        return {prim: self._handler(prim) for prim in prims}

    def _handler(self, prim: Any) -> Callable:
        def handle(vals: tuple, dims: tuple, params: dict, size: int | None, call: Callable[..., Any]) -> Any:
            return self.handle(prim, vals, dims, params, size, call)

        return handle

    def handle(self, prim: Any, vals: tuple, dims: tuple, params: dict, size: int | None,
               call: Callable[..., Any]) -> Any:
        with jaxdiag_code("the batching spy, before the rule"):
            assert self.variant is not None
            record = RuleCall(prim, params, [tuple(np.shape(v)) for v in vals], dims, size, self.variant,
                              top=self._is_top(prim, params, vals, dims))
            if record.top and not any(_compat.is_tracer(v) for v in vals):
                record.rerun, record.operands = call, vals
            self.calls.append(record)
        if self.oracle:  # binds the primitives one example at a time: what they raise is the user's
            return _loop_rule(prim, vals, dims, params, size)
        with jaxdiag_code("the batching spy, before the rule"):
            problem = self._signature(prim, vals, dims, params)
            watch = _ReturnWatch(self._rules[prim][0])
        if problem:
            record.problems.append(problem)
            raise _Abort(record)
        with watch.watching():
            returned = call_user(call)  # an inner spied rule's _Abort passes through the boundary
        if returned.error is not None:
            record.error = returned.error
            raise _Abort(record) from returned.error
        result = returned.value
        with jaxdiag_code("validating a batching rule's return"):
            record.result = result
            record.expected = self.expected(prim, params, vals, dims)
            record.problems = validate(prim, result, size, record.expected, record)
        if record.problems:
            record.return_line = watch.line
            raise _Abort(record)
        return result

    def _is_top(self, prim: Any, params: dict, vals: tuple, dims: tuple) -> bool:
        subject = self.subject
        if subject.kind != "primitive" or prim is not subject.obj or not self.variant.single_level:  # type: ignore
            return False
        return params_key(params) == params_key(subject.params) and _per_example(vals, dims) == [
            (s.shape, s.dtype) for s in subject.specs]

    def _signature(self, prim: Any, vals: tuple, dims: tuple, params: dict) -> Problem | None:
        rule, leading = self._rules[prim]
        if rule is None or not _locate.is_user_code(rule):
            return None
        # each registry's own calling convention: (vals, dims), (axis_data, vals, dims) or
        # (axis_size, axis_name, trace_type, vals, dims)
        args = (*([object()] * leading), list(vals), list(dims))
        text = signature_problem(rule, args, params)
        if text is None:
            return None
        return Problem(rules.WRONG_RULE_SIGNATURE, None, text)

    def expected(self, prim: Any, params: dict, vals: tuple, dims: tuple) -> list[Aval] | None:
        """One example's output avals for this call's inputs: the impl's at the subject's own shapes, else the
        abstract eval's, else the impl traced with eval_shape; None when nothing can tell."""
        per = _per_example(vals, dims)
        key = (id(prim), params_key(params), tuple(per))
        if key in self._expected:
            return self._expected[key]
        subject = self.subject
        if (subject.kind == "primitive" and prim is subject.obj and params_key(params) == params_key(subject.params)
                and per == [(s.shape, s.dtype) for s in subject.specs]):
            result = self.expected_at_subject
        else:
            trust = self.trust_abstract_eval or subject.kind != "primitive" or prim is not subject.obj
            result = _avals_for(prim, params, per, trust)
        self._expected[key] = result
        return result


def _per_example(vals: tuple, dims: tuple) -> list[Aval]:
    out = []
    for v, d in zip(vals, dims):
        shape = tuple(np.shape(v))
        if type(d) is int and 0 <= d < len(shape):
            shape = shape[:d] + shape[d + 1:]
        out.append((shape, np.dtype(_dtype_of(v))))
    return out


def _dtype_of(x: Any) -> Any:
    dtype = getattr(x, "dtype", None)
    return dtype if dtype is not None else np.asarray(x).dtype


def _avals_for(prim: Any, params: dict, per: list[Aval], trust_abstract_eval: bool = True) -> list[Aval] | None:
    avals = [_compat.shaped_array(s, d) for s, d in per]
    if trust_abstract_eval and _compat.has_abstract_eval(prim):
        raw = call_user(_compat.abstract_eval_output, prim, avals, params)
    else:
        impl = _compat.impl(prim)
        if impl is None:
            return None
        shapes = [jax.ShapeDtypeStruct(s, d) for s, d in per]
        raw = call_user(jax.eval_shape, lambda *a: impl(*a, **params), *shapes)
    if raw.error is not None:
        return None
    outs = list(raw.value) if isinstance(raw.value, (list, tuple)) else [raw.value]
    if not all(hasattr(o, "shape") and hasattr(o, "dtype") for o in outs):
        return None  # an abstract eval that returns something else: the abstract-eval check reports it
    try:
        return [(tuple(o.shape), np.dtype(o.dtype)) for o in outs]
    except TypeError:  # extended dtypes (PRNG keys), symbolic shapes: nothing to compare with
        return None


def _loop_rule(prim: Any, vals: tuple, dims: tuple, params: dict, size: int | None) -> Any:
    """A correct batching rule for any primitive: bind it on one example at a time and stack (used to prove that
    a function's failure comes from its primitives' rules). Works on tracers too, so under jit and nested vmap."""
    if size is None or all(d is None for d in dims):
        out = prim.bind(*vals, **params)
        return (out, [None] * len(out)) if prim.multiple_results else (out, None)
    per = []
    for b in range(size):
        args = [v if d is None else jax.lax.index_in_dim(v, b, axis=d, keepdims=False) for v, d in zip(vals, dims)]
        per.append(prim.bind(*args, **params))
    if prim.multiple_results:
        outs = [jnp.stack([p[k] for p in per]) for k in range(len(per[0]))]
        return outs, [0] * len(outs)
    return jnp.stack(per), 0


def validate(prim: Any, result: Any, size: int | None, expected: list[Aval] | None, record: RuleCall
             ) -> list[Problem]:
    """Everything wrong with a rule's return, in the order JAX would trip over it."""
    multiple = bool(prim.multiple_results)
    n = len(expected) if expected is not None else None
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        rule = rules.MULTIPLE_RESULTS_STRUCTURE if multiple else rules.RULE_RETURN_NOT_PAIR
        return [Problem(rule, None, _not_pair_text(result, multiple))]
    outs, dims = result
    if multiple:
        if isinstance(outs, (list, tuple)) and not any(isinstance(o, (list, tuple)) for o in outs):
            record.out_shapes = [tuple(np.shape(o)) for o in outs]
        problem = _sequence_problem(outs, dims, n)
        if problem:
            return [problem]
        outs, dims = list(outs), list(dims)
    else:
        if isinstance(outs, (list, tuple)):
            return [Problem(rules.RULE_RETURN_NOT_PAIR, None,
                            f"returned the output as a {type(outs).__name__} of {len(outs)} (`([out], [d])`): a "
                            "single-result primitive returns the array itself, `(out, d)` (JAX: `Argument "
                            "'[...]' of type <class 'list'> is not a valid JAX type`)")]
        if isinstance(dims, (list, tuple)) and len(dims) == 1 and type(dims[0]) in (int, type(None)):
            record.out_shapes, record.out_dims = [tuple(np.shape(outs))], [dims]
            return [Problem(rules.BATCH_DIM_WRONG_TYPE, 0,
                            f"returned the dim as {_axes_repr(dims)} (type {type(dims).__name__}), not an int or None "
                            "(JAX: `batch dim should be int or None`)")]
        outs, dims = [outs], [dims]
    record.out_shapes = [tuple(np.shape(o)) for o in outs]
    record.out_dims = list(dims)
    problems = []
    for k, (out, d) in enumerate(zip(outs, dims)):
        label = f"output {k}" if multiple else "the output"
        problem = _output_problem(k, label, out, d, size, expected[k] if expected is not None else None)
        if problem:
            problems.append(problem)
    return problems


def _not_pair_text(result: Any, multiple: bool) -> str:
    if hasattr(result, "shape") and not isinstance(result, (tuple, list)):
        shape = tuple(np.shape(result))
        silent = " (and silently wrong when its first axis has 2 entries)" if shape[:1] == (2,) else ""
        return (f"returned only an array of shape {shape}, without the batch dim: JAX unpacks the array itself as "
                f"`(out, dim)`, failing with `too many values to unpack` or `batch dim should be int or None`{silent}")
    what = f"a {type(result).__name__}" + (f" of {len(result)}" if isinstance(result, (tuple, list)) else "")
    pair = "(outputs, dims)" if multiple else "(out, dim)"
    return f"returned {what} instead of the pair `{pair}`"


def _sequence_problem(outs: Any, dims: Any, n: int | None) -> Problem | None:
    rule = rules.MULTIPLE_RESULTS_STRUCTURE
    if not isinstance(outs, (list, tuple)):
        shape = tuple(np.shape(outs)) if hasattr(outs, "shape") else None
        silent = ""
        if shape and n is not None and shape[0] == n:
            silent = f"; its first axis has {n} entries, so JAX would silently take its rows as the {n} outputs"
        what = f"an array of shape {shape}" if shape is not None else f"a {type(outs).__name__}"
        return Problem(rule, None, f"returned the outputs as {what}, not a list or tuple of "
                                   f"{n if n is not None else 'the'} outputs{silent}")
    if not isinstance(dims, (list, tuple)):
        return Problem(rule, None, f"returned the dims as {dims!r} (type {type(dims).__name__}), not a list or tuple "
                                   f"with one dim per output (JAX: `TypeError: '{type(dims).__name__}' object is not "
                                   "iterable`)")
    if len(outs) != len(dims) or (n is not None and len(outs) != n):
        want = f"; one example has {n} outputs" if n is not None else ""
        return Problem(rule, None, f"returned {len(outs)} outputs and {len(dims)} dims{want} (JAX: `safe_zip() "
                                   f"argument 1 has length {len(dims)} but argument 0 has length {len(outs)}`)")
    for out in outs:
        if isinstance(out, (list, tuple)):
            return Problem(rule, None, f"an output is a {type(out).__name__}, not an array: return a flat "
                                       "sequence of arrays")
    return None


def _title(label: str) -> str:
    return label[:1].upper() + label[1:]


def _output_problem(k: int, label: str, out: Any, d: Any, size: int | None, expected: Aval | None
                    ) -> Problem | None:
    shape = tuple(np.shape(out))
    if d is not None and type(d) is not int:
        hint = " (the whole batch_dims tuple)" if isinstance(d, (tuple, list)) else ""
        return Problem(rules.BATCH_DIM_WRONG_TYPE, k,
                       f"The dim for {label} is {d!r}{hint}, a {type(d).__module__}.{type(d).__name__}, not a "
                       "Python int or None (JAX checks `type(d) is int` and fails with `batch dim should be int or "
                       "None`)".replace("builtins.", ""))
    if d is not None and not 0 <= d < len(shape):
        valid = (f"0..{len(shape) - 1} or None" if len(shape) > 1 else "0 or None" if shape
                 else "only None (the output is a scalar)")
        jax_says = "`AssertionError`" if d < 0 else "`IndexError: tuple index out of range`"
        return Problem(rules.BATCH_DIM_OUT_OF_RANGE, k,
                       f"The dim for {label} is {d}, but it has shape {shape} (rank {len(shape)}): valid "
                       f"dims are {valid}; JAX fails inside vmap with {jax_says}")
    if d is not None and size is not None and shape[d] != size:
        moved = (shape[d],) + shape[:d] + shape[d + 1:]
        per = expected[0] if expected is not None else shape[:d] + shape[d + 1:]
        return Problem(rules.BATCH_AXIS_SIZE_MISMATCH, k,
                       f"{_title(label)} has shape {shape}, and its size at the returned dim {d} is {shape[d]}, "
                       f"not the batch size {size}: vmap silently returns shape {moved} instead of "
                       f"{(size,) + tuple(per)}")
    if expected is None:
        return None
    removed = shape if d is None else shape[:d] + shape[d + 1:]
    dtype = np.dtype(_dtype_of(out))
    if removed != expected[0] or dtype != expected[1]:
        where = "" if d is None else f" without its batch dim {d}"
        return Problem(rules.BATCHED_SHAPE_MISMATCH, k,
                       f"{_title(label)} is {aval_text(shape, dtype)}, i.e. {aval_text(removed, dtype)} per example"
                       f"{where}, but one example's output is {aval_text(*expected)}")
    return None


class _ReturnWatch:
    """The line of the `return` statement the user's rule executes, recorded during the one real call.

    A rule with a single `return` needs no watching. Otherwise a profile hook that only looks at the rule's own
    frames is active for the call and the previous hook is put back in `finally`: the rule is never run again
    just to find the line.
    """

    def __init__(self, rule: Callable | None) -> None:
        self.line: int | None = None
        self._code = None
        code = getattr(_locate.unwrap(rule), "__code__", None) if rule is not None else None
        if code is None or not _locate.is_user_code(rule):
            return
        returns = return_nodes(rule)
        if len(returns) == 1:
            self.line = returns[0][0]
        else:
            self._code = code

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        code = self._code
        if code is None:
            yield
            return

        def profile(frame: Any, event: str, arg: Any) -> None:
            if event == "return" and frame.f_code is code:
                self.line = frame.f_lineno

        previous = sys.getprofile()
        sys.setprofile(profile)
        try:
            yield
        finally:
            sys.setprofile(previous)
