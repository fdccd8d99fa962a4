"""Ordered host effects built in two steps, as a runtime of ordered host calls writes them: `host_effect(order)`
gives `eff`, and `eff(host, *outs)` gives the effect body that calls the host through `io_callback`. `eff` returns a
function, not arrays: there is nothing to differentiate or batch in it, and checking it must say so, not fail."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback


def host_effect(order):
    """`eff(host, *outs)`: an effect body whose host call takes the order token and returns the next one."""
    token = jax.ShapeDtypeStruct((), jnp.int32)

    def eff(host, *outs):
        def body(tok, *args):
            def call(k, *x):
                return (np.int32(k + 1), *host(*x))
            out = io_callback(call, (token, *outs), order(tok), *args)
            return (order(out[0]), *out[1:])
        return body
    return eff
