"""What a rule's own code says an operand is, read from its source: an array index, or a PRNG key.

Inference draws float arrays by default; a float is never a valid index, and never a key. `_climb` draws the
positions found here as int32 indices inside every operand's extent, and as typed PRNG keys.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from .. import _compat
from .._checks._base import Subject

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
        annotation = param.annotation
        text = "" if annotation is param.empty else annotation if isinstance(annotation, str) else repr(annotation)
        if _KEY_ANNOTATION.search(text) or (_KEY_NAME.match(param.name) and not _NOT_A_KEY.match(param.name)):
            out.add(i)
    return out


def _fn(subject: Subject) -> Any:
    obj = subject.original if subject.original is not None else subject.obj
    return _compat.impl(obj) if subject.kind == "primitive" else getattr(obj, "fun", None) or obj
