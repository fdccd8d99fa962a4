"""A dense layer taking its parameters as a dict, with a custom_vjp whose bwd forgets the transpose for the
weights' cotangent (x.T @ g is written g.T @ x, the transpose of the right one)."""

import jax
import jax.numpy as jnp

JAXDIAG = {"dense": {"args": ['{"w": f32[3,3], "b": f32[3]}', "f32[2,3]"]}}


@jax.custom_vjp
def dense(params, x):
    return x @ params["w"] + params["b"]


def dense_fwd(params, x):
    return dense(params, x), (params, x)


def dense_bwd(res, g):  # jaxdiag-expect: JXG024
    params, x = res
    return {"w": g.T @ x, "b": jnp.sum(g, axis=0)}, g @ params["w"].T


dense.defvjp(dense_fwd, dense_bwd)
