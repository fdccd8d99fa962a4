"""JXN019 bad: `cumsum_p`'s JVP rule returns its tangent as `cumsum_tangent_p`, a primitive with an abstract eval and
a transpose rule (which binds the reverse kernel `cumsum_reverse_p`) but no impl and no lowering, as FFI libraries
write derivatives that exist in reverse mode only. jax.grad and jax.vjp work; jax.jvp, jax.jacfwd and jax.hessian
fail with "Evaluation rule for 'cumsum_tangent' not implemented". jaxdiag says so in a note and checks jax.vjp
against finite differences of the impl instead (a wrong reverse kernel would be JXG001 at the transpose rule)."""

import jax
import jax.numpy as jnp
from jax.interpreters import ad, batching, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive


def _running_sum(x):
    return jnp.cumsum(x, axis=-1)


def _reverse_running_sum(ct):
    return jnp.flip(jnp.cumsum(jnp.flip(ct, axis=-1), axis=-1), axis=-1)


cumsum_p = Primitive("cumsum")
cumsum_tangent_p = Primitive("cumsum_tangent")
cumsum_reverse_p = Primitive("cumsum_reverse")

for _prim in (cumsum_p, cumsum_tangent_p, cumsum_reverse_p):
    _prim.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
for _prim, _kernel in ((cumsum_p, _running_sum), (cumsum_reverse_p, _reverse_running_sum)):
    _prim.def_impl(_kernel)
    mlir.register_lowering(_prim, mlir.lower_fun(_kernel, multiple_results=False))


def _cumsum_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    t = jnp.zeros_like(x) if type(t) is ad.Zero else t
    return cumsum_p.bind(x), cumsum_tangent_p.bind(t)


def _cumsum_tangent_transpose(ct, t):
    ct = jnp.zeros(t.aval.shape, t.aval.dtype) if type(ct) is ad.Zero else ct
    return [cumsum_reverse_p.bind(ct)]


def _batch(prim):
    def rule(args, dims):  # the running sum runs along the last axis: the batch axis goes first
        (x,), (d,) = args, dims
        return prim.bind(jnp.moveaxis(x, d, 0)), 0

    return rule


ad.primitive_jvps[cumsum_p] = _cumsum_jvp
ad.primitive_transposes[cumsum_tangent_p] = _cumsum_tangent_transpose
ad.primitive_jvps[cumsum_reverse_p] = lambda primals, tangents: (
    cumsum_reverse_p.bind(*primals), cumsum_reverse_p.bind(ad.instantiate_zeros(tangents[0])))
ad.deflinear2(cumsum_reverse_p, lambda ct, _: [cumsum_p.bind(ad.instantiate_zeros(ct))])
for _prim in (cumsum_p, cumsum_tangent_p, cumsum_reverse_p):
    batching.primitive_batchers[_prim] = _batch(_prim)
