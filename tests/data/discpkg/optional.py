"""A rule whose function imports an optional dependency when called."""
import jax


@jax.custom_jvp
def fancy(x):
    import jaxdiag_not_installed_dependency  # noqa: F401

    return x


@fancy.defjvp
def fancy_jvp(primals, tangents):
    return fancy(primals[0]), tangents[0]
