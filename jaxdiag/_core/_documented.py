"""Deliberate readings that the rule's own documentation states.

Two warnings describe derivative rules that are right under another reading: a custom derivative that departs from
the primal's numerical derivative as a clipped or straight-through one does (JXG014), and a nonzero derivative
where the primal is flat (JXG033, a surrogate by construction). A package states that reading in its docstrings
as often as with a marker: "Heaviside step function with piece-wise linear derivative to use as spike-generation
surrogate". Such a sentence, in the docstring of the function the finding points at or of the target's own
function (the anchors), reads as `# jaxdiag: intended[...]` on that line: the same findings are silenced, and a
wrong formula (JXG024, a sign or a factor off where the primal is smooth) is still reported whatever the intent.

A sentence counts when it names a derivative (derivative, gradient, JVP, VJP, tangent, backward pass) and the
deliberate kind (surrogate, straight-through, pseudo-derivative, score-function or REINFORCE estimator) together:
"surrogate" alone ("a surrogate model") or a derivative alone says nothing about intent.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from . import _locate
from ._report import Location

_DERIVATIVE = re.compile(r"\b(derivatives?|gradients?|grads?|jvps?|vjps?|tangents?|cotangents?|backward|backprop\w*)\b",
                         re.IGNORECASE)
_DELIBERATE = re.compile(r"\bsurrogates?\b|\bstraight[- ]through\b|\bpseudo[- ]?(derivative|gradient)s?\b|"
                         r"\bscore[- ]function\b|\bREINFORCE\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n\s*\n")


def stated_deliberate(locations: Sequence[Location | None]) -> str | None:
    """The first sentence of a docstring of a function defined at one of `locations` (its `def` line or one of
    its decorators) that states a deliberate derivative; None when none does."""
    for loc in locations:
        if loc is None or not loc.path.endswith(".py"):
            continue
        doc = _docstrings(loc.path).get(loc.line)
        if doc is None:
            continue
        for sentence in _SENTENCE_END.split(doc):
            if _DERIVATIVE.search(sentence) and _DELIBERATE.search(sentence):
                return " ".join(sentence.split())
    return None


def _docstrings(path: str) -> dict[int, str]:
    """line -> docstring, for every line from a function's first decorator to its `def` line."""
    tree = _locate.parsed_file(path)
    out: dict[int, str] = {}
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            if doc:
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                out.update(dict.fromkeys(range(first, node.lineno + 1), doc))
    return out
