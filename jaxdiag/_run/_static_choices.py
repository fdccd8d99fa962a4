"""The values a static argument is declared to take: `kernel: Literal['pallas', 'reference'] = 'pallas'`,
`normalize: bool`.

Inference gives a static position its default. A default that cannot run here (a GPU kernel's `'pallas'` on a CPU
machine) leaves the target unchecked although its signature names a value that runs: the reference path its
author wrote to test the kernel against. When no input runs with the defaults, each other value of a `Literal`
annotation is tried in its place, one position at a time, in the order the annotation lists them. A static with
no default, no option and no literal from its module's calls takes the first value its annotation declares
(`declared_values`), and the others the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .._checks._base import Subject
from .._loading._inputs import Static
from . import _signature
from ._declared import declared_values, literal_values


def literal_alternatives(subject: Subject, statics: dict[int, Any]) -> Iterator[dict[int, Any]]:
    """`statics` with one static position at a time set to each other value its annotation declares: a `Literal`'s
    values for a defaulted one, also True/False for one without a default (`declared_values`); then, with two or
    more required flags, every one of them False at once (`use_pallas_fwd` and `use_pallas_bwd`: the reference
    path needs both off)."""
    params = _signature.positional(_signature.signature_of(subject))
    flags = [i for i, t in statics.items() if i < len(params) and params[i].default is params[i].empty
             and isinstance(t, Static) and t.value is True]
    for i, template in sorted(statics.items()):
        if i >= len(params) or not isinstance(template, Static):
            continue
        required = params[i].default is params[i].empty
        values = declared_values(params[i]) if required else literal_values(params[i].annotation)
        if required and not values and isinstance(template.value, bool):  # a flag by its use (`if use_erf:`)
            values = [True, False]
        for value in values:
            if value != template.value and type(value) is type(template.value):
                yield {**statics, i: Static(value)}
    if len(flags) >= 2:
        yield {**statics, **{i: Static(False) for i in flags}}
