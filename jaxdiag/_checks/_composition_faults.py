"""Where a composed gradient's defect lies (grad-composition's JXG016): NaN/inf that only the composition makes, a
batching rule that bypasses the JVP rule, a transpose rule wrong on batched operands.

jax.jit(jax.grad(f)), jax.vmap(jax.grad(f)) and jax.vjp(jax.vmap(f)) run on the very inputs and cotangents of the
eager and per-example gradients they are compared with. Where those references are finite everywhere, a NaN or an
inf in the composed gradient is no question of the input domain: the user's code gives it only under that
transformation. (Where the reference itself is not finite, nothing is said: `compare` leaves NaN/inf alone.)

The common member: a primitive whose batching rule evaluates its impl under vmap instead of binding the primitive.
vmap alone is right, but `jax.grad` of the batched call then differentiates the impl's own operations, never the
JVP rule, and an impl written only to be evaluated (`jnp.where(inside, jnp.sqrt(1 - x * x), 0)`, whose unselected
branch is NaN) gives NaN gradients that no per-example call shows.
"""

from __future__ import annotations

from typing import Any, Callable

import jax

from .. import _compat
from .._core import _locate
from .._core._report import Location
from ._gradref import GradState, quiet_call
from ._gradref._values import all_finite, nonfinite_split, value_at


def nonfinite_only_composed(got: Any, reference: Any, reference_name: str) -> str | None:
    """"is nan at index (1, 0), where <reference_name> finite (0.5; 2 of 6 entries)" when `got` is NaN/inf where
    the reference, finite everywhere, is not; else None."""
    split = nonfinite_split(got, reference)
    if not split.rule_only or not all_finite([reference]):
        return None
    index = split.rule_index
    return (f"is {value_at(got, index)} at index {index}, where {reference_name} finite "
            f"({value_at(reference, index)}; {split.rule_only} of {split.size} entries)")


def batching_rule_skips_primitive(st: GradState, batch: list[Any], call: Callable[..., Any]) -> bool:
    """Whether vmap of the primitive subject computes its batched values without binding the primitive (its
    batching rule evaluates the impl under vmap): then its JVP rule never sees a batched call."""
    if st.kind != "primitive":
        return False
    traced, exc = quiet_call(jax.make_jaxpr(jax.vmap(call)), *batch)
    if exc is not None or traced is None:
        return False
    prim = st.subject.obj
    return not any(eqn.primitive is prim for eqn in _compat.iter_eqns(traced))


def impl_differentiated(st: GradState) -> tuple[str, str]:
    """The explanation and the fix when `batching_rule_skips_primitive`."""
    name = st.subject.obj.name
    message = (f" vmap of {name} binds no {name}: its batching rule evaluates the impl under vmap, so jax.grad of a "
               f"batched call differentiates the impl's own operations instead of {name}'s JVP rule, and they give "
               "NaN/inf where the JVP rule does not (e.g. the unselected branch of a jnp.where).")
    fix = (f"Bind the primitive in the batching rule (`return {name}_p.bind(*moved_args, **params), 0` after moving "
           f"each batch axis to the front, or `{name}_p.bind(x), dim` for an elementwise primitive), so its JVP rule "
           "differentiates batched calls too; or make the impl differentiable where it is evaluated (the "
           "double-where: `jnp.sqrt(jnp.where(inside, 1 - x * x, 1.0))`).")
    return message, fix


def batched_transpose_fault(st: GradState, message: str, fallback: Location | None
                            ) -> tuple[str, str, Location | None]:
    """vjp(vmap f) is wrong while vmap(grad f) and vmap(f) agree with the loop: the batching of the transpose is
    right, so the transpose rule itself is wrong on the batched shapes the batching rule binds the primitive with
    (the transpose of the batched primitive)."""
    prim = st.subject.obj
    rule = _compat.transpose_rule(prim)
    users = [f for f in _compat.rule_user_functions(rule) if f is not None and _locate.is_user_code(f)] \
        if rule is not None else []
    rule = users[0] if users else rule
    name = getattr(_locate.unwrap(rule), "__name__", "") if rule is not None else ""
    name = name if name and name != "<lambda>" else f"{prim.name}'s transpose rule"
    message += (f" jax.vmap(jax.grad(f)) and jax.vmap(f) agree with the per-example loop, so batching {prim.name} "
                f"and batching its transpose are right; {name} is wrong on the batched operands the batching rule "
                f"binds {prim.name} with (the transpose of the batched primitive), e.g. it flips, sums or indexes "
                "axis 0, which is the batch axis there.")
    fix = (f"Make {name} work for operands with extra leading axes: use negative axes (`axis=-1`) or the axes "
           f"given in the params, never axis 0, as {prim.name}'s impl does.")
    location = _locate.locate(rule) if rule is not None and _locate.is_user_code(rule) else fallback
    return message, fix, location
