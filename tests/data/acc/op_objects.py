"""Op objects: a base class whose `__call__` wraps the subclass's forward in a `custom_vjp` made anew on every call,
public functions making an instance of a subclass and calling it, and a module-level registry of instances. The
rule exists only while an op runs: no module attribute holds it, and the instances made at import hold none. The
bwd of `Cube` is wrong (3x where 3x² is right)."""

import abc

import jax
import jax.numpy as jnp


class Op(abc.ABC):
    @abc.abstractmethod
    def _fwd(self, x): ...

    @abc.abstractmethod
    def _bwd(self, x, g): ...

    def __call__(self, x):
        @jax.custom_vjp
        def f(x):
            return self._fwd(x)

        f.defvjp(lambda x: (self._fwd(x), x), lambda x, g: (self._bwd(x, g),))
        return f(x)


class Square(Op):
    def _fwd(self, x):
        return x * x

    def _bwd(self, x, g):
        return (2 * x * g,)[0]


class Cube(Op):
    def _fwd(self, x):
        return x * x * x

    def _bwd(self, x, g):
        return 3 * x * g


IMPLEMENTATIONS: dict[str, Op] = {"square": Square(), "cube": Cube()}


def square(x: jax.Array) -> jax.Array:
    return Square()(x)


def cube(x: jax.Array) -> jax.Array:
    return Cube()(jnp.asarray(x))
