"""The text of command-line values that are not array specs: `--param NAME=VALUE` literals and dtype names,
`--in-axes`/`--out-axes` lists; recorded params are read back with the same literal parser."""

from __future__ import annotations

import ast
from typing import Any

from .._core._errors import UsageError
from ._inputs import DTYPES, _shown, _unknown_name, check_spec_text, named_jax_dtype


def parse_literal(text: str, what: str) -> Any:
    """A Python literal, a dtype name (`int32`, `f32`), or raise UsageError."""
    text = text.strip()
    check_spec_text(text, f"{what} value")
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    if text in DTYPES:
        return DTYPES[text]
    dtype = named_jax_dtype(text)
    if dtype is not None:
        return dtype
    if text.isidentifier() and _unknown_name(text) != f"unknown name {text!r}":
        raise UsageError(f"bad {what} value {text!r}: {_unknown_name(text)}")
    raise UsageError(f"bad {what} value {text!r}: expected a Python literal (1, 2.5, (0, 1), 'name', True) or a "
                     "dtype name")


def parse_param(text: str) -> tuple[str, Any]:
    """`NAME=VALUE` for a primitive's bind parameter."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise UsageError(f"bad --param {text!r}: expected NAME=VALUE, e.g. --param axis=1 or --param dtype=int32")
    return name.strip(), parse_literal(value, f"--param {name.strip()}")


def parse_axes(text: str | None, option: str) -> Any:
    """`--in-axes 0,None` / `(0, None)` / `[0, None]` / `1`: an int, None, or a tuple/list of them."""
    if text is None:
        return None
    stripped = text.strip()
    if not stripped:
        raise UsageError(f"bad {option} {text!r}: expected an int, None, or a comma-separated list like 0,None")
    check_spec_text(stripped, option)
    source = stripped if stripped[0] in "([" or "," not in stripped else f"({stripped},)"
    try:
        value = ast.literal_eval(source)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise UsageError(f"bad {option} {_shown(text)}: expected an int, None, or a comma-separated list like "
                         "0,None") from None

    def ok(v: Any) -> bool:
        if isinstance(v, (tuple, list)):
            return all(ok(x) for x in v)
        return v is None or (isinstance(v, int) and not isinstance(v, bool))

    if not ok(value):
        raise UsageError(f"bad {option} {_shown(text)}: every axis must be an int or None")
    return value
