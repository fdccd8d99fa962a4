"""A package with an optional backend puts a placeholder class where the backend's class would be: the class
raises ModuleNotFoundError for ANY attribute looked up on it (its metaclass's `__getattr__`), not AttributeError.
jaxdiag reads attributes of every module-level object (wrappers, jit functions, call sites): the placeholder must
never be its internal error. The rule beside it is correct."""

import jax
import jax.numpy as jnp


class _MissingBackendMeta(type):
    def __getattr__(cls, name):
        raise ModuleNotFoundError("Missing the `hardware` backend: `DeviceModel` objects are not available.")


class DeviceModel(metaclass=_MissingBackendMeta):
    def __init__(self, *args, **kwargs):
        raise ModuleNotFoundError("Missing the `hardware` backend: `DeviceModel` objects are not available.")


@jax.custom_jvp
def soft_step(x):
    return jax.nn.sigmoid(4.0 * x)


@soft_step.defjvp
def _soft_step_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    s = jax.nn.sigmoid(4.0 * x)
    return s, 4.0 * s * (1.0 - s) * dx


def layer(weights, inputs):
    """One layer: the step of a weighted sum."""
    return soft_step(jnp.dot(inputs, weights))
