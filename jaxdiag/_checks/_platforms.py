"""Check: every declared platform has a lowering (JXR015).

Declared platforms come from `--platforms` / `platforms` in pyproject.toml (`Options.platforms`) and from a
`"platforms"` entry in the module's `JAXDIAG` dict for this target. CPU is covered by the registration checks
(JXR004, JXR010); the others are lowered with cross-platform lowering, which needs no such device.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterator
from typing import Any

from .. import _compat
from .._core import _locate
from .. import _rules as rules
from .._core._report import Finding, Location
from ._base import Context, SkipCheck, check
from .._harness import call_user
from .._harness.source import called_name
from ._shared import first_line, prim_var, primitive_module

_NOT_FOUND = re.compile(r"not found for platform|no lowering registered for platform", re.IGNORECASE)


def declared_platforms(ctx: Context) -> tuple[str, ...]:
    platforms = list(ctx.options.platforms)
    module = primitive_module(ctx.subject)
    table = getattr(module, "JAXDIAG", None) if module is not None else None
    if isinstance(table, dict):
        names = [n for n, v in vars(module).items() if v is ctx.subject.obj]
        for name in names:
            entry = table.get(name)
            if isinstance(entry, dict) and isinstance(entry.get("platforms"), (list, tuple)):
                platforms += [str(p).lower() for p in entry["platforms"]]
    return tuple(dict.fromkeys(platforms))


@check("platform-lowering", family="batching", kinds={"primitive"})
def platform_lowering_check(ctx: Context) -> Iterator[Finding]:
    prim = ctx.subject.obj
    others = [p for p in declared_platforms(ctx) if p != "cpu"]
    if not others:
        raise SkipCheck("only cpu declared (see --platforms)")
    if _compat.is_builtin_primitive(prim) or not _compat.has_lowering(prim, "cpu"):
        raise SkipCheck("no cpu lowering to compare with (the missing-lowering check reports it)")
    example = ctx.example()
    missing: dict[str, str] = {}
    for platform in others:  # the user's lowering (or its absence) for that platform
        lowered = call_user(_compat.lower_for_platform, ctx.call, tuple(example), platform, quiet=True)
        if lowered.error is not None:
            missing[platform] = first_line(lowered.error)
    if missing:
        yield _finding(ctx, missing)


def _finding(ctx: Context, missing: dict[str, str]) -> Finding:
    prim, var = ctx.subject.obj, prim_var(ctx.subject)
    names = ", ".join(missing)
    absent = [p for p, text in missing.items() if _NOT_FOUND.search(text)]
    errors = {p: t for p, t in missing.items() if p not in absent}
    parts = []
    if absent:
        which = "a declared platform" if len(absent) == 1 else "declared platforms"
        parts.append(f"{var} has no lowering for {', '.join(absent)} ({which}): `jax.jit` of any function "
                     f"using it fails there with `NotImplementedError: MLIR translation rule for primitive "
                     f"'{prim.name}' not found for platform {absent[0]}` (found by lowering for {absent[0]} on this "
                     "machine, which needs no such device)")
    for platform, text in errors.items():
        parts.append(f"lowering {var} for {platform} fails: {text}")
    message = "; ".join(parts) + "."
    statement, location = _cpu_registration(ctx)
    fix = _fix_text(ctx, statement, names)
    return rules.PLATFORM_LOWERING_MISSING.finding(evidence=message, fix=fix,
                                                   location=location or ctx.subject.location)


def _cpu_registration(ctx: Context) -> tuple[str | None, Location | None]:
    """The user's `mlir.register_lowering(prim, ..., platform="cpu")` statement (source text) and its line."""
    module = primitive_module(ctx.subject)
    var = prim_var(ctx.subject)
    try:
        source = inspect.getsource(module) if module is not None else None
        path = inspect.getsourcefile(module) if module is not None else None
    except (OSError, TypeError):
        return None, None
    if not source or not path:
        return None, None
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None, None
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
            continue
        call = node.value
        name = called_name(call.func) or ""
        if name != "register_lowering" or not call.args or ast.unparse(call.args[0]) != var:
            continue
        platform = next((k for k in call.keywords if k.arg == "platform"), None)
        if platform is None or not (isinstance(platform.value, ast.Constant) and platform.value.value == "cpu"):
            continue
        text = ast.get_source_segment(source, node)
        return text, Location(_locate.relative_path(path), node.lineno, var)
    return None, None


def _fix_text(ctx: Context, statement: str | None, names: str) -> str:
    var = prim_var(ctx.subject)
    rule = _compat.lowering_rule(ctx.subject.obj, "cpu")
    portable = statement is not None and "lower_fun(" in statement and _is_jax_numpy(rule)
    if portable and statement is not None:
        fixed = re.sub(r",\s*platform\s*=\s*['\"]cpu['\"]", "", statement)
        return (f"The cpu lowering is `mlir.lower_fun` of a jax.numpy function, which lowers on every platform: "
                f"register it without `platform=`: `{' '.join(fixed.split())}`.")
    return (f"Register a lowering for {names}: `mlir.register_lowering({var}, rule, platform=...)` with a rule "
            "that emits code for that platform (for a GPU kernel, `jax.ffi.ffi_call` of a CUDA/ROCm target), or, "
            "if the impl is written in jax.numpy, `mlir.lower_fun(impl, multiple_results=...)` without `platform=`.")


def _is_jax_numpy(fn: Any) -> bool:
    return fn is not None and _locate.is_user_code(fn)


CHECKS = [platform_lowering_check]
