"""The same op built for reverse mode only: its JVP primitive is never evaluated, only transposed, so it has no impl,
lowering or batching rule. `jax.jvp` of the op fails by design (noted once, at the forward primitive whose JVP rule
binds it, JXN019, and its reverse mode checked instead); the JVP primitive, which nobody calls, is no target."""

import jax.numpy as jnp

from ._factory import build_op

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


def scale(x, a):
    y, s = scale_rev_only_p.bind(x, a)
    return y


scale_rev_only_p, scale_rev_only_rev_p = build_op("revpairs_scale_rev_only", definitions["scale"],
                                                  kernels["scale"], forward_mode=False)
