"""A layer class builds its custom_jvp in `__init__`, closing over its setting; the public function makes the layer
at run time. No module attribute holds the rule: only tracing the public function reaches it."""

import jax
import jax.numpy as jnp


class SoftClip:
    def __init__(self, limit):
        self.limit = limit

        @jax.custom_jvp
        def clip(x):
            return limit * jnp.tanh(x / limit)

        @clip.defjvp
        def clip_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return clip(x), t * (1.0 - jnp.tanh(x / limit) ** 2) * 3.0  # a slope three times too steep

        self.clip = clip

    def __call__(self, x):
        return self.clip(x)


def soft_clip(x):
    return SoftClip(2.0)(x)
