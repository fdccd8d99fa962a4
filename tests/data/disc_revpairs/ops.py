"""Correct ops: the forward, JVP and reverse primitives of each agree, and every batching rule is right."""

import jax.numpy as jnp

from ._factory import build_op

definitions = {
    "scale": {"name": "scale", "inputs": ["x", "a"], "outputs": ["y"], "extra_outputs": ["s"]},
    "mix": {"name": "mix", "inputs": ["t", "c", "u"], "outputs": ["y", "w"], "extra_outputs": ["m"]},
}

kernels = {
    "scale": (
        lambda x, a: (a * x, jnp.sign(x)),
        lambda x, a, y, s, dx, da: (a * dx + x * da,),
        lambda x, a, y, s, cy: (a * cy, x * cy),
    ),
    "mix": (
        lambda t, c, u: (c * t + u, t * u, jnp.sign(t + c + u)),
        lambda t, c, u, y, w, m, dt, dc, du: (c * dt + t * dc + du, u * dt + t * du),
        lambda t, c, u, y, w, m, cy, cw: (c * cy + u * cw, t * cy, cy + t * cw),
    ),
}


def scale(x, a):
    y, s = scale_p.bind(x, a)
    return y


def mix(t, c, u):
    y, w, m = mix_p.bind(t, c, u)
    return y, w


scale_p, scale_rev_p = build_op("revpairs_scale", definitions["scale"], kernels["scale"])
mix_p, mix_rev_p = build_op("revpairs_mix", definitions["mix"], kernels["mix"])
