"""Batching rules returning one value for the whole batch (dim None): aggregates of the batch (a maximum, a logical
OR, the whole batch kept as an axis) read as a possible design, JXB024; one example's result for all is JXB010.
Their impls come from jax (`jnp.max`) with abstract evals of their own: user primitives, not JAX's, so a finding
inside a rule's body is kept."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching

JAXDIAG = {"peak_p": {"args": ["f32[3]"]}, "first_peak_p": {"args": ["f32[3]"]}, "whole_p": {"args": ["f32[3]"]},
           "any_positive_p": {"args": ["f32[]"]}}


def _primitive(name, impl, abstract_eval, rule):
    prim = Primitive(name)
    prim.def_impl(impl)
    prim.def_abstract_eval(abstract_eval)
    batching.primitive_batchers[prim] = rule
    return prim


def _scalar(x):
    return ShapedArray((), x.dtype)


def _peak_rule(args, dims):
    return peak_p.bind(args[0]), None  # the batch's peak


def _first_peak_rule(args, dims):
    (x,), (bx,) = args, dims
    return jnp.max(jnp.take(x, 0, axis=bx)), None  # example 0's peak for all


def _any_positive_rule(args, dims):
    return jnp.any(args[0] > 0), None  # a stop flag shared by the batch


def _any_flag_impl(flags):  # no inputs declared: `jnp.any(flags)` says its operand is a truth value
    return jnp.any(flags)


def _any_flag_rule(args, dims):
    return any_flag_p.bind(args[0]), None  # true when any example's flag is


def _all_flags_impl(flags):
    return jnp.all(flags)


def _all_flags_rule(args, dims):
    return all_flags_p.bind(args[0]), None  # true when every example's flags all are


def _whole_rule(args, dims):
    return args[0], None  # every example sees the whole batch


peak_p = _primitive("peak", jnp.max, _scalar, _peak_rule)
first_peak_p = _primitive("first_peak", jnp.max, _scalar, _first_peak_rule)
any_positive_p = _primitive("any_positive", lambda x: jnp.any(x > 0),
                            lambda x: ShapedArray((), jnp.bool_), _any_positive_rule)
any_flag_p = _primitive("any_flag", _any_flag_impl, lambda flags: ShapedArray((), jnp.bool_), _any_flag_rule)
all_flags_p = _primitive("all_flags", _all_flags_impl, lambda flags: ShapedArray((), jnp.bool_), _all_flags_rule)
whole_p = _primitive("whole", lambda x: x, lambda x: ShapedArray(x.shape, x.dtype), _whole_rule)
