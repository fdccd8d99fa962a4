"""The rule catalog: every diagnostic jaxdiag can emit, defined once, with its severity, message and fix.

Like mypy's `errorcodes.py`, defining a `Rule` registers it. Like ruff, each rule carries its own documentation
(`what`, `why`) and names a bad and a good sample under `samples/`, which `jaxdiag rules CODE` prints as the example
and the fix. Checks build findings with `rules.X.finding(location=..., **fields)`: the catalog's templates turn the
observed fields into the message and the fix, and the severity is the catalog's, never the call site's. Each rule is
declared `X: Rule[_fields.CODE]`, its fields a TypedDict generated from its templates (`scripts/rule_fields.py`), so
mypy rejects a missing or misspelt field at the call site. Control flow that depends on a rule
(`st.blocked[rules.X]`) holds the `Rule` object, never a code string.

One module per prefix: `JXR` registration, `JXB` batching, `JXG` differentiation, `JXV` custom_vmap, `JXS`
sharding, `JXU` user code that stopped a check (exit, crash, time limit), `JXN` notes about the run (info only).
A rule whose severity would depend on the context is two rules: the variant is declared with
`variant(parent, code, name, severity, differs=...)`, inherits the parent's text, and is covered by every selector
or suppression naming the parent (a missing JVP rule is a note under `check` and an error under `grad`).

Severities: `error` (fails or is wrong under a JAX transformation, or the user's rules contradict each other),
`warning` (likely unintended but can be deliberate), `info` (what jaxdiag inferred or skipped).
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._catalog import (
    CATEGORIES, INFERRED_FIX, INFERRED_MAX_SEVERITY, INFERRED_MESSAGE, NOTE_PREFIX, RECORDED_DRAWN_MESSAGE, SEVERITIES,
    Rule, template_fields, variant,
)
from ._catalog import RULES as _REGISTERED

if TYPE_CHECKING:
    from ._batching import *  # noqa: F403  (each rule module defines only Rule constants)
    from ._catalog import RULES, SAMPLES_DIR
    from ._custom_vmap import *  # noqa: F403
    from ._differentiation import *  # noqa: F403
    from ._notes import *  # noqa: F403
    from ._registration import *  # noqa: F403
    from ._sharding import *  # noqa: F403
    from ._user_code import *  # noqa: F403

# The rule modules, one per prefix, imported together on the first use of a rule (`rules.X`, `RULES`, `rule()`):
# a run that emits nothing and filters by nothing never loads the catalog's texts.
_RULE_MODULES = ("_batching", "_custom_vmap", "_differentiation", "_notes", "_registration", "_sharding",
                 "_user_code")


def _all_rules() -> dict[str, Rule]:
    """Every rule by code, each rule module imported (once) and its public names made this package's."""
    if "RULES" not in globals():
        for name in _RULE_MODULES:
            module = import_module(f"{__name__}.{name}")
            globals().update({k: v for k, v in vars(module).items() if not k.startswith("_") and k not in globals()})
        globals()["RULES"] = _REGISTERED
    return _REGISTERED


if not TYPE_CHECKING:  # mypy reads the imports above, and so still rejects a misspelt `rules.X`
    def __getattr__(name: str) -> Any:
        if name == "SAMPLES_DIR":
            from ._catalog import samples_dir

            return samples_dir()
        _all_rules()
        if name in globals():
            return globals()[name]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CATEGORIES", "DEPRECATED", "INFERRED_FIX", "INFERRED_MAX_SEVERITY", "INFERRED_MESSAGE",
           "NOTE_PREFIX", "RECORDED_DRAWN_MESSAGE", "RULES", "SAMPLES_DIR", "SEVERITIES", "Rule", "iter_rules",
           "matches", "normalize_codes", "rule", "template_fields", "validate_codes", "variant"]

# Old codes users may have written in --select/--ignore, pyproject.toml or inline comments, and what they stand for
# now. `None`: the code is gone and selects nothing (JXR905 import-failed is a blocking problem, not a rule).
DEPRECATED: dict[str, str | None] = {
    "JXR900": "JXN001",
    "JXR901": "JXN002",
    "JXR902": "JXN003",
    "JXR903": "JXN004",
    "JXR904": "JXN005",
    "JXR905": None,
    "JXN009": "JXU004",  # a time limit leaves the target unverified: an error now, never filtered
}
# Old prefixes that named only run notes (`--ignore JXR9` was the documented way to hide them).
DEPRECATED_PREFIXES: dict[str, str] = {"JXR9": "JXN", "JXR90": "JXN"}


def rule(code: str) -> Rule:
    """Look a rule up by code (a deprecated code finds its replacement); raises KeyError for an unknown code."""
    code = code.strip().upper()
    return _all_rules()[DEPRECATED.get(code) or code]


def iter_rules() -> list[Rule]:
    registered = _all_rules()
    return [registered[c] for c in sorted(registered)]


def _known_selector(selector: str) -> bool:
    return selector == "*" or selector in DEPRECATED or selector in DEPRECATED_PREFIXES or any(
        code.startswith(selector) for code in _all_rules())


def validate_codes(codes: Iterable[str]) -> list[str]:
    """The selectors in `codes` that name no rule: not a code, a deprecated code, nor a prefix of a code (`JXG`,
    `JXB0`). `*` (every code) is known. Callers turn a non-empty result into a usage error."""
    return [c for c in codes if not _known_selector(c.strip().upper())]


def normalize_codes(codes: Iterable[str]) -> tuple[list[str], list[str]]:
    """(selectors with deprecated codes replaced by their new codes, the deprecated codes that were used).

    A deprecated code with no replacement (JXR905) is dropped: it selects nothing."""
    out: list[str] = []
    used: list[str] = []
    for raw in codes:
        code = raw.strip().upper()
        if not code:
            continue
        if code in DEPRECATED:
            used.append(code)
            new = DEPRECATED[code]
            if new:
                out.append(new)
        elif code in DEPRECATED_PREFIXES:
            used.append(code)
            out.append(DEPRECATED_PREFIXES[code])
        else:
            out.append(code)
    return out, used


def matches(code: str, selectors: list[str] | tuple[str, ...]) -> bool:
    """True when `code` is named by any selector: `*`, a full code or a prefix (`JXG`, `JXB0`), of the rule itself
    or of a rule it is a variant of (`--ignore JXR007` also ignores JXR014, as mypy's `sub_code_of`). Deprecated
    codes in `selectors` stand for their replacements."""
    normalized, _ = normalize_codes(selectors)
    registered = _all_rules()
    lineage = registered[code].lineage if code in registered else (code,)
    return any(s == "*" or any(c.startswith(s) for c in lineage) for s in normalized)
