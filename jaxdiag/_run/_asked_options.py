"""Keyword options the target's own error asks for.

`trace_rays(tx, rx, ..., *, num_iters: int | None = None, max_num_iters: int | None = None, ...)` raises "Exactly
one of 'num_iters' or 'max_num_iters' must be set." with its defaults: a solver whose iteration count has no
default. The error names the options it wants; the first one it quotes that is a keyword-only parameter defaulting
to None gets a value from its annotation (an int the first rung of the int ladder, a tolerance-named float a
tolerance, another float 1.0, a bool True), and the rung is tried again with it, passed by keyword on every call
(`Subject.keywords`) and shown with the inferred inputs.
"""

from __future__ import annotations

import re
from typing import Any

from .._checks._base import Subject
from .._loading._operand_names import is_tolerance
from ._signature import signature_of

_QUOTED = re.compile(r"['\"`](\w+)['\"`]")


def asked_keywords(subject: Subject, error: str) -> dict[str, Any]:
    """{name: value} for the first keyword-only option defaulting to None that `error` quotes and the subject does
    not pass yet; {} for a primitive, or where the error quotes none."""
    if subject.kind == "primitive":
        return {}
    sig = signature_of(subject)
    options = {p.name: p for p in (sig.parameters.values() if sig is not None else ())
               if p.kind == p.KEYWORD_ONLY and p.default is None}
    for name in _QUOTED.findall(error):
        if name in options and name not in subject.keywords:
            value = _value_for(name, str(options[name].annotation))
            if value is not None:
                return {name: value}
    return {}


def _value_for(name: str, annotation: str) -> Any:
    from ._int_params import int_rungs

    if re.search(r"\bint\b", annotation):
        return int_rungs({0: "int"})[0][0].value
    if re.search(r"\bfloat\b", annotation):
        return 1e-6 if is_tolerance(name) else 1.0
    if re.search(r"\bbool\b", annotation):
        return True
    return None


def keywords_text(subject: Subject) -> str:
    """" num_iters=4" for the keywords a subject is called with; "" for none."""
    return "".join(f" {text}" for text in subject.keyword_texts)
