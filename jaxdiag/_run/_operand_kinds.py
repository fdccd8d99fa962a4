"""What a rule's own code says an operand is, read from its source: an array index, a PRNG key, or a container of
arrays.

Inference draws float arrays by default; a float is never a valid index, and never a key, and an operand annotated
as a tuple, a list or a NamedTuple of arrays (`cache: tuple[Array, Array]`, `state: SolverState`) is never one array.
`_climb` draws the positions found here as int32 indices inside every operand's extent, as typed PRNG keys, and as
that container holding the rung's array at each place.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from .. import _compat
from .._checks._base import Subject
from .._harness.source import annotation_text

# Calls whose second argument indexes the first (`jnp.take(x, idx)`, `jnp.take_along_axis(x, idx, axis=1)`).
_INDEX_CALLS = {"take", "take_along_axis"}


def index_positions(subject: Subject) -> set[int]:
    """Positions of the parameters the target's own code indexes an array with: `x[idx]`, `x.at[idx]`,
    `jnp.take(x, idx)`, `jnp.take_along_axis(x, idx, ...)` (for a primitive, in its impl). A float array is never
    a valid index, so inference draws integers there, inside every operand's extent (`_climb`)."""
    from .._harness.source import called_name, function_source

    fn = _fn(subject)
    found = function_source(fn) if fn is not None else None
    if found is None:
        return set()
    used: set[str] = set()
    for sub in ast.walk(found.node):
        if isinstance(sub, ast.Subscript):
            index = sub.slice
            parts = index.elts if isinstance(index, ast.Tuple) else [index]
            used.update(p.id for p in parts if isinstance(p, ast.Name))
        elif isinstance(sub, ast.Call) and called_name(sub.func) in _INDEX_CALLS:
            given = sub.args[1:2] + [k.value for k in sub.keywords if k.arg == "indices"]
            used.update(g.id for g in given if isinstance(g, ast.Name))
    names = [a.arg for a in found.node.args.posonlyargs + found.node.args.args]
    return {i for i, name in enumerate(names) if name in used}


# Parameter names that hold a PRNG key (`key`, `rng`, `prng_key`, `rng_key`, `subkey`, `dropout_rng`), and the
# annotations that type one (`PRNGKeyArray`, `jax.random.PRNGKey`, `KeyArray`).
_KEY_NAME = re.compile(r"^(key|subkey|rng|prng|prng_key|rng_key|random_key|\w+_key|\w+_rng)$")
_KEY_ANNOTATION = re.compile(r"PRNGKey|KeyArray|PRNGKeyArray")
# ... unless the name says it is something else keyed (`sort_key`, `cache_key`, `dict_key`).
_NOT_A_KEY = re.compile(r"^(sort|cache|dict|hash|lookup|group|attr|name|table|primary|foreign)_key$")


def key_positions(subject: Subject) -> set[int]:
    """Positions of the parameters named or annotated as a PRNG key (a function's or a custom rule's; a primitive's
    operands have no such names)."""
    from .._run._signature import positional, signature_of

    if subject.kind == "primitive":
        return set()
    params = positional(signature_of(subject))
    out = set()
    for i, param in enumerate(params):
        text = annotation_text(param.annotation)
        if _KEY_ANNOTATION.search(text) or (_KEY_NAME.match(param.name) and not _NOT_A_KEY.match(param.name)):
            out.add(i)
    return out


def _fn(subject: Subject) -> Any:
    obj = subject.original if subject.original is not None else subject.obj
    return _compat.impl(obj) if subject.kind == "primitive" else getattr(obj, "fun", None) or obj


# One array, as an annotation says it (`jax.Array`, `jnp.ndarray`, `ArrayLike`, jaxtyping's `Float[Array, "n"]`).
_ARRAY_NAME = re.compile(r"^(\w+\.)*(Array|ndarray|ArrayLike)$")
_JAXTYPING = {"Float", "Real", "Inexact", "Complex", "Shaped", "Num", "Float32", "Float64"}
_SEQUENCES = {"tuple": tuple, "Tuple": tuple, "list": list, "List": list, "Sequence": tuple}
Build = Callable[[Any], Any]  # the rung's array spec -> the container holding it at each place


def container_positions(subject: Subject) -> dict[int, Build]:
    """Positions annotated as a fixed tuple, a list or a NamedTuple of arrays, with how each is built from one array
    spec. String annotations (`from __future__ import annotations`) are parsed; a NamedTuple is looked up in the
    rule's module."""
    from .._run._signature import positional, signature_of

    if subject.kind == "primitive":
        return {}
    namespace = getattr(_fn(subject), "__globals__", {})
    out = {}
    for i, param in enumerate(positional(signature_of(subject))):
        annotation = param.annotation
        if annotation is param.empty:
            continue
        build = _container_build(_annotation_text(annotation), namespace)
        if build is not None:
            out[i] = build
    return out


def _annotation_text(annotation: Any) -> str:
    """An annotation as source text, a class by its own name (a NamedTuple is looked up by it) and a NamedTuple
    field's forward reference by its text."""
    forward = getattr(annotation, "__forward_arg__", None)
    if isinstance(forward, str):
        return forward
    if isinstance(annotation, type):
        return annotation.__qualname__
    return annotation_text(annotation)


def _parse(text: str) -> ast.expr | None:
    """The annotation's expression; a quoted one (`x: "Array"` under postponed annotations) unquoted."""
    for _ in range(2):
        try:
            node = ast.parse(text, mode="eval").body
        except (SyntaxError, ValueError, RecursionError):
            return None
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            return node
        text = node.value
    return None


def _container_build(text: str, namespace: dict[str, Any]) -> Build | None:
    node = _parse(text)
    if node is None:
        return None
    if isinstance(node, ast.Subscript) and _dotted(node.value).rpartition(".")[2] in _SEQUENCES:
        kind = _SEQUENCES[_dotted(node.value).rpartition(".")[2]]
        items = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if items and isinstance(items[-1], ast.Constant) and items[-1].value is Ellipsis:
            items = items[:-1] * 2  # `tuple[Array, ...]`: two of them
        if kind is list and len(items) == 1:
            items = items * 2
        items = [_parse(ast.unparse(item)) or item for item in items]  # `tuple["Array", "Array"]`
        if not items or not all(_is_array(item) for item in items):
            return None
        count = len(items)
        return lambda spec: kind([spec] * count)
    cls = namespace.get(_dotted(node)) if isinstance(node, ast.Name) else None
    fields = getattr(cls, "__annotations__", None) if isinstance(cls, type) and hasattr(cls, "_fields") else None
    if not fields or set(fields) != set(cls._fields):  # type: ignore[union-attr]
        return None
    texts = [_annotation_text(f) for f in fields.values()]
    if not all(_is_array_text(t) for t in texts):
        return None
    return lambda spec: cls(*[spec] * len(texts))  # type: ignore[misc]


def _is_array_text(text: str) -> bool:
    node = _parse(text)
    return node is not None and _is_array(node)


def _is_array(node: ast.expr) -> bool:
    if isinstance(node, ast.Subscript):  # jaxtyping: `Float[Array, "n"]`
        return _dotted(node.value).rpartition(".")[2] in _JAXTYPING
    return bool(_ARRAY_NAME.match(_dotted(node)))


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""
