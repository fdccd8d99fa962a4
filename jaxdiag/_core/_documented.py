"""Deliberate readings that the rule's own documentation states.

Some warnings describe rules that are right under another reading: a custom derivative that departs from the primal's
numerical derivative as a clipped or straight-through one does (JXG014), a nonzero derivative where the primal is flat
(JXG033, a surrogate by construction), a custom_vmap rule that returns one batch-wide value for every example (JXG035, a
batch statistic), a primitive's batching rule that does (JXB024, an "unvmap"). A package states that reading in its
documentation as often as with a marker: "Heaviside step function with piece-wise linear derivative to use as spike-
generation surrogate", "# The identity, except under vmap: the largest value of the batch, the same for all of its
elements". Such a sentence, in the docstring or the leading comment of the function the finding points at or of the
target's own function (the anchors), or of a module-level function that binds the primitive (its public wrapper,
`binding_functions`), or of the function enclosing it (a factory whose docstring describes the rule it builds), reads
as `# jaxdiag: intended[...]` on that line: the same findings are silenced (the catalog says
which: `Rule.stated_intent`), and a wrong formula (JXG024, a sign or a factor off where the primal is smooth) is still
reported whatever the intent.

A sentence counts when it names both what the reading is about and its deliberate kind, together:
- "derivative": a derivative (derivative, gradient, JVP, VJP, tangent, backward pass) and a surrogate,
  straight-through, pseudo-derivative, score-function or REINFORCE estimator, gradient clipping ("clips the
  gradient", `clip_gradient`; not a clip alone, whose exact derivative a rule may mean to give), or a derivative
  attached to a value computed elsewhere ("the gradient is attached here", "carrying its derivative": an identity
  in a host solver's result whose JVP gives the derivative the solver does not);
- "batch": vmap or the batch, and a batch-wide value (maximum, minimum, largest, smallest, sum, mean, average, a
  statistic, or the same value for all of its elements), or ignoring the batch ("ignores batch dimensions").
An argument said to get no gradient ("teacher → 0", "`scale` is treated as a constant": `states_no_gradient`) is the
deliberate reading of a bwd returning zeros for it (JXG018) or a JVP ignoring its tangent (JXG034), read by those
checks with the argument's name. "Surrogate" alone ("a surrogate model") or a derivative alone says nothing about
intent. The names the author gave count as such a sentence of the "derivative" kind, split into words: a function's
(`surrogate_grad`) and the one an assignment passes the call making its object
(`Primitive("heaviside_surrogate_gradient")`). The leading comment is the run of `#` lines that opens the function's
body or stands right above it (above its decorators).
"""

from __future__ import annotations

import ast
import linecache
import os
import re
import weakref
from collections.abc import Sequence

from . import _locate
from ._report import Location

_DERIVATIVE = re.compile(r"\b(derivatives?|gradients?|grads?|jvps?|vjps?|tangents?|cotangents?|backward|backprop\w*)\b",
                         re.IGNORECASE)
_SURROGATE = re.compile(r"\bsurrogates?\b|\bstraight[- ]through\b|\bpseudo[- ]?(derivative|gradient)s?\b|"
                        r"\bscore[- ]function\b|\bREINFORCE\b|"
                        # gradient clipping: "clips the gradient", "gradient clipping", `clip_gradient`, `grad_clip`
                        r"\bclip\w*\s+(the\s+)?(gradients?|grads?|cotangents?)\b|\b(gradients?|grads?)\s+clip|"
                        # a derivative attached to a value computed elsewhere: "the gradient is attached here",
                        # "carrying the eigenvalue derivative" (an identity whose JVP gives what a host solver does not)
                        r"\battach(es|ed|ing)?\b|\bcarr(y|ies|ying)\s+(the|its|an?)\s+([\w-]+\s+){0,2}"
                        r"(derivatives?|gradients?|jvps?|tangents?)\b",
                        re.IGNORECASE)
_BATCH = re.compile(r"\b(vmap\w*|batch(es|ed)?)\b", re.IGNORECASE)
_BATCH_WIDE = re.compile(r"\b(maximum|minimum|largest|smallest|max|min|sum|mean|average|statistics?|"
                         r"same (value )?for (all|every|each)|ignor(e|es|ing) (the )?(vmap(ped)? )?batch)\b",
                         re.IGNORECASE)
# (what the reading is about, its deliberate kind), by `Rule.stated_intent`
_KINDS = {"derivative": (_DERIVATIVE, _SURROGATE), "batch": (_BATCH, _BATCH_WIDE)}
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n\s*\n")


def stated_deliberate(locations: Sequence[Location | None], kind: str = "derivative") -> str | None:
    """The first sentence of the documentation (docstring or leading comment) of a function defined at one of
    `locations` (its `def` line or one of its decorators) that states a deliberate reading of `kind`; None when none
    does."""
    about, deliberate = _KINDS[kind]
    for loc in _source_locations(locations):
        for sentence in _sentences(loc):
            if about.search(sentence) and deliberate.search(sentence):
                return " ".join(sentence.split())
        for name in _names(loc.path).get(loc.line, []) if kind in _NAMED_KINDS else []:
            words = " ".join(_NAME_WORDS.split(name)).strip()
            if about.search(words) and deliberate.search(words):
                return f"named {name!r}"
    return None


def _source_locations(locations: Sequence[Location | None]) -> list[Location]:
    return [loc for loc in locations if loc is not None and loc.path.endswith(".py")]


def _sentences(loc: Location) -> list[str]:
    """The sentences of the documentation of the function defined at `loc` (its `def` line or a decorator's)."""
    doc = _documentation(loc.path).get(loc.line)
    return _SENTENCE_END.split(doc) if doc is not None else []


# The kinds a name states: "surrogate" or "straight-through" with a derivative word is a departure from the primal
# on purpose; a batch word with a reduction (`batch_max_rule`) names what the function computes, not that one value
# for the whole batch under vmap is intended.
_NAMED_KINDS = ("derivative",)
# the words of a name: `heaviside_surrogate_gradient`, `StraightThroughGrad`
_NAME_WORDS = re.compile(r"[\W_]+|(?<=[a-z0-9])(?=[A-Z])")
_NAMED: weakref.WeakKeyDictionary[ast.Module, dict[int, list[str]]] = weakref.WeakKeyDictionary()


def _names(path: str) -> dict[int, list[str]]:
    """line -> the names the author gave there: a function's (from its first decorator to its `def`) and the name
    an assignment hands the call making its object (`heaviside_p = Primitive("heaviside_surrogate_gradient")`, or a
    factory's `_primitive("...")`). A name stating the reading (`surrogate_gradient`, `straight_through_grad`) is
    documentation too."""
    tree = _locate.parsed_file(path)
    if tree is None:
        return {}
    if tree not in _NAMED:
        out: dict[int, list[str]] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for line in range(min([node.lineno, *(d.lineno for d in node.decorator_list)]), node.lineno + 1):
                    out.setdefault(line, []).append(node.name)
            elif (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and node.value.args
                  and isinstance(node.value.args[0], ast.Constant) and isinstance(node.value.args[0].value, str)):
                out.setdefault(node.lineno, []).append(node.value.args[0].value)
        _NAMED[tree] = out
    return _NAMED[tree]


# An argument said to get no gradient: `teacher → 0`, `dmask = 0`, or the argument named in a sentence with "no
# gradient", "not differentiated", "stop_gradient", "treated as a constant"
_ZEROED = r"\s*(→|->|=)\s*(0(\.0*)?|zeros?)\b"
_NO_GRADIENT = re.compile(r"\bno (gradients?|cotangents?|derivatives?)\b|\bnot differentiated\b|"
                          r"\bnon-?differentiable\b|\bstop[_ -]gradient\b|\btreated as (a )?constants?\b|"
                          r"\bgradients? (is|are) (zero|not computed)\b", re.IGNORECASE)


def states_no_gradient(locations: Sequence[Location | None], name: str) -> str | None:
    """The first sentence of the documentation of a function defined at one of `locations` saying that the argument
    `name` gets no gradient ("Analytic backward: ...; teacher → 0", "No gradient flows to `mask`"): a bwd returning
    zeros for it, or a JVP ignoring its tangent, then does what it says. None when none does."""
    named = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
    zeroed = re.compile(rf"(?<![\w.])d?{re.escape(name)}`*{_ZEROED}")
    for loc in _source_locations(locations):
        for sentence in _sentences(loc):
            set_to_zero = any(not _LIMIT.search(sentence[:m.start()]) for m in zeroed.finditer(sentence))
            if set_to_zero or (named.search(sentence) and _NO_GRADIENT.search(sentence)):
                return " ".join(sentence.split())
    return None


# `x → 0` after these words is a limit ("accurate as x → 0", "the series near x -> 0"), not a gradient set to zero
_LIMIT = re.compile(r"\b(as|when|near|for|if|while|approach(es|ing)?|tends?|limit|around)\W*$", re.IGNORECASE)


def binding_functions(defined_at: Location) -> list[Location]:
    """The `def` lines of the module-level functions of `defined_at`'s file that bind the primitive assigned at that
    line (`foo_p = Primitive(...)`, then `def foo(x): return foo_p.bind(x)`): what a package documents is the wrapper,
    rarely the primitive object."""
    tree = _locate.parsed_file(defined_at.path) if defined_at.path.endswith(".py") else None
    if tree is None:
        return []
    names = {t.id for node in tree.body if isinstance(node, ast.Assign) and node.lineno == defined_at.line
             for t in node.targets if isinstance(t, ast.Name)}
    return [Location(defined_at.path, node.lineno, node.name) for node in tree.body
            if names and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _binds(node, names)]


def _binds(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "bind"
               and isinstance(call.func.value, ast.Name) and call.func.value.id in names for call in ast.walk(node))


_READ: weakref.WeakKeyDictionary[ast.Module, dict[int, str]] = weakref.WeakKeyDictionary()


def _documentation(path: str) -> dict[int, str]:
    """line -> the function's docstring and leading comment, for every line from its first decorator to its `def`
    (read once per parsed file: a package's findings point at the same files)."""
    tree = _locate.parsed_file(path)
    if tree is None:
        return {}
    if tree not in _READ:
        _READ[tree] = _read(path, tree)
    return _READ[tree]


def _read(path: str, tree: ast.Module) -> dict[int, str]:
    """A function defined inside another (a factory returning the custom_jvp it builds) is documented by the
    enclosing function's documentation as well: "returns the Heaviside step function with a surrogate derivative"
    describes the rule the factory defines."""
    out: dict[int, str] = {}

    def visit(node: ast.AST, enclosing: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                own = (ast.get_docstring(child), _leading_comment(path, child, first))
                text = "\n\n".join(t for t in (*own, enclosing) if t)
                if text:
                    out.update(dict.fromkeys(range(first, child.lineno + 1), text))
                visit(child, text)
            elif isinstance(child, ast.ClassDef):
                visit(child, "")  # a class's methods are documented by themselves
            else:
                visit(child, enclosing)

    visit(tree, "")
    return out


def _leading_comment(path: str, node: ast.FunctionDef | ast.AsyncFunctionDef, first: int) -> str:
    """The `#` lines right above the function (above its decorators) and those opening its body (after the
    docstring, if any), as prose: lines joined by spaces, an empty `#` line a paragraph break."""
    full = os.path.abspath(path)
    linecache.checkcache(full)
    statements = node.body[1:] if ast.get_docstring(node) and len(node.body) > 1 else node.body
    lines = _comment_run(full, first - 1) + _comment_run(full, statements[0].lineno - 1)
    prose = " ".join(text.lstrip("#").strip() or "\n\n" for text in lines)
    return prose.strip()


def _comment_run(full: str, last: int) -> list[str]:
    """The run of `#` lines ending at line `last` (read upwards until a line that is not a comment)."""
    run: list[str] = []
    while last > 0 and (text := linecache.getline(full, last).strip()).startswith("#"):
        run.insert(0, text)
        last -= 1
    return run
