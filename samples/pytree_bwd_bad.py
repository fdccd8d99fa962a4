"""A dense layer whose parameters are a dict, with a bwd that returns the parameter cotangents flat: `return dw, db,
dx` is three entries for two positional arguments (`params`, a dict with keys b and w, and `x`). JAX refuses it
only when `jax.grad` runs, naming no argument; bwd must return `({"b": db, "w": dw}, dx)`.

Plain JAX::

    >>> params = {"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}
    >>> jax.grad(lambda p, x: dense(p, x).sum())(params, jnp.ones((4, 3)))
    TypeError: Custom VJP bwd rule must produce an output with the same container (pytree) structure as the args
    tuple of the primal function, and in particular must produce a tuple of length equal to the number of
    arguments to the primal function, but got bwd output structure PyTreeDef((*, *, *)) for primal input
    structure PyTreeDef(({'b': *, 'w': *}, *)).
"""

import jax

JAXDIAG = {"dense": {"args": ['{"w": f32[3,2], "b": f32[2]}', "f32[4,3]"]}}


@jax.custom_vjp
def dense(params, x):
    return x @ params["w"] + params["b"]


def dense_fwd(params, x):
    return x @ params["w"] + params["b"], (params, x)


def dense_bwd(res, g):  # jaxdiag-expect: JXG010
    params, x = res
    dw = x.T @ g
    db = g.sum(0)
    dx = g @ params["w"].T
    return dw, db, dx


dense.defvjp(dense_fwd, dense_bwd)
