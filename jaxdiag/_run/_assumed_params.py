"""Required bind params that no call of the package's own passes as a literal, assumed for `jaxdiag check`.

A primitive whose impl or abstract eval takes a required keyword (`L`, an int bandlimit that sets the output
shape; `output_shape`, a tuple of ints; `order`) is bound by its library as `_p.bind(x, L=L)` inside a wrapper
`def forward(x, L, sampling="mw")`: no literal anywhere, so `_passthrough` cannot read it. Before such a rule is
left unchecked, values are synthesised for those params from a short ladder: integers for an int-like param (an
`int` annotation of the wrapper's parameter, or a name such as `L`, `n_modes`, `order`), tuples of them for a
shape-like one (`Tuple[int, ...]`, `output_shape`). The first candidate for which the operand ladder finds inputs
that the impl computes AND the abstract eval describes (same shapes and dtypes: `_engine.infer_templates` with
`agree`) is used. Params of any other kind (strings, bools, callables) are never guessed.

Everything checked with an assumed value is graded as seen on inferred inputs (`_provenance`), and the run's
`bind-params-assumed` note names each assumed value and where it came from: a value read by following the bind
site's variable to its callers (`_passthrough.bind_site_params`), or this ladder.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from .. import _rules as rules
from .._checks._base import Subject
from .._core._errors import InferenceError
from .._core._report import Finding
from . import _int_params, _signature

# Candidates tried, one per rung: every int-like param takes INT_LADDER[i], every shape-like one SHAPE_LADDER[i]
# (the ladders a function's int parameters climb too, `_int_params.int_kind`).
INT_LADDER = _int_params.INT_LADDER
SHAPE_LADDER = _int_params.SHAPE_LADDER


def kind_of(name: str, annotation: str | None) -> str | None:
    """"int", "shape" or None (not guessed) for a bind param, from its wrapper parameter's annotation, else its
    name (`_int_params.name_kind`: a bind param is never an array, so a single letter counts too)."""
    if annotation is not None:
        return _int_params.annotation_kind(annotation)
    return _int_params.name_kind(name, bind_param=True)


def synthesise(root: Subject, templates: list[Any], notes: list[Finding], engine: tuple[Callable[..., Any], ...],
               fatal: tuple[type[BaseException], ...]) -> tuple[list[Any], dict[str, Any]]:
    """(templates, the synthesised params) for a primitive whose required bind params nobody gave: the first
    candidate (a rung of `_int_params.ladder_values`) the given templates, else inferred ones, run on with the
    abstract eval agreeing; the params are set on `root`. ({}, unchanged templates) when a param cannot be guessed
    or no candidate runs. `engine`: its (infer_templates, _try_call); `fatal`: its errors that no other candidate
    can avoid."""
    infer_templates, try_call = engine
    missing = _signature.missing_params(root)
    annotations = _signature.bind_site_annotations(root, set(missing))
    kinds = {name: kind_of(name, annotations.get(name)) for name in missing}
    # a tuple of the length its binds give (`n_modes=(n1, n2, n3)`), whatever its name says
    kinds.update({name: f"shape{arity}" for name, arity in _signature.bind_site_arities(root, set(missing)).items()
                  if kinds[name] != "str"})
    if not missing or any(kind is None for kind in kinds.values()):
        return templates, {}
    base = dict(root.params)
    for rung, candidate in enumerate(_int_params.ladder_values({name: str(kind) for name, kind in kinds.items()})):
        root.params = {**base, **candidate}
        if templates:
            _signature.apply(root, templates)
            if try_call(root, root.specs, "normal", 0, agree=True)[0]:
                return templates, _resolved(root, base, candidate)
            continue
        found: list[Finding] = []
        try:
            # operand shapes derived from the assumed ints (`_climb`) on the first rung only: a shape contract that
            # is a function of them holds for any value
            sizes = tuple(v for v in candidate.values() if type(v) is int) if rung == 0 else ()
            inferred = infer_templates(root, found, agree=True, sizes=sizes)
        except fatal:
            root.params = base
            raise
        except InferenceError:
            continue
        notes.extend(found)
        _signature.apply(root, inferred)
        return inferred, _resolved(root, base, candidate)
    root.params = base
    return templates, {}


# A synthesised value is doubled at most this many times while the output keeps changing (4 -> 128), and never
# past RESOLUTION_CELLS entries (a 64^3 grid).
RESOLUTION_DOUBLINGS = 5
RESOLUTION_CELLS = 2 ** 18
# Outputs at a value and at its double that agree this closely (relative to the largest entry): converged, to
# float32's rounding, on one example (the margin of `_resolved` serves the rest).
RESOLUTION_TOL = 1e-5


@dataclass(frozen=True)
class Raised:
    """A synthesised value raised from its rung because it is a resolution (`_resolved`): what the note shows."""

    value: Any
    rung: Any


def _resolved(root: Subject, base: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    """`candidate`, with each synthesised value that is a resolution raised until the output converges (a `Raised`
    there; `root.params` holds the plain value): a param that changes no output shape but changes the values (the
    internal grid of a type-3 non-uniform FFT: 8 points give values off by 10%, 16 agree with 32 to 1e-6) is
    doubled until the outputs at a value and at its double agree (RESOLUTION_TOL), and that double is doubled once
    more (a margin: derivatives, batches and other draws reach wider extents than the one example). A value whose
    double changes nothing, and a size that sets the output's shape, are kept as they are."""
    from .._harness import call_user
    from .._loading._inputs import draw

    rng = np.random.default_rng(0)
    args = [draw(spec, rng, root.domain) for spec in root.specs]

    def outputs(values: dict[str, Any]) -> list[np.ndarray] | None:
        root.params = {**base, **values}
        ran = call_user(lambda: jax.block_until_ready(root.call(*args)))
        if ran.error is not None:
            return None
        leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(ran.value)]
        return leaves if all(np.all(np.isfinite(x)) for x in leaves) else None

    chosen = dict(candidate)
    for name in candidate:
        chosen[name] = _converged(chosen, name, outputs)
    root.params = {**base, **chosen}
    return {name: Raised(value, candidate[name]) if value != candidate[name] else value
            for name, value in chosen.items()}


def _converged(chosen: dict[str, Any], name: str, outputs: Callable[[dict[str, Any]], list | None]) -> Any:
    """The value of `name` at which doubling it stops changing the outputs, doubled once more; its value in `chosen`
    where the outputs do not depend on it, where it changes their shapes, or where they never settle (a scale, an
    offset: not a resolution)."""
    if _doubled(chosen[name]) is None:  # a name, or already at RESOLUTION_CELLS: nothing to run
        return chosen[name]
    value, current = chosen[name], outputs(chosen)
    for _ in range(RESOLUTION_DOUBLINGS):
        doubled = _doubled(value)
        finer = outputs({**chosen, name: doubled}) if doubled is not None else None
        if current is None or finer is None or [x.shape for x in current] != [x.shape for x in finer]:
            break
        if _same_values(current, finer):
            # one doubling more: derivatives, batches and other draws reach wider extents
            return chosen[name] if value == chosen[name] else (_doubled(doubled) or doubled)
        value, current = doubled, finer
    return chosen[name]


def _doubled(value: Any) -> Any:
    """Each entry doubled, None past RESOLUTION_CELLS or for anything but an int or a tuple of ints."""
    entries = (value,) if type(value) is int else value
    if not (isinstance(entries, tuple) and entries and all(type(v) is int for v in entries)):
        return None
    if int(np.prod([2 * v for v in entries])) > RESOLUTION_CELLS:
        return None
    return 2 * value if type(value) is int else tuple(2 * v for v in entries)


def _same_values(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    scale = max((float(np.max(np.abs(x), initial=0.0)) for x in b), default=0.0)
    return all(x.shape == y.shape and float(np.max(np.abs(x.astype(np.complex128) - y), initial=0.0))
               <= RESOLUTION_TOL * max(scale, 1e-30) for x, y in zip(a, b))


# How every `disagreement` begins: the climb tells a rung that ran but is not described from one that failed.
DISAGREES = "its abstract eval "


def disagreement(value: Any, traced: Any) -> str:
    """Why a traced output (`jax.eval_shape`'s UserResult) does not describe the computed `value`, or ""."""
    if traced.error is not None:
        exc = traced.error
        return f"{DISAGREES}fails: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    leaves = jax.tree_util.tree_leaves(traced.value)
    if any(not hasattr(x, "shape") for x in leaves):  # its library's own abstract values: no array to compare
        return ""
    computed = [(tuple(np.shape(x)), np.asarray(x).dtype) for x in jax.tree_util.tree_leaves(value)]
    described = [(tuple(x.shape), np.dtype(x.dtype)) for x in leaves]
    if computed != described:
        return f"{DISAGREES}gives {described}, its impl {computed}"
    return ""


def notes(root: Subject, synthesised: dict[str, Any], origins: dict[str, str]) -> list[Finding]:
    """The JXN017 note naming the assumed bind params, when there are some."""
    if not (origins or synthesised):
        return []
    return [rules.BIND_PARAMS_ASSUMED.finding(target=root.label, assumed=note_text(root.params, synthesised, origins),
                                              location=root.location)]


def note_text(params: dict[str, Any], synthesised: dict[str, Any], origins: dict[str, str]) -> str:
    """Each assumed bind param with where its value came from."""
    parts = [f"{name}={params[name]!r} (read from {origins[name]})" for name in sorted(origins) if name in params]
    parts += [f"{name}={getattr(value, 'value', value)!r} (synthesised: {_synthesis_text(value)}"
              for name, value in sorted(synthesised.items())]
    return "; ".join(parts)


def _synthesis_text(value: Any) -> str:
    if isinstance(value, str):
        return "a name, as its `str` annotation asks on which its impl ran and its abstract eval agreed)"
    if isinstance(value, Raised):
        return (f"doubled from {value.rung!r}, the first rung of {_ladder_text(value.rung)} on which its impl ran "
                "and its abstract eval agreed, until its output stopped changing: a resolution, which sets no "
                "output shape)")
    return f"the first rung of {_ladder_text(value)} on which its impl ran and its abstract eval agreed)"


def _ladder(value: Any) -> tuple:
    ladder: tuple = INT_LADDER if isinstance(value, int) else SHAPE_LADDER
    if isinstance(value, tuple) and value not in SHAPE_LADDER:  # a tuple of the length the library's binds give
        ladder = _int_params.shape_ladder(f"shape{len(value)}")
    return ladder


def _ladder_text(value: Any) -> str:
    return "(" + ", ".join(repr(v) for v in _ladder(value)) + ")"
