import jax

from .ops import patched_tanh, tanh_p

HANDLERS = {tanh_p.name: lambda eqn: f"Tanh({eqn.invars[0]})"}


def export(fn, *args):
    saved, jax.numpy.tanh = jax.numpy.tanh, patched_tanh
    try:
        jaxpr = jax.make_jaxpr(fn)(*args).jaxpr
    finally:
        jax.numpy.tanh = saved
    nodes = []
    for eqn in jaxpr.eqns:
        handler = HANDLERS.get(eqn.primitive.name)
        nodes.append(handler(eqn) if handler else eqn.primitive.name)
    return nodes
