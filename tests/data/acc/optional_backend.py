"""Rules whose kernel needs an optional backend that is not installed. The library wraps the import failure in an
exception of its own, as kernel libraries do: once chained (`raise ... from exc`), once only in its message (JAX's
traceback filtering replaces the cause of what a rule raises). Either way the target is not checkable for a missing
dependency (JXN011), not for inputs jaxdiag could not infer (JXN004)."""

import jax
import jax.numpy as jnp


class BackendError(RuntimeError):
    pass


def _backend_chained():
    try:
        import jaxdiag_absent_backend  # noqa: F401
    except ImportError as exc:
        raise BackendError("the 'fast' backend failed to build its kernel") from exc


def _backend_in_message():
    try:
        import jaxdiag_absent_backend  # noqa: F401
    except ImportError as exc:
        raise BackendError(f"the 'fast' backend failed to build its kernel: {type(exc).__name__}: {exc}") from None


@jax.custom_jvp
def fast_relu(x):
    _backend_chained()
    return jnp.maximum(x, 0.0)


fast_relu.defjvp(lambda primals, tangents: (fast_relu(primals[0]), tangents[0] * (primals[0] > 0)))


@jax.custom_jvp
def fast_softplus(x):
    _backend_in_message()
    return jnp.logaddexp(x, 0.0)


fast_softplus.defjvp(lambda primals, tangents: (fast_softplus(primals[0]), tangents[0] * jax.nn.sigmoid(primals[0])))
