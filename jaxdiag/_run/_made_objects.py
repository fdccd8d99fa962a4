"""Operands annotated as a configuration object of the user's library, made by the library's own factory.

`spread_1d(x, c, nf, kernel_params: "Kernel | KernelParams")`: the object holds no array to draw (a NamedTuple of a
kernel width and its shape parameters), and fields synthesised one by one would not agree with each other (the
width follows from the tolerance, the shape from the width). The library has a function that makes one,
`compute_kernel_params(tol, upsampfac=2.0) -> KernelParams`, whose return annotation names the class: called with
its defaults, and a tolerance for a required parameter named as one (`tol`, `eps`, `rtol`), it gives an object as
the library's own callers build it, passed to the target as it is (never drawn, never differentiated).
"""

from __future__ import annotations

import ast
import inspect
import sys
from typing import Any, Callable

from .._harness import call_user
from .._harness.source import parse_annotation, resolved, union_members
from .._loading._inputs import Static
from .._loading._operand_names import is_tolerance

_TOLERANCE = 1e-6  # what a factory's required tolerance is given: a library's usual default


def annotation_classes(text: str, namespace: dict[str, Any]) -> list[type]:
    """The user classes an annotation's text names (`KernelParams`, `"Kernel | KernelParams"`, `Optional[Config]`),
    each looked up in `namespace`; never a builtin, a typing construct, or one of JAX's or NumPy's."""
    node = parse_annotation(text)
    members = (union_members(node) or [node]) if node is not None else []
    found = [resolved(m, namespace) for m in members if isinstance(m, (ast.Name, ast.Attribute))]
    return [c for c in found if isinstance(c, type) and c.__module__ not in ("builtins", "typing")
            and not c.__module__.startswith(("jax", "numpy"))]


def factory_build(classes: list[type], namespace: dict[str, Any]) -> Callable[[Any], Any] | None:
    """For the user classes an annotation names (`annotation_classes`): a build that ignores the drawn spec and
    gives the object a factory of the library made, kept static; None where no named class has a factory that runs
    with what it is given."""
    for cls in classes:
        made = _made_by_factory(cls, namespace)
        if made is not None:
            return _kept(made)
    return None


def _kept(made: Any) -> Callable[[Any], Any]:
    return lambda spec: Static(made)


def _made_by_factory(cls: type, namespace: dict[str, Any]) -> Any:
    """An instance of `cls` from the first function (of the class's module, then of the annotating module, in
    definition order) whose return annotation names `cls` and whose every required parameter is a tolerance."""
    modules = [vars(sys.modules[cls.__module__])] if cls.__module__ in sys.modules else []
    for scope in [*modules, namespace]:
        for fn in list(scope.values()):
            if not inspect.isfunction(fn) or fn.__module__ != scope.get("__name__", fn.__module__):
                continue
            arguments = _factory_arguments(fn, cls, scope)
            if arguments is None:
                continue
            ran = call_user(fn, **arguments, quiet=True)
            if ran.error is None and isinstance(ran.value, cls):
                return ran.value
    return None


def _factory_arguments(fn: Any, cls: type, scope: dict[str, Any]) -> dict[str, float] | None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    returned = signature.return_annotation
    if returned is not cls and not (isinstance(returned, str) and annotation_classes(returned, scope) == [cls]):
        return None
    arguments: dict[str, float] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.default is not param.empty:
            continue
        if not is_tolerance(param.name) and param.name not in ("eps", "epsilon", "precision"):
            return None
        arguments[param.name] = _TOLERANCE
    return arguments
