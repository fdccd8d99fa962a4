"""The factory both probe modules share: a forward primitive, its JVP primitive (held only by the forward's JVP rule)
and its reverse primitive (bound only by the JVP primitive's transpose rule). Every abstract eval takes `*args`: the
number of operands is only in the op's spec."""

from functools import partial

import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from jax.core import ShapedArray


def _check_arity(spec, args, expected):
    if len(args) != expected:
        raise ValueError(f"Wrong number of arguments: expected {expected} but got {len(args)}")
    shape = args[0].shape
    if any(a.shape != shape for a in args):
        raise ValueError(f"{spec['name']}: every operand must have shape {shape}")


def _abstract_eval(spec, *args):
    _check_arity(spec, args, len(spec["inputs"]))
    return tuple(ShapedArray(args[0].shape, args[0].dtype) for _ in spec["outputs"] + spec["extra_outputs"])


def _jvp_abstract_eval(spec, *args):
    n = len(spec["inputs"])
    _check_arity(spec, args, 2 * n + len(spec["outputs"]) + len(spec["extra_outputs"]))
    return tuple(ShapedArray(args[0].shape, args[0].dtype) for _ in spec["outputs"])


def _rev_abstract_eval(spec, *args):
    _check_arity(spec, args, len(spec["inputs"]) + 2 * len(spec["outputs"]) + len(spec["extra_outputs"]))
    return tuple(ShapedArray(args[0].shape, args[0].dtype) for _ in spec["inputs"])


def _jvp(prim, jvp_prim, spec, arg_values, arg_tangents):
    def make_zero(x, t):
        return jnp.zeros_like(x) if type(t) is ad.Zero else t

    out_values = tuple(prim.bind(*arg_values))
    arg_tangents = tuple(make_zero(x, t) for x, t in zip(arg_values, arg_tangents))
    out_tangents = tuple(jvp_prim.bind(*(arg_values + out_values + arg_tangents)))
    extra = out_values[len(spec["outputs"]):]
    return out_values, out_tangents + tuple(jnp.zeros_like(e) for e in extra)


def _jvp_transpose(rev_prim, spec, c_out, *args):
    def make_zero(x, t):
        return jnp.zeros_like(x) if type(t) is ad.Zero else t

    nin, nout = len(spec["inputs"]), len(spec["outputs"])
    nargs = nin + nout + len(spec["extra_outputs"])
    c_out = tuple(make_zero(x, t) for x, t in zip(args[nin:nin + nout], c_out))
    c_in = tuple(rev_prim.bind(*(args[:nargs] + c_out)))
    return tuple(None for _ in range(nargs)) + c_in


def _apply(kernel, *args):
    return kernel(*args)


def _elementwise_batch(prim, args, dims):
    """Every op is elementwise: the batch goes to the front of every operand, the others are broadcast."""
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    moved = [jnp.moveaxis(a, d, 0) if d is not None else jnp.broadcast_to(a, (size,) + a.shape)
             for a, d in zip(args, dims)]
    return moved


def _batch(prim, args, dims):
    outs = prim.bind(*_elementwise_batch(prim, args, dims))
    return outs, (0,) * len(outs)


def build_op(name, spec, kernels, rev_batch=_batch, forward_mode=True):
    """(forward, reverse) primitives of one op; `kernels` holds its forward, JVP and reverse computations. Without
    `forward_mode` the JVP primitive is only ever transposed: it has no impl, lowering or batching rule."""
    forward, tangent, reverse = kernels
    prim = Primitive(name)
    prim.multiple_results = True
    jvp_prim = Primitive(name + "_jvp")
    jvp_prim.multiple_results = True
    rev_prim = Primitive(name + "_rev")
    rev_prim.multiple_results = True

    prim.def_impl(partial(_apply, forward))
    prim.def_abstract_eval(partial(_abstract_eval, spec))
    mlir.register_lowering(prim, mlir.lower_fun(partial(_apply, forward), multiple_results=True))
    batching.primitive_batchers[prim] = partial(_batch, prim)

    ad.primitive_jvps[prim] = partial(_jvp, prim, jvp_prim, spec)
    jvp_prim.def_abstract_eval(partial(_jvp_abstract_eval, spec))
    if forward_mode:
        jvp_prim.def_impl(partial(_apply, tangent))
        mlir.register_lowering(jvp_prim, mlir.lower_fun(partial(_apply, tangent), multiple_results=True))
        batching.primitive_batchers[jvp_prim] = partial(_batch, jvp_prim)
    ad.primitive_transposes[jvp_prim] = partial(_jvp_transpose, rev_prim, spec)

    rev_prim.def_impl(partial(_apply, reverse))
    rev_prim.def_abstract_eval(partial(_rev_abstract_eval, spec))
    mlir.register_lowering(rev_prim, mlir.lower_fun(partial(_apply, reverse), multiple_results=True))
    batching.primitive_batchers[rev_prim] = partial(rev_batch, rev_prim)
    return prim, rev_prim
