"""Edits derived from a finding's evidence and the user's AST where the fix text holds no complete statement:

- a derivative off by a constant factor (the evidence shows the rule's values are the reference's times `c` in every
  entry): the rule's tangent or cotangent expression divided by `c` (`-(expr)` for a flipped sign);
- a complex cotangent that is exactly the conjugate of autodiff's: the cotangent wrapped in `jnp.conj`;
- a cotangent with the broadcast axes left in: `jnp.sum` over them; one in another dtype: its cast removed;
- an output built with its batch axis elsewhere (`out = jnp.moveaxis(out, 2, 0)` in the fix, `out` being the
  returned expression): the returned expression wrapped in that `moveaxis`;
- a code block in the fix (`x = batching.bdim_at_front(x, bx, size)`, `x = jnp.moveaxis(x, bx, 0) if ...`, a
  custom_vmap rule's broadcasts): the rule's statements that move each operand's batch axis replaced by it, or it
  inserted after the operands' unpacking (and `0` returned for a dim it moved);
- an output whose dim becomes None in the corrected `return`: its `jnp.broadcast_to(value, ...)` undone;
- a fwd whose primal output differs from the function's: the function's `return` expression (or fwd's local bound
  to it).

As for every candidate, nothing here decides that an edit is right: `_verify` re-runs the checks and the plain-JAX
repro on the edited copy and keeps only what works.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

from .. import _rules as rules
from .._core._report import Finding
from ._edits import Fix, SourceEdit

# The rule's values and the reference's, as the derivative checks print them (4 significant digits, `...` cut).
_VECTORS = re.compile(r"(?:bwd|the rule) gives \[([^\]]*)\], (?:float64 finite differences|autodiff of [\w.]+) "
                      r"gives? \[([^\]]*)\]")
_TIMES = re.compile(r"the reference times (-?[0-9.]+(?:e[-+]?\d+)?)")
_NICE = (-1.0, 2.0, 0.5, -2.0, -0.5, 3.0, -3.0, 1 / 3, -1 / 3, 4.0, 0.25, -4.0, -0.25, 10.0, 0.1, -10.0, -0.1)
# Findings comparing a derivative rule's values with a reference's entry by entry (its evidence shows a factor).
_SCALED_CODES = {rules.JVP_MISMATCH.code, rules.CUSTOM_DERIVATIVE_WRONG.code}


def derived_fixes(finding: Finding, tree: ast.Module, lines: list[str], path: str) -> Iterator[Fix]:
    if finding.location is None:
        return
    line = finding.location.line
    if finding.code in _SCALED_CODES:
        factor = constant_factor(finding.message)
        if factor is not None:
            yield from _wrapped_derivative(finding, tree, lines, path, line, lambda e: _scaled_text(e, factor),
                                           f"divided by {factor:g} (the evidence shows it {factor:g} times the "
                                           "reference everywhere)")
        numpy = _numpy_name(tree) or "jnp"
        if _CONJUGATE in finding.message:
            yield from _with_numpy(_wrapped_derivative(
                finding, tree, lines, path, line, lambda e: f"{numpy}.conj({e})",
                "conjugated (the evidence shows it the complex conjugate of autodiff's)"), tree, lines, path)
    unsummed = _UNSUMMED.search(finding.message)
    if unsummed:
        numpy = _numpy_name(tree) or "jnp"
        yield from _with_numpy(_summed_cotangent(unsummed, numpy, tree, lines, path, line), tree, lines, path)
    if _PRIMAL_DIFFERS.search(finding.message):
        yield from _fwd_primal(tree, lines, path, line)
    recast = _WRONG_DTYPE.search(finding.message)
    if recast:
        yield from _recast_cotangent(recast.group(1), tree, lines, path, line)
    for span in re.findall(r"`([^`\n]+)`", finding.fix):
        moved = re.fullmatch(r"(\w+) = (\w+(?:\.\w+)*\.moveaxis)\(\1, (-?\d+), (-?\d+)\)", span.strip())
        if moved:
            yield from _moved_output(moved, tree, lines, path, line)
    block = _fix_block(finding.fix)
    if block:
        yield from _block_edits(block, tree, lines, path, line)


# ---------------------------------------------------------------------------------------------------------------
# A derivative off by a constant factor
# ---------------------------------------------------------------------------------------------------------------


def _numbers(text: str) -> list[float] | None:
    try:
        return [float(v) for v in text.replace("...", "").replace("…", "").split(",") if v.strip()]
    except ValueError:
        return None


def constant_factor(message: str) -> float | None:
    """The factor `c` with (the rule's values) = c * (the reference's) in every printed entry, snapped to a simple
    number (-1, 2, 1/2, ...); None when the evidence shows no single factor (a wrong formula, not a wrong scale)."""
    said = _TIMES.search(message)
    if said:
        return _snap(float(said.group(1)))
    match = _VECTORS.search(message)
    if not match:
        return None
    got, want = _numbers(match.group(1)), _numbers(match.group(2))
    if not got or not want or len(got) != len(want):
        return None
    ratios = [g / w for g, w in zip(got, want) if abs(w) > 1e-2]
    if len(ratios) < 2 or any(abs(g) > 1e-3 for g, w in zip(got, want) if abs(w) <= 1e-2):
        return None
    if max(ratios) - min(ratios) > 2e-3 * max(1.0, abs(ratios[0])) * 5:  # 4 printed digits on each side
        return None
    return _snap(sum(ratios) / len(ratios))


def _snap(value: float) -> float | None:
    return next((n for n in _NICE if abs(value - n) <= 5e-3 * max(1.0, abs(n))), None)


def _scaled_text(expr: str, factor: float) -> str:
    if factor == -1.0:
        return f"-({expr})"
    inverse = 1 / factor
    if abs(inverse - round(inverse)) < 1e-9:
        return f"({expr}) * {int(round(inverse))}"
    return f"({expr}) / {int(round(factor))}" if abs(factor - round(factor)) < 1e-9 else f"({expr}) * {inverse!r}"


_CONJUGATE = "is exactly the complex conjugate of autodiff's"


def _with_numpy(fixes: Iterator[Fix], tree: ast.Module, lines: list[str], path: str) -> Iterator[Fix]:
    """The fixes, each with `import jax.numpy as jnp` added after the module's imports when it has no such name."""
    if _numpy_name(tree) is not None:
        yield from fixes
        return
    after = max((s.end_lineno or s.lineno for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))),
                default=0)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    add = SourceEdit(path, after + 1, after, f"import jax.numpy as jnp{newline}")
    for fix in fixes:
        if not any(add.overlaps(e) for e in fix.edits):
            yield Fix(fix.description, (add, *fix.edits))


def _numpy_name(tree: ast.Module) -> str | None:
    """The name the module gives `jax.numpy` (`jnp`), or None when it imports it under no name."""
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name == "jax.numpy":
                    return alias.asname or "jax.numpy"
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "jax":
            for alias in stmt.names:
                if alias.name == "numpy":
                    return alias.asname or "numpy"
    return None


def _wrapped_derivative(finding: Finding, tree: ast.Module, lines: list[str], path: str, line: int,
                        wrap: Callable[[str], str], why: str) -> Iterator[Fix]:
    """`wrap` the derivative part of each `return` of the rule at `line`: the tangent of a JVP rule (the whole
    value of a per-argument `defjvp` rule, the second entry of a `(primal, tangent)` rule), or the single
    cotangent of a bwd."""
    fn = enclosing_function(tree, line)
    if fn is None:
        return
    source = "".join(lines)
    edits = []
    for ret in own_returns(fn):
        value = ret.value
        if value is None:
            return
        part: ast.expr = value
        if isinstance(value, (ast.Tuple, ast.List)):
            if re.search(r"\btangent\b", finding.message) and len(value.elts) == 2:  # (primal, tangent)
                part = value.elts[1]
            elif len(value.elts) == 1:
                part = value.elts[0]
            else:
                return  # several cotangents: which one is scaled is not in the evidence
        text = ast.get_source_segment(source, part)
        if text is None:
            return
        edit = replace_expr(part, wrap(text), lines, path)
        if edit is None:
            return
        edits.append(edit)
    if edits:
        yield Fix(f"the derivative in {fn.name} {why}", tuple(edits))


# ---------------------------------------------------------------------------------------------------------------
# A cotangent with the broadcast axes left in
# ---------------------------------------------------------------------------------------------------------------

_UNSUMMED = re.compile(r"cotangent for (\w+) has shape \w+\[([\d,]*)\] but \1 is \w+\[([\d,]*)\]")


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(",") if v)


def primal_parameters(tree: ast.Module, rule: str) -> list[str] | None:
    """The differentiable positional parameters of the custom_vjp/custom_jvp function whose `defvjp`/`defjvp` call
    names `rule`, in order (the entries of its bwd's return); None when the module does not say."""
    owner = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "defvjp", "defjvp", "defjvps") and any(isinstance(a, ast.Name) and a.id == rule for a in node.args):
            owner = ast.unparse(node.func.value)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == owner), None)
    if fn is None:
        return None
    nondiff: set[int] = set()
    for deco in fn.decorator_list:
        for kw in deco.keywords if isinstance(deco, ast.Call) else []:
            if kw.arg == "nondiff_argnums":
                try:
                    value = ast.literal_eval(kw.value)
                except ValueError:
                    return None
                nondiff = {value} if isinstance(value, int) else set(value)
    return [a.arg for i, a in enumerate(fn.args.args) if i not in nondiff]


def _summed_cotangent(unsummed: re.Match, numpy: str, tree: ast.Module, lines: list[str], path: str, line: int
                      ) -> Iterator[Fix]:
    """`jnp.sum(ct, axis=...)` over the axes broadcasting added (leading ones, and those where the argument has
    size 1), reshaped to the argument's shape where it keeps size-1 axes, around the bwd's entry for it."""
    name, got_text, want_text = unsummed.groups()
    got, want = _shape(got_text), _shape(want_text)
    lead = len(got) - len(want)
    if lead < 0 or any(w not in (1, g) for g, w in zip(got[lead:], want)):
        return
    axes = tuple(range(lead)) + tuple(lead + i for i, (g, w) in enumerate(zip(got[lead:], want)) if w == 1 != g)
    fn = enclosing_function(tree, line)
    params = primal_parameters(tree, fn.name) if fn is not None else None
    if fn is None or params is None or name not in params or not axes:
        return
    index = params.index(name)
    source = "".join(lines)
    edits = []
    for ret in own_returns(fn):
        value = ret.value
        if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != len(params):
            return
        text = ast.get_source_segment(source, value.elts[index])
        axis = str(axes[0]) if len(axes) == 1 else repr(axes)
        summed = f"{numpy}.sum({text}, axis={axis})"
        if any(w == 1 for w in want):
            summed += f".reshape({want!r})"
        edit = replace_expr(value.elts[index], summed, lines, path) if text else None
        if edit is None:
            return
        edits.append(edit)
    if edits:
        yield Fix(f"{name}'s cotangent summed over the broadcast axes {axes}", tuple(edits))


# ---------------------------------------------------------------------------------------------------------------
# A fwd whose primal output is not the function's
# ---------------------------------------------------------------------------------------------------------------

_PRIMAL_DIFFERS = re.compile(r"\w+'s primal output differs from \w+'s")


def _fwd_primal(tree: ast.Module, lines: list[str], path: str, line: int) -> Iterator[Fix]:
    """The fwd's primal entry computed as the function computes it, when the function is one `return EXPR` over the
    same parameter names: a local of fwd already bound to EXPR (`s` of `s, c = jnp.sin(x), jnp.cos(x)`), else
    EXPR itself."""
    fwd = enclosing_function(tree, line)
    if fwd is None:
        return
    owner = next((ast.unparse(n.func.value) for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(
        n.func, ast.Attribute) and n.func.attr == "defvjp" and n.args and isinstance(n.args[0], ast.Name)
        and n.args[0].id == fwd.name), None)
    primal = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == owner), None)
    if primal is None or [a.arg for a in primal.args.args] != [a.arg for a in fwd.args.args]:
        return
    body = [b for b in primal.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return
    wanted = ast.dump(body[0].value)
    bound: list[str] = []
    for stmt in statements(fwd):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
            pairs = list(zip(target.elts, value.elts)) if isinstance(target, ast.Tuple) and isinstance(
                value, ast.Tuple) and len(target.elts) == len(value.elts) else [(target, value)]
            bound += [t.id for t, v in pairs if isinstance(t, ast.Name) and ast.dump(v) == wanted]
    returns = own_returns(fwd)
    for text in [*bound[-1:], ast.unparse(body[0].value)]:
        edits = []
        for ret in returns:
            returned = ret.value
            if not isinstance(returned, ast.Tuple) or len(returned.elts) != 2:
                return
            edit = replace_expr(returned.elts[0], text, lines, path)
            if edit is None:
                return
            edits.append(edit)
        if edits:
            yield Fix(f"{fwd.name}'s primal output computed as {primal.name} computes it: {text}", tuple(edits))


# ---------------------------------------------------------------------------------------------------------------
# A cotangent in another dtype than its argument
# ---------------------------------------------------------------------------------------------------------------

_WRONG_DTYPE = re.compile(r"cotangent for (\w+) is \w+ but \1 is \w+")


def _recast_cotangent(name: str, tree: ast.Module, lines: list[str], path: str, line: int) -> Iterator[Fix]:
    """The bwd's entry for `name` without the trailing `.astype(...)` that gives it another dtype; else, where the
    argument itself is in the bwd's scope, cast to its dtype (`.astype(x.dtype)`)."""
    fn = enclosing_function(tree, line)
    params = primal_parameters(tree, fn.name) if fn is not None else None
    if fn is None or params is None or name not in params:
        return
    index = params.index(name)
    source = "".join(lines)
    dropped, cast = [], []
    for ret in own_returns(fn):
        value = ret.value
        if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != len(params):
            return
        entry = value.elts[index]
        text = ast.get_source_segment(source, entry)
        if text is None:
            return
        if isinstance(entry, ast.Call) and isinstance(entry.func, ast.Attribute) and entry.func.attr == "astype":
            inner = ast.get_source_segment(source, entry.func.value)
            edit = replace_expr(entry, inner, lines, path) if inner else None
            if edit is not None:
                dropped.append(edit)
        if _binds(fn, name):
            edit = replace_expr(entry, f"({text}).astype({name}.dtype)", lines, path)
            if edit is not None:
                cast.append(edit)
    if dropped:
        yield Fix(f"the cast of {name}'s cotangent to another dtype removed", tuple(dropped))
    if cast:
        yield Fix(f"{name}'s cotangent cast to {name}.dtype", tuple(cast))


# ---------------------------------------------------------------------------------------------------------------
# An output built with the batch axis elsewhere
# ---------------------------------------------------------------------------------------------------------------


def _moved_output(moved: re.Match, tree: ast.Module, lines: list[str], path: str, line: int) -> Iterator[Fix]:
    name, func, src, dst = moved.groups()
    fn = enclosing_function(tree, line)
    if fn is None or _binds(fn, name):
        return  # a name of the user's: the snippet itself is the edit (`_candidates`)
    source = "".join(lines)
    edits = []
    for ret in own_returns(fn):
        value = ret.value
        if not isinstance(value, ast.Tuple) or len(value.elts) != 2:
            return
        out = value.elts[0]
        text = ast.get_source_segment(source, out)
        edit = replace_expr(out, f"{func}({text}, {src}, {dst})", lines, path) if text else None
        if edit is None:
            return
        edits.append(edit)
    if edits:
        yield Fix(f"the returned output moved with {func}(..., {src}, {dst})", tuple(edits))


def _binds(fn: ast.AST, name: str) -> bool:
    args = fn.args if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else None
    if args is not None and name in {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}:
        return True
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(fn))


# ---------------------------------------------------------------------------------------------------------------
# A code block in the fix (`e.g.` followed by indented statements): the operands' batch-axis handling
# ---------------------------------------------------------------------------------------------------------------


def _fix_block(fix: str) -> list[ast.Assign]:
    """The statements of an indented code block in the fix text, when every one is a single-name assignment."""
    block = [ln.strip() for ln in fix.splitlines() if ln.startswith("    ") and ln.strip()]
    out = []
    for text in block:
        try:
            body = ast.parse(text).body
        except SyntaxError:
            return []
        if len(body) != 1 or not isinstance(body[0], ast.Assign) or len(body[0].targets) != 1 or not all(
                isinstance(n, ast.Name) for n in _target_names(body[0].targets[0])):
            return []
        out.append(body[0])
    return out


def _target_names(target: ast.expr) -> list[ast.expr]:
    return list(target.elts) if isinstance(target, ast.Tuple) else [target]


def _block_edits(block: list[ast.Assign], tree: ast.Module, lines: list[str], path: str, line: int
                 ) -> Iterator[Fix]:
    """Each `x = helper(x, bx, ...)` of the block replaces the rule's own statement that rebinds `x` from `bx` (its
    `moveaxis`); the block's other assignments (`size = ...`) go just before the first replaced statement."""
    fn = enclosing_function(tree, line)
    if fn is None:
        return
    moves: list[tuple[ast.Assign, str]] = []  # (the user's statement, the block's replacement)
    helpers: list[str] = []
    for stmt in block:
        target = stmt.targets[0]
        if not isinstance(target, ast.Name):
            helpers.append(ast.unparse(stmt))
            continue
        name = target.id
        call = stmt.value
        reads = {n.id for n in ast.walk(call) if isinstance(n, ast.Name)}
        if isinstance(call, ast.Call) and name in reads:
            dims = reads - {name} - {n.id for n in ast.walk(call.func) if isinstance(n, ast.Name)}
            found = [s for s in statements(fn) if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(
                s.targets[0], ast.Name) and s.targets[0].id == name and dims & {
                n.id for n in ast.walk(s.value) if isinstance(n, ast.Name)}]
            if len(found) != 1:
                return
            moves.append((found[0], ast.unparse(stmt)))
        else:
            helpers.append(ast.unparse(stmt))
    if not moves:
        yield from _block_at_top(helpers, fn, lines, path)
        return
    moves.sort(key=lambda m: m[0].lineno)
    edits = []
    for k, (old, text) in enumerate(moves):
        first, last = old.lineno, old.end_lineno or old.lineno
        head = lines[first - 1][:old.col_offset]
        if head.strip():
            return
        newline = "\r\n" if lines[last - 1].endswith("\r\n") else "\n"
        prefix = "".join(f"{head}{h}{newline}" for h in helpers) if k == 0 else ""
        tail = lines[last - 1][old.end_col_offset or 0:].rstrip("\r\n")
        edits.append(SourceEdit(path, first, last, f"{prefix}{head}{text}{tail}{newline}"))
    yield Fix(f"the operands' batch axes handled in {getattr(fn, 'name', 'the rule')} (unbatched ones too)",
              tuple(edits))


def _block_at_top(block: list[str], fn: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str], path: str
                  ) -> Iterator[Fix]:
    """The block as new statements of the rule's body, after the last top-level statement that binds a name the
    block reads (the operands' unpacking), else first (after a docstring): it rebinds only its own names
    (`x = x if x_batched else jnp.broadcast_to(x, ...)`), so the rest of the rule sees the arguments it expects.
    A block that moves operands' batch axes to the front (`x = jnp.moveaxis(x, bx, 0) ...`) also makes the rule
    return 0 where it returned one of those dims."""
    parsed = [ast.parse(text).body[0] for text in block]
    reads = {n.id for stmt in parsed for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    body = fn.body
    start = 1 if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(
        getattr(body[0], "value", None), ast.Constant) else 0
    anchor = None
    for stmt in body[start:]:
        if isinstance(stmt, ast.Return):
            break
        if {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} & reads:
            anchor = stmt
    first = body[start]
    at = (anchor.end_lineno or anchor.lineno) + 1 if anchor is not None else first.lineno
    if not block or first.lineno <= fn.lineno or at > len(lines):  # a one-line `def f(x): return x`
        return
    indent_from = anchor if anchor is not None else first
    head = lines[indent_from.lineno - 1][:indent_from.col_offset]
    if head.strip():
        return
    newline = "\r\n" if lines[indent_from.lineno - 1].endswith("\r\n") else "\n"
    text = "".join(f"{head}{stmt}{newline}" for stmt in block)
    moved = {stmt.value.body.args[1].id for stmt in parsed
             if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.IfExp) and isinstance(
                 stmt.value.body, ast.Call) and ast.unparse(stmt.value.body.func).endswith("moveaxis")
             and len(stmt.value.body.args) == 3 and isinstance(stmt.value.body.args[1], ast.Name)}
    edits: list[SourceEdit] = []
    for ret in own_returns(fn) if moved else []:
        value = ret.value
        if isinstance(value, ast.Tuple) and len(value.elts) == 2:
            for node in ast.walk(value.elts[1]):
                if isinstance(node, ast.Name) and node.id in moved:
                    edit = replace_expr(node, "0", lines, path)
                    if edit is None or any(edit.overlaps(e) for e in edits):
                        return
                    edits.append(edit)
    joined = next((e for e in edits if e.start == at), None)
    if joined is not None:  # the return right after the unpacking: one edit of that line, the block before it
        edits[edits.index(joined)] = SourceEdit(path, joined.start, joined.end, text + joined.replacement)
    else:
        edits.insert(0, SourceEdit(path, at, at - 1, text))
    yield Fix(f"the fix's statements in {fn.name}", tuple(edits))


# ---------------------------------------------------------------------------------------------------------------
# An output whose dim becomes None: its broadcast undone
# ---------------------------------------------------------------------------------------------------------------


def unbroadcast_edits(old: ast.Return, new: ast.Return, tree: ast.Module, lines: list[str], path: str
                      ) -> list[SourceEdit]:
    """For `return (y, n), (0, 0)` corrected to `return (y, n), (0, None)`: where output k's dim becomes None and
    the rule made it with `jnp.broadcast_to(value, ...)` (in the return or in the one assignment of its name), the
    value itself (an unbatched output is returned unbroadcast)."""
    pairs = [(r.value, n.value) for r, n in ((old, new),)]
    old_value, new_value = pairs[0]
    if not (isinstance(old_value, ast.Tuple) and isinstance(new_value, ast.Tuple) and len(old_value.elts) == 2
            and len(new_value.elts) == 2):
        return []
    outs, old_dims, new_dims = old_value.elts[0], old_value.elts[1], new_value.elts[1]
    if not (isinstance(outs, (ast.Tuple, ast.List)) and isinstance(old_dims, (ast.Tuple, ast.List))
            and isinstance(new_dims, (ast.Tuple, ast.List))):
        return []
    fn = enclosing_function(tree, old.lineno)
    source = "".join(lines)
    edits: list[SourceEdit] = []
    for out, was, now in zip(outs.elts, old_dims.elts, new_dims.elts):
        if not (isinstance(now, ast.Constant) and now.value is None) or (
                isinstance(was, ast.Constant) and was.value is None):
            continue
        made = out
        if isinstance(out, ast.Name) and fn is not None:
            assigns = [s for s in statements(fn) if isinstance(s, ast.Assign) and [ast.unparse(t) for t in s.targets]
                       == [out.id] and s.lineno < old.lineno]
            if len(assigns) != 1:
                continue
            made = assigns[0].value
        if isinstance(made, ast.Call) and ast.unparse(made.func).endswith("broadcast_to") and made.args:
            inner = ast.get_source_segment(source, made.args[0])
            edit = replace_expr(made, inner, lines, path) if inner else None
            if edit is not None:
                edits.append(edit)
    return edits


# ---------------------------------------------------------------------------------------------------------------
# AST helpers shared with _candidates
# ---------------------------------------------------------------------------------------------------------------


def statements(tree: ast.AST) -> Iterator[ast.stmt]:
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            yield node


def enclosing_function(tree: ast.AST, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    best: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= (
                node.end_lineno or node.lineno) and (best is None or node.lineno >= best.lineno):
            best = node
    return best


def own_returns(fn: ast.AST) -> list[ast.Return]:
    out: list[ast.Return] = []

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(child, ast.Return):
                out.append(child)
            walk(child)

    walk(fn)
    return out


def replace_expr(node: ast.expr, text: str, lines: list[str], path: str) -> SourceEdit | None:
    """Replace the expression `node` (possibly spanning lines) by `text`, the rest of its lines kept."""
    first, last = node.lineno, node.end_lineno or node.lineno
    if node.end_col_offset is None:
        return None
    head = lines[first - 1][:node.col_offset]
    tail = lines[last - 1][node.end_col_offset:]
    return SourceEdit(path, first, last, head + text + tail)
