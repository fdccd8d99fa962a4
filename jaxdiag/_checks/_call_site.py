"""Which inputs of a nested custom rule JAX itself perturbs at its call site in the function.

A custom_jvp or custom_vjp found inside a function gets a tangent for an input only where one of the function's own
inputs reaches it through operations JAX can differentiate. An input the function stop-gradients, builds from
integers, or routes through a wrapper that refuses differentiation arrives as a symbolic zero: JAX never calls the
JVP rule with a tangent there, and a custom_vjp's fwd sees `perturbed=False` for it. A rule may rely on that
(`assert not x.perturbed`), so the grad checks must not perturb those inputs either: what JAX cannot do to the rule
is outside its contract.

Found by running JAX's own autodiff (`jax.vjp`, whose forward pass linearizes) on the function, one differentiable
input at a time (eagerly, so each custom call is seen as it happens), and reading which arguments of each nested
call carry a non-zero tangent. A nested primitive's operands that the function builds from none of its inputs (a
grid computed from static configuration) are never perturbed either (`constant_operands`).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from .. import _compat
from ._base import Subject
from ._gradref import is_inexact
from .._harness import call_user, jaxdiag_code


def unperturbed_inputs(root: Subject, nested: Sequence[Subject], example: Sequence[Any]) -> dict[int, frozenset[int]]:
    """id(subject) -> indices into the subject's specs that JAX never perturbs at its call site in `root`.

    Primitives are answered by `constant_operands`; custom_jvp / custom_vjp subjects only when at least one of their
    calls was read: a subject no call of which was read stays as it was (every input perturbed, the conservative
    choice). A function that loops is read from its traced program (`read_from_program`), any other by running it
    (`read_by_running`): both say what JAX's autodiff does, and the tests hold them to each other.
    """
    out = constant_operands(nested)
    customs = [s for s in nested if s.kind in ("custom_jvp", "custom_vjp")]
    if not customs or root.kind != "function":
        return out
    arrays = [jax.numpy.asarray(x) for x in example]
    traced = call_user(jax.make_jaxpr(root.call), *arrays)
    if traced.ok and _compat.loops_in(traced.value):
        # run op by op, a loop costs each iteration in Python: the program says the same of every call, loop
        # bodies included, in one trace
        return out | read_from_program(traced.value, customs, [is_inexact(x.dtype) for x in arrays])
    return out | read_by_running(root, customs, arrays)


def constant_operands(nested: Sequence[Subject]) -> dict[int, frozenset[int]]:
    """A nested primitive's floating-point operands that its function builds from none of its inputs
    (`Subject.unbatched`: a captured constant), or that every call of it builds from static configuration
    (`Subject.configured`): no derivative the package takes gives them a tangent. Unless that is every
    floating-point operand: such a call says nothing of which operands the rule is differentiated in, and left
    unperturbed, every derivative check of it would skip."""
    out: dict[int, frozenset[int]] = {}
    for subject in nested:
        floats = {k for k, spec in enumerate(subject.specs) if getattr(spec, "is_inexact", False)}
        constant = subject.never_batched & floats
        if subject.kind == "primitive" and constant and constant != floats:
            out[id(subject)] = constant
    return out


def read_by_running(root: Subject, customs: Sequence[Subject], arrays: list[Any]) -> dict[int, frozenset[int]]:
    """`unperturbed_inputs` read from the calls `jax.vjp` of the function makes, run op by op along each input."""
    perturbed: dict[int, list[bool]] = {}
    for i, x in enumerate(arrays):
        if not is_inexact(x.dtype):
            continue
        calls: list = []

        def along_input(xi: Any, i: int = i) -> Any:
            return root.call(*arrays[:i], xi, *arrays[i + 1:])

        with _compat.record_custom_calls(calls, jaxdiag_code), jax.disable_jit():
            # a failure is the function's own (its grad checks report it); keep the calls made before it
            call_user(jax.vjp, along_input, x)  # reverse mode runs through custom_vjp calls (jax.jvp stops there)
        for subject in customs:
            for flags in _call_flags(subject, calls):
                seen = perturbed.setdefault(id(subject), [False] * len(flags))
                perturbed[id(subject)] = [a or b for a, b in zip(seen, flags)]
    return {key: frozenset(k for k, flag in enumerate(flags) if not flag) for key, flags in perturbed.items()}


def read_from_program(closed: Any, customs: Sequence[Subject], seeds: list[bool]) -> dict[int, frozenset[int]]:
    """`unperturbed_inputs` read from the function's traced program (`_compat.custom_call_perturbation`): a call is
    the subject's when its rule params wrap the subject's own rule (its jvp, its bwd) and its operands have the
    subject's shapes."""
    calls = _compat.custom_call_perturbation(closed, seeds)
    out: dict[int, frozenset[int]] = {}
    for subject in customs:
        rules = _own_rules(subject)
        shapes = [tuple(s.shape) for s in subject.specs]
        flags = [f for fns, f, got in calls if got == shapes
                 and any(_compat.wraps(fn, rule) for fn in fns for rule in rules)]
        if flags:
            out[id(subject)] = frozenset(k for k in range(len(shapes)) if not any(f[k] for f in flags))
    return out


def _own_rules(subject: Subject) -> list[Any]:
    """The subject's jvp (custom_jvp) or bwd (custom_vjp) rule: what a call of it in a program wraps."""
    out = []
    for obj in (subject.obj, subject.original):
        if _compat.is_custom_jvp(obj):
            out.append(_compat.custom_jvp_parts(obj)[1])
        elif _compat.is_custom_vjp(obj):
            out.append(_compat.custom_vjp_parts(obj)[2])
    return [rule for rule in out if rule is not None]


def _call_flags(subject: Subject, calls: list) -> list[list[bool]]:
    """For each readable call of `subject`: per array argument (in the order of its specs), whether it is perturbed."""
    out = []
    for obj, args, kwargs in calls:
        leaves = call_arrays(subject, obj, args, kwargs)
        if leaves is None or [tuple(np.shape(leaf)) for leaf in leaves] != [tuple(s.shape) for s in subject.specs]:
            continue  # another rule, or another call of the same rule at other shapes
        flags = [_compat.jvp_perturbed(leaf) for leaf in leaves]
        if any(flag is None for flag in flags):
            continue
        out.append([bool(flag) for flag in flags])
    return out


def call_arrays(subject: Subject, obj: Any, args: Sequence[Any], kwargs: dict, twin: bool = False
                ) -> list[Any] | None:
    """The array arguments (in the order of the subject's specs) of one recorded call of a custom rule, or None when
    the call is not of `subject` (`twin`: the caller matched `obj` to it, a rule made by the same code). A subject
    with a pytree signature is a flat view: the call recorded is of `subject.original`, and its array leaves are
    what the view takes."""
    if obj is not subject.obj and obj is not subject.original and not twin:
        return None
    resolved = _compat.resolve_positional(getattr(obj, "fun", obj), tuple(args), dict(kwargs))
    # shape and dtype, as the flat view's specs are read (`_signature`): a NumPy dtype leaf has a shape, no dtype
    return [leaf for leaf in jax.tree_util.tree_leaves(resolved) if hasattr(leaf, "shape") and hasattr(leaf, "dtype")]


def traced_only_primitives(root: Subject, nested: Sequence[Subject], example: Sequence[Any]) -> set[int]:
    """id(subject) of each nested primitive that the function, run as the user runs it (jit left on), never binds
    with concrete values: it is bound only while something traces (inside jax.jit, scan, while_loop), so its impl
    never runs in their program. A primitive the run did not reach because the function raised first is left out."""
    primitives = [s for s in nested if s.kind == "primitive"]
    if not primitives or root.kind != "function":
        return set()
    binds: list = []
    with _compat.record_primitive_binds([], jaxdiag_code, binds):
        ran = call_user(lambda: jax.block_until_ready(root.call(*[jax.numpy.asarray(x) for x in example])))
    out = set()
    for subject in primitives:
        seen = [concrete for prim, _, concrete in binds if prim is subject.obj]
        if any(concrete is not None for concrete in seen):
            continue  # bound eagerly at least once: its impl runs in the user's code
        if ran.error is None or seen:
            out.add(id(subject))
    return out


# Directions of the function's inputs pushed through its JVP: their tangents at a nested rule span (part of) the
# structure the function imposes there (symmetric, triangular, zero-padded, tied); a few suffice for the checks.
RECEIVED_DIRECTIONS = 3


def received_tangents(root: Subject, nested: Sequence[Subject], example: Sequence[Any],
                      observed: dict[int, list[np.ndarray]], seed: int) -> dict[int, dict[int, list[np.ndarray]]]:
    """id(subject) -> {index into its specs: the tangents it receives there}, for the nested primitives and
    custom_jvp rules checked at their observed values.

    Runs `jax.jvp` of the function eagerly along RECEIVED_DIRECTIONS random directions of its floating inputs and
    reads, at the call whose primal values are the observed ones, the tangent JAX hands the rule. A rule built for
    the tangents its caller gives it (a Cholesky JVP inside a Gram-matrix function receives Hermitian tangents) is
    then checked on those, not on directions no caller produces. An input whose tangent is a symbolic zero in
    every direction is left out (`unperturbed_inputs` covers it).

    Not for a function that loops: the eager runs would run every iteration op by op (an adaptive quadrature's took
    minutes), and its rules are checked on random directions as before."""
    subjects = [s for s in nested if s.kind in ("primitive", "custom_jvp") and id(s) in observed]
    arrays = [jax.numpy.asarray(x) for x in example]
    if not subjects or root.kind != "function" or not any(is_inexact(x.dtype) for x in arrays):
        return {}
    traced = call_user(jax.make_jaxpr(root.call), *arrays)
    if traced.error is not None or _compat.loops_in(traced.value):
        return {}
    rng = np.random.default_rng(zlib.crc32(f"{seed}:{root.seed_key}:received".encode()))
    found: dict[int, list[list[np.ndarray | None]]] = {}
    for d in range(RECEIVED_DIRECTIONS):
        tangents = tuple(_compat.device_array(_root_direction(root, k, d, x, rng)) if is_inexact(x.dtype)
                         else _compat.float0_zeros(x.shape) for k, x in enumerate(arrays))
        binds: list = []
        customs: list = []
        with _compat.record_primitive_binds([], jaxdiag_code, raw=binds), \
                _compat.record_custom_calls(customs, jaxdiag_code), jax.disable_jit():
            ran = call_user(jax.jvp, root.call, tuple(arrays), tangents)
        if ran.error is not None:
            return {}  # the function's own checks report its failure
        for subject in subjects:
            if subject.kind == "primitive":
                calls = [list(args) for prim, _, args in binds if prim is subject.obj]
            else:
                calls = [leaves for obj, args, kwargs in customs
                         if (leaves := call_arrays(subject, obj, args, kwargs)) is not None]
            received = next((t for t in (_tangents_at(c, observed[id(subject)]) for c in calls) if t is not None),
                            None)
            if received is None:
                continue
            found.setdefault(id(subject), []).append(received)
    out = {}
    for key, runs in found.items():  # every input's list runs over the same directions: ties between inputs hold
        per_spec = {k: [t if t is not None else np.zeros(np.shape(observed[key][k]), observed[key][k].dtype)
                        for t in (run[k] for run in runs)] for k in range(len(runs[0]))}
        out[key] = {k: ts for k, ts in per_spec.items() if any(np.any(t != 0) for t in ts)}
    return out


def _tangents_at(leaves: Sequence[Any], values: Sequence[np.ndarray]) -> list[np.ndarray | None] | None:
    """The tangent of each leaf of one recorded call (None where unperturbed), when its primal values are exactly
    `values`; None for another call (other values, or traced inside a loop body)."""
    if len(leaves) != len(values):
        return None
    out: list[np.ndarray | None] = []
    for leaf, value in zip(leaves, values):
        pair = _compat.jvp_primal_tangent(leaf)
        if pair is None:
            if _compat.is_tracer(leaf):
                return None
            primal, tangent = np.asarray(leaf), None
        else:
            primal, tangent = pair
        if primal.shape != np.shape(value) or not np.array_equal(primal, value, equal_nan=True):
            return None
        out.append(tangent)
    return out


def _root_direction(root: Subject, k: int, d: int, x: Any, rng: np.random.Generator) -> np.ndarray:
    """Direction `d` of the function's input `k`: one of the function's own directions where it has them (a
    positive definite matrix moves along symmetric steps only, `_contract_tangents.contract_tangents`: a random step
    leaves the domain, and a rule reading one triangle was found wrong along it), else a random one."""
    own = root.received_tangents.get(k)
    if own:
        return np.asarray(own[d % len(own)]).astype(x.dtype)
    return _random_like(x, rng)


def _random_like(x: Any, rng: np.random.Generator) -> np.ndarray:
    value = rng.standard_normal(x.shape)
    if np.dtype(x.dtype).kind == "c":
        value = value + 1j * rng.standard_normal(x.shape)
    return value.astype(x.dtype)
