"""Reading the user's source by AST, once: the parsed `def` of a rule or function, cached by its code object, and
a module's parsed source, cached by file and modification time (`module_tree`).

The batching fixes (the rule's `return` lines and dim names) and the grad fixes (a bwd's cotangent names, argument
names) read the user's code through here, so a function is read from disk and parsed once per process.
"""

from __future__ import annotations

import ast
import inspect
import os
import re
import textwrap
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from .._core import _locate


@dataclass(frozen=True)
class FunctionSource:
    node: ast.FunctionDef | ast.AsyncFunctionDef  # the `def`, line numbers relative to `text`
    offset: int  # add to a node's line number to get the line in the file
    text: str  # the function's dedented source (for `ast.get_source_segment`)


_PARSED: dict[Any, FunctionSource | None] = {}


def function_source(fn: Any) -> FunctionSource | None:
    """The parsed `def` of a user function, or None (builtins, lambdas, no source, not parseable)."""
    fn = _locate.unwrap(fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    if code not in _PARSED:
        _PARSED[code] = _parse(fn)
    return _PARSED[code]


def _parse(fn: Any) -> FunctionSource | None:
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    text = textwrap.dedent("".join(lines))
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        node = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if node is None:
        return None
    return FunctionSource(node, first - 1, text)


def own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function body, not descending into nested functions, lambdas or classes."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        yield child
        yield from own_nodes(child)


def handed_names(call: ast.Call, positional: list[str], names: Collection[str]) -> dict[str, str]:
    """{callee parameter: the caller's name} for each of the caller's `names` that `call` passes unchanged: by
    position (`positional`: the callee's positional parameters, up to a `*args` in the call) or by keyword."""
    out: dict[str, str] = {}
    for k, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        if isinstance(arg, ast.Name) and arg.id in names and k < len(positional):
            out[positional[k]] = arg.id
    for kw in call.keywords:
        if kw.arg is not None and isinstance(kw.value, ast.Name) and kw.value.id in names:
            out[kw.arg] = kw.value.id
    return out


def return_nodes(fn: Any) -> list[tuple[int, ast.Return]]:
    """(line in the file, node) of every `return` of `fn` itself (nested functions excluded)."""
    found = function_source(fn)
    if found is None:
        return []
    return [(r.lineno + found.offset, r) for r in own_nodes(found.node) if isinstance(r, ast.Return)]


def annotation_text(annotation: Any) -> str:
    """A parameter's or return's annotation as text: "" when there is none, a postponed or quoted one as written,
    any other as `inspect.formatannotation` writes it (`Optional[int]`, `jaxlib._jax.Array`)."""
    if annotation is inspect.Parameter.empty:
        return ""
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


# Where one sentence of a docstring's prose ends: after `.`, `;`, `!` or `?`, or at a blank line.
_SENTENCE_END = re.compile(r"(?<=[.;!?])\s+|\n\s*\n")


def parameter_descriptions(doc: str, names: list[str]) -> dict[str, str]:
    """{parameter: its description} from a docstring's parameter entries: numpydoc's `name : type` and Google's
    `name (type): text` (the entry's line and the lines indented under it), Sphinx's `:param name: text` (to the
    next field). An entry for several (`x, y: points, shape (M,)`) describes each of them."""
    wanted = "|".join(re.escape(n) for n in names if n)
    if not wanted:
        return {}
    entry = re.compile(rf"^(\s*)(?::param\s+(?:[\w\[\], .]+\s+)?)?((?:{wanted})(?:\s*,\s*(?:{wanted}))*)\s*"
                       rf"(\([^)]*\))?\s*:(?!:)(.*)$")
    lines = doc.expandtabs().splitlines()
    out: dict[str, str] = {}
    for i, line in enumerate(lines):
        found = entry.match(line)
        named = [n.strip() for n in found.group(2).split(",")] if found is not None else []
        if found is None or all(n in out for n in named):
            continue
        indent, parts = len(found.group(1)), [found.group(4)]
        for follow in lines[i + 1:]:
            if follow.strip() and (len(follow) - len(follow.lstrip()) <= indent or follow.lstrip().startswith(":")):
                break
            parts.append(follow.strip())
        out.update({n: " ".join(parts) for n in named if n not in out})
    return out


def docstring_sentences(doc: str) -> list[str]:
    """A docstring split into sentences (what a stated contract is read from, one claim at a time)."""
    return _SENTENCE_END.split(doc)


def parse_annotation(text: str) -> ast.expr | None:
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


def union_members(node: ast.expr) -> list[ast.expr] | None:
    """The members of `A | B`, `Union[A, B]` or `Optional[A]`; None for anything else."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [*(union_members(node.left) or [node.left]), *(union_members(node.right) or [node.right])]
    if isinstance(node, ast.Subscript) and dotted_name(node.value).rpartition(".")[2] in ("Union", "Optional"):
        return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    return None


def dotted_name(node: ast.AST) -> str:
    """`jnp.linalg.solve` for that attribute chain, `f` for a name; "" for any other expression."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted_name(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def resolved(node: ast.AST, namespace: dict[str, Any]) -> Any:
    """The object a name or attribute chain refers to in `namespace` (a module's globals), or None."""
    head, *rest = dotted_name(node).split(".")
    value = namespace.get(head)
    for part in rest:
        value = getattr(value, part, None)
    return value


def plain_assignments(fn: ast.AST, name: str) -> list[ast.expr] | None:
    """The values the plain assignments in `fn` (`name = ...`, `name: T = ...`) give `name`, [] when `fn` never
    stores it; None when it is stored any other way too (unpacking, a loop, `+=`, `:=`, `with ... as`), where it may
    carry a value from elsewhere. Nested functions are read as part of `fn`."""
    values = [node.value for node in ast.walk(fn) if isinstance(node, (ast.Assign, ast.AnnAssign))
              and node.value is not None and _assigns(node, name)]
    stores = sum(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(fn))
    return values if stores == len(values) else None


def _assigns(node: ast.Assign | ast.AnnAssign, name: str) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return any(isinstance(t, ast.Name) and t.id == name for t in targets)


def called_name(func: Any) -> str | None:
    """The name a call's function node ends in: `f` for `f(...)`, `any` for `jnp.any(...)`; None otherwise."""
    return getattr(func, "id", getattr(func, "attr", None))


_TREES: dict[tuple, ast.Module | None] = {}


def module_tree(module: Any) -> ast.Module | None:
    """The module's parsed source: its file's (`_locate.parsed_file`, cached by path and modification time), or
    for a module without a `.py` file on disk, what `inspect` finds, cached by name."""
    if module is None:
        return None
    where = getattr(module, "__file__", None)
    if isinstance(where, str) and where.endswith(".py") and os.path.isfile(where):
        return _locate.parsed_file(where)
    key = (module.__name__, where)
    if key in _TREES:
        return _TREES[key]
    try:
        tree: ast.Module | None = ast.parse(textwrap.dedent(inspect.getsource(module)))
    except (OSError, TypeError, SyntaxError, ValueError):
        tree = None
    if where is not None:
        _TREES[key] = tree
    return tree
