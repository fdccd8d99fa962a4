"""Findings on a rule that a helper library wraps point at the user's rule, not at the helper's wrapper.

equinox's `filter_custom_jvp` / `filter_custom_vjp` build the custom_jvp / custom_vjp themselves, around closures
(`fn_wrapper`, `fn_jvp_wrapper`, `fn_bwd_wrapped`) that flatten pytrees and then call the user's `fn`, `fn_jvp`,
`fn_bwd`. Every rule part JAX sees is such a closure, so a finding located by the part's code lands on the helper's
line (`equinox/_ad.py:802`) and names the closure. A part is taken for a wrapper when it is a closure made in
another module than the one function it calls from its closure (directly, or as an attribute it reads off a closed
over object, as `self.fn_bwd`); the finding then moves to that function, and the wrapper's name in the texts becomes
the user's. A user's own decorator defined beside the rule it wraps stays the location: it may be where the bug is.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any

from .. import _compat
from .._core import _locate
from .._checks._base import Subject
from .._core._report import Finding


def relocate(findings: list[Finding], moves: list[tuple[Any, Any]]) -> list[Finding]:
    """The findings with each helper wrapper's location and name replaced by the user's (`wrapper_moves`)."""
    return [_moved(f, moves) for f in findings] if moves else findings


def called_user_function(fn: Any) -> Any | None:
    """The one user function a helper's closure calls, when the closure lives in another module than it."""
    fn = _locate.unwrap(fn)
    code = getattr(fn, "__code__", None)
    if code is None or "<locals>" not in getattr(fn, "__qualname__", "") or not getattr(fn, "__closure__", None):
        return None
    found = []
    for cell in fn.__closure__:
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        candidates = [value] if callable(value) and inspect.isfunction(_locate.unwrap(value)) else [
            getattr(value, name, None) for name in code.co_names]
        for candidate in candidates:
            inner = _locate.unwrap(candidate) if candidate is not None else None
            if inspect.isfunction(inner) and inner.__module__ != fn.__module__ and _locate.is_user_code(inner) \
                    and inner not in found:
                found.append(inner)
    return found[0] if len(found) == 1 else None


def wrapper_moves(subject: Subject) -> list[tuple[Any, Any]]:
    """(wrapper, user function) for each rule part of the subject that a helper wraps."""
    obj = subject.original if subject.original is not None else subject.obj
    if subject.kind == "function":
        return _held_by_object(obj)
    if subject.kind not in ("custom_jvp", "custom_vjp"):
        return []
    parts = _compat.custom_jvp_parts(obj)[:2] if subject.kind == "custom_jvp" else _compat.custom_vjp_parts(obj)[:3]
    out = []
    for part in parts:
        if part is None:
            continue
        held = called_user_function(part)
        if held is not None:
            out.append((_locate.unwrap(part), held))
    return out


def _held_by_object(obj: Any) -> list[tuple[Any, Any]]:
    """A helper's callable object (equinox's `filter_custom_vjp`) checked as a function: its `__call__` is the
    helper's line; the function it holds is the user's."""
    call = getattr(type(obj), "__call__", None)  # noqa: B004 - its code, not a callable test
    held = _locate.held_function(obj)
    if inspect.isfunction(obj) or call is None or held is None or not hasattr(call, "__code__"):
        return []
    if held.__module__ == type(obj).__module__ or not _locate.is_user_code(held):
        return []
    return [(call, held)]


def _moved(finding: Finding, moves: list[tuple[Any, Any]]) -> Finding:
    location, message, fix = finding.location, finding.message, finding.fix
    for wrapper, held in moves:
        here, there = _locate.locate(wrapper), _locate.locate(held)
        if location is not None and here is not None and (location.path, location.line) == (here.path, here.line):
            location = there or location
        if wrapper.__name__ == "__call__":
            continue
        texts = [(rf"(?<![\w.]){re.escape(wrapper.__name__)}\.fun\b", held.__name__),  # `fn_wrapper.fun`: the user's
                 (rf"(?<![\w.]){re.escape(wrapper.__name__)}(?!\w)", held.__name__)]
        if here is not None and there is not None:
            texts.append((re.escape(f"{here.path}:{here.line}"), f"{there.path}:{there.line}"))
        for pattern, replacement in texts:
            message = re.sub(pattern, replacement, message)
            fix = re.sub(pattern, replacement, fix)
    if (location, message, fix) == (finding.location, finding.message, finding.fix):
        return finding
    return dataclasses.replace(finding, location=location, message=message, fix=fix)
