"""Second derivatives checked in two modes. `sharp_logsumexp` is right: its Hessian, diag(p) - p p^T of a nearly
one-hot softmax p, is a difference of terms far larger than itself, so forward-over-reverse and reverse-over-reverse
differ by float32 rounding only. `cube` has a bwd that calls `double_p`, a linear primitive whose transpose rule
is wrong (3 ct for the map 2 t): reverse over reverse differs from forward over reverse and from finite
differences."""

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad

TEMPERATURE = 0.03


@jax.custom_jvp
def sharp_logsumexp(x):
    z = x / TEMPERATURE
    m = jax.lax.stop_gradient(jnp.max(z))
    return TEMPERATURE * (m + jnp.log(jnp.sum(jnp.exp(z - m))))


@sharp_logsumexp.defjvp
def _sharp_logsumexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return sharp_logsumexp(x), jnp.sum(jax.nn.softmax(x / TEMPERATURE) * t)


double_p = Primitive("verdicts_double")
double_p.def_impl(lambda x: 2 * x)
double_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
ad.primitive_jvps[double_p] = lambda p, t: (double_p.bind(p[0]), double_p.bind(t[0]))
ad.primitive_transposes[double_p] = lambda ct, x: [3 * ct]  # the adjoint of t -> 2 t is ct -> 2 ct


@jax.custom_vjp
def cube(x):
    return x ** 3


def _cube_fwd(x):
    return x ** 3, x


def _cube_bwd(x, g):
    return (1.5 * double_p.bind(x * x * g),)


cube.defvjp(_cube_fwd, _cube_bwd)
