"""Members of the deliberate-semantics classes other than the samples': a custom_jvp whose tangent is a sigmoid
relaxation of a hard threshold (flat primal), and a custom_jvp and a primitive's JVP rule that each treat one
operand (a temperature, the sample points of a fixed grid) as a constant."""

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, mlir


@jax.custom_jvp
def hard_step(x):
    return (x > 0).astype(x.dtype)


@hard_step.defjvp
def hard_step_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    s = jax.nn.sigmoid(4.0 * x)
    return hard_step(x), 4.0 * s * (1 - s) * t


@jax.custom_jvp
def tempered_softmax(logits, temperature):
    return jax.nn.softmax(logits / temperature)


@tempered_softmax.defjvp
def tempered_softmax_jvp(primals, tangents):
    (logits, temperature), (t, _) = primals, tangents
    y = tempered_softmax(logits, temperature)
    u = t / temperature
    return y, y * (u - jnp.sum(y * u))


# the values of a signal at fixed sample points: linear in `values`, its JVP treats `points` as a constant
resample_p = Primitive("resample")
resample_p.def_impl(lambda values, points: jnp.cos(points) * values)
resample_p.def_abstract_eval(lambda values, points: values)
mlir.register_lowering(resample_p, mlir.lower_fun(lambda values, points: jnp.cos(points) * values,
                                                  multiple_results=False))


def _resample_jvp(primals, tangents):
    (values, points), (t_values, _) = primals, tangents
    out = resample_p.bind(values, points)
    if isinstance(t_values, ad.Zero):
        return out, jnp.zeros_like(out)
    return out, resample_p.bind(t_values, points)


def _resample_transpose(ct, values, points):  # the map is diagonal: its own transpose, bound again
    return (None if isinstance(ct, ad.Zero) else resample_p.bind(ct, points)), None


ad.primitive_jvps[resample_p] = _resample_jvp
ad.primitive_transposes[resample_p] = _resample_transpose
