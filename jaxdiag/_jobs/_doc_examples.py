"""A public function's arguments read off its own docstring example: the call its author documents.

A kernel whose bind params (a matrix's `shape`, a flag) reach it only from a sparse-matrix-like object's methods
(`prim.bind(..., shape=self.shape)`) has no literal at any call site and no operands inference can draw: its
operands are a structure (CSR `indices`/`indptr`) that random integers break. The public function above it often
documents one complete call in its docstring (`>>> f(data, indices, indptr, v, shape=(2, 3))`), building valid
operands in the lines before. Those lines are run (the package's own documented code, as its doctests run it) in a
namespace of the function's module, with the function replaced by a stand-in (there, and in every attribute of its
package holding it, restored after) that takes the arguments of its first call that passes an array and stops
there: the function itself is not run here, and nothing after that line is. A call under a transformation (its
arguments tracers) stops the example without taking them.
"""

from __future__ import annotations

import contextlib
import doctest
import inspect
import io
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .._harness import call_user
from .._harness.boundary import Signal

# Example lines run at most per docstring (a long tutorial is not an input recipe).
MAX_LINES = 40


@dataclass
class DocumentedCall:
    """The positional and keyword arguments of the documented call, as its example builds them."""

    args: list[Any]
    kwargs: dict[str, Any]


class _Taken(Signal):
    """Raised by the stand-in once the arguments are taken: stops the example there (jaxdiag's control flow)."""

    def __init__(self, call: DocumentedCall) -> None:
        super().__init__("documented call taken")
        self.call = call


def documented_call(module: ModuleType, name: str) -> DocumentedCall | None:
    """The first call of `module.name` its own docstring example makes with an array argument, or None (no
    example, an example line that fails before the call, or no such call)."""
    fn = getattr(module, name, None)
    doc = inspect.getdoc(fn) if fn is not None else None
    if not doc or ">>>" not in doc:
        return None
    try:
        examples = doctest.DocTestParser().get_examples(doc)[:MAX_LINES]
    except ValueError:  # a malformed example block
        return None
    namespace = dict(vars(module))
    for example in examples:
        if example.options.get(doctest.SKIP):  # the author marks it as not run (a GPU, a download)
            continue
        try:
            code = compile(example.source, f"<docstring of {module.__name__}.{name}>", "exec")
        except SyntaxError:
            return None
        for key, value in list(namespace.items()):  # an example imports the function itself (`from pkg import f`)
            if value is fn:
                namespace[key] = _stand_in
        try:
            with contextlib.redirect_stdout(io.StringIO()), _replaced_in_package(module, fn):
                ran = call_user(exec, code, namespace)
        except _Taken as taken:
            return taken.call
        if ran.error is not None:
            return None
    return None


@contextlib.contextmanager
def _replaced_in_package(module: ModuleType, fn: Any) -> Iterator[None]:
    """The stand-in in every attribute of the function's package that holds it, for the example's run: an example
    calls it through a package path too (`pkg.jax.expect(...)` inside a function the example defines), where the
    namespace replacement does not reach. Restored on exit."""
    root = module.__name__.split(".")[0]
    held = [(m, attr) for key, m in list(sys.modules.items()) if m is not None and key.split(".")[0] == root
            for attr, value in list(vars(m).items()) if value is fn]
    for m, attr in held:
        setattr(m, attr, _stand_in)
    try:
        yield
    finally:
        for m, attr in held:
            setattr(m, attr, fn)


def _stand_in(*args: Any, **kwargs: Any) -> Any:
    import jax

    values = [*args, *kwargs.values()]
    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(values)):
        raise _NotTheCall()  # called under a transformation: its arguments are not values to take
    if any(_is_array(a) for a in values):
        raise _Taken(DocumentedCall(list(args), dict(kwargs)))
    if any(_is_real_scalar(a) for a in args):
        # `f(2, 0.5)`: a special function documented on Python numbers. Its float arguments are the values it is
        # about (JAX takes them as weakly typed float32 scalars); the ints stay static (an order, a count).
        raise _Taken(DocumentedCall([jax.numpy.asarray(a) if _is_real_scalar(a) else a for a in args],
                                    dict(kwargs)))
    raise _NotTheCall()


class _NotTheCall(Exception):
    """A call without an array or a positional float argument (a helper use of the same name): the example stops,
    nothing is taken."""


def _is_real_scalar(value: Any) -> bool:
    """A Python float or complex (not an int or a bool: those are orders, counts and flags more often than values)."""
    return isinstance(value, (float, complex))


def _is_array(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, type)
