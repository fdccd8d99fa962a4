"""Documented examples that sit on a kink: binary spikes (0 or 1) through a ReLU, inputs on the bounds of a clip.
There the primal has no derivative along any step (its one-sided differences disagree however short the step), and a
rule's value is a choice: `where(x > 0, t, 0)` takes the left side, JAX's own `maximum` the mean of both. The
gradient with respect to the spikes, `(spikes > 0) * weights.T @ w`, jumps there as well, so finite differences of
it grow as 1/step. A right rule is right beside the kink on both sides; a wrong one is wrong there too.

- `event_layer` / `clipped_layer`: right rules (a custom_jvp, a custom_vjp);
- `event_layer_doubled` / `clipped_layer_doubled`: the spikes' / inputs' term doubled (first order wrong);
- `event_layer_held`: the weights held constant in the spikes' term (`stop_gradient`): first derivatives right,
  the mixed second derivative lost;
- `rectify_p` / `rectify_doubled_p`: a primitive ReLU whose JVP is right / doubles the slope (checked at values with
  zeros in tests/test_unseen_classes.py).
"""

import jax
import jax.numpy as jnp


def _relu_matvec_rule(scale, hold):
    @jax.custom_jvp
    def relu_matvec(weights, spikes):
        return weights @ jnp.maximum(spikes, 0.0)

    @relu_matvec.defjvp
    def relu_matvec_jvp(primals, tangents):
        (weights, spikes), (t_weights, t_spikes) = primals, tangents
        held = jax.lax.stop_gradient(weights) if hold else weights
        spikes_term = held @ jnp.where(spikes > 0, t_spikes, 0.0)
        return relu_matvec(weights, spikes), t_weights @ jnp.maximum(spikes, 0.0) + scale * spikes_term

    return relu_matvec


_relu_matvec = _relu_matvec_rule(1.0, hold=False)
_relu_matvec_doubled = _relu_matvec_rule(2.0, hold=False)
_relu_matvec_held = _relu_matvec_rule(1.0, hold=True)


def _clip_scale_rule(scale):
    @jax.custom_vjp
    def clip_scale(weights, x):
        return weights @ jnp.clip(x, 0.0, 1.0)

    def clip_fwd(weights, x):
        return weights @ jnp.clip(x, 0.0, 1.0), (weights, x)

    def clip_bwd(res, ct):
        weights, x = res
        inside = (x > 0) & (x < 1)
        return jnp.outer(ct, jnp.clip(x, 0.0, 1.0)), jnp.where(inside, scale * (weights.T @ ct), 0.0)

    clip_scale.defvjp(clip_fwd, clip_bwd)
    return clip_scale


_clip_scale = _clip_scale_rule(1.0)
_clip_scale_doubled = _clip_scale_rule(2.0)


def event_layer(weights, spikes):
    """Weights applied to rectified spikes.

    >>> import jax.numpy as jnp
    >>> weights = jnp.array([[0.5, -1.0, 2.0, 1.5], [1.0, 0.25, -0.5, 2.0], [-1.5, 1.0, 0.5, -0.25]])
    >>> event_layer(weights, jnp.array([1.0, 0.0, 1.0, 0.0]))
    """
    return _relu_matvec(weights, spikes)


def event_layer_doubled(weights, spikes):
    """Weights applied to rectified spikes.

    >>> import jax.numpy as jnp
    >>> weights = jnp.array([[0.5, -1.0, 2.0, 1.5], [1.0, 0.25, -0.5, 2.0], [-1.5, 1.0, 0.5, -0.25]])
    >>> event_layer_doubled(weights, jnp.array([1.0, 0.0, 1.0, 0.0]))
    """
    return _relu_matvec_doubled(weights, spikes)


def event_layer_held(weights, spikes):
    """Weights applied to rectified spikes.

    >>> import jax.numpy as jnp
    >>> weights = jnp.array([[0.5, -1.0, 2.0, 1.5], [1.0, 0.25, -0.5, 2.0], [-1.5, 1.0, 0.5, -0.25]])
    >>> event_layer_held(weights, jnp.array([1.0, 0.0, 1.0, 0.0]))
    """
    return _relu_matvec_held(weights, spikes)


def clipped_layer(weights, x):
    """Weights applied to inputs clipped to [0, 1].

    >>> import jax.numpy as jnp
    >>> weights = jnp.array([[0.5, -1.0, 2.0, 1.5], [1.0, 0.25, -0.5, 2.0], [-1.5, 1.0, 0.5, -0.25]])
    >>> clipped_layer(weights, jnp.array([1.0, 0.0, 0.5, 0.0]))
    """
    return _clip_scale(weights, x)


def clipped_layer_doubled(weights, x):
    """Weights applied to inputs clipped to [0, 1].

    >>> import jax.numpy as jnp
    >>> weights = jnp.array([[0.5, -1.0, 2.0, 1.5], [1.0, 0.25, -0.5, 2.0], [-1.5, 1.0, 0.5, -0.25]])
    >>> clipped_layer_doubled(weights, jnp.array([1.0, 0.0, 0.5, 0.0]))
    """
    return _clip_scale_doubled(weights, x)


def _rectifier(name, slope):
    """A primitive ReLU (`rectify_p`), its JVP `where(x > 0, slope * t, 0)`: right for slope 1."""
    from jax.interpreters import ad, batching, mlir

    try:
        from jax.extend.core import Primitive
    except ImportError:  # jax < 0.4.36
        from jax.core import Primitive

    prim = Primitive(name)
    prim.def_impl(lambda x: jnp.maximum(x, 0.0))
    prim.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(prim, mlir.lower_fun(lambda x: jnp.maximum(x, 0.0), multiple_results=False))
    ad.primitive_jvps[prim] = lambda primals, tangents: (
        prim.bind(*primals), jnp.where(primals[0] > 0, slope * ad.instantiate_zeros(tangents[0]), 0.0))
    batching.defvectorized(prim)
    return prim


rectify_p = _rectifier("rectify", 1.0)
rectify_doubled_p = _rectifier("rectify_doubled", 2.0)


def rectified(x):
    """The positive part of `x`.

    >>> import jax.numpy as jnp
    >>> rectified(jnp.array([1.5, 0.0, -2.0, 0.0, 0.5]))
    """
    return rectify_p.bind(x)


def rectified_doubled(x):
    """The positive part of `x`.

    >>> import jax.numpy as jnp
    >>> rectified_doubled(jnp.array([1.5, 0.0, -2.0, 0.0, 0.5]))
    """
    return rectify_doubled_p.bind(x)
