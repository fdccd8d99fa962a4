"""Primitives their own package lowers: an exporter or a verifier traces the user's function to a jaxpr and
interprets each equation itself, looking up a handler by the equation's primitive (`for eqn in jaxpr.eqns:
handlers.get(eqn.primitive.name)(ctx, eqn)`). The primitives it binds while tracing (a model converter patches
`jnp.einsum` to bind its own) exist for that interpreter; `jax.jit` never meets them, so having no MLIR lowering is
their design, not a missing rule (JXR004 is not reported; registration-lowering says why it was skipped).

Both must hold: the package's source has such an interpreter, and a module-level table of the package (a dict
that the interpreter's lookup reads) has a handler keyed by this primitive or its name. A primitive the package
binds but none of its tables names is one its interpreter cannot handle either: its missing lowering stands."""

from __future__ import annotations

import functools
import os
import re
import sys
from typing import Any

from .. import _compat
from .._core import _locate
from .._core._report import Location

# a loop over a jaxpr's equations, and a lookup keyed by an equation's primitive in the same file
_EQUATION_LOOP = re.compile(r"^\s*for\s[^\n]*\beqns\b", re.MULTILINE)
_PRIMITIVE_LOOKUP = re.compile(r"(\.get\(|\[)\s*\w+\.primitive\b")
_MAX_FILES = 5000  # a package this large is read no further (the answer is then "no interpreter found")


def lowered_by_own_interpreter(prim: Any, module: Any) -> Location | None:
    """Where the package defining `prim` (whose module is `module`) dispatches jaxpr equations by primitive, when
    `prim` has no MLIR lowering for any platform; None otherwise."""
    name = module if isinstance(module, str) else getattr(module, "__name__", "")  # a module or its name
    if not name or _compat.has_any_lowering(prim):
        return None
    root = name.partition(".")[0]
    if not _handled_by_a_table(prim, root):
        return None
    return _interpreter_in(tuple(_locate.package_folders(sys.modules.get(root))))


# A dict larger than this is data, not a table of handlers (and is not searched).
_MAX_TABLE = 100_000


def _handled_by_a_table(prim: Any, root: str) -> bool:
    """Whether a module-level dict of a loaded module of package `root` holds a handler (a non-None value) under
    `prim` or its name."""
    keys = (prim, getattr(prim, "name", None))
    for module_name, module in list(sys.modules.items()):
        if module is None or (module_name != root and not module_name.startswith(root + ".")):
            continue
        for value in list(vars(module).values()):
            if type(value) is dict and len(value) <= _MAX_TABLE and any(
                    _holds(value, key) for key in keys if key is not None):
                return True
    return False


def _holds(table: dict, key: Any) -> bool:
    try:
        return table.get(key) is not None
    except TypeError:  # an unhashable key type: not this table
        return False


@functools.lru_cache(maxsize=16)
def _interpreter_in(folders: tuple[str, ...]) -> Location | None:
    seen = 0
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            dirs.sort()
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                seen += 1
                if seen > _MAX_FILES:
                    return None
                path = os.path.join(root, name)
                try:
                    with open(path, encoding="utf-8", errors="replace") as handle:
                        text = handle.read()
                except OSError:
                    continue
                lookup = _PRIMITIVE_LOOKUP.search(text)
                if lookup and _EQUATION_LOOP.search(text):
                    return Location(path, text.count("\n", 0, lookup.start()) + 1, "")
    return None
