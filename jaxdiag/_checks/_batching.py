"""Batching checks (JXB): the batching rule's returns, and vmap against a per-example loop.

Every `vmap` jaxdiag runs goes through a spy on the batching rules (`_compat.intercept_batching_rules`): it sees
what the rule returns before JAX does, validates it (a pair; dims that are ints or None, in range, on an axis of the
vmap size; shapes and dtypes that match one example), and aborts that vmap with a private exception when something
is malformed, so the user gets the rule's defect instead of JAX's `IndexError` from deep inside vmap. The same runs
are compared with the subject applied to each example eagerly (the trusted reference), over in_axes variants
chosen so that a mislabelled axis cannot pass by accident: a batch size equal to no dimension, the batch axis first,
last and in the middle, each argument unbatched, pairwise combinations, batch size 1, nested vmap, `jit(vmap f)`
and `vmap(jit f)`.

All runs of a subject happen once (`evidence`, cached in `ctx.cache`); the checks below only read them.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import sys
import textwrap
import zlib
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compat, _locate, _numerics
from .. import _rules as rules
from .._inputs import ArgSpec, choose_batch_size, draw
from .._report import Finding, Location
from ._base import Context, SkipCheck, Subject, check
from ._registration import (
    abstract_output,
    aval_text,
    example_output,
    first_line,
    flat_outputs,
    has_jit_path,
    is_user_primitive,
    jitted,
    params_key,
    prim_var,
    primitive_module,
    reference_fn,
    removed_api,
    removed_api_finding,
    rule_location,
    signature_problem,
    subject_fn,
    user_frame_location,
)

Aval = tuple[tuple[int, ...], np.dtype]


class _Abort(Exception):
    """Raised inside a spied rule once its problem is recorded, so vmap stops before JAX trips over it."""

    def __init__(self, call: "RuleCall"):
        super().__init__(f"jaxdiag stopped vmap at {call.prim}'s batching rule")
        self.call = call


# ---------------------------------------------------------------------------------------------------------------
# in_axes variants
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One way of calling vmap: per-argument axes (non-negative, None = unbatched), batch size and mode."""

    axes: tuple[int | None, ...]
    size: int
    mode: str = "eager"  # eager | user | jit(vmap) | vmap(jit) | nested | constants
    inner: int = 0  # nested: the inner vmap's size; the inner axes are each argument's last axis
    out_axes: Any = 0
    user_in_axes: Any = None  # user mode: the in_axes exactly as given
    under_jit: bool = False  # the whole call jitted (a primitive without impl cannot run eagerly)

    @property
    def pattern(self) -> frozenset[int]:
        return frozenset(i for i, a in enumerate(self.axes) if a is None)

    @property
    def single_level(self) -> bool:
        return self.mode != "nested"

    @property
    def concrete(self) -> bool:
        """The rule sees concrete arrays (not tracers) in this mode."""
        return self.mode in ("eager", "user") and not self.under_jit

    def in_axes_text(self) -> str:
        if self.mode == "user":
            return _axes_repr(self.user_in_axes)
        return _axes_repr(self.axes[0] if len(self.axes) == 1 else self.axes)

    def describe(self, name: str) -> str:
        axes = self.in_axes_text()
        out = "" if self.out_axes == 0 else f", out_axes={_axes_repr(self.out_axes)}"
        if self.mode == "nested":
            inner = _axes_repr(tuple(-1 for _ in self.axes) if len(self.axes) > 1 else -1)
            outer = _axes_repr(tuple(0 for _ in self.axes) if len(self.axes) > 1 else 0)
            return (f"nested `jax.vmap(jax.vmap({name}, in_axes={inner}), in_axes={outer})` with batch sizes "
                    f"{self.size}x{self.inner}")
        if self.mode == "constants":
            return (f"`jax.vmap(lambda t: {name}(*args), in_axes=0)` with batch size {self.size}, every input of the "
                    "primitive unbatched (as for constants inside a vmapped function)")
        if self.mode == "jit(vmap)":
            return f"`jax.jit(jax.vmap({name}, in_axes={axes}))` with batch size {self.size}"
        if self.mode == "vmap(jit)":
            return f"`jax.vmap(jax.jit({name}), in_axes={axes})` with batch size {self.size}"
        if self.under_jit:
            return f"`jax.jit(jax.vmap({name}, in_axes={axes}{out}))` with batch size {self.size}"
        return f"`jax.vmap({name}, in_axes={axes}{out})` with batch size {self.size}"


def _axes_repr(axes: Any) -> str:
    if isinstance(axes, list):
        return "[" + ", ".join(_axes_repr(a) for a in axes) + "]"
    if isinstance(axes, tuple):
        inner = ", ".join(_axes_repr(a) for a in axes)
        return f"({inner},)" if len(axes) == 1 else f"({inner})"
    return repr(axes)


def axis_choices(spec: ArgSpec) -> list[int | None]:
    """First, last and a middle axis of the batched argument (rank + 1 axes), then unbatched."""
    rank = len(spec.shape)
    choices: list[int | None] = [0]
    if rank >= 1:
        choices.append(rank)
    if rank >= 2:
        choices.append((rank + 1) // 2)
    choices.append(None)
    return choices


def axes_variants(specs: Sequence[ArgSpec]) -> list[tuple[int | None, ...]]:
    """all-0, all-last, all-middle, each argument unbatched in turn, then pairwise coverage of every two
    arguments' choices. Greedy covering keeps the count at most quadratic in the number of arguments."""
    n = len(specs)
    choices = [axis_choices(s) for s in specs]
    out: list[tuple[int | None, ...]] = []

    def add(axes: tuple[int | None, ...]) -> None:
        if any(a is not None for a in axes) and axes not in out:
            out.append(axes)

    add(tuple(0 for _ in specs))
    add(tuple(c[1] if c[1] is not None else 0 for c in choices))
    add(tuple(c[2] if len(c) > 3 else 0 for c in choices))
    if n >= 2:
        for i in range(n):
            add(tuple(None if j == i else 0 for j in range(n)))
    if n < 2:
        return out
    # pairs of first / last / unbatched; the middle axis is covered by the all-middle variant
    choices = [[c[0], c[1], None] if len(c) > 2 else c for c in choices]
    uncovered = {(i, a, j, b) for i, j in itertools.combinations(range(n), 2) for a in choices[i] for b in choices[j]
                 if not (n == 2 and a is None and b is None)}
    for axes in out:
        uncovered -= _pairs(axes)
    while uncovered:
        i, a, j, b = min(uncovered, key=lambda p: (p[0], p[2], str(p[1]), str(p[3])))
        axes = [0] * n
        axes[i], axes[j] = a, b
        for k in range(n):
            if k in (i, j):
                continue
            axes[k] = max(choices[k], key=lambda c: (len(_pairs(tuple(axes[:k] + [c] + axes[k + 1:])) & uncovered),
                                                     c is not None))
        if all(x is None for x in axes):
            axes[next(k for k in range(n) if k not in (i, j))] = 0
        before = len(uncovered)
        uncovered -= _pairs(tuple(axes))
        add(tuple(axes))
        if len(uncovered) == before:  # cannot happen, but never loop forever
            uncovered.discard((i, a, j, b))
    return out


def _pairs(axes: tuple[int | None, ...]) -> set[tuple]:
    return {(i, axes[i], j, axes[j]) for i, j in itertools.combinations(range(len(axes)), 2)}


# ---------------------------------------------------------------------------------------------------------------
# The per-example reference
# ---------------------------------------------------------------------------------------------------------------


class Reference:
    """A pool of distinct examples and the subject's eager output on each (trusted, computed once per pattern).

    Example 0 is `ctx.example()`, shared with the registration checks. For a variant where some arguments are
    unbatched, those arguments take example 0's value in every example, so each pattern of unbatched arguments
    has its own loop (cached).
    """

    def __init__(self, ctx: Context, fn: Callable, count: int):
        self.subject = ctx.subject
        self.fn = fn
        self.count = count
        rng = np.random.default_rng(zlib.crc32(f"{ctx.options.seed}:{ctx.subject.seed_key}:pool".encode()))
        self.pool = [self._column(x, s, rng) for x, s in zip(ctx.example(), ctx.specs)]
        self._outputs: dict[frozenset[int], list[list[np.ndarray]] | BaseException] = {}
        self.structure: Any = None

    def _column(self, example: Any, spec: ArgSpec, rng: np.random.Generator) -> np.ndarray:
        first = np.asarray(example)
        if first.dtype.kind in "iu" and np.unique(first).size > 1:
            # integers are often indices or counts: permute the example's values rather than draw new ones
            rest = [rng.permutation(first.reshape(-1)).reshape(first.shape) for _ in range(self.count - 1)]
        else:
            rest = list(draw(spec, rng, self.subject.domain, (self.count - 1,)))
        return np.stack([first, *rest]).astype(first.dtype)

    def args(self, pattern: frozenset[int], b: int) -> list[np.ndarray]:
        return [column[0] if i in pattern else column[b] for i, column in enumerate(self.pool)]

    def outputs(self, pattern: frozenset[int], count: int) -> list[list[np.ndarray]] | BaseException:
        """Per example (the first `count`), the flat outputs; or the exception the loop raised."""
        have = self._outputs.get(pattern)
        if isinstance(have, BaseException) or (have is not None and len(have) >= count):
            return have if isinstance(have, BaseException) else have[:count]
        done = list(have or [])
        try:
            for b in range(len(done), count):
                leaves, structure = flat_outputs(self.subject, self.fn(*self.args(pattern, b)))
                self.structure = self.structure if self.structure is not None else structure
                done.append(leaves)
        except Exception as exc:  # the user's code on one example: not what a batching check reports
            self._outputs[pattern] = exc
            return exc
        self._outputs[pattern] = done
        return done

    def batched_args(self, variant: Variant) -> list[np.ndarray]:
        if variant.mode == "nested":
            n = variant.size * variant.inner
            return [np.moveaxis(column[:n].reshape((variant.size, variant.inner) + column.shape[1:]), 1, -1)
                    for column in self.pool]
        out = []
        for column, axis in zip(self.pool, variant.axes):
            out.append(column[0] if axis is None else np.moveaxis(column[:variant.size], 0, axis))
        return out

    def expected(self, variant: Variant) -> list[np.ndarray] | BaseException:
        """The stacked loop outputs a variant must reproduce (batch axes in front)."""
        count = variant.size * (variant.inner or 1)
        per_example = self.outputs(variant.pattern, count)
        if isinstance(per_example, BaseException):
            return per_example
        stacked = [np.stack([ex[k] for ex in per_example]) for k in range(len(per_example[0]))]
        if variant.mode == "nested":
            stacked = [s.reshape((variant.size, variant.inner) + s.shape[1:]) for s in stacked]
        return stacked

    def constant(self, pattern: frozenset[int], k: int, count: int) -> bool | None:
        """Whether output k is bitwise identical for the first `count` examples of `pattern`."""
        per_example = self.outputs(pattern, count)
        if isinstance(per_example, BaseException) or k >= len(per_example[0]):
            return None
        first = per_example[0][k]
        return all(np.array_equal(ex[k], first, equal_nan=first.dtype.kind in "fc") for ex in per_example[1:])


# ---------------------------------------------------------------------------------------------------------------
# The spy: validate every rule return before JAX sees it
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Problem:
    rule: rules.Rule
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
        self._rules: dict[Any, tuple[Callable | None, bool]] = {}

    def handlers(self, prims: Sequence[Any]) -> dict[Any, Callable]:
        # read the user's rules now: while intercepted, the registry holds the spy
        for prim in prims:
            self._rules[prim] = (_compat.batching_rule(prim), _compat.batching_rule_is_fancy(prim))
        return {prim: self._handler(prim) for prim in prims}

    def _handler(self, prim: Any) -> Callable:
        def handle(vals: tuple, dims: tuple, params: dict, size: int | None, call: Callable[[], Any]) -> Any:
            return self.handle(prim, vals, dims, params, size, call)

        return handle

    def handle(self, prim: Any, vals: tuple, dims: tuple, params: dict, size: int | None,
               call: Callable[[], Any]) -> Any:
        assert self.variant is not None
        record = RuleCall(prim, params, [tuple(np.shape(v)) for v in vals], dims, size, self.variant,
                          top=self._is_top(prim, params, vals, dims))
        self.calls.append(record)
        if self.oracle:
            return _loop_rule(prim, vals, dims, params, size)
        problem = self._signature(prim, vals, dims, params)
        if problem:
            record.problems.append(problem)
            raise _Abort(record)
        try:
            result = call()
        except _Abort:
            raise
        except Exception as exc:
            record.error = exc
            raise _Abort(record) from exc
        record.result = result
        record.expected = self.expected(prim, params, vals, dims)
        record.problems = validate(prim, result, size, record.expected, record)
        if record.problems:
            record.return_line = _returning_line(self._rules[prim][0], call)
            raise _Abort(record)
        return result

    def _is_top(self, prim: Any, params: dict, vals: tuple, dims: tuple) -> bool:
        subject = self.subject
        if subject.kind != "primitive" or prim is not subject.obj or not self.variant.single_level:  # type: ignore
            return False
        return params_key(params) == params_key(subject.params) and _per_example(vals, dims) == [
            (s.shape, s.dtype) for s in subject.specs]

    def _signature(self, prim: Any, vals: tuple, dims: tuple, params: dict) -> Problem | None:
        rule, fancy = self._rules[prim]
        if rule is None or not _locate.is_user_code(rule):
            return None
        args = (object(), list(vals), list(dims)) if fancy else (list(vals), list(dims))
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
        try:
            raw = _compat.abstract_eval_output(prim, avals, params)
            outs = list(raw) if isinstance(raw, (list, tuple)) else [raw]
            return [(tuple(o.shape), np.dtype(o.dtype)) for o in outs]
        except Exception:
            return None
    impl = _compat.impl(prim)
    if impl is None:
        return None
    try:
        raw = jax.eval_shape(lambda *a: impl(*a, **params), *[jax.ShapeDtypeStruct(s, d) for s, d in per])
    except Exception:
        return None
    outs = list(raw) if isinstance(raw, (list, tuple)) else [raw]
    return [(tuple(o.shape), np.dtype(o.dtype)) for o in outs]


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
    shape = "(outputs, dims)" if multiple else "(out, dim)"
    return f"returned {what} instead of the pair `{shape}`"


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


def _returning_line(rule: Callable | None, call: Callable[[], Any]) -> int | None:
    """The line of the `return` statement the user's rule executed: run it again under a profile hook that only
    watches that function's frames (only done once a problem was found)."""
    code = getattr(_locate.unwrap(rule), "__code__", None) if rule is not None else None
    if code is None or not _locate.is_user_code(rule):
        return None
    returns = _return_nodes(rule)
    if len(returns) == 1:
        return returns[0][0]
    lines: list[int] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "return" and frame.f_code is code:
            lines.append(frame.f_lineno)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        call()
    except Exception:
        pass
    finally:
        sys.setprofile(previous)
    return lines[-1] if lines else None


# ---------------------------------------------------------------------------------------------------------------
# Running the variants
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    variant: Variant
    leaves: list[np.ndarray] | None = None
    tree: Any = None
    error: BaseException | None = None
    abort: RuleCall | None = None
    comparisons: list[_numerics.Comparison] = field(default_factory=list)
    reference_error: BaseException | None = None
    count_mismatch: tuple[int, int] | None = None
    input_shapes: list[tuple[int, ...]] = field(default_factory=list)

    @property
    def mismatched(self) -> list[int]:
        return [k for k, c in enumerate(self.comparisons) if not c.ok and not c.nonfinite]

    @property
    def ok(self) -> bool:
        return (self.error is None and self.abort is None and self.count_mismatch is None
                and not self.mismatched)


@dataclass
class Evidence:
    """Every vmap run of one subject, the rule calls the spy saw, and the reference they were compared with."""

    subject: Subject
    fn: Callable
    reference: Reference
    outcomes: list[Outcome]
    calls: list[RuleCall]
    spied: list[Any]
    expected_at_subject: list[Aval] | None
    notes: list[str] = field(default_factory=list)


def evidence(ctx: Context) -> Evidence:
    """Run every variant once (cached for all batching checks of the subject)."""
    cached = ctx.cache.get("batching_evidence")
    if isinstance(cached, Evidence):
        return cached
    if isinstance(cached, SkipCheck):
        raise cached
    try:
        result = _collect(ctx)
    except SkipCheck as skip:
        ctx.cache["batching_evidence"] = skip
        raise
    ctx.cache["batching_evidence"] = result
    return result


def _collect(ctx: Context) -> Evidence:
    subject = ctx.subject
    if subject.kind == "primitive" and not _compat.has_batching_rule(subject.obj):
        raise SkipCheck(f"{subject.obj.name} has no batching rule (JXR005)")
    out = example_output(ctx)
    if out.leaves is None:
        raise SkipCheck(f"{subject.name} raised on the example (JXR011): {first_line(out.error)}"
                        if out.error is not None else "no reference")
    fn = reference_fn(subject)
    assert fn is not None
    shapes = [s.shape for s in ctx.specs] + [tuple(x.shape) for x in out.leaves]
    size = ctx.batch_size([tuple(x.shape) for x in out.leaves])
    outer = choose_batch_size(shapes, start=2)
    inner = choose_batch_size(shapes + [(outer,)], start=outer + 1)
    reference = Reference(ctx, fn, max(size, outer * inner))
    expected_at_subject = _subject_avals(ctx)
    spied = _spied_primitives(ctx)
    spy = Spy(subject, expected_at_subject, trust_abstract_eval=_abstract_eval_agrees(ctx))
    outcomes = []
    target = subject_fn(subject)
    notes: list[str] = []
    for variant in _variants(ctx, size, outer, inner, notes):
        outcomes.append(_run(target, reference, spy, spied, variant))
    return Evidence(subject, target, reference, outcomes, spy.calls, spied, expected_at_subject, notes)


def _subject_avals(ctx: Context) -> list[Aval] | None:
    out = example_output(ctx)
    if ctx.subject.kind != "primitive":
        return None
    if out.leaves is not None and not out.via_jit:
        return out.avals
    return abstract_output(ctx).avals


def _abstract_eval_agrees(ctx: Context) -> bool:
    if ctx.subject.kind != "primitive":
        return True
    avals, out = abstract_output(ctx).avals, example_output(ctx)
    return avals is not None and (out.via_jit or avals == out.avals)


def _spied_primitives(ctx: Context) -> list[Any]:
    if ctx.subject.kind == "primitive":
        return [ctx.subject.obj]
    prims = list(_compat.user_batching_primitives())
    for nested in ctx.cache.get("nested_subjects", []):
        if nested.kind == "primitive" and nested.obj not in prims and is_user_primitive(nested):
            prims.append(nested.obj)
    return prims


def _variants(ctx: Context, size: int, outer: int, inner: int, notes: list[str]) -> list[Variant]:
    specs = ctx.specs
    out = []
    user = _user_variant(ctx, size)
    if user is not None:
        out.append(user)
    out += [Variant(axes, size) for axes in axes_variants(specs)]
    zeros = tuple(0 for _ in specs)
    if size != 1:
        out.append(Variant(zeros, 1))
    if ctx.subject.kind == "primitive" and not _compat.has_impl(ctx.subject.obj):
        notes.append("no impl (JXR001): every variant ran under jax.jit; nested vmap skipped")
        return [replace(v, under_jit=True) for v in out]
    out.append(Variant(tuple(len(s.shape) for s in specs), outer, mode="nested", inner=inner))
    if ctx.subject.kind == "primitive" and _compat.batching_rule_is_fancy(ctx.subject.obj) and _locate.is_user_code(
            _compat.batching_rule(ctx.subject.obj)):
        # JAX calls rules registered in the fancy table even when no input is batched (bug catalog #7)
        out.append(Variant(tuple(None for _ in specs), size, mode="constants"))
    if _can_jit(ctx, notes):
        out.append(Variant(zeros, size, mode="jit(vmap)"))
        out.append(Variant(zeros, size, mode="vmap(jit)"))
    return out


def _user_variant(ctx: Context, size: int) -> Variant | None:
    in_axes, out_axes = ctx.options.in_axes, ctx.options.out_axes
    if in_axes is None and out_axes is None:
        return None
    n = len(ctx.specs)
    given = 0 if in_axes is None else in_axes
    if isinstance(given, (tuple, list)):
        per = list(given) + [0] * (n - len(given))
    else:
        per = [given] * n
    axes = []
    for a, spec in zip(per[:n], ctx.specs):
        rank = len(spec.shape) + 1
        axes.append(a % rank if isinstance(a, int) and -rank <= a < rank else (0 if a is not None else None))
    return Variant(tuple(axes), size, mode="user", out_axes=0 if out_axes is None else out_axes, user_in_axes=given)


def _can_jit(ctx: Context, notes: list[str]) -> bool:
    subject = ctx.subject
    if subject.kind == "primitive":
        prim = subject.obj
        if not has_jit_path(prim):
            notes.append("jit(vmap) and vmap(jit) skipped: no abstract eval or no lowering (JXR002/JXR004)")
            return False
        avals = abstract_output(ctx).avals
        if ctx.cache.get("jit_broken") or avals is None or (
                not example_output(ctx).via_jit and [a for a, _ in avals] != [a for a, _ in example_output(ctx).avals]):
            notes.append("jit(vmap) and vmap(jit) skipped: jax.jit of the primitive itself fails (JXR003/JXR010)")
            return False
        return True
    if "jaxpr" not in ctx.cache:
        notes.append("jit(vmap) and vmap(jit) skipped: the function cannot be traced with make_jaxpr")
        return False
    for eqn in _compat.iter_eqns(ctx.cache["jaxpr"]):
        prim = eqn.primitive
        if _compat.is_primitive(prim) and not _compat.is_builtin_primitive(prim) and not has_jit_path(prim):
            notes.append(f"jit(vmap) and vmap(jit) skipped: {prim.name} has no abstract eval or no lowering")
            return False
    return True


def _vmapped(fn: Callable, variant: Variant) -> Callable:
    if variant.under_jit:
        return jax.jit(_vmapped(fn, replace(variant, under_jit=False)))
    if variant.mode == "user":
        return jax.vmap(fn, in_axes=variant.user_in_axes, out_axes=variant.out_axes)
    axes = variant.axes
    if variant.mode == "nested":
        return jax.vmap(jax.vmap(fn, in_axes=tuple(-1 for _ in axes)), in_axes=tuple(0 for _ in axes))
    if variant.mode == "jit(vmap)":
        return jax.jit(jax.vmap(fn, in_axes=axes))
    if variant.mode == "vmap(jit)":
        return jax.vmap(jitted(fn), in_axes=axes)
    if variant.mode == "constants":
        return lambda t, *args: jax.vmap(lambda _: fn(*args))(t)
    return jax.vmap(fn, in_axes=axes)


def _run(fn: Callable, reference: Reference, spy: Spy, spied: list[Any], variant: Variant) -> Outcome:
    outcome = Outcome(variant)
    expected = reference.expected(variant)
    if isinstance(expected, BaseException):
        outcome.reference_error = expected
        return outcome
    spy.variant = variant
    args = reference.batched_args(variant)
    if variant.mode == "constants":
        args = [np.zeros((variant.size,), np.float32), *args]
    outcome.input_shapes = [tuple(np.shape(a)) for a in args]
    try:
        with _compat.intercept_batching_rules(spy.handlers(spied)):
            result = _vmapped(fn, variant)(*args)
            jax.block_until_ready(result)
    except Exception as exc:
        abort = _find_abort(exc)
        if abort is not None:
            outcome.abort = abort.call
        else:
            outcome.error = exc
        return outcome
    leaves, outcome.tree = jax.tree_util.tree_flatten(result)
    outcome.leaves = [np.asarray(x) for x in leaves]
    _compare(outcome, expected)
    return outcome


def _find_abort(exc: BaseException | None) -> _Abort | None:
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, _Abort):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def _compare(outcome: Outcome, expected: list[np.ndarray]) -> None:
    leaves = outcome.leaves or []
    if len(leaves) != len(expected):
        outcome.count_mismatch = (len(leaves), len(expected))
        return
    axes = _per_leaf(outcome.variant.out_axes, outcome.tree, len(leaves))
    for leaf, want, axis in zip(leaves, expected, axes):
        if axis is None:
            got = np.broadcast_to(leaf, want.shape) if leaf.shape == want.shape[1:] else leaf
        elif outcome.variant.mode == "nested" or not -leaf.ndim <= axis < max(leaf.ndim, 1):
            got = leaf
        else:
            got = np.moveaxis(leaf, axis, 0) if leaf.ndim else leaf
        outcome.comparisons.append(_numerics.compare(got, want))


def _per_leaf(out_axes: Any, tree: Any, count: int) -> list[Any]:
    """out_axes broadcast to one entry per output leaf (a tree prefix, as vmap reads it)."""
    if out_axes is None or isinstance(out_axes, int):
        return [out_axes] * count
    try:
        treedef = tree if tree is not None else None
        template = jax.tree_util.tree_unflatten(treedef, list(range(count)))
        per = [None] * count

        def fill(axis: Any, sub: Any) -> None:
            for index in jax.tree_util.tree_leaves(sub):
                per[index] = axis

        jax.tree_util.tree_map(fill, out_axes, template, is_leaf=lambda x: x is None)
        return per
    except Exception:
        return [0] * count


# ---------------------------------------------------------------------------------------------------------------
# Reading the user's rule: its return statements and dim variables, for fixes written for their code
# ---------------------------------------------------------------------------------------------------------------


def _function_node(fn: Any) -> tuple[ast.FunctionDef, int, str] | None:
    """(the def node, line offset, dedented source) of a user function."""
    fn = _locate.unwrap(fn)
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    source = textwrap.dedent("".join(lines))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    return node, first - 1, source  # type: ignore[return-value]


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function body, not descending into nested functions, lambdas or classes."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        yield child
        yield from _own_nodes(child)


def _return_nodes(fn: Any) -> list[tuple[int, ast.Return]]:
    found = _function_node(fn)
    if found is None:
        return []
    node, offset, _ = found
    return [(r.lineno + offset, r) for r in _own_nodes(node) if isinstance(r, ast.Return)]


def _dim_names(fn: Any, fancy: bool, n: int) -> list[str]:
    """How the rule names each input's dim: `bd_x` from `bd_x, = batch_dims`, else `batch_dims[i]`."""
    return _rule_names(fn, 2 if fancy else 1, n, "batch_dims")


def _rule_names(fn: Any, position: int, n: int, default: str) -> list[str]:
    """Names the rule binds to the elements of its parameter at `position` (its args or its dims)."""
    found = _function_node(fn)
    if found is None:
        return [f"{default}[{i}]" for i in range(n)]
    node, _, _ = found
    params = [a.arg for a in node.args.posonlyargs + node.args.args]
    param = params[position] if len(params) > position else default
    for sub in _own_nodes(node):
        if isinstance(sub, ast.Assign) and len(sub.targets) == 1:
            names = _unpacked_names(sub.targets[0], sub.value, param)
            if names is not None and len(names) == n:
                return names
    return [f"{param}[{i}]" for i in range(n)]


def _unpacked_names(target: ast.AST, value: ast.AST, dims: str) -> list[str] | None:
    """Names bound to the elements of `dims` by `a, b = dims` or `(x,), (bx,) = args, dims`."""
    if isinstance(value, ast.Name) and value.id == dims and isinstance(target, (ast.Tuple, ast.List)):
        names = [e.id if isinstance(e, ast.Name) else None for e in target.elts]
        return names if all(names) else None  # type: ignore[return-value]
    if isinstance(value, ast.Tuple) and isinstance(target, (ast.Tuple, ast.List)) \
            and len(value.elts) == len(target.elts):
        for t, v in zip(target.elts, value.elts):
            names = _unpacked_names(t, v, dims)
            if names is not None:
                return names
    return None


def corrected_return(fn: Any, line: int | None, new_dims: dict[int, str], multiple: bool) -> str | None:
    """The user's `return out, dims` line with the given dims replaced, or None when it is not that shape."""
    if line is None:
        return None
    found = _function_node(fn)
    if found is None:
        return None
    node, offset, source = found
    target = next((r for r in _own_nodes(node) if isinstance(r, ast.Return) and r.lineno + offset == line), None)
    if target is None or not isinstance(target.value, ast.Tuple) or len(target.value.elts) != 2:
        return None
    outs, dims = target.value.elts
    if not multiple and isinstance(outs, (ast.List, ast.Tuple)) and len(outs.elts) == 1:
        outs = outs.elts[0]  # `([out], [d])` -> `(out, d)`
        if isinstance(dims, (ast.List, ast.Tuple)) and len(dims.elts) == 1 and 0 not in new_dims:
            new_dims = {0: ast.get_source_segment(source, dims.elts[0]) or ast.unparse(dims.elts[0])}
    outs_text = ast.get_source_segment(source, outs)
    if outs_text is None:
        return None
    if multiple:
        if not isinstance(dims, (ast.Tuple, ast.List)):
            n = len(outs.elts) if isinstance(outs, (ast.Tuple, ast.List)) else len(new_dims)
            if sorted(new_dims) != list(range(n)):
                return None
            dims = ast.Tuple(elts=[ast.Constant(None)] * n)
        items = [ast.get_source_segment(source, e) or ast.unparse(e) for e in dims.elts]
        for k, text in new_dims.items():
            if k < len(items):
                items[k] = text
        opening, closing = ("[", "]") if isinstance(dims, ast.List) else ("(", ")")
        dims_text = opening + ", ".join(items) + ("," if len(items) == 1 and opening == "(" else "") + closing
    else:
        dims_text = new_dims.get(0) or ast.get_source_segment(source, dims) or ast.unparse(dims)
    return f"return {outs_text}, {dims_text}"


# ---------------------------------------------------------------------------------------------------------------
# What the dims should have been
# ---------------------------------------------------------------------------------------------------------------

_UNKNOWN = object()


def _correct_dim(shape: tuple[int, ...], expected: tuple[int, ...], size: int | None) -> Any:
    """Where the batch axis really is in an output of `shape` whose one-example shape is `expected`: an int,
    None when the output has no batch axis, or _UNKNOWN."""
    if size is None:
        return _UNKNOWN
    found = [d for d in range(len(shape)) if shape[d] == size and shape[:d] + shape[d + 1:] == tuple(expected)]
    if len(found) == 1:
        return found[0]
    if tuple(shape) == tuple(expected):
        return None
    return _UNKNOWN


def suggested_dims(ev: Evidence, prim: Any) -> dict[int, str]:
    """For each output, the dim expression the rule should return, when every observed call agrees on one: a
    constant, None, or the dim variable of an input whose dim it always equals."""
    calls = [c for c in ev.calls if c.prim is prim and c.out_shapes is not None and c.expected is not None
             and len(c.out_shapes) == len(c.expected)]
    if not calls:
        return {}
    n_out = len(calls[0].out_shapes or [])
    rule = _compat.batching_rule(prim)
    names = _dim_names(rule, _compat.batching_rule_is_fancy(prim), len(calls[0].in_dims)) if rule else []
    out: dict[int, str] = {}
    for k in range(n_out):
        observed = []
        for c in calls:
            if c.out_shapes is None or k >= len(c.out_shapes) or c.expected is None:
                continue
            dim = _correct_dim(c.out_shapes[k], c.expected[k][0], c.size)
            if dim is None and c.top and ev.reference.constant(c.variant.pattern, k, c.variant.size) is False:
                dim = _UNKNOWN  # no batch axis although the output varies: the rule drops or reduces it
            observed.append((dim, c.in_dims))
        if not observed or any(d is _UNKNOWN for d, _ in observed):
            continue
        values = {d for d, _ in observed}
        if len(values) == 1:
            out[k] = repr(next(iter(values)))
            continue
        for i, name in enumerate(names):
            if all(d == dims[i] for d, dims in observed):
                out[k] = name
                break
    return out


# ---------------------------------------------------------------------------------------------------------------
# Check: the rule's returns (primitives)
# ---------------------------------------------------------------------------------------------------------------

_CONSEQUENCE = {  # what happens after the rule returns, when JAX's own message will not say it
    rules.BATCH_AXIS_SIZE_MISMATCH.code: " JAX never checks this (not even under jax.enable_checks): the wrong "
                                         "shape surfaces later, in unrelated code.",
}


@check("batching-rule", family="batching", kinds={"primitive"})
def rule_returns_check(ctx: Context) -> Iterator[Finding]:
    ev = evidence(ctx)
    prim = ctx.subject.obj
    calls = [c for c in ev.calls if c.prim is prim]
    groups: dict[str, list[tuple[RuleCall, Problem]]] = {}
    for call in calls:
        for problem in call.problems:
            groups.setdefault(problem.rule.code, []).append((call, problem))
    suggestions = suggested_dims(ev, prim)
    for code, items in groups.items():
        yield _structure_finding(ctx, ev, items, suggestions)
    raised = [c for c in calls if c.error is not None]
    if raised:
        yield _raised_finding(ctx, raised)


def _structure_finding(ctx: Context, ev: Evidence, items: list[tuple[RuleCall, Problem]],
                       suggestions: dict[int, str]) -> Finding:
    call, problem = items[0]
    prim, name = call.prim, _display(ctx, call.prim)
    rule_fn = _compat.batching_rule(prim)
    others = _other_variants([c for c, _ in items], call, name)
    # Lead with the defect (the README table and one-line renderers show the first sentence), then the call.
    texts = list(dict.fromkeys(p.text for c, p in items if c is call))
    first, rest = texts[0], [t[:1].upper() + t[1:] for t in texts[1:]]
    joint = (" " if first.startswith(("returned", "an output")) else
             " rejects the arguments JAX passes: " if first.startswith(("got ", "missing ", "takes ")) else " is wrong: ")
    lead = f"{_owner(ctx, prim)}'s batching rule{joint}{first[:1].lower() + first[1:]}"
    defect = " ".join(t.rstrip(".") + "." for t in [lead, *rest])
    message = (f"{defect} Seen when called by {call.variant.describe(name)}: {call.describe()}."
               f"{_CONSEQUENCE.get(problem.rule.code, '')}{others}")
    location = _return_location(rule_fn, call.return_line, problem.rule, ctx.subject.location)
    if problem.rule is rules.WRONG_RULE_SIGNATURE:
        fix = _signature_fix(prim, call.params)
    else:
        fix = _structure_fix(ev, prim, call, problem, suggestions)
    return problem.rule.finding(message, fix=fix, location=location)


def _display(ctx: Context, prim: Any) -> str:
    """How vmap's argument is named in messages: `my_p.bind` for a primitive, the function's name otherwise."""
    if ctx.subject.kind == "primitive" and prim is ctx.subject.obj:
        return f"{prim_var(ctx.subject)}.bind"
    if ctx.subject.kind == "function":
        return ctx.subject.name
    return f"{prim.name}.bind"


def _owner(ctx: Context, prim: Any) -> str:
    if ctx.subject.kind == "primitive" and prim is ctx.subject.obj:
        return prim_var(ctx.subject)
    return prim.name


def _other_variants(calls: list[RuleCall], first: RuleCall, name: str) -> str:
    labels = list(dict.fromkeys(c.variant.describe(name) for c in calls if c.variant != first.variant))
    if not labels:
        return ""
    shown = labels[:3] + ([f"{len(labels) - 3} more"] if len(labels) > 3 else [])
    return f" Also with {'; '.join(shown)}."


def _return_location(rule_fn: Any, line: int | None, rule: rules.Rule, fallback: Location | None
                     ) -> Location | None:
    """The faulty `return` line when known; the `def` line when a `# jaxdiag: ignore[...]` there names the rule
    (suppressions live on the def line)."""
    base = rule_location(rule_fn, fallback)
    if base is None or line is None or rule_fn is None or not _locate.is_user_code(rule_fn):
        return base
    ignored = _locate.inline_ignores(base)
    if ignored and ("*" in ignored or rules.matches(rule.code, sorted(ignored))):
        return base
    return Location(base.path, line, base.function)


def _signature_fix(prim: Any, params: dict[str, Any]) -> str:
    rule = _compat.batching_rule(prim)
    fn_name = getattr(_locate.unwrap(rule), "__name__", "rule")
    if _compat.batching_rule_is_fancy(prim):
        return (f"`{fn_name}` is registered in batching.fancy_primitive_batchers, so JAX calls it as "
                f"`{fn_name}(axis_data, batched_args, batch_dims, **params)`: accept those arguments.")
    params_text = ", ".join(sorted(params))
    return (f"JAX calls `{fn_name}(batched_args, batch_dims, **params)`"
            + (f" and passes {params_text} as keywords" if params else "")
            + f": use the signature `def {fn_name}(batched_args, batch_dims, **params)` (an `axis_data` first "
              "argument belongs to rules registered in batching.fancy_primitive_batchers).")


def _structure_fix(ev: Evidence, prim: Any, call: RuleCall, problem: Problem, suggestions: dict[int, str]) -> str:
    rule_fn = _compat.batching_rule(prim)
    multiple = bool(prim.multiple_results)
    k = problem.output
    n = len(call.expected) if call.expected is not None else None
    advice = _advice(ev, call, problem, suggestions)
    where = f" (line {call.return_line})" if call.return_line else ""
    if problem.rule in (rules.MULTIPLE_RESULTS_STRUCTURE, rules.RULE_RETURN_NOT_PAIR):
        line = corrected_return(rule_fn, call.return_line, dict(suggestions), multiple) if rule_fn else None
        if line:
            what = "one dim per output" if multiple else "the array itself and one dim"
            return f"Return {what}{where}: `{line}`.{advice}"
        dims = ", ".join(suggestions.get(i, "d") for i in range(n or 1))
        outs = ", ".join(f"out{i}" for i in range(n or 1))
        shape = (f"`return [{outs}], [{dims}]` (a sequence of {n} outputs and a sequence of {n} dims)" if multiple
                 else f"`return out, {suggestions.get(0, 'd')}` (the array itself and an int or None)")
        return f"Return {shape}.{advice}"
    fixes = dict(suggestions)
    if k is not None and k not in fixes and problem.rule is rules.BATCH_DIM_WRONG_TYPE:
        fixes[k] = f"int({_dims_source(rule_fn, call, k) or 'd'})"
    line = corrected_return(rule_fn, call.return_line, fixes, multiple) if fixes and rule_fn is not None else None
    if problem.rule is rules.BATCHED_SHAPE_MISMATCH:
        line = _without_keepdims(rule_fn, call.return_line)
    if line:
        return f"{advice.strip()} Return{where}: `{line}`".strip()
    return advice.strip() or "Return, for each output, the axis where its batch actually is (or None)."


def _without_keepdims(rule_fn: Any, line: int | None) -> str | None:
    """The return statement without `keepdims=True`, the usual source of an extra size-1 axis."""
    found = _function_node(rule_fn) if rule_fn is not None and line is not None else None
    if found is None:
        return None
    node, offset, source = found
    target = next((r for r in _own_nodes(node) if isinstance(r, ast.Return) and r.lineno + offset == line), None)
    text = ast.get_source_segment(source, target) if target is not None else None
    if not text or "keepdims=True" not in text:
        return None
    return text.replace(", keepdims=True", "").replace("keepdims=True, ", "").replace("keepdims=True", "")


def _dims_source(rule_fn: Any, call: RuleCall, k: int) -> str | None:
    nodes = [r for line, r in _return_nodes(rule_fn) if line == call.return_line] if rule_fn else []
    if not nodes or not isinstance(nodes[0].value, ast.Tuple) or len(nodes[0].value.elts) != 2:
        return None
    found = _function_node(rule_fn)
    dims = nodes[0].value.elts[1]
    if isinstance(dims, (ast.Tuple, ast.List)) and k < len(dims.elts):
        dims = dims.elts[k]
    return ast.get_source_segment(found[2], dims) if found else None


def _advice(ev: Evidence, call: RuleCall, problem: Problem, suggestions: dict[int, str]) -> str:
    k = problem.output
    rule = problem.rule
    if k is None:
        return ""
    label = f"output {k}" if call.prim.multiple_results else "the output"
    title = label[:1].upper() + label[1:]
    suggestion = suggestions.get(k)
    if rule is rules.BATCH_AXIS_SIZE_MISMATCH and suggestion == "None":
        return (f" {title} is the same for every example (it does not depend on the batch): return None as its "
                "dim, and JAX broadcasts it where a batch axis is needed.")
    if rule is rules.BATCH_AXIS_SIZE_MISMATCH:
        return (f" The rule drops or reduces the batch axis of {label} (e.g. indexes `x[0]` or reduces over the "
                "batch dim): keep it, and return where it is.")
    if rule is rules.BATCH_DIM_OUT_OF_RANGE and suggestion is not None and suggestion.lstrip("-").isdigit():
        return (f" {title} always has its batch axis at {suggestion} (the rule moved or reduced it there), "
                "whatever the input's dim: return that, not the input's dim.")
    if rule is rules.BATCH_DIM_OUT_OF_RANGE:
        return f" Return the axis of {label} that carries the batch (0 <= dim < out.ndim), or None."
    if rule is rules.BATCH_DIM_WRONG_TYPE:
        return " Return a plain Python int (or None) for each dim, e.g. the element `batch_dims[i]`, not the tuple."
    if rule is rules.BATCHED_SHAPE_MISMATCH:
        return (f" {title} must be one example's output with a batch axis inserted (no keepdims axis, no "
                "squeezed axis, the same dtype as the impl's).")
    return ""


def _raised_finding(ctx: Context, raised: list[RuleCall]) -> Finding:
    call = raised[0]
    exc = call.error
    assert exc is not None
    prim, name = call.prim, _display(ctx, call.prim)
    rule_fn = _compat.batching_rule(prim)
    location = (user_frame_location(exc, rule_fn) if rule_fn is not None and _locate.is_user_code(rule_fn)
                else None) or rule_location(rule_fn, ctx.subject.location)
    if removed_api(exc):
        where = f"{_owner(ctx, prim)}'s batching rule (called by {call.variant.describe(name)})"
        return removed_api_finding(exc, where, location)
    others = _other_variants(raised, call, name)
    passed = [o.variant for o in evidence(ctx).outcomes if o.ok]
    message = (f"{_owner(ctx, prim)}'s batching rule raised {first_line(exc)} when called by "
               f"{call.variant.describe(name)}: "
               f"{call.describe()}.{others}")
    if passed:
        message += f" It works for {passed[0].describe(name)}."
    return rules.BATCHING_RULE_RAISED.finding(message, fix=_raised_fix(call, exc), location=location)


def _raised_fix(call: RuleCall, exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if call.in_dims and all(d is None for d in call.in_dims):
        return ("A rule registered in batching.fancy_primitive_batchers is called even when no input is batched "
                "(constants inside a vmapped function): when every dim is None, return `prim.bind(*args, **params)` "
                "with None dims, or register the rule through batching.primitive_batchers, which does that for you.")
    if any(d is None for d in call.in_dims) and ("NoneType" in text or "None" in text):
        return ("Handle unbatched arguments (dim None): `batching.bdim_at_front(x, d, size)` moves a batched axis "
                "to the front and broadcasts an unbatched argument, e.g.\n" + _front_lines(call))
    if call.variant.mode in ("jit(vmap)", "vmap(jit)") or "Tracer" in text:
        return ("The rule needs concrete values (NumPy, `int(...)`, Python `if` on an array), which it does not "
                "get under jit: compute with jax.numpy on the traced values.")
    dims = _axes_repr(tuple(call.in_dims))
    return f"Make the rule work for batch_dims={dims} (any input may be batched along any axis, or be None)."


def _front_lines(call: RuleCall) -> str:
    """`size = ...` and one `bdim_at_front` line per argument, with the rule's own names."""
    rule = _compat.batching_rule(call.prim)
    fancy = _compat.batching_rule_is_fancy(call.prim)
    n = len(call.in_dims)
    args = _rule_names(rule, 1 if fancy else 0, n, "batched_args")
    dims = _dim_names(rule, fancy, n)
    size = " else ".join(f"{a}.shape[{d}] if {d} is not None" for a, d in list(zip(args, dims))[:-1])
    last = f"{args[-1]}.shape[{dims[-1]}]"
    lines = [f"size = {size + ' else ' + last if size else last}"]
    lines += [f"{a} = batching.bdim_at_front({a}, {d}, size)" for a, d in zip(args, dims)]
    return "\n".join(f"    {line}" for line in lines) + "\nthen compute with the batch axis at 0 and return 0."


# ---------------------------------------------------------------------------------------------------------------
# Check: vmap against the per-example loop
# ---------------------------------------------------------------------------------------------------------------


@check("batching-vs-loop", family="batching", kinds={"primitive", "function"})
def vs_loop_check(ctx: Context) -> Iterator[Finding]:
    if ctx.subject.kind == "function":
        _skip_foreign(ctx)
    ev = evidence(ctx)
    for note in ev.notes:
        yield rules.CHECK_SKIPPED.finding(note + ".", location=ctx.subject.location)
    varies = list(_unbatched_but_varies(ctx, ev))
    yield from (finding for finding, _ in varies)
    explained = {key for _, keys in varies for key in keys}
    if ctx.subject.kind == "function":
        yield from _function_outcomes(ctx, ev, explained)
        return
    yield from _mismatch_findings(ctx, ev, explained)
    yield from _raised_outside_rules(ctx, ev, [o for o in ev.outcomes if o.error is not None])


def _skip_foreign(ctx: Context) -> None:
    jaxpr = ctx.cache.get("jaxpr")
    foreign = [e.primitive.name for e in _compat.iter_eqns(jaxpr) if _compat.is_foreign_call(e)] if jaxpr else []
    custom = [c for c, *_ in ctx.cache.get("custom_calls", []) if _compat.is_custom_vmap(c)]
    if foreign or custom:
        what = ", ".join(sorted(set(foreign))) if foreign else "custom_vmap"
        raise SkipCheck(f"the function calls {what}: its batching is checked by the ffi/custom_vmap checks "
                        "(JXB02x/JXV)")


def _unbatched_but_varies(ctx: Context, ev: Evidence) -> Iterator[tuple[Finding, set[tuple]]]:
    """JXB010: an output the rule reports unbatched (None) that differs across examples."""
    if ctx.subject.kind != "primitive":
        return
    prim, name = ctx.subject.obj, _display(ctx, ctx.subject.obj)
    flagged: dict[int, list[RuleCall]] = {}
    for call in ev.calls:
        if not (call.top and call.variant.concrete and call.out_dims and call.variant.size > 1):
            continue
        for k, d in enumerate(call.out_dims):
            if d is None and ev.reference.constant(call.variant.pattern, k, call.variant.size) is False:
                flagged.setdefault(k, []).append(call)
    rule_fn = _compat.batching_rule(prim)
    for k, calls in flagged.items():
        call = calls[0]
        per = ev.reference.outputs(call.variant.pattern, call.variant.size)
        assert not isinstance(per, BaseException)
        b = next(b for b in range(1, len(per)) if not np.array_equal(per[b][k], per[0][k]))
        diff = _numerics.compare(per[b][k], per[0][k]).describe()
        line = _returning_line_of(ev, call)
        message = (f"{_owner(ctx, prim)}'s batching rule reports output {k} unbatched (dim None) for "
                   f"{call.variant.describe(name)} ({call.describe()}), but one example's output {k} differs from "
                   f"another's (example {b} vs example 0: {diff}). vmap broadcasts the single value it got to all "
                   f"{call.variant.size} examples, so all but one are wrong.{_other_variants(calls, call, name)}")
        suggestion = suggested_dims(ev, prim).get(k)
        fixed = corrected_return(rule_fn, line, {k: suggestion}, bool(prim.multiple_results)) if (
            suggestion and suggestion != "None" and rule_fn is not None) else None
        fix = (f"Return `{fixed}`: output {k} carries the batch at that axis." if fixed else
               f"Compute output {k} per example (keep the batch axis, e.g. reduce over the non-batch axes only) and "
               "return the axis where the batch is.")
        keys = {("output", k)}
        yield rules.UNBATCHED_OUTPUT_VARIES.finding(
            message, fix=fix, location=_return_location(rule_fn, line, rules.UNBATCHED_OUTPUT_VARIES,
                                                         ctx.subject.location)), keys


def _returning_line_of(ev: Evidence, call: RuleCall) -> int | None:
    rule_fn = _compat.batching_rule(call.prim)
    returns = _return_nodes(rule_fn) if rule_fn is not None and _locate.is_user_code(rule_fn) else []
    return returns[0][0] if len(returns) == 1 else call.return_line


def _mismatch_findings(ctx: Context, ev: Evidence, explained: set[tuple]) -> Iterator[Finding]:
    """JXB005: one finding per subject, for the first variant that differs, listing the others."""
    failing = [o for o in ev.outcomes if o.count_mismatch
               or (o.mismatched and not all(("output", k) in explained for k in o.mismatched))]
    if not failing:
        return
    name = _subject_display(ctx)
    first = failing[0]
    message = f"{_mismatch_text(first, name)}{_others(failing, first, name, ev)}"
    location = (rule_location(_compat.batching_rule(ctx.subject.obj), ctx.subject.location)
                if ctx.subject.kind == "primitive" else ctx.subject.location)
    yield rules.BATCH_RESULT_MISMATCH.finding(message, fix=_mismatch_fix(ctx, ev, failing), location=location)


def _subject_display(ctx: Context) -> str:
    return _display(ctx, ctx.subject.obj) if ctx.subject.kind == "primitive" else ctx.subject.name


def _mismatch_text(outcome: Outcome, name: str) -> str:
    where = outcome.variant.describe(name)
    if outcome.count_mismatch:
        got, want = outcome.count_mismatch
        return f"{where} returns {got} output(s), applying {name} to each example returns {want}."
    k = outcome.mismatched[0]
    comparison = outcome.comparisons[k]
    shapes = ", ".join(str(s) for s in outcome.input_shapes)
    return (f"{where} (inputs of shape {shapes}) differs from applying {name} to each of the "
            f"{outcome.variant.size * (outcome.variant.inner or 1)} examples and stacking, for output {k}: "
            f"{comparison.describe()}.")


def _others(failing: list[Outcome], first: Outcome, name: str, ev: Evidence) -> str:
    rest = [o.variant.describe(name) for o in failing[1:]]
    passing = [o.variant.describe(name) for o in ev.outcomes if o.ok]
    text = ""
    if rest:
        text += f" Also differs for {'; '.join(rest[:3])}{f' and {len(rest) - 3} more' if len(rest) > 3 else ''}."
    if passing:
        text += f" Agrees for {'; '.join(passing[:2])}{f' and {len(passing) - 2} more' if len(passing) > 2 else ''}."
    return text


def _mismatch_fix(ctx: Context, ev: Evidence, failing: list[Outcome]) -> str:
    generic = _compat.generic_batcher_name(ctx.subject.obj) if ctx.subject.kind == "primitive" else None
    if generic:
        return _generic_batcher_fix(ctx, generic)
    modes = {o.variant.mode for o in failing}
    bad_axes = [o.variant for o in failing if o.variant.single_level and o.variant.mode != "jit(vmap)"]
    good = [o.variant for o in ev.outcomes if o.ok]
    front_ok = any(v.axes and all(a in (0, None) for a in v.axes) and v.mode == "eager" for v in good)
    if bad_axes and any(None in v.axes for v in bad_axes) and all(None in v.axes for v in bad_axes):
        return ("The rule is wrong when some arguments are unbatched (dim None), typically because it relies on "
                "broadcasting against a batch axis that is not where it assumes: bring every argument to the same "
                "layout first with `batching.bdim_at_front(x, bx, size)` (it broadcasts unbatched ones).")
    if front_ok and bad_axes:
        return ("The rule is right when the batch axis is at 0 and wrong elsewhere: it assumes the batch dim is 0. "
                "Move it first (`x = jnp.moveaxis(x, bx, 0)` or `batching.bdim_at_front(x, bx, size)`) and return 0, "
                "or shift every axis it uses by the batch dim.")
    if modes <= {"jit(vmap)", "vmap(jit)"}:
        return "The rule is right eagerly but not under jit: it must not depend on concrete values."
    if modes == {"nested"}:
        return ("The rule is wrong when its inputs carry two batch axes (nested vmap): it must not assume the "
                "number of leading axes; compute axes from the ranks and dims it receives.")
    axis_params = [k for k in ctx.subject.params if "axis" in k or "axes" in k or "dim" in k]
    if axis_params and ctx.subject.kind == "primitive":
        names = ", ".join(f"`{k}={ctx.subject.params[k]!r}`" for k in axis_params)
        return (f"The rule does not compute what the primitive computes on each example: {names} counts one "
                "example's axes, so once the rule has moved the batch axis to the front it must bind with that "
                "axis shifted by one (e.g. `axis=axis + 1`) and return 0.")
    return ("The rule does not compute what the primitive computes on each example: once the batch axis is in "
            "front, every axis the computation uses (an `axis` parameter, a reduction, a transpose) moves by one; "
            "compare the rule's body with the impl applied per example.")


def _generic_batcher_fix(ctx: Context, helper: str) -> str:
    """`defvectorized` binds the primitive on the batched operands where vmap left the batch axis: right only for
    elementwise primitives."""
    var, name = prim_var(ctx.subject), ctx.subject.obj.name
    n = len(ctx.specs)
    xs = ", ".join(f"x{i}" for i in range(n)) if n > 1 else "x"
    bs = ", ".join(f"b{i}" for i in range(n)) if n > 1 else "bx"
    moved = ", ".join(f"batching.bdim_at_front(x{i}, b{i}, size)" for i in range(n)) if n > 1 else \
        "jnp.moveaxis(x, bx, 0)"
    size = "    size = next(a.shape[d] for a, d in zip(batched_args, batch_dims) if d is not None)\n" if n > 1 else ""
    return (f"`batching.{helper}({var})` binds the primitive on the batched input with the batch axis wherever "
            "vmap put it, which is only right for elementwise primitives; this one works along specific axes. "
            "Move the batch axis to the front and bind there (the impl must accept a leading batch axis):\n"
            f"def _{name}_batching(batched_args, batch_dims, **params):\n"
            f"    ({xs}{',' if n == 1 else ''}), ({bs}{',' if n == 1 else ''}) = batched_args, batch_dims\n{size}"
            f"    return {var}.bind({moved}, **params), 0\n"
            f"batching.primitive_batchers[{var}] = _{name}_batching")


def _raised_outside_rules(ctx: Context, ev: Evidence, failed: list[Outcome]) -> Iterator[Finding]:
    """JXB013: vmap itself raised, outside every spied rule."""
    if not failed:
        return
    name = _subject_display(ctx)
    first = failed[0]
    exc = first.error
    assert exc is not None
    rest = [o.variant.describe(name) for o in failed[1:]]
    also = f" Also for {'; '.join(rest[:3])}." if rest else ""
    passing = [o.variant.describe(name) for o in ev.outcomes if o.ok]
    works = f" It works for {passing[0]}." if passing else ""
    fn = ctx.subject.obj if ctx.subject.kind == "function" else None
    location = (user_frame_location(exc, fn) if fn is not None else None) or ctx.subject.location
    yield rules.VMAP_RAISED.finding(
        f"{first.variant.describe(name)} raised {first_line(exc)}, although {name} runs on each example.{also}"
        f"{works}", fix=_vmap_raised_fix(exc), location=location)


def _vmap_raised_fix(exc: BaseException) -> str:
    kind = type(exc).__name__
    if "Tracer" in kind or "Concretization" in kind:
        return ("Do not branch in Python on array values or convert them to NumPy/Python scalars: use "
                "`jnp.where`, `jax.lax.cond`/`select`, and jax.numpy throughout.")
    return "Make the function traceable with batched inputs (use jax.numpy on the traced values)."


def _function_outcomes(ctx: Context, ev: Evidence, explained: set[tuple]) -> Iterator[Finding]:
    """A function's failures, attributed: to a nested primitive's rule (reported in that primitive's own report),
    to a missing rule, or to the function itself."""
    nested = {s.obj for s in ctx.cache.get("nested_subjects", []) if s.kind == "primitive"}
    blamed: list[str] = []
    own_mismatch: list[Outcome] = []
    own_error: list[Outcome] = []
    for outcome in ev.outcomes:
        if outcome.ok or outcome.reference_error is not None:
            continue
        culprit = _culprit(outcome, nested)
        if culprit is None and ev.spied and _loop_rules_fix(ctx, ev, outcome):
            culprit = "the batching rules of " + ", ".join(p.name for p in ev.spied)
        if culprit is not None:
            blamed.append(f"{outcome.variant.describe(ctx.subject.name)}: {culprit}")
        elif outcome.abort is not None:
            yield from _unattributed_abort(ctx, outcome.abort)
        elif outcome.error is not None:
            own_error.append(outcome)
        else:
            own_mismatch.append(outcome)
    if own_mismatch:
        yield from _mismatch_findings(ctx, Evidence(ev.subject, ev.fn, ev.reference, own_mismatch + [
            o for o in ev.outcomes if o.ok], ev.calls, ev.spied, None), explained)
    yield from _raised_outside_rules(ctx, ev, own_error)
    if blamed and not own_mismatch and not own_error:
        raise SkipCheck("vmap of the function fails or differs because of nested primitives, reported in their "
                        "own reports: " + "; ".join(dict.fromkeys(blamed)))


def _culprit(outcome: Outcome, nested: set[Any]) -> str | None:
    if outcome.abort is not None and outcome.abort.prim in nested:
        return f"{outcome.abort.prim.name}'s batching rule"
    if outcome.error is not None:
        text = str(outcome.error)
        for prim in nested:
            for marker in (f"Batching rule for '{prim.name}'", f"Abstract evaluation for '{prim.name}'",
                           f"primitive '{prim.name}' not found"):
                if marker in text:
                    return f"{prim.name} (missing rule)"
    return None


def _loop_rules_fix(ctx: Context, ev: Evidence, outcome: Outcome) -> bool:
    """Re-run the variant with every user primitive batched by a per-example loop: if that agrees with the
    reference, the user's batching rules are what differs."""
    spy = Spy(ctx.subject, None, oracle=True)
    fresh = lambda *args: ev.fn(*args)  # noqa: E731 - a new function object, so no jit cache holds the user's rules
    redo = _run(fresh, ev.reference, spy, ev.spied, outcome.variant)
    return redo.ok


def _unattributed_abort(ctx: Context, call: RuleCall) -> Iterator[Finding]:
    """A primitive that is not a subject of its own (bound only inside another rule): report it here."""
    if call.error is not None:
        yield _raised_finding(ctx, [call])
        return
    for problem in call.problems[:1]:
        yield _structure_finding(ctx, evidence(ctx), [(call, problem)], {})


# ---------------------------------------------------------------------------------------------------------------
# Check: unbatched outputs reported batched (JXB003)
# ---------------------------------------------------------------------------------------------------------------


@check("batching-unbatched-outputs", family="batching", kinds={"primitive"})
def unbatched_outputs_check(ctx: Context) -> Iterator[Finding]:
    if not is_user_primitive(ctx.subject):
        raise SkipCheck("JAX's own primitive: constant outputs are not checked")
    ev = evidence(ctx)
    call = next((c for c in ev.calls if c.top and c.variant.mode == "eager" and not c.problems and c.error is None
                 and c.variant.pattern == frozenset() and c.out_dims is not None and c.variant.size > 1), None)
    if call is None:
        return
    independent = _independent_outputs(ctx)
    for k, d in enumerate(call.out_dims or []):
        if d is None or ev.reference.constant(frozenset(), k, ev.reference.count) is not True:
            continue
        if independent is not None and k not in independent:
            continue
        yield _constant_finding(ctx, ev, call, k)


def _independent_outputs(ctx: Context) -> set[int] | None:
    """Outputs of the impl's jaxpr that depend on no input; None when the impl cannot be traced."""
    impl = _compat.impl(ctx.subject.obj)
    if impl is None:
        return None
    shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in ctx.specs]
    try:
        closed = jax.make_jaxpr(lambda *a: impl(*a, **ctx.subject.params))(*shapes)
    except Exception:
        return None
    return {k for k, dep in enumerate(_compat.output_dependence(closed)) if not dep}


def _constant_finding(ctx: Context, ev: Evidence, call: RuleCall, k: int) -> Finding:
    prim, name = ctx.subject.obj, _display(ctx, ctx.subject.obj)
    rule_fn = _compat.batching_rule(prim)
    line = _returning_line_of(ev, call)
    shape = call.expected[k] if call.expected else None
    multiple = bool(prim.multiple_results)
    out_axes: Any = [None if j == k else 0 for j in range(len(call.out_dims or []))] if multiple else None
    jax_error = _out_axes_error(ev, call, out_axes)
    what = f" ({aval_text(*shape)})" if shape else ""
    message = (f"Output {k}{what} of {prim_var(ctx.subject)} is the same for every one of {ev.reference.count} "
               "random examples and depends on no input, but the batching rule reports it batched "
               f"(dim {call.out_dims[k]}) for "
               f"{call.variant.describe(name)}: vmap materialises {call.variant.size} copies, and "
               f"`jax.vmap(..., out_axes={_axes_repr(out_axes)})` fails"
               + (f" with `{jax_error}`." if jax_error else "."))
    fixed = corrected_return(rule_fn, line, {k: "None"}, multiple) if rule_fn is not None else None
    fix = (f"Return None as output {k}'s dim (and the unbroadcast value); JAX broadcasts it when out_axes asks for "
           "a batch axis" + (f": `{fixed}`." if fixed else "."))
    return rules.MISSING_NONE_FOR_UNBATCHED_OUTPUT.finding(
        message, fix=fix, location=_return_location(rule_fn, line, rules.MISSING_NONE_FOR_UNBATCHED_OUTPUT,
                                                     ctx.subject.location))


def _out_axes_error(ev: Evidence, call: RuleCall, out_axes: Any) -> str | None:
    variant = call.variant
    try:
        jax.vmap(ev.fn, in_axes=variant.axes, out_axes=out_axes)(*ev.reference.batched_args(variant))
    except Exception as exc:
        return first_line(exc)
    return None


# ---------------------------------------------------------------------------------------------------------------
# Check: out_axes (JXB011) and the user's --in-axes/--out-axes (JXB012)
# ---------------------------------------------------------------------------------------------------------------


@check("batching-out-axes", family="batching", kinds={"primitive", "function"})
def out_axes_check(ctx: Context) -> Iterator[Finding]:
    wrappers = _list_wrappers(ctx) if ctx.subject.parent is None or ctx.subject.kind == "function" else []
    if ctx.options.in_axes is None and ctx.options.out_axes is None and not wrappers:
        return  # nothing to reproduce: do not run the variants for this check alone
    ev = evidence(ctx)
    yield from _user_axes(ctx, ev)
    yield from _list_outputs(ctx, ev, wrappers)


@check("batching-out-axes-none", family="batching", kinds={"primitive"})
def out_axes_none_check(ctx: Context) -> Iterator[Finding]:
    """`out_axes=None` must work for every output the rule reports unbatched, and give one example's value."""
    if not is_user_primitive(ctx.subject):
        raise SkipCheck("JAX's own primitive")
    ev = evidence(ctx)
    call = next((c for c in ev.calls if c.top and c.variant.mode == "eager" and c.variant.pattern == frozenset()
                 and c.out_dims is not None and not c.problems and c.variant.size > 1), None)
    if call is None or None not in call.out_dims:
        return
    multiple = bool(ctx.subject.obj.multiple_results)
    unbatched = [k for k, d in enumerate(call.out_dims) if d is None]
    if any(ev.reference.constant(frozenset(), k, call.variant.size) is False for k in unbatched):
        return  # JXB010 reports it
    out_axes: Any = [None if d is None else 0 for d in call.out_dims] if multiple else None
    variant = replace(call.variant, mode="user", user_in_axes=call.variant.axes, out_axes=out_axes)
    outcome = _run(ev.fn, ev.reference, Spy(ctx.subject, ev.expected_at_subject), [], variant)
    if outcome.error is None:
        return
    explanation = explain_vmap_error(outcome.error, variant, ctx, ev)
    yield rules.VMAP_CALL_FAILED.finding(
        f"{variant.describe(_subject_display(ctx))} fails although the rule reports output(s) {unbatched} "
        f"unbatched: {first_line(outcome.error)}. {explanation[0]}", fix=explanation[1],
        location=rule_location(_compat.batching_rule(ctx.subject.obj), ctx.subject.location))


def _user_axes(ctx: Context, ev: Evidence) -> Iterator[Finding]:
    user = next((o for o in ev.outcomes if o.variant.mode == "user"), None)
    if user is None or user.error is None:
        return  # ran (its defects are reported with the other variants) or was not asked for
    name = _subject_display(ctx)
    explanation = explain_vmap_error(user.error, user.variant, ctx, ev)
    yield rules.VMAP_CALL_FAILED.finding(
        f"{user.variant.describe(name)} fails: {first_line(user.error)}. {explanation[0]}",
        fix=explanation[1], location=ctx.subject.location)


def explain_vmap_error(exc: BaseException, variant: Variant, ctx: Context, ev: Evidence) -> tuple[str, str]:
    """(what went wrong in plain words, what to change) for JAX's vmap errors about axes."""
    text = str(exc)
    specs = ctx.specs
    list_output = ctx.subject.kind == "primitive" and bool(ctx.subject.obj.multiple_results)
    if "tree prefix" in text and "out_axes" in text:
        if list_output and isinstance(variant.out_axes, tuple):
            return (f"{ctx.subject.name} returns a list (it is a multiple_results primitive), and a tuple is not a "
                    "prefix of a list.", f"Pass a list: --out-axes {_axes_repr(list(variant.out_axes))}, or wrap the "
                                          "call in a function returning `tuple(prim.bind(...))`.")
        return ("out_axes must mirror the structure of the output (the same containers, or a single int/None for "
                "everything).", "Give one entry per output in the output's own container type, or a single axis.")
    if "tree prefix" in text or "in_axes must be" in text:
        return (f"in_axes needs one entry per positional argument; {ctx.subject.name} takes {len(specs)}.",
                f"Pass {len(specs)} comma-separated axes, e.g. --in-axes {','.join('0' for _ in specs)}.")
    if "requested to map its argument along axis" in text:
        ranks = ", ".join(f"argument {i}: {len(s.shape) + 1} (valid axes -{len(s.shape) + 1}..{len(s.shape)})"
                          for i, s in enumerate(specs))
        return (f"An axis is beyond the rank of its batched argument ({ranks}).",
                "Choose an axis within the batched argument's rank (the per-example rank + 1).")
    if "got axis spec None but output was batched" in text:
        k = _index_in(text)
        constant = ev.reference.constant(frozenset(), k, ev.reference.count) if k is not None else None
        if constant:
            return (f"Output {k} is the same for every example, but the batching rule reports it batched.",
                    f"Return None as output {k}'s dim in the batching rule (see JXB003), then out_axes=None works.")
        return (f"Output {k} differs from example to example, so it cannot be returned unbatched.",
                f"Use an integer out_axes for output {k}.")
    if "at least one non-None value" in text:
        return ("Every argument is unbatched, so there is nothing to map over.",
                "Give at least one argument an integer axis.")
    if "out of bounds for array of dimension" in text:
        return ("An out_axes entry is beyond the rank of its batched output (the per-example rank + 1).",
                "Use an out_axes between -(rank+1) and rank for each output.")
    return ("JAX rejected this vmap call.", "Check that in_axes has one entry per argument and out_axes mirrors the "
                                            "output.")


def _index_in(text: str) -> int | None:
    import re

    match = re.search(r"out_axes\[(\d+)\]", text)
    return int(match.group(1)) if match else (0 if "out_axes," in text or "out_axes " in text else None)


def _list_outputs(ctx: Context, ev: Evidence, wrappers: list[tuple[Callable, Any, str, int]]
                  ) -> Iterator[Finding]:
    """JXB011: a wrapper returning `prim.bind(...)` of a multiple_results primitive returns a list, so a tuple
    out_axes fails. Found in the function's own source, or, for a primitive, among its module's functions."""
    for wrapper, prim, var, node_line in wrappers:
        if prim is None or not prim.multiple_results:
            continue
        finding = _tuple_out_axes(ctx, ev, wrapper, prim, var, node_line)
        if finding is not None:
            yield finding


def _list_wrappers(ctx: Context) -> list[tuple[Callable, Any, str, int]]:
    subject = ctx.subject
    if subject.kind == "function":
        fn = _locate.unwrap(subject.obj)
        return [(subject.obj, prim, var, line) for prim, var, line in _returns_bind(fn)]
    if not is_user_primitive(subject):
        return []
    module = primitive_module(subject)
    if module is None:
        return []
    out = []
    for value in vars(module).values():
        if inspect.isfunction(value) and value.__module__ == module.__name__:
            out += [(value, prim, var, line) for prim, var, line in _returns_bind(value) if prim is subject.obj]
    return out


def _returns_bind(fn: Any) -> list[tuple[Any, str, int]]:
    """(primitive, its variable name, line) for each `return <prim>.bind(...)` in `fn`, the primitive resolved in
    its globals."""
    out = []
    for line, node in _return_nodes(fn):
        value = node.value
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "bind"
                and isinstance(value.func.value, ast.Name)):
            prim = getattr(fn, "__globals__", {}).get(value.func.value.id)
            if _compat.is_primitive(prim):
                out.append((prim, value.func.value.id, line))
    return out


def _tuple_out_axes(ctx: Context, ev: Evidence, wrapper: Callable, prim: Any, var: str, line: int
                    ) -> Finding | None:
    """Run the wrapper under vmap with a tuple out_axes; report when JAX rejects it as not a tree prefix."""
    n = _n_outputs(ctx, ev, prim)
    if n is None or n < 2:
        return None
    unbatched = _unbatched_outputs(ctx, ev, prim, n)
    if not unbatched:
        return None  # every output is batched: nobody has a reason to pass a per-output out_axes
    out_axes = tuple(None if k in unbatched else 0 for k in range(n))
    args = ev.reference.batched_args(Variant(tuple(0 for _ in ctx.specs), ev.outcomes[0].variant.size))
    try:
        jax.vmap(wrapper, out_axes=out_axes)(*args)
        return None
    except Exception as exc:
        if "tree prefix" not in str(exc):
            return None
        error = first_line(exc).rstrip(";: ")
    wrapper_name = getattr(_locate.unwrap(wrapper), "__name__", "f")
    base = _locate.locate(wrapper)
    bind_text = _bind_source(wrapper, line)
    location = base
    if base is not None and not (_locate.inline_ignores(base) or set()) & {"*", rules.OUT_AXES_TUPLE_FOR_LIST.code}:
        location = Location(base.path, line, base.function)
    message = (f"{wrapper_name} returns `{bind_text}` directly, and {var} is a multiple_results primitive, so "
               f"bind returns a list of {n}; `jax.vmap({wrapper_name}, out_axes={_axes_repr(out_axes)})` therefore "
               f"fails: {error} (a tuple is not a prefix of a list).")
    return rules.OUT_AXES_TUPLE_FOR_LIST.finding(
        message, fix=f"Return a tuple from {wrapper_name}: `return tuple({bind_text})`, or pass a list: "
                     f"`out_axes={_axes_repr(list(out_axes))}`.", location=location)


def _bind_source(fn: Any, line: int) -> str:
    found = _function_node(fn)
    if found is not None:
        node, offset, source = found
        for r in _own_nodes(node):
            if isinstance(r, ast.Return) and r.lineno + offset == line and r.value is not None:
                return ast.get_source_segment(source, r.value) or ast.unparse(r.value)
    return "prim.bind(...)"


def _n_outputs(ctx: Context, ev: Evidence, prim: Any) -> int | None:
    if ctx.subject.kind == "primitive":
        return len(ev.expected_at_subject) if ev.expected_at_subject is not None else None
    leaves = next((o.leaves for o in ev.outcomes if o.leaves is not None), None)
    return len(leaves) if leaves is not None else len(example_output(ctx).leaves or [])


def _unbatched_outputs(ctx: Context, ev: Evidence, prim: Any, n: int) -> set[int]:
    """Outputs that are the same for every example: those a user would ask for unbatched (out_axes None)."""
    return {k for k in range(n) if ev.reference.constant(frozenset(), k, ev.reference.count)}


CHECKS = [rule_returns_check, vs_loop_check, unbatched_outputs_check, out_axes_check, out_axes_none_check]
