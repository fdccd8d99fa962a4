"""Climbing the inputs ladder: the candidates inference tries for a target's arrays, the first that runs winning.

The plain ladder (`shape_ladder`) draws float32 arrays of a few small shapes, independent of each other and of
anything else. Two classes of rules accept none of them:

- operand shapes tied to an int parameter: `forward(flm, L)` wants `flm` shaped (L, 2L - 1), a primitive bound with
  `L=L` an operand of L rows. When the target takes ints (its int positions, a carrier's assumed keyword, a
  synthesised bind param: `sizes`), candidates built from the first rung's value n come before the plain ladder
  (`derived_candidates`): the first operand's dims from a small family of n (`derived_dims`), the others (n,); the
  dims the rule itself names (its abstract eval's output, the numbers of its errors) first. On one value of n only:
  a contract that is a function of n holds for any n, so the other rungs would only repeat the same failures;
- complex data beside real coordinates (a transform of complex coefficients at real points): when the rule's source
  names a complex dtype, or a failure does (its message, or the source of the user function that raised it), each
  candidate is followed by its variants with the first operand complex, then all of them;
- shapes its author stated (rank-4 attention operands sharing axes): the axes the code unpacks and the shapes the
  docstrings give come first (`_stated_shapes`).

A `float`-annotated parameter is drawn as a scalar; only where that scalar does not run is it tried as a Python
float (`_scalar_forms`: a scale passed on to a jit's static argument).

A primitive's derived candidate is accepted only when its abstract eval agrees with what its impl computed
(`_engine._try_call`'s `agree`, as for synthesised bind params): a shape tied to n is used only where the rule's own
description of its output holds. A custom_jvp/custom_vjp's rules are its contract as much as its primal is: a rung
its primal runs on but whose reverse mode does not trace (a JVP written with matrix products, on vectors a dot
product accepts) is passed over for a later rung where both run, and kept only if no rung does (its rule's failure
is then reported there, as before). Where JAX rejects the bwd's output because it returns a scalar cotangent for an
operand drawn as an array (a pixel size beside per-point arrays), that operand is a scalar: the rung is tried again
with it drawn as one. Where a primitive's transpose rule returns a cotangent of another shape or dtype for an operand
its abstract eval never looks at (a transform sized by its params: its outputs are the same whatever that operand
is), the operand is what the rule states: the rung is tried again with it so (`_restated`). A primitive's rung is
preferably one where its abstract eval describes what its impl computes
(complex coefficients where its impl returns complex whatever it is given), else the first that ran.
"""

from __future__ import annotations

import inspect
import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from types import CodeType, TracebackType
from typing import Any

import jax
import numpy as np

from .. import _compat
from .. import _rules as rules
from .._checks._base import Subject
from .._core import _locate
from .._core._report import Finding
from .._harness import UserResult, call_user
from .._loading._inputs import DOMAINS, DTYPES, ArgSpec, Static, key_spec, template_text
from .._loading._operand_names import TOLERANCE_DOMAIN, index_named, is_tolerance
from . import (
    _asked_options, _asserted, _int_params, _operand_kinds, _predicates, _signature, _stated_shapes, _static_use,
    _static_values,
)
from ._assumed_params import DISAGREES
from ._call_site_dtypes import complex_positions
from ._sparse_operands import csr_rungs
from ._domains import VALUES_ONLY
from ._error_shapes import restated_by_error
from ._well_posed import well_posed

# The plain ladder: one shape for every operand, simplest first.
SHAPE_LADDER: tuple[tuple[tuple[int, ...], ...], ...] = (
    ((3,),), ((),), ((2, 3),), ((3, 3),), ((2, 3, 4),),
    # last: an even square (a Pfaffian, a symplectic or 2x2-block form; an odd size returns early or is refused)
    ((4, 4),),
)
# matrix-matrix, matrix-vector (either side contracted) and vector-matrix products, then an array with a scalar
PAIR_LADDER: tuple[tuple[tuple[int, ...], ...], ...] = (
    ((2, 3), (3, 4)), ((2, 3), (3,)), ((2, 3), (2,)), ((2,), (2, 3)), ((3,), ()), ((), (3,)))

# An array of (batch, channels, points) with arrays of (batch, points): the later operands drop the first's middle
# axis (a transform's values at points and the points' coordinates, a sequence batch and its per-step mask).
SHARED_AXES: tuple[tuple[int, ...], tuple[int, ...]] = ((2, 3, 4), (2, 4))


def shape_ladder(arity: int, pairs_early: bool = False, dtype: str = "f32", matrices: frozenset[int] = frozenset()
                 ) -> Iterator[list[ArgSpec]]:
    """Candidate float32 inputs (or `dtype`'s) for a target of `arity` positional arguments, simplest first.
    `pairs_early`: for two arguments, the mixed-rank pairs (a matrix with a vector) before same-shape matrices, for
    a function whose arguments play different parts (a public function of a library, run only to reach the rules it
    calls). `matrices`: the positions whose names say matrix (`U`, `V` beside `t`, `c`, as numerical code writes
    them), tried as [3,3] beside [3] vectors right after the all-vector rung."""
    f32 = DTYPES[dtype]
    rungs = [shape for (shape,) in SHAPE_LADDER]
    simple = [s for s in rungs if len(s) <= 1] if pairs_early and arity == 2 else rungs
    for n, shape in enumerate(simple):
        yield [ArgSpec(f32, shape) for _ in range(arity)]
        if n == 0 and 0 < len(matrices) < arity:
            yield [ArgSpec(f32, (3, 3) if i in matrices else (3,)) for i in range(arity)]
    if arity == 2:
        for pair in PAIR_LADDER:
            yield [ArgSpec(f32, s) for s in pair]
    for shape in rungs:
        if shape not in simple:
            yield [ArgSpec(f32, shape) for _ in range(arity)]
    if arity >= 2:  # channels over points, with each point's coordinates: the batch and point axes shared
        yield [ArgSpec(f32, SHARED_AXES[0])] + [ArgSpec(f32, SHARED_AXES[1]) for _ in range(arity - 1)]


# What an error says when a size must be a multiple of something (a packed-bits view, a kernel's block, a TPU lane)
_ALIGNMENT = re.compile(r"\bdivisor\b|\bdivisible\b|\bmultiple of\b|\b(mis)?align(ed|ment)\b|\bevenly\b",
                        re.IGNORECASE)
# Sizes every such constraint this side of a kernel's tile accepts: 128 is a multiple of 8, 32 (bits in a float32
# word) and 128 (a lane).
ALIGNED_LADDER = ((128,), (8, 128), (2, 8, 128))


def aligned_rungs(arity: int, dtype: str, errors: list[str]) -> Iterator[list[ArgSpec]]:
    """After the plain ladder, when a rung failed saying a size must divide or be a multiple of something (a
    `view` to a wider dtype, a packed-bits layout, a tiled kernel): rungs whose sizes are multiples of 128. Read
    lazily, once the plain rungs' errors are in."""
    if any(_ALIGNMENT.search(e) for e in errors):
        for shape in ALIGNED_LADDER:
            yield [ArgSpec(DTYPES[dtype], shape) for _ in range(arity)]


# Per operand tied to an int n: n itself; 2n - 1 (the orders -(n-1)..n-1 of degree < n, a full correlation's
# length); n + 1 (the coefficients of a degree-n polynomial, the points closing a grid of n cells); n - 1 (the
# differences of n points); 2n (a doubled grid); n * n (harmonics flattened over (l, m)); n // 2 + 1 (a real FFT's
# half spectrum). Rank 1, and rank 2 with n rows: a table over degree and order, n steps by a width.
def derived_dims(n: int) -> list[int]:
    """The dims an operand tied to the int n is tried at, n first (duplicates and dims below 1 left out)."""
    return list(dict.fromkeys(d for d in (n, 2 * n - 1, n + 1, n - 1, 2 * n, n * n, n // 2 + 1) if d >= 1))


# How many ints of one target operand shapes are derived from (`L` and `nside` of one transform).
MAX_SIZES = 2
# What names a complex dtype in source or in an error message (MLIR's `tensor<4x7xcomplex<f32>>` too).
# `c64`/`c128` may end a name (`solve_c128`: "_" is a word character, so `\b` would not match before it)
_COMPLEX = re.compile(r"complex(?!ity)|(?<![A-Za-z0-9])c(single|double|64|128)(?![A-Za-z0-9])")
_COMPLEX_OF = {np.dtype(np.float32): DTYPES["c64"], np.dtype(np.float64): DTYPES["c128"]}


@dataclass
class _State:
    """What the climb has learned about the target so far."""

    complex: bool  # try complex variants after each candidate
    learned: set[int] = field(default_factory=set)  # dims of the derived family the rule itself named
    probed: set[int] = field(default_factory=set)  # the ints whose derived output dims were traced
    again: bool = False  # the last variant again: its reverse mode named operands that are scalars (`scalars`)
    complex_first: set[int] = field(default_factory=set)  # the candidate's operands the package always passes complex
    restated: dict[int, ArgSpec] = field(default_factory=dict)  # for that retry: operands a transpose rule restated


def climb_ladder(subject: Subject, notes: list[Finding], statics: dict[int, Any],
                 how: tuple[bool, str, list[list[str]]], tried: list[str], errors: list[str], agree: bool = False,
                 sizes: tuple[int, ...] = (), engine: tuple[Any, ...] = ()) -> list[Any] | None:
    """The first rung of inputs the target runs on (noted as inferred), or None; `how`: (pairs early, the dtype, the
    operand lists of the library's bind calls); `tried` and `errors` collect what was tried and what it raised;
    `sizes`: ints operand shapes may be derived from besides the target's own int positions; `engine`: its
    (`_try_call`, `MissingDependencyError`, the error prefixes of a missing dependency)."""
    _try_call, MissingDependencyError, missing_dependency = engine
    pairs_early, dtype, operands = how
    totals: set[int] = set()
    # `assert pred.dtype == jnp.bool_`, `assert pred.shape == ()` in the target or the wrapper that binds it
    asserted = _asserted.asserted_positions(subject)
    scalars = _static_values.float_annotated(subject) | asserted["scalar"]  # `gamma: float`: a scalar always
    # jaxtyping's `Int[Array, "n"]`, `Bool[...]`, `Float[...]`: the annotation's family wins over a name
    families = _stated_shapes.annotated_families(subject)
    truths = (_predicates.predicate_positions(subject) | _family(families, "bool")  # booleans first, then floats
              | asserted["bool"])
    indices = (_operand_kinds.index_positions(subject) | _family(families, "int")  # `w[idx]`: integers, always
               | asserted["int"])
    # `key`, `rng: PRNGKeyArray`: a typed PRNG key, always (never where the annotation says another family)
    keys = (_operand_kinds.key_positions(subject) - _family(families, "float", "complex", "int", "bool")
            ) | _family(families, "key")
    containers = _operand_kinds.container_positions(subject)  # `cache: tuple[Array, Array]`: that container
    # "A : ... assumed symmetric", or `jnp.linalg.eigh(A)` in its code: drawn spd (what the docstring says wins)
    documented = {**dict.fromkeys(_operand_kinds.factorised_positions(subject), "spd"),
                  **_operand_kinds.documented_domains(subject, operands)}
    state = _State(complex=_names_complex(subject))
    # complex where the annotation says so (`Complex[Array, "n"]`) or every call the package makes passes complex
    complexes = _family(families, "complex") | complex_positions(subject)
    # a candidate that ran, reverse mode failing there (and whether it was a derived one): kept only if nothing runs
    # both; a custom_jvp/custom_vjp's rules are part of its contract, as a primitive's are
    fallback: tuple[list[Any], str, bool] | None = None
    ruled = subject.kind in ("custom_jvp", "custom_vjp")
    for arity in _arity(subject, operands):
        # a static position past the arity (a default taken, a forwarded option after `*args`) still counts
        arity = max(arity, max(statics) + 1 if statics else 0)
        if arity in totals:
            continue
        totals.add(arity)
        if arity == 0:
            _signature.apply(subject, [])
            ok, error = _try_call(subject, [], "normal", 0)
            if ok or error == "non-finite output":
                return []
            errors.append(error)
            continue
        names = _names(subject, arity, operands)
        statements = _stated_shapes.stated_axes(subject, names)
        # `indices`, `row_indices`, a docstring's "Ai: [n_nz; int32]: the row indices": integers too, unless an
        # annotation gives them another family
        named = indices | ((index_named(names) | _static_use.documented_indices(subject, names))
                           - _family(families, "float", "complex", "bool"))
        tolerances = {i: TOLERANCE_DOMAIN for i, name in enumerate(names) if is_tolerance(name)}
        tolerances.update(_operand_kinds.bound_pairs(names))  # `low, high`: the lower below the upper
        for ints in _static_values.int_positions(subject, statics, arity):  # `L: int`: a Python int on each rung
            n_arrays = max(arity - len(statics) - len(ints), 0)
            matrices = _matrix_positions(subject, arity, {**statics, **ints}, operands)
            arrays = [i for i in range(n_arrays + len(statics) + len(ints)) if i not in statics and i not in ints]
            state.complex_first = {k for k, i in enumerate(arrays) if i in complexes}
            # the shapes the author stated first, counted where the abstract eval agrees (an impl may broadcast more)
            stated = list(_stated_shapes.stated_rungs(arrays, statements, DTYPES[dtype], names, ints))
            # row offsets and column indices of a CSR matrix: a valid structure first (`_sparse_operands`), ahead
            # of shapes derived from an assumed int too (random floats are no row pointers, and a kernel that only
            # traces here accepts the first candidate whose shapes its abstract eval takes)
            stated = (structured := csr_rungs(names, arrays, DTYPES[dtype])) + stated
            plain = (itertools.chain(stated, shape_ladder(n_arrays, pairs_early, dtype, matrices),
                                     aligned_rungs(n_arrays, dtype, errors)) if n_arrays else iter([[]]))
            for candidate, flags, fixed, derived in _tries(plain, n_arrays, ints, truths, sizes, dtype, state,
                                                           structured):
                for variant in _variants(candidate, state):
                    it = iter(variant)
                    templates = [statics[i] if i in statics else fixed[i] if i in fixed else next(it)
                                 for i in range(n_arrays + len(statics) + len(fixed))]
                    templates = [ArgSpec(np.dtype(np.bool_) if i in flags else t.dtype, () if i in scalars else t.shape)
                                 if isinstance(t, ArgSpec) and t.key is None and (i in scalars or i in flags) else t
                                 for i, t in enumerate(templates)]
                    templates = _as_keys(_as_indices(templates, named - flags - scalars - keys), keys)
                    templates = [state.restated.get(i, t) for i, t in enumerate(templates)]
                    state.restated = {}
                    drawn = _as_containers(_as_documented(templates, {**tolerances, **documented}), containers,
                                           documented)
                    for templates in _scalar_forms(drawn, scalars - flags):  # arrays, then Python floats
                        text = " ".join(template_text(t) for t in templates) + _asked_options.keywords_text(subject)
                        if text in tried:  # and so was the float form after it, if it was due
                            break
                        tried.append(text)
                        _signature.apply(subject, templates)
                        checked = agree or (subject.kind == "primitive" and (
                            derived is not None or any(candidate is c for c in stated)))
                        # any other rung of a primitive: one where its abstract eval describes what its impl
                        # computes is preferred (complex data its impl returns complex for), else the first that ran
                        preferred = subject.kind == "primitive" and not checked
                        failures: list[BaseException] = []
                        ok, error = _try_call(subject, subject.specs, "normal", 0, checked or preferred, failures)
                        if not ok and (error == "non-finite output" or error.endswith(VALUES_ONLY)):
                            ok = any(_try_call(subject, subject.specs, d, 0, checked)[0] for d in DOMAINS[1:])
                        ran = ok  # the Python-float form is only for a drawn scalar the target cannot take
                        if preferred and not ok and error.startswith(DISAGREES):
                            fallback = fallback or (list(templates), text, False)
                            ran = True
                        if ok and any(candidate is c for c in stated) and not well_posed(subject, statements):
                            # two named axes in one order run but are ill-posed (m equality constraints on n < m
                            # variables: a singular system, finite but meaningless); the other order may not be
                            fallback = fallback or (list(templates), text, False)
                            ok, error = False, "ill-posed at the stated shapes (far more sensitive than its inputs)"
                        if ok and (ruled or (derived is not None and fallback is None)):
                            why = _reverse_fails(subject, run=ruled)
                            if why:  # runs, but reverse mode does not trace here: the first such kept if none runs
                                fallback = fallback or (list(templates), text, derived is not None)
                                ok, error = False, str(why)
                                # a bwd's scalar cotangent for an operand drawn as an array: that operand is a
                                # scalar (a pixel size beside per-point arrays); this rung again with it so
                                learned = _scalar_cotangents(subject, why, len(templates)) - scalars
                                scalars |= learned
                                # a transpose rule's cotangent for an operand the forward never looks at the shape
                                # of (a transform sized by its params): that operand as the rule states it
                                state.restated = {} if learned else _restated(subject, why, templates)
                                state.again = bool(learned or state.restated)
                        if ok:
                            return _found(subject, notes, templates, text)
                        errors.append(error)
                        if error.startswith(missing_dependency):
                            raise MissingDependencyError(subject.label, error)
                        _learn(subject, state, error, failures, derived)
                        if not ran and not state.again:  # "alm shape (4,) != expected (15,)": this rung at that shape
                            state.restated = restated_by_error(error, templates)
                            subject.keywords.update(asked := _asked_options.asked_keywords(subject, error))
                            state.again = bool(state.restated or asked)
                        if ran:
                            break
                if fallback is not None and fallback[2] and derived is None:  # the derived family is done
                    return _found(subject, notes, *fallback[:2])
    return _found(subject, notes, *fallback[:2]) if fallback is not None else None


def _family(families: dict[int, str], *wanted: str) -> set[int]:
    return {i for i, family in families.items() if family in wanted}


def _scalar_forms(templates: list[Any], scalars: set[int]) -> Iterator[list[Any]]:
    """The templates; then, when some `float`-annotated position holds a drawn scalar, those positions as the Python
    float `_static_values.FLOAT_STATIC` (a function passing its `scale: float` on as a static, or to a jit's static
    argument, cannot take an array there)."""
    yield templates
    at = [i for i in scalars if i < len(templates) and isinstance(templates[i], ArgSpec)]
    if at:
        yield [Static(_static_values.FLOAT_STATIC) if i in at else t for i, t in enumerate(templates)]


def _as_indices(templates: list[Any], positions: set[int]) -> list[Any]:
    """The drawn float operands at `positions` as int32 indices, each value inside every dim of the other drawn
    operands (`0..min dim - 1`), so that it indexes any axis of any of them."""
    drawn = [t for i, t in enumerate(templates) if isinstance(t, ArgSpec) and t.key is None and i not in positions]
    dims = [d for t in drawn for d in t.shape]
    top = max(min(dims) - 1, 0) if dims else 0
    return [ArgSpec(np.dtype(np.int32), t.shape, f"0..{top}")
            if i in positions and isinstance(t, ArgSpec) and t.key is None and t.domain is None else t
            for i, t in enumerate(templates)]


def _as_keys(templates: list[Any], positions: set[int]) -> list[Any]:
    """The drawn operands at `positions` as one typed PRNG key each (`key[]`)."""
    return [key_spec(()) if i in positions and isinstance(t, ArgSpec) and t.key is None and t.domain is None else t
            for i, t in enumerate(templates)]


def _as_documented(templates: list[Any], domains: dict[int, str]) -> list[Any]:
    """The drawn float operands at the positions of `domains` on the domain their docstring states."""
    return [t.with_domain(domains[i]) if i in domains and isinstance(t, ArgSpec) and t.is_inexact and t.key is None
            and t.domain is None else t for i, t in enumerate(templates)]


def _as_containers(templates: list[Any], builds: dict[int, Any], domains: dict[int, str]) -> list[Any]:
    """The drawn float operands at the positions of `builds` as the container their annotation names, the drawn
    spec at each of its places (`(f32[3,3], f32[3,3])` for `tuple[Array, Array]`); a documented domain is kept."""
    return [builds[i](t) if i in builds and isinstance(t, ArgSpec) and t.key is None
            and t.domain in (None, domains.get(i)) else t for i, t in enumerate(templates)]


def _found(subject: Subject, notes: list[Finding], templates: list[Any], text: str) -> list[Any]:
    _signature.apply(subject, templates)
    notes.append(rules.INPUTS_INFERRED.finding(count=len(templates), specs=text, location=subject.location))
    return templates


def reverse_refused(subject: Subject) -> bool:
    """Whether the custom_jvp/custom_vjp's reverse mode fails on the inputs just inferred (a `use_pallas_bwd` flag
    set: its bwd a kernel for another platform)."""
    return subject.kind in ("custom_jvp", "custom_vjp") and bool(_reverse_fails(subject, run=True))


def _scalar_cotangents(subject: Subject, why: Any, arity: int) -> set[int]:
    """The positions whose cotangent the custom_vjp's bwd returned as a scalar where the operand was drawn as an
    array (JAX's structure error, read by `_compat.bwd_cotangent_mismatch`)."""
    mismatch = _compat.bwd_cotangent_mismatch(why.error) if isinstance(why, _ReverseFailure) else None
    if mismatch is None or mismatch[1] != () or mismatch[2] == ():
        return set()
    statics = _signature.static_positions(subject)
    differentiable = [i for i in range(arity) if i not in statics]
    return {differentiable[mismatch[0]]} if mismatch[0] < len(differentiable) else set()


def _cotangents_checked(traced: Any, shapes: list[Any]) -> Any:
    """`traced` (the pullback's avals) with JAX's own error where a float operand's cotangent has another shape: JAX
    raises it itself from 0.6 on ("Expected cotangent type ... but got ..."); older releases accept such a
    cotangent silently."""
    for ct, spec in zip(jax.tree_util.tree_leaves(traced.value), shapes):
        if np.issubdtype(spec.dtype, np.inexact) and tuple(ct.shape) != tuple(spec.shape):
            return UserResult(error=_compat.transpose_cotangent_error(spec, ct))
    return traced


def _restated(subject: Subject, why: Any, templates: list[Any]) -> dict[int, ArgSpec]:
    """{position: the operand as the primitive's transpose rule states it} when JAX rejected that rule's cotangent
    (`_compat.transpose_cotangent_mismatch`) for an operand whose shape and dtype the forward does not look at: its
    abstract eval gives the same outputs for the operand drawn and as the cotangent says. A transpose returning a
    wrong shape for an operand the output follows (a sum where an array belongs) restates nothing: its failure is
    reported where it was found."""
    mismatch = _compat.transpose_cotangent_mismatch(why.error) if isinstance(why, _ReverseFailure) else None
    if mismatch is None or subject.kind != "primitive":
        return {}
    (drawn_dtype, drawn_shape), (stated_dtype, stated_shape) = mismatch
    try:
        stated = ArgSpec(np.dtype(stated_dtype), stated_shape)
    except TypeError:
        return {}
    specs = list(subject.specs)  # the drawn arrays, in the templates' order
    at = [j for j, spec in enumerate(specs) if spec.key is None and np.dtype(spec.dtype).name == drawn_dtype
          and tuple(spec.shape) == drawn_shape]
    positions = [i for i, t in enumerate(templates) if at and isinstance(t, ArgSpec) and t == specs[at[0]]]
    if len(at) != 1 or len(positions) != 1:  # which operand the cotangent is for must be plain
        return {}
    shapes = [jax.ShapeDtypeStruct(spec.shape, spec.dtype) for spec in specs]
    moved = [jax.ShapeDtypeStruct(stated.shape, stated.dtype) if j == at[0] else s for j, s in enumerate(shapes)]
    before = call_user(lambda: jax.eval_shape(subject.call, *shapes), quiet=True)
    after = call_user(lambda: jax.eval_shape(subject.call, *moved), quiet=True)
    if before.error is not None or after.error is not None or before.value != after.value:
        return {}
    return {positions[0]: stated}


class _ReverseFailure(str):
    """Why reverse mode failed (the text), with the exception."""

    error: BaseException


def _reverse_fails(subject: Subject, run: bool = False) -> str:
    """Why reverse mode does not trace at the subject's inputs ("" when it does): a linear rule's transpose maps
    the output's cotangent back to an operand of another shape when the operand is outside the rule's contract (a
    table of width 2n - 1 where the rule's configuration wants 2n). Traced; with `run` (the subject's own rules:
    a custom_vjp's bwd), run once where they need concrete values (NumPy on a residual). Never run for a function
    found by deriving shapes: running its reverse mode may mean running a whole solver."""
    shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in subject.specs]

    def pullback(*xs: Any) -> Any:
        out, back = jax.vjp(subject.call, *xs)
        return back(jax.tree_util.tree_map(  # JAX arrays, as JAX hands a rule (a bwd may take a host path for NumPy)
            lambda o: jax.numpy.zeros(o.shape, o.dtype) if np.issubdtype(o.dtype, np.inexact)
            else np.zeros(o.shape, jax.dtypes.float0), out))

    traced = call_user(lambda: jax.eval_shape(pullback, *shapes), quiet=True)
    if traced.error is None and subject.kind == "primitive":
        traced = _cotangents_checked(traced, shapes)
    if run and traced.error is not None and _compat.needs_concrete_values(traced.error):
        # a rule computing on host values (NumPy on the cotangent) cannot be traced: run it once instead
        from .._loading._inputs import draw

        rng = np.random.default_rng(0)
        traced = call_user(lambda: pullback(*[draw(s, rng, subject.domain or "normal") for s in subject.specs]),
                           quiet=True)
    if traced.error is None:
        return ""
    why = _ReverseFailure(
        f"reverse mode: {type(traced.error).__name__}: {(str(traced.error).splitlines() or [''])[0][:200]}")
    why.error = traced.error
    return why


def _tries(plain: Iterator[list[ArgSpec]], n_arrays: int, ints: dict[int, str], truths: set[int],
           sizes: tuple[int, ...], dtype: str, state: _State, structured: Sequence[list[ArgSpec]] = ()
           ) -> Iterator[tuple[list[ArgSpec], set[int], dict[int, Any], int | None]]:
    """(candidate arrays, the positions drawn as booleans, the int positions' values, the n it is derived from or
    None): the `structured` candidates (a CSR matrix's arrays) on the first int rung, the derived candidates there,
    then the plain ladder with every rung (a candidate tried already is skipped by the caller)."""
    first = _int_params.int_rungs(ints)[0]
    ns = list(dict.fromkeys([*sizes, *(s.value for s in first.values() if type(s.value) is int)]))[:MAX_SIZES]
    for candidate in structured if ns else ():
        for flags in ([truths] if truths else []) + [set()]:
            yield candidate, flags, first, None
    if n_arrays:
        for n in ns:
            for candidate in derived_candidates(n_arrays, n, dtype, state):
                for flags in ([truths] if truths else []) + [set()]:
                    yield candidate, flags, first, n
    for candidate, flags, fixed in _int_params.rungs(plain, truths, ints):
        yield candidate, flags, fixed, None


def derived_candidates(arity: int, n: int, dtype: str, state: _State) -> Iterator[list[ArgSpec]]:
    """Every operand (n,); then the first operand at each of `derived_dims(n)`, rank 1 and rank 2 with n rows, the
    others (n,), the forms using a dim the rule named (`_State.learned`, read after the first try) first."""
    f = DTYPES[dtype]
    rest = [ArgSpec(f, (n,)) for _ in range(arity - 1)]
    yield [ArgSpec(f, (n,))] + rest
    dims = derived_dims(n)
    forms: list[tuple[int, ...]] = [(d,) for d in dims[1:]] + [(n, d) for d in dims]
    while forms:  # what each try taught is read before the next one is chosen
        form = next((f for f in forms if (set(f) - {n}) & state.learned), forms[0])
        forms.remove(form)
        yield [ArgSpec(f, form)] + rest


def _variants(candidate: list[ArgSpec], state: _State) -> Iterator[list[ArgSpec]]:
    """The candidate, then (once the target is known to want complex data) each float operand alone complex, the
    first one first (complex coefficients with real points: a transform's points may come first or last), then
    every float operand complex. Operands the contract gives complex (`complex_first`) are complex in a first
    variant."""
    first = [ArgSpec(_COMPLEX_OF[s.dtype], s.shape, s.domain) if k in state.complex_first and s.dtype in _COMPLEX_OF
             else s for k, s in enumerate(candidate)]
    if first != candidate:
        yield first
    yield candidate
    while state.again:
        state.again = False
        yield candidate
    if not state.complex or not candidate or candidate[0].dtype not in _COMPLEX_OF:
        return
    floats = [i for i, s in enumerate(candidate) if s.dtype in _COMPLEX_OF]
    alone = [[ArgSpec(_COMPLEX_OF[s.dtype], s.shape) if i == k else s for i, s in enumerate(candidate)]
             for k in floats]
    every = [ArgSpec(_COMPLEX_OF[s.dtype], s.shape) if s.dtype in _COMPLEX_OF else s for s in candidate]
    yield from alone
    if every not in alone:
        yield every


def _learn(subject: Subject, state: _State, error: str, failures: list[BaseException], derived: int | None
           ) -> None:
    """After a failed try: whether complex data is wanted; for a derived candidate, the dims of the derived family
    that the error names, and (on the first try of each n) those of the output its abstract eval describes."""
    if not state.complex and (any(_failure_names_complex(exc) for exc in failures)
                              or (error.startswith(DISAGREES) and _COMPLEX.search(error))):
        state.complex = True
    if derived is None:
        return
    family = set(derived_dims(derived)) - {derived}
    state.learned |= family & {int(d) for d in re.findall(r"\b\d+\b", error)}
    if state.learned or derived in state.probed:
        return
    state.probed.add(derived)
    shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in subject.specs]
    traced = call_user(lambda: jax.eval_shape(subject.call, *shapes), quiet=True)
    if traced.error is not None:
        state.learned |= family & {int(d) for d in re.findall(r"\b\d+\b", str(traced.error))}
    else:
        state.learned |= family & {d for leaf in jax.tree_util.tree_leaves(traced.value)
                                   for d in getattr(leaf, "shape", ())}


def _names_complex(subject: Subject) -> bool:
    """Whether the target's own code (a primitive's impl and abstract eval, a function's body) names a complex
    dtype."""
    obj = subject.original if subject.original is not None else subject.obj
    fns = ([_compat.impl(obj), _compat.abstract_eval_rule(obj)] if subject.kind == "primitive"
           else [getattr(obj, "fun", None) or obj])
    return any(fn is not None and _locate.is_user_code(fn) and names_complex(fn) for fn in fns)


def names_complex(fn: Any) -> bool:
    """Whether the source of `fn` (a public function calling rules) names a complex dtype: a function that
    dispatches on its inputs' dtype (`if jnp.iscomplexobj(x): ..._c128.bind(...)`) reaches its complex branch's rules
    only with complex inputs."""
    return fn is not None and bool(_COMPLEX.search(_code_text(getattr(_locate.unwrap(fn), "__code__", None))))


def complex_variant(templates: list[Any]) -> list[Any] | None:
    """`templates` with every real floating-point operand made complex of its precision; None when none is."""
    if not any(isinstance(t, ArgSpec) and t.key is None and t.dtype in _COMPLEX_OF for t in templates):
        return None
    return [ArgSpec(_COMPLEX_OF[t.dtype], t.shape, t.domain) if isinstance(t, ArgSpec) and t.key is None
            and t.dtype in _COMPLEX_OF else t for t in templates]


def _failure_names_complex(exc: BaseException) -> bool:
    """Whether a failure names a complex dtype: its message, or the source of the user functions it was raised in
    (an abstract eval asserting `dtype == np.csingle` raises a bare AssertionError)."""
    if _COMPLEX.search(str(exc)):
        return True
    codes: list[CodeType] = []
    tb: TracebackType | None = exc.__traceback__
    while tb is not None:
        if _locate.is_user_file(tb.tb_frame.f_code.co_filename):
            codes.append(tb.tb_frame.f_code)
        tb = tb.tb_next
    return any(_COMPLEX.search(_code_text(code)) for code in codes[-2:])


_TEXTS: dict[CodeType, str] = {}


def _code_text(code: CodeType | None) -> str:
    if code is None:
        return ""
    if code not in _TEXTS:
        try:
            _TEXTS[code] = inspect.getsource(code)
        except (OSError, TypeError):
            _TEXTS[code] = ""
    return _TEXTS[code]


def _matrix_positions(subject: Subject, arity: int, statics: dict[int, Any], operands: list[list[str]]
                      ) -> frozenset[int]:
    """Array positions (statics skipped) whose names are capitalised, as numerical code names matrices (`U`, `W`
    beside `t`, `c`): the parameter names of a function, the operand names of a primitive's bind calls."""
    names = _names(subject, arity, operands)
    arrays = [name for i, name in enumerate(names) if i not in statics]
    return frozenset(i for i, name in enumerate(arrays) if name[:1].isupper())


def _names(subject: Subject, arity: int, operands: list[list[str]]) -> list[str]:
    """The positional names of a target of `arity` arguments: a function's parameters, the operand names of a
    primitive's bind calls."""
    if subject.kind == "primitive":
        return next((o for o in operands if len(o) == arity), [])
    return [p.name for p in _signature.positional(_signature.signature_of(subject))][:arity]


def _arity(subject: Subject, operands: Sequence[Sequence[str]] = ()) -> list[int]:
    """Candidate positional arities (static positions included), most likely first. `operands`: the operand lists
    of the library's own `prim.bind(...)` calls, whose lengths come first for rules taking `*args`."""
    sig = _signature.signature_of(subject)
    bound = list(dict.fromkeys(len(o) for o in operands if o))
    if sig is None:
        return bound + [n for n in (1, 2, 3) if n not in bound]
    params = _signature.positional(sig)
    required = [p for p in params if p.default is p.empty]
    if any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()):
        return bound + [n for n in sorted({len(required), 1, 2, 3} - {0}) if n not in bound] or [1]
    if subject.kind == "primitive":
        return [len(required) - _params_taken(required, subject.params)] if required else [1]
    # then with the optional arguments that default to None passed too (`zi: Array = None`)
    n = len(required) + len(list(itertools.takewhile(lambda p: p.default is None, params[len(required):])))
    return [len(required)] + ([n] if n > len(required) else [])


def _params_taken(required: list, params: dict) -> int:
    return sum(1 for p in required if p.name in params)
