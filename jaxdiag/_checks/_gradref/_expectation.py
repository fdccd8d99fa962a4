"""Custom derivatives of sampled functions, judged in expectation over keys.

A function that takes a PRNG key and samples with it (a perturbed optimizer, a Monte-Carlo objective) often has a
custom derivative that is an estimator: a score-function or perturbation gradient, equal to the derivative of the
sampled value only on average over keys. At one key it disagrees with finite differences and autodiff by
construction, so the comparison at the example's key cannot tell a correct estimator from a wrong one.

Here both sides are evaluated at `KEYS` keys split from the example's: the rule's derivative, and autodiff of the
undecorated primal at the same keys (the pathwise derivative: averaged, an unbiased estimate of the derivative of the
expectation wherever the sampled value is continuous in the input). The per-key differences are paired, so the
verdict is a z-test on their mean, element by element: an unbiased estimator's mean difference stays within `Z_MAX`
standard errors of zero (plus the dtype's gradient tolerance); a biased one (a missing `1 / sigma`, the wrong sign on
the noise) is many standard errors away.

The pathwise reference is used only where it is the derivative of the expectation: the central difference of the
key-averaged primal along the same direction (the same keys at both points) must agree with it. A primal with jumps
(an argmax: autodiff sees a zero derivative, the expectation has a nonzero one) gets no verdict, and neither does a
rule or primal that cannot be traced over a batch of keys: the caller keeps its single-key reading.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from ... import _compat
from ._state import Arg, GradState, spec_positions
from ._values import N_DIRECTIONS, fmt_values, grad_tol, quiet_call, to_f64

KEYS = 256  # keys averaged over (a quarter for an argument over SMALL elements); the standard error is 1 / sqrt(KEYS)
SMALL = 4096  # an argument of at most this many elements gets every key
Z_MAX = 5.0  # standard errors of the paired mean an unbiased estimator stays within (elementwise, two-sided)
FD_STEP = 1e-2  # the central difference's step along the (max(1, |x|)-scaled) direction
FD_AGREEMENT = 0.05  # relative gap between that difference and the pathwise derivative that still trusts the latter


@dataclass(frozen=True)
class Expectation:
    """The rule's derivative against the derivative of the expectation, both averaged over the same keys."""

    keys: int
    rule_mean: np.ndarray
    reference_mean: np.ndarray
    z: float  # the largest |mean of the paired differences| in standard errors of that mean
    unbiased: bool

    def describe(self, derivative: str, fun: str) -> str:
        apart = (f"{self.z:.3g} standard errors apart" if self.z < 1e6 else
                 "the same difference at every key")
        return (f"averaged over {self.keys} keys split from the example's, the rule's {derivative} is "
                f"{fmt_values(self.rule_mean)} while autodiff of {fun} averaged over the same keys (the derivative "
                f"of the expected value) gives {fmt_values(self.reference_mean)}: {apart}, so the rule is biased, "
                "not an estimator's noise")


def first_biased(judged: list[tuple[str, Expectation | None]]) -> tuple[str, Expectation] | None:
    """Of the derivatives of a subject that disagreed at the example's key, the first one judged biased, labelled."""
    return next(((label, v) for label, v in judged if v is not None and not v.unbiased), None)


def all_unbiased(judged: list[tuple[str, Expectation | None]]) -> bool:
    """Every derivative that disagreed was judged, and unbiased: only then is the subject cleared (one without a
    verdict keeps the single-key reading)."""
    return bool(judged) and all(v is not None and v.unbiased for _, v in judged)


def key_argument(st: GradState) -> tuple[Arg, Any] | None:
    """The subject's one PRNG key argument and its implementation, or None (none, or several). A key is passed as
    its raw key data (`Arg.value`, uint32); the subject wraps it (`_loading._layout`)."""
    array_pos = spec_positions(st.subject, len(st.subject.specs))
    keys = [(array_pos[k], spec.key) for k, spec in enumerate(st.subject.specs)
            if getattr(spec, "key", None) is not None and k < len(array_pos)]
    if len(keys) != 1:
        return None
    pos, impl = keys[0]
    return st.args[pos], impl


@dataclass(frozen=True)
class _Probe:
    """One derivative of the function of `arg` (the key and the other arguments fixed) to average over keys."""

    arg: Arg
    derivative: Callable[[Callable[[Any], Any]], Any]  # f -> what the rule (or autodiff) gives for f at the example
    observed: Callable[[Any], Any]  # the primal's output -> the quantity whose central differences are taken
    directions: list[np.ndarray]  # of `arg`, float64: the differences' directions
    along: Callable[[np.ndarray], Any]  # the key-averaged reference -> its derivatives along `directions`, stacked


def tangent_in_expectation(st: GradState, a: Arg, k: int) -> Expectation | None:
    """The custom JVP's tangents of output leaf `k` along every seeded direction of `a` (stacked: a bias the noise
    hides along one direction shows along another), against autodiff of the primal, over keys; None where no verdict
    is possible (see the module docstring)."""
    tangents = [st.tangent(a, d) for d in range(N_DIRECTIONS)]

    def derivative(f: Callable[[Any], Any]) -> Any:
        return jax.numpy.stack([jax.tree_util.tree_leaves(jax.jvp(f, (a.value,), (t,))[1])[k] for t in tangents])

    return _judge(st, _Probe(a, derivative, lambda out: jax.tree_util.tree_leaves(out)[k],
                             [st.direction(a, d) for d in range(N_DIRECTIONS)], lambda ref: ref))


def cotangent_in_expectation(st: GradState, ws: Sequence[Any], a: Arg) -> Expectation | None:
    """The bwd's cotangent for `a` given output cotangents `ws`, against autodiff of the primal, over keys."""
    cotangent = jax.tree_util.tree_unflatten(st.out_treedef, list(ws))
    directions = [st.direction(a, d) for d in range(N_DIRECTIONS)]

    def paired(out: Any) -> Any:  # <w, out>, the bilinear pairing of the package docstring
        return sum(jax.numpy.sum(jax.numpy.real(w * o)) for w, o in zip(ws, jax.tree_util.tree_leaves(out)))

    return _judge(st, _Probe(a, lambda f: jax.vjp(f, a.value)[1](cotangent)[0], paired, directions,
                             lambda ref: np.array([np.sum(np.real(ref * v)) for v in directions])))


def _judge(st: GradState, probe: _Probe) -> Expectation | None:
    found = key_argument(st)
    if found is None:
        return None
    key, impl = found
    count = KEYS if probe.arg.value.size <= SMALL else KEYS // 4
    keys, exc = quiet_call(lambda: jax.random.key_data(
        jax.random.split(jax.random.wrap_key_data(key.value, impl=impl), count)))
    if exc is not None:
        return None

    def function_at(call: Callable[[Sequence[Any]], Any], key_value: Any) -> Callable[[Any], Any]:
        return lambda x: call(st.values({probe.arg.pos: x, key.pos: key_value}))

    def per_key(key_value: Any) -> tuple[Any, Any]:
        return (probe.derivative(function_at(st.call_target, key_value)),
                probe.derivative(function_at(st.call_primal, key_value)))

    def averaged(x: Any) -> Any:  # the observed primal quantity, averaged over the keys
        return jax.vmap(lambda kv: probe.observed(function_at(st.call_primal, kv)(x)))(keys).mean(axis=0)

    sides = _over_keys(per_key, keys)
    if sides is None:
        return None
    got, ref = sides
    if not _pathwise_is_the_expectation(probe, averaged, ref.mean(axis=0)):
        return None
    return verdict(got, ref, grad_tol(probe.arg.dtype))


def verdict(got: np.ndarray, ref: np.ndarray, tol: float) -> Expectation:
    """The z-test on the paired per-key differences `got - ref` (keys along axis 0), element by element: unbiased
    when every mean difference is within `Z_MAX` standard errors of zero, or within `tol` of the reference's size (a
    difference that is the same at every key has no standard error: only the tolerance excuses it)."""
    diff = got - ref
    mean = diff.mean(axis=0)
    se = diff.std(axis=0, ddof=1) / np.sqrt(len(diff))
    ref_mean = ref.mean(axis=0)
    slack = tol * np.maximum(1.0, np.abs(ref_mean))
    z = np.abs(mean) / np.maximum(se, np.finfo(np.float64).tiny)
    unbiased = bool(np.all(np.abs(mean) <= Z_MAX * se + slack))
    worst = float(np.max(np.where(np.abs(mean) > slack, z, 0.0), initial=0.0))
    return Expectation(len(diff), got.mean(axis=0), ref_mean, worst, unbiased)


def _over_keys(per_key: Callable[[Any], tuple[Any, Any]], keys: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """(the rule's, the reference's) derivative at each key, finite: vmapped eagerly first, op by op as the user's
    own eager calls run (one jitted program may fuse a recomputed `x + noise` differently from the `max` it is
    compared with, and autodiff of `jnp.max` then divides by a zero count: NaN where the eager call is exact), then
    as one jitted sequential map for a rule that has no batching rule (a callback)."""
    for run in (jax.vmap(per_key), _compat.own_jit(lambda ks: jax.lax.map(per_key, ks))):
        ran, exc = quiet_call(run, keys)
        if exc is not None:
            continue
        got, ref = (to_f64(np.asarray(x)) for x in ran)
        if got.shape == ref.shape and np.all(np.isfinite(got)) and np.all(np.isfinite(ref)):
            return got, ref
    return None


def _pathwise_is_the_expectation(probe: _Probe, averaged: Callable[[Any], Any], ref_mean: np.ndarray) -> bool:
    """Whether the key-averaged autodiff derivative matches the central difference of the key-averaged primal along
    the probe's direction: no jumps the pathwise derivative misses. The same keys at both points, so the difference
    is of one average, smooth or not."""
    x = to_f64(np.asarray(probe.arg.value))
    points = [[(x + s * FD_STEP * v).astype(probe.arg.dtype) for s in (1.0, -1.0)] for v in probe.directions]
    ran, exc = quiet_call(lambda: [[to_f64(np.asarray(averaged(p))) for p in pair] for pair in points])
    if exc is not None:
        return False
    fd = np.stack([(up - down) / (2 * FD_STEP) for up, down in ran])
    pathwise = to_f64(np.asarray(probe.along(ref_mean)))
    if fd.shape != pathwise.shape:
        return False
    scale = max(float(np.max(np.abs(pathwise), initial=0.0)), float(np.max(np.abs(fd), initial=0.0)), 1e-12)
    return bool(np.max(np.abs(fd - pathwise), initial=0.0) <= FD_AGREEMENT * scale)
