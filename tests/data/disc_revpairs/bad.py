"""The same ops, but the reverse primitive's batching rule names the batch axis its operands came in on, where it
moved the batch to the front of every operand: wrong whenever an operand is batched along another axis."""

import jax.numpy as jnp

from ._factory import _elementwise_batch, build_op

definitions = {
    "scale": {"name": "scale", "inputs": ["x", "a"], "outputs": ["y"], "extra_outputs": ["s"]},
}

kernels = {
    "scale": (
        lambda x, a: (a * x, jnp.sign(x)),
        lambda x, a, y, s, dx, da: (a * dx + x * da,),
        lambda x, a, y, s, cy: (a * cy, x * cy),
    ),
}


def _rev_batch(prim, args, dims):
    outs = prim.bind(*_elementwise_batch(prim, args, dims))
    first = next(d for d in dims if d is not None)
    return outs, (first,) * len(outs)  # the wrong out dim


def scale(x, a):
    y, s = scale_bad_p.bind(x, a)
    return y


scale_bad_p, scale_bad_rev_p = build_op("revpairs_scale_bad", definitions["scale"], kernels["scale"],
                                        rev_batch=_rev_batch)
