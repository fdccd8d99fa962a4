"""Candidate source edits for a finding, read off the evidence the check already computed.

A check that knows the corrected code puts it in its fix text as a code span (`return (y, n), (0, None)`,
`vmap_method="sequential"`, `quantize_p.multiple_results = True`, `out_axes=[0, None]`). Here each such span becomes
one or more concrete edits of the user's file: the statement it corrects (the finding's line, or the matching
statements of the function that contains it), a keyword of a call, or a missing attribute assignment. Nothing here
decides whether an edit is right: `_verify` re-runs the check on the edited module and keeps only what works.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator

from .._core._report import Finding
from .._harness.source import called_name
from ._derived import derived_fixes, own_returns, statements, unbroadcast_edits
from ._edits import Fix, SourceEdit, read_source

_CODE_SPAN = re.compile(r"`([^`\n]+)`")
MAX_CANDIDATES = 6


def candidate_fixes(finding: Finding) -> list[Fix]:
    """Edits worth verifying for `finding`, most specific first (at most MAX_CANDIDATES)."""
    loc = finding.location
    if loc is None or not os.path.isfile(loc.path):
        return []
    path = os.path.abspath(loc.path)
    try:
        source = read_source(path)
        tree = ast.parse(source)
    except (OSError, UnicodeDecodeError, SyntaxError):
        return []
    lines = source.splitlines(keepends=True)
    found: list[Fix] = []
    seen: set[tuple[SourceEdit, ...]] = set()
    derived = derived_fixes(finding, tree, lines, path)
    snippets = (fix for snippet, text in _snippets(finding.fix)
                for fix in _edits_for(snippet, text, tree, lines, path, loc.line))
    for fix in [*derived, *snippets]:
        if fix.edits not in seen and not _is_noop(fix, lines):
            seen.add(fix.edits)
            found.append(fix)
    return found[:MAX_CANDIDATES]


def _snippets(text: str) -> list[tuple[ast.stmt, str]]:
    """Code spans that parse as one complete statement and contain no placeholder (`...`), with their text."""
    out = []
    for span in _CODE_SPAN.findall(text):
        if "..." in span or "…" in span:
            continue
        try:
            body = ast.parse(span.strip()).body
        except SyntaxError:
            continue
        if len(body) == 1:
            out.append((body[0], span.strip()))
    return out


def _is_noop(fix: Fix, lines: list[str]) -> bool:
    return all(e.end >= e.start and "".join(lines[e.start - 1:e.end]) == e.replacement for e in fix.edits)


def _edits_for(snippet: ast.stmt, text: str, tree: ast.Module, lines: list[str], path: str, line: int
               ) -> Iterator[Fix]:
    if isinstance(snippet, ast.Return):
        for stmt in _returns_near(tree, line):
            edit = _replace_statement(stmt, text, lines, path)
            if edit is None:
                continue
            undone = unbroadcast_edits(stmt, snippet, tree, lines, path)  # a None dim: the value unbroadcast too
            if undone and not any(e.overlaps(edit) for e in undone):
                yield Fix(f"`{text}` at line {stmt.lineno}, its unbatched output(s) not broadcast", (*undone, edit))
            yield Fix(f"`{text}` at line {stmt.lineno}", (edit,))
        return
    if isinstance(snippet, ast.Assign) and len(snippet.targets) == 1:
        target = snippet.targets[0]
        assigned: list[ast.stmt] = [s for s in statements(tree) if isinstance(s, ast.Assign) and s.lineno <= line <= (
            s.end_lineno or s.lineno) and [ast.unparse(t) for t in s.targets] == [ast.unparse(target)]]
        for assign in assigned:  # the assignment on the finding's line, corrected (`size = ... if bx is not None`)
            edit = _replace_statement(assign, text, lines, path)
            if edit is not None:
                yield Fix(f"`{text}` at line {assign.lineno}", (edit,))
        if assigned:
            return
        if isinstance(target, ast.Name):  # `name=value`: a keyword argument of a call near the finding
            value_text = text.split("=", 1)[1].strip()
            yield from _keyword_edits(target.id, value_text, tree, lines, path, line)
            return
        if isinstance(target, ast.Attribute):  # `obj.attr = value`: set (or correct) an attribute assignment
            yield from _attribute_edits(snippet, text, tree, lines, path)
        return
    if isinstance(snippet, ast.Expr) and isinstance(snippet.value, ast.Call):
        same: list[ast.stmt] = [s for s in tree.body if _same_call(s, snippet.value)]
        for old in same:  # a registration to correct (`register_lowering(p, ...)` without `platform=`)
            edit = _replace_statement(old, text, lines, path)
            if edit is not None:
                yield Fix(f"`{text}` at line {old.lineno}", (edit,))
        if not same:  # a missing registration call
            yield from _registration_edits(snippet, text, tree, lines, path)


_BATCHER_HELPERS = {"defvectorized", "defbroadcasting", "defreducer"}  # one replaces another


def _call_name(call: ast.Call) -> str:
    return called_name(call.func) or ""


def _same_call(stmt: ast.stmt, call: ast.Call) -> bool:
    """`stmt` calls the same function as `call` with the same first argument."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    other = stmt.value
    if not other.args or not call.args:
        return False
    names = {_call_name(other), _call_name(call)}
    if ast.unparse(other.func) != ast.unparse(call.func) and not names <= _BATCHER_HELPERS:
        return False
    return ast.unparse(other.args[0]) == ast.unparse(call.args[0]) and ast.unparse(other) != ast.unparse(call)


def _enclosing_function(tree: ast.AST, line: int) -> ast.AST | None:
    best: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | None = None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if node.lineno <= line <= (node.end_lineno or node.lineno) and (best is None or node.lineno >= best.lineno):
            best = node
    return best


def _returns_near(tree: ast.Module, line: int) -> list[ast.Return]:
    """The `return` on the finding's line; else every `return` of the function containing (or defined at) it,
    last first (the final return is the usual batched path)."""
    on_line = [s for s in statements(tree) if isinstance(s, ast.Return) and s.lineno <= line <= (s.end_lineno or 0)]
    if on_line:
        return on_line
    fn = _enclosing_function(tree, line)
    return list(reversed(own_returns(fn))) if fn is not None else []


def _replace_statement(stmt: ast.stmt, text: str, lines: list[str], path: str) -> SourceEdit | None:
    """Replace a whole statement by one line of `text`, keeping its indentation and a trailing comment."""
    first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
    head = lines[first - 1][:stmt.col_offset]
    tail = lines[last - 1][stmt.end_col_offset or 0:]
    if head.strip() or tail.strip() and not tail.lstrip().startswith("#"):
        return None  # shares its line with other code (`a; return b`): leave it to the user
    tail_text = tail.rstrip("\r\n")
    newline = "\r\n" if lines[last - 1].endswith("\r\n") else "\n"
    return SourceEdit(path, first, last, f"{head}{text}{tail_text}{newline}")


def _keyword_edits(name: str, value_text: str, tree: ast.Module, lines: list[str], path: str,
                   line: int) -> Iterator[Fix]:
    """Set `name=value` on the calls of the statement at `line` (or of the function containing it): replace the
    keyword where it exists, add it where a call already takes keywords of the same family."""
    stmts = [s for s in statements(tree) if s.lineno <= line <= (s.end_lineno or s.lineno)
             and not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For,
                                    ast.While, ast.With, ast.Try))]
    fn = _enclosing_function(tree, line)
    scope: list[ast.AST] = list(stmts) or ([fn] if fn is not None else [])
    calls = [n for s in scope for n in ast.walk(s) if isinstance(n, ast.Call)]
    for call in calls:
        existing = next((k for k in call.keywords if k.arg == name), None)
        if existing is not None:
            edit = _replace_span(existing.value, value_text, lines, path)
        else:
            edit = _add_keyword(call, f"{name}={value_text}", lines, path) if _accepts(call, name) else None
        if edit is not None:
            yield Fix(f"`{name}={value_text}` at line {call.lineno}", (edit,))


_KEYWORD_OWNERS = {  # which calls take the keyword, when it has to be added rather than corrected
    "vmap_method": ("pure_callback", "ffi_call", "io_callback"),
    "out_axes": ("vmap",),
    "in_axes": ("vmap",),
    "multiple_results": ("lower_fun",),
}


def _accepts(call: ast.Call, name: str) -> bool:
    func = call.func
    fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return fname in _KEYWORD_OWNERS.get(name, ())


def _replace_span(node: ast.expr, text: str, lines: list[str], path: str) -> SourceEdit | None:
    first, last = node.lineno, node.end_lineno or node.lineno
    if node.end_col_offset is None:
        return None
    head = lines[first - 1][:node.col_offset]
    tail = lines[last - 1][node.end_col_offset:]
    return SourceEdit(path, first, last, head + text + tail)


def _add_keyword(call: ast.Call, keyword: str, lines: list[str], path: str) -> SourceEdit | None:
    """Insert `keyword` before the closing parenthesis of `call` (which must end on a line of its own code)."""
    last = call.end_lineno or call.lineno
    end = call.end_col_offset
    if end is None:
        return None
    text = lines[last - 1]
    close = end - 1
    if text[close:close + 1] != ")":
        return None
    before = text[:close].rstrip()
    sep = "" if before.endswith(("(", ",")) else ", "
    if before.endswith(","):
        sep = " "
    return SourceEdit(path, last, last, before + sep + keyword + text[close:])


def _attribute_edits(snippet: ast.Assign, text: str, tree: ast.Module, lines: list[str], path: str
                     ) -> Iterator[Fix]:
    """`prim.multiple_results = True`: correct an existing assignment to that attribute, or add one after the
    statement that creates the object."""
    target = snippet.targets[0]
    assert isinstance(target, ast.Attribute)
    owner = ast.unparse(target.value)
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and ast.unparse(stmt.targets[0]) == \
                ast.unparse(target):
            edit = _replace_statement(stmt, text, lines, path)
            if edit is not None:
                yield Fix(f"`{text}` at line {stmt.lineno}", (edit,))
            return
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(ast.unparse(t) == owner for t in targets):
                last = stmt.end_lineno or stmt.lineno
                newline = "\r\n" if lines[last - 1].endswith("\r\n") else "\n"
                yield Fix(f"`{text}` after line {last}", (SourceEdit(path, last + 1, last, text + newline),))
                return


def _module_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(every name the module defines at top level, the ones bound by plain assignments)."""
    defined: set[str] = set(dir(__builtins__)) if not isinstance(__builtins__, dict) else set(__builtins__)
    assigned: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            defined.update((a.asname or a.name).split(".")[0] for a in stmt.names)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        defined.add(n.id)
                        assigned.add(n.id)
    return defined, assigned


def _registration_edits(snippet: ast.Expr, text: str, tree: ast.Module, lines: list[str], path: str
                        ) -> Iterator[Fix]:
    """`scale_p.def_impl(_scale_impl)`, `batching.defvectorized(p)`: add the call at module level, after the last
    top-level statement that uses the objects it names (the module's registration block)."""
    used = {n.id for n in ast.walk(snippet) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    defined, assigned = _module_names(tree)
    missing = used - defined
    imports = [_IMPORTS[name] for name in sorted(missing) if name in _IMPORTS]
    if len(imports) != len(missing) or any(ast.unparse(s) == ast.unparse(snippet) for s in tree.body):
        return
    anchor: ast.stmt | None = None
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if stmt.name in used:
                anchor = stmt
            continue
        names = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
        if names & used & assigned:
            anchor = stmt
    if anchor is None:
        return
    last = anchor.end_lineno or anchor.lineno
    newline = "\r\n" if lines[last - 1].endswith("\r\n") else "\n"
    edits = [SourceEdit(path, last + 1, last, text + newline)]
    if imports:
        after = max((s.end_lineno or s.lineno for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))),
                    default=0)
        if after >= last:
            return
        edits.insert(0, SourceEdit(path, after + 1, after, "".join(i + newline for i in imports)))
    yield Fix(f"`{text}` after line {last}", tuple(edits))


# Names a registration call may need that the module has not imported yet, with their public import.
_IMPORTS = {
    "mlir": "from jax.interpreters import mlir",
    "batching": "from jax.interpreters import batching",
    "ad": "from jax.interpreters import ad",
    "ShapedArray": "from jax.core import ShapedArray",
    "jnp": "import jax.numpy as jnp",
    "jax": "import jax",
    "lax": "from jax import lax",
}
