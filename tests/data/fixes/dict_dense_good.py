"""A dense layer taking its parameters as a dict, with a custom_vjp whose bwd gets the
weights' cotangent right (x.T @ g)."""

import jax
import jax.numpy as jnp

JAXDIAG = {"dense": {"args": ['{"w": f32[3,3], "b": f32[3]}', "f32[2,3]"]}}


@jax.custom_vjp
def dense(params, x):
    return x @ params["w"] + params["b"]


def dense_fwd(params, x):
    return dense(params, x), (params, x)


def dense_bwd(res, g):
    params, x = res
    return {"w": x.T @ g, "b": jnp.sum(g, axis=0)}, g @ params["w"].T


dense.defvjp(dense_fwd, dense_bwd)
