"""Defects an older JAX release cannot show by running the rules (JXR902 notes instead of a silent pass).

A rule that reads a JAX internal removed by newer releases (`batching.not_mapped`, `ad.standard_jvp`, ...) raises
`AttributeError` as soon as it runs there, and the checks report JXR008. On a release that still has the internal,
the rule runs fine and nothing fails: these checks find the uses in the rule's code (`_compat.removed_api_uses`)
and skip with a note, so the report says JXR008 could not be checked here and why. They find nothing to say on a
release that removed the internals (the other checks then see the failure itself).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from .. import _compat
from .._core import _locate
from .. import _rules as rules
from .._core._report import Finding
from ._base import Context, SkipCheck, check


def _named(fn: Any) -> str:
    fn = _locate.unwrap(fn)
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _functions(ctx: Context, roles: tuple[str, ...]) -> list[Callable]:
    """The user's own functions behind the subject's rules with these roles."""
    subject = ctx.subject
    found: list[Any] = []
    if subject.kind == "primitive":
        registered = _compat.registered_rules(subject.obj)
        for role in roles:
            rule = registered.get(role)
            if rule is None:
                continue
            found += _compat.rule_user_functions(rule) if role in ("jvp", "transpose") else [rule]
    elif subject.kind == "custom_vjp":
        fun, fwd, bwd, _, _ = _compat.custom_vjp_parts(subject.obj)
        found += [fun, fwd, bwd]
    elif subject.kind == "custom_jvp":
        fun, jvp, _, _ = _compat.custom_jvp_parts(subject.obj)
        found += [fun, jvp]
    elif subject.kind == "custom_vmap":
        found += list(_compat.custom_vmap_parts(subject.obj))
    return [f for f in dict.fromkeys(f for f in found if callable(f))]


def _scan(ctx: Context, roles: tuple[str, ...]) -> Iterator[Finding]:
    if not _compat.removed_apis_still_here():
        return  # this release removed them: a rule using one raises, and the other checks report JXR008
    uses = [(fn, use) for fn in _functions(ctx, roles) for use in _compat.removed_api_uses(fn)]
    if not uses:
        return
    fn = uses[0][0]
    where = "; ".join(f"{_named(f)} uses `{module}.{attr}`" + (f" (line {line})" if line else "")
                      for f, (module, attr, line, _) in uses)
    advice = "; ".join(dict.fromkeys(f"`{attr}`: {fix}" for _, (_, attr, _, fix) in uses if fix))
    raise SkipCheck(
        f"{rules.REMOVED_JAX_API.code} ({rules.REMOVED_JAX_API.name}) cannot show on JAX {_compat.JAX_VERSION}: "
        f"{where}, which this release still "
        f"has but JAX {_compat.REMOVED_BY_JAX} removed, so the rule works here and fails with AttributeError on "
        f"upgrade." + (f" Replace {advice}." if advice else ""),
        note=True, location=_locate.locate(fn))
    yield  # pragma: no cover - makes this a generator


@check("removed-api", family="batching", kinds={"primitive", "custom_vmap"}, static=True)
def removed_api(ctx: Context) -> Iterator[Finding]:
    yield from _scan(ctx, ("impl", "abstract_eval", "batching", "lowering"))


@check("removed-api-grad", family="grad", kinds={"primitive", "custom_vjp", "custom_jvp"}, static=True)
def removed_api_grad(ctx: Context) -> Iterator[Finding]:
    yield from _scan(ctx, ("jvp", "transpose"))


CHECKS = [removed_api, removed_api_grad]
