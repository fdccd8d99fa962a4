"""Nested subjects: the user primitives and custom_* calls a function binds, found in its traced jaxpr (and its
eager binds), each checked as the function calls it."""

from __future__ import annotations

import functools
import inspect
from typing import Any

import numpy as np

from .. import _compat
from .._checks._base import Options, Subject
from .._core import _locate
from .._core._report import Location
from .._harness import call_user, jaxdiag_code
from .._harness.cache import SubjectCache
from .._loading._inputs import ArgSpec, draw
from .._loading._targets import classify
from . import _signature
from ._operand_kinds import documented_domains


def primitive_location(prim: Any, module: Any) -> Location | None:
    rules_ = [r for r in _compat.registered_rules(prim).values() if r is not None and _locate.is_user_code(r)]
    # a primitive found inside a function: its rules' module is where it is defined
    candidates = [module] if module is not None else [inspect.getmodule(_locate.unwrap(r)) for r in rules_]
    for candidate in dict.fromkeys(c for c in candidates if c is not None):
        loc = _locate.locate_assignment(candidate, prim)
        if loc:
            return loc
    return _locate.locate(rules_[0]) if rules_ else None


def find_nested_subjects(root: Subject, options: Options, cache: SubjectCache) -> list[Subject]:
    if root.kind != "function":
        return []
    from .._harness.tracing import trace_function  # a function's nested subjects only

    traced = trace_function(root, cache)
    if traced.value is None:  # the function's own checks report the trace failure
        # Typically a user primitive without abstract eval: find the user primitives by running it once.
        cache.nested_subjects = _bound_primitive_subjects(root)
        return cache.nested_subjects
    from ._observe import primitive_call_key

    jaxpr, custom_calls = traced.value.jaxpr, traced.value.custom_calls
    subjects: list[Subject] = []
    seen_keys: set = set()
    # the domains the function's docstring states for its inputs, for the rules it hands them to (read once, when
    # a rule is met; only where a plain layout makes its inputs its parameters)
    stated = functools.cache(lambda: documented_domains(root) if not root.static_args and root.original is None
                             else {})

    for obj, args, kwargs in custom_calls:
        if id(obj) in seen_keys:
            continue
        seen_keys.add(id(obj))
        kind, _ = classify(obj)
        fn = getattr(obj, "fun", None) or obj
        if not (options.include_jax or _locate.is_user_code(fn)):
            continue  # JAX's own custom_jvp/custom_vjp (jnp.sinc, jax.nn.softplus) are trusted like its primitives
        nested = _signature.custom_call_subject(root, kind, obj, fn, args, kwargs, cache.input_tracers, stated())
        if nested is not None:
            nested.inside_custom_derivative = id(obj) not in traced.value.differentiable
            subjects.append(nested)
    operand_dependent = _compat.input_dependent_operands(jaxpr)
    unread_outputs = _compat.unread_outputs(jaxpr)
    by_key: dict[tuple, Subject] = {}
    builtin: dict[int, bool] = {}  # per primitive: a quadrature's loops bind the same few 100,000 times
    for eqn in _compat.iter_eqns(jaxpr):
        prim = eqn.primitive
        if not _compat.is_primitive(prim):
            continue
        if id(prim) not in builtin:
            builtin[id(prim)] = _compat.is_builtin_primitive(prim)
        user = not builtin[id(prim)]
        if not (user or options.include_jax):
            continue
        if not user and (prim.name in STRUCTURAL_PRIMITIVES or any(True for _ in _compat.sub_jaxprs(eqn))):
            continue
        maybe_specs = [spec_of_aval(v.aval) for v in eqn.invars]
        specs = [s for s in maybe_specs if s is not None]
        if len(specs) != len(maybe_specs):
            continue
        inputs = list(getattr(jaxpr, "jaxpr", jaxpr).invars)
        specs = [_signature.inherited(s, [v], inputs, root, stated()) for s, v in zip(specs, eqn.invars)]
        key = primitive_call_key(prim, eqn.params, specs)
        # operands built from no input of the function (a captured constant, an index) are never batched there
        unbatched = frozenset(k for k, dependent in enumerate(operand_dependent(eqn)) if not dependent)
        handed = frozenset(k for k, v in enumerate(eqn.invars) if any(v is i for i in inputs))
        unread = unread_outputs(eqn)
        if key in by_key:
            by_key[key].unbatched &= unbatched
            by_key[key].handed_through &= handed
            by_key[key].unread_outputs &= unread
            continue
        where = _compat.eqn_source_line(eqn)
        subjects.append(by_key.setdefault(key, Subject(
            label=f"{root.label} > {prim.name}", kind="primitive", obj=prim, specs=specs, params=dict(eqn.params),
            location=primitive_location(prim, None) if user else None, module=root.module, parent=root,
            domain=root.domain,
            eqn_location=Location(_locate.relative_path(where[0]), where[1], prim.name) if where else None,
            unbatched=unbatched, handed_through=handed, unread_outputs=unread)))
    cache.nested_subjects = subjects  # the function's checks attribute vmap failures to these
    return subjects


def _bound_primitive_subjects(root: Subject) -> list[Subject]:
    """User primitives bound while running the function once eagerly (when make_jaxpr cannot trace it)."""
    from ._observe import primitive_call_key

    rng = np.random.default_rng(0)
    args = [draw(s, rng, root.domain) for s in root.specs]
    seen: list = []
    with _compat.record_primitive_binds(seen, guard=jaxdiag_code):
        call_user(root.call, *args)  # a failure is reported by the function's own checks; keep what was bound
    subjects: list[Subject] = []
    keys: set = set()
    for prim, avals, params in seen:
        maybe_specs = [spec_of_aval(a) for a in avals]
        specs = [s for s in maybe_specs if s is not None]
        key = primitive_call_key(prim, params, specs)
        if len(specs) != len(maybe_specs) or key in keys:
            continue
        keys.add(key)
        subjects.append(Subject(label=f"{root.label} > {prim.name}", kind="primitive", obj=prim, specs=specs,
                                params=params, location=primitive_location(prim, None), module=root.module,
                                parent=root, domain=root.domain))
    return subjects


# Built-in primitives that only move data between jaxprs or trace-time state; not checked with --include-jax.
STRUCTURAL_PRIMITIVES = {"pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
                          "custom_vjp_call_jaxpr", "custom_lin", "remat", "checkpoint", "custom_vmap_call",
                          "ffi_call", "pure_callback", "io_callback", "debug_callback", "random_wrap",
                          "random_unwrap", "random_seed", "random_bits", "threefry2x32", "iota", "rng_bit_generator"}


def spec_of_aval(aval: Any) -> ArgSpec | None:
    shape = getattr(aval, "shape", None)
    dtype = getattr(aval, "dtype", None)
    if shape is None or dtype is None:
        return None
    try:
        return ArgSpec(np.dtype(dtype), tuple(int(d) for d in shape))
    except TypeError:  # extended dtypes (PRNG keys) and symbolic shapes
        return None
