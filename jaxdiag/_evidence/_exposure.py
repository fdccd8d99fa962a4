"""Which transformation exposed a finding (`vmap(f, in_axes=1)`, the VJP, the JVP, `jit`, grad of grad), read off
the finding's code and evidence, and the jaxpr of the target under it (`--show-jaxpr`), with the equations that
come from the user's code marked with their source line. `_repro` writes the same transformation as a script."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import _compat
from .. import _rules as rules
from .._core._locate import relative_path
from .._core._report import Finding

_AXES = r"(\([^()]*\)|\[[^\]]*\]|-?\d+|None)"
# `jax.vmap(f, in_axes=1)` in backticks, or vmap(f, in_axes=(None, 0)) in running text
_VMAP_CALL = re.compile(r"`jax\.vmap\([^`]*?\)`"
                        r"|(?<![\w.])vmap\([\w.]+(?:, (?:in|out)_axes=(?:\([^()]*\)|\[[^\]]*\]|[^,)]+))*\)")
_BATCH = re.compile(r"batch (?:size|of) (\d+)")

# Codes whose defect shows in the reverse pass of a primitive (transpose rules) rather than in its JVP.
_REVERSE_CODES = {r.code for r in (rules.TRANSPOSE_NOT_ADJOINT, rules.TRANSPOSE_OUTPUT_STRUCTURE, rules.COTANGENT_DTYPE,
                                    rules.TRANSPOSE_ASSUMES_LINEAR_ARG, rules.MISSING_TRANSPOSE_RULE,
                                    rules.GRAD_WITHOUT_TRANSPOSE_RULE)}
_JIT_CODES = {r.code for r in (rules.MISSING_LOWERING, rules.LOWERING_MISMATCH)}
_CALL_CODES = {r.code for r in (rules.MISSING_IMPL, rules.MISSING_ABSTRACT_EVAL, rules.ABSTRACT_EVAL_MISMATCH)}
_VMAP_CODES = {r.code for r in (rules.MISSING_BATCHING_RULE, rules.VMAP_WITHOUT_BATCHING_RULE, rules.TARGET_RAISED)}
_MAYBE_VMAP_CODES = {r.code for r in (rules.REMOVED_JAX_API, rules.WRONG_RULE_SIGNATURE)}
_JVP_RULE_CODES = {r.code for r in (rules.MISSING_JVP_RULE, rules.GRAD_WITHOUT_JVP_RULE)}
_SECOND_ORDER_CODES = {r.code for r in (rules.SECOND_ORDER_MISMATCH, rules.SECOND_ORDER_FAILURE)}
# A custom_linear_solve's transpose_solve (or symmetric=True) is used by reverse mode only: forward mode is right.
_SOLVE_CODES = {r.code for r in (rules.TRANSPOSE_SOLVE_NOT_INVERSE, rules.SYMMETRIC_MATVEC_NOT_SYMMETRIC)}
# `jax.vjp(jax.vmap(f, in_axes=...))` quoted in a message (JXB017, JXB018, and JXG016's vjp-of-vmap case)
_VJP_OF_VMAP = re.compile(r"jax\.vjp\(jax\.vmap\([\w.]+(?:, in_axes=" + _AXES + r")?\)")
MAX_LINES = 40


@dataclass(frozen=True)
class Exposure:
    """A transformation of the target: `mode` is vmap, abstract_vmap (traced only), vjp, jvp, jit, grad2 (grad of grad),
    vmap_grad, vjp_vmap (reverse mode through vmap), flat_primal (a custom derivative against autodiff of the
    undecorated primal) or call."""

    mode: str
    in_axes: Any = 0
    out_axes: Any = 0
    batch: int = 3

    def describe(self, name: str) -> str:
        if self.mode == "vmap":
            extra = f", out_axes={self.out_axes!r}" if self.out_axes != 0 else ""
            return f"jax.vmap({name}, in_axes={self.in_axes!r}{extra})"
        if self.mode == "abstract_vmap":
            return f"jax.eval_shape(jax.vmap({name}, in_axes={self.in_axes!r})) (shapes only: no kernel runs here)"
        if self.mode == "vjp_vmap":
            return f"jax.vjp(jax.vmap({name}, in_axes={self.in_axes!r}), ...)"
        return {"vjp": f"jax.vjp({name}, ...)", "flat_primal": f"jax.grad({name}) vs jax.grad({name}.fun)",
                "jvp": f"jax.jvp({name}, ...)", "jit": f"jax.jit({name})",
                "grad2": f"jax.grad(jax.grad({name}))", "vmap_grad": f"jax.vmap(jax.grad({name}))"}.get(
            self.mode, name)


def exposure_for(finding: Finding, kind: str) -> Exposure:
    code = finding.code
    reverse_vmap = _vjp_of_vmap(finding.message)
    if reverse_vmap is not None:
        return reverse_vmap
    if code == rules.FLAT_PRIMAL_SURROGATE.code:
        return Exposure("flat_primal")
    vmap = _vmap_from_message(finding.message)
    if rules.rule(code).category in ("batching", "custom_vmap") or code in _VMAP_CODES or (
            vmap and code in _MAYBE_VMAP_CODES):
        return vmap or Exposure("vmap")
    if code == rules.COMPOSITION_MISMATCH.code:
        return Exposure("vmap_grad")
    if code in _SECOND_ORDER_CODES:
        return Exposure("grad2")
    if code in _JIT_CODES:
        return Exposure("jit")
    if code in _CALL_CODES:
        return Exposure("call")
    if rules.rule(code).category == "differentiation" or code in _JVP_RULE_CODES | _REVERSE_CODES:
        if kind == "custom_vjp" or code in _REVERSE_CODES | _SOLVE_CODES or _through_grad(finding, kind):
            return Exposure("vjp")
        return Exposure("jvp")
    return Exposure("call")


def _vmap_from_message(message: str) -> Exposure | None:
    """The first `jax.vmap(..., in_axes=..., out_axes=...)` quoted in the message, and its batch size."""
    match = _VMAP_CALL.search(message)
    if match is None:
        return None
    text = match.group(0)
    in_axes = _literal(re.search(r"in_axes=" + _AXES, text), 0)
    # the out_axes that fail may be quoted in a later call (JXB003: "`jax.vmap(..., out_axes=[0, None])` fails")
    spans = [text] + [m.group(0) for m in _VMAP_CALL.finditer(message, match.end())]
    out_axes = next((_literal(found, 0) for span in spans for found in [re.search(r"out_axes=" + _AXES, span)]
                     if found), 0)
    size = _BATCH.search(message[match.end():match.end() + 80])
    return Exposure("vmap", in_axes, out_axes, int(size.group(1)) if size else 3)


def _vjp_of_vmap(message: str) -> Exposure | None:
    """`jax.vjp(jax.vmap(f, in_axes=...))` named in the message: reverse mode through vmap, with its batch size."""
    match = _VJP_OF_VMAP.search(message)
    if match is None:
        return None
    size = _BATCH.search(message[match.end():match.end() + 120])
    return Exposure("vjp_vmap", _literal(match, 0), 0, int(size.group(1)) if size else 3)


def _through_grad(finding: Finding, kind: str) -> bool:
    """A function's gradient (`jax.grad`) found wrong: reverse mode shows it (a custom solve's transpose_solve
    runs there only), where the function's JVP may be right."""
    return kind == "function" and finding.code == rules.CUSTOM_DERIVATIVE_MISMATCH.code and \
        "gradient (jax.grad)" in finding.message


def _literal(match: re.Match | None, default: Any) -> Any:
    if match is None:
        return default
    try:
        return ast.literal_eval(match.group(1))
    except (ValueError, SyntaxError):
        return default


# ---------------------------------------------------------------------------------------------------------------
# The transformed function
# ---------------------------------------------------------------------------------------------------------------


def transformed(fn: Callable, exposure: Exposure, shapes: list[Any]) -> tuple[Callable, list[Any]]:
    """(function to trace, its abstract arguments) for `fn` under `exposure`, given one example's
    `jax.ShapeDtypeStruct`s."""
    import jax
    import jax.numpy as jnp

    if exposure.mode == "vmap":
        axes = exposure.in_axes if isinstance(exposure.in_axes, (tuple, list)) else [exposure.in_axes] * len(shapes)
        batched = [s if a is None else _insert(s, a, exposure.batch) for s, a in zip(shapes, axes)]
        in_axes = tuple(axes) if isinstance(exposure.in_axes, (tuple, list)) else exposure.in_axes
        return jax.vmap(fn, in_axes=in_axes, out_axes=exposure.out_axes), batched
    if exposure.mode == "jit":
        return jax.jit(fn), shapes

    def total(*xs: Any) -> Any:
        return sum(jnp.sum(jnp.real(leaf)) for leaf in jax.tree_util.tree_leaves(fn(*xs)))

    if exposure.mode in ("vjp", "flat_primal", "vjp_vmap"):
        inner, args = (fn, shapes) if exposure.mode != "vjp_vmap" else \
            transformed(fn, Exposure("vmap", exposure.in_axes, 0, exposure.batch), shapes)

        def pullback(*xs: Any) -> Any:
            out, pull = jax.vjp(inner, *xs)
            return pull(jax.tree_util.tree_map(jnp.ones_like, out))
        return pullback, args
    if exposure.mode == "jvp":
        def push(*xs: Any) -> Any:
            return jax.jvp(fn, xs, tuple(_tangent(x) for x in xs))
        return push, shapes
    if exposure.mode == "grad2":
        return jax.grad(lambda *xs: jnp.sum(jnp.real(jax.grad(total)(*xs)))), shapes
    if exposure.mode == "vmap_grad":
        return jax.vmap(jax.grad(total)), [_insert(s, 0, exposure.batch) for s in shapes]
    return fn, shapes


def _insert(shape: Any, axis: int, size: int) -> Any:
    import jax

    dims = list(shape.shape)
    axis = axis if axis >= 0 else len(dims) + 1 + axis
    dims.insert(axis, size)
    return jax.ShapeDtypeStruct(tuple(dims), shape.dtype)


def _tangent(x: Any) -> Any:
    import jax.numpy as jnp
    import numpy as np

    if jnp.issubdtype(x.dtype, jnp.inexact):
        return jnp.ones_like(x)
    return np.zeros(x.shape, _compat.float0)


# ---------------------------------------------------------------------------------------------------------------
# --show-jaxpr
# ---------------------------------------------------------------------------------------------------------------


def exposing_jaxpr(fn: Callable, exposure: Exposure, shapes: list[Any], name: str, marker_name: str) -> str:
    """The jaxpr of `fn` under `exposure`, the user's equations marked `<-- path:line`, truncated around them. When
    tracing the transformation itself fails (often the defect), say so and show the plain jaxpr."""
    import jax

    from .._harness import call_user

    head = f"jax.make_jaxpr({exposure.describe(name)})"
    traced, args = transformed(fn, exposure, shapes)
    result = call_user(lambda: jax.make_jaxpr(traced)(*args), quiet=True)
    if result.error is not None:  # the transformation is what fails: show where, then the untransformed jaxpr
        exc = result.error
        first = first_sentences(str(exc))
        head = f"{head} raised {type(exc).__name__}: {first}\njax.make_jaxpr({name}) instead"
        result = call_user(lambda: jax.make_jaxpr(fn)(*shapes), quiet=True)
        if result.error is not None:
            return f"{head}: also raised {type(result.error).__name__}"
    return head + ":\n" + mark_and_truncate(_compat.pretty_jaxpr(result.value), marker_name)


def first_sentences(text: str, limit: int = 200) -> str:
    """The first line of an error's text, as whole sentences: as many as fit in `limit` characters, and at least
    the first one however long it is (an error is never cut mid-sentence; the renderer wraps it)."""
    first = (text.strip().splitlines() or [""])[0].strip()
    sentences = re.split(r"(?<=[.!?;])\s+(?=\S)", first)
    kept = sentences[0]
    for sentence in sentences[1:]:
        if len(kept) + 1 + len(sentence) > limit:
            return kept + " [...]"
        kept += " " + sentence
    return kept


_SOURCE = re.compile(r"#\s+(?P<path>[^#]+?):(?P<line>\d+)(?::\d+)?\s+\((?P<fn>[^)]*)\)\s*$")


def _source_comment(raw: str) -> re.Match[str] | None:
    """JAX's `# file:line:col (fn)` comment at the end of a jaxpr line. Matched from the line's last `#` (a path
    here never holds one): a search over the whole line backtracks at every position of a 10,000-character
    equation (a solve's jaxprs printed in its params), seconds per jaxpr."""
    start = raw.rfind("#")
    return _SOURCE.match(raw, start) if start >= 0 else None


def _without_empty_comment(raw: str) -> str:
    """The line without a `#` JAX left with no source after it (and the padding before it)."""
    line = raw.rstrip()
    return line[:-1].rstrip() if line.endswith("#") else line


def mark_and_truncate(text: str, primitive_name: str = "", limit: int = MAX_LINES) -> str:
    """Replace JAX's `# file:line:col (fn)` comments: user files become `<-- path:line (fn)`, JAX's and jaxdiag's
    own frames are dropped; an equation of `primitive_name` is marked even without a user line. Long jaxprs keep
    their head, every marked line with one line of context, and their tail."""
    out: list[str] = []
    marked: list[int] = []
    for raw in text.splitlines():
        match = _source_comment(raw)
        line = raw[:match.start()].rstrip() if match else _without_empty_comment(raw)
        user = match is not None and _is_user_file(match.group("path"))
        if user:
            assert match is not None
            line = f"{line}   <-- {relative_path(match.group('path'))}:{match.group('line')} ({match.group('fn')})"
        elif primitive_name and re.search(rf"=\s*{re.escape(primitive_name)}\b", line):
            line = f"{line}   <-- {primitive_name}"
        if "<--" in line:
            marked.append(len(out))
        out.append(line)
    if len(out) <= limit:
        return "\n".join(out)
    keep = set(range(3)) | set(range(len(out) - 2, len(out)))
    for i in marked[:limit // 3]:
        keep |= {i - 1, i, i + 1}
    lines, skipped = [], 0
    for i, line in enumerate(out):
        if i in keep:
            if skipped:
                lines.append(f"    ... {skipped} more line(s) ...")
                skipped = 0
            lines.append(line)
        else:
            skipped += 1
    if skipped:
        lines.append(f"    ... {skipped} more line(s) ...")
    return "\n".join(lines)


_OWN_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # jaxdiag/, above this _evidence/


def _is_user_file(path: str) -> bool:
    if path.startswith("<") or os.path.abspath(path).startswith(_OWN_PACKAGE + os.sep):
        return False
    norm = path.replace(os.sep, "/")
    return not any(part in norm for part in ("/jax/", "/jaxlib/", "site-packages", "/numpy/"))
