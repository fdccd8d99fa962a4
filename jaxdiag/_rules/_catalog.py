"""The `Rule` type and the registry every rule module adds to. See `jaxdiag/_rules/__init__.py`."""

from __future__ import annotations

import importlib.resources
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._report import Finding, Location

SEVERITIES = ("error", "warning", "info")
CATEGORIES = {
    "JXB": "batching",
    "JXR": "registration",
    "JXG": "differentiation",
    "JXV": "custom_vmap",
    "JXS": "sharding",
    "JXN": "note",
}
NOTE_PREFIX = "JXN"

# Findings seen only on inputs jaxdiag inferred (`_provenance.grade`): the code may never receive such inputs, so
# they cannot make an error, and the message names the assumption.
INFERRED_MAX_SEVERITY = "warning"
INFERRED_MESSAGE = "on {specs} inferred; your callers may never pass such inputs. {message}"
INFERRED_FIX = ("{fix}\nTo confirm it on the inputs your code really passes, declare them ([tool.jaxdiag.targets] "
                "`args`, or --arg) or record them (`jaxdiag record -- pytest`).")


def _samples_dir() -> Path:
    """The samples shipped with this jaxdiag (package data of `jaxdiag.samples`, never a `samples/` folder that
    happens to be on sys.path); a source checkout used without installing falls back to its own folder."""
    try:
        return Path(str(importlib.resources.files("jaxdiag.samples")))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent.parent / "samples"


SAMPLES_DIR = _samples_dir()

RULES: dict[str, Rule] = {}


def template_fields(template: str) -> set[str]:
    """The named fields of a `str.format` template (`"{owner} returned {dim}"` -> {"owner", "dim"})."""
    return {name.split(".")[0].split("[")[0] for _, name, _, _ in string.Formatter().parse(template) if name}


@dataclass(frozen=True)
class Rule:
    """One diagnostic. `message` and `fix` are `str.format` templates with named fields: the wording that names
    the defect lives here, so a rule reads the same wherever it is emitted; the emission site passes only what
    it observed (names, shapes, dims, numbers, the error text) as fields."""

    code: str
    name: str
    severity: str
    summary: str
    what: str
    why: str
    bad_sample: str | None = None
    good_sample: str | None = None
    message: str = ""
    fix: str = ""
    # The code of the rule reporting the same defect in another context (a missing JVP rule is a note under
    # `check`, which cannot know whether anyone differentiates the primitive, and an error under `grad`).
    variant_of: str | None = None
    # Whether the evidence can depend on the values drawn. False for a registration, a rule's signature, a shape,
    # dtype or pytree structure, or an exception from a rule or a transformation (rules see the same avals on
    # every draw): such findings are never re-tried on fresh draws (`_fresh_draws.py`). A target that itself
    # raises (JXR011) keeps the default: that is typically an implicit precondition on the values.
    depends_on_values: bool = True
    # Whether the evidence comes from running rules on example inputs. False for a fact read off the object (a
    # rule never registered, a removed API, a declared vmap_method) that no choice of inputs changes. A finding
    # whose evidence comes from inputs jaxdiag synthesised (none declared, recorded or observed) is graded by
    # `_provenance`: at most INFERRED_MAX_SEVERITY, its message prefixed with INFERRED_MESSAGE.
    evidence_from_inputs: bool = True

    def __post_init__(self) -> None:
        assert self.severity in SEVERITIES, self.severity
        assert self.code[:3] in CATEGORIES, self.code
        assert self.code not in RULES, f"duplicate rule code {self.code}"
        assert self.code[:3] != NOTE_PREFIX or self.severity == "info", f"{self.code}: notes are info"
        assert self.message, f"{self.code}: a rule needs a message template"
        RULES[self.code] = self

    @property
    def category(self) -> str:
        return CATEGORIES[self.code[:3]]

    @property
    def is_note(self) -> bool:
        return self.code.startswith(NOTE_PREFIX)

    @property
    def fields(self) -> set[str]:
        return template_fields(self.message) | template_fields(self.fix)

    @property
    def explanation(self) -> str:
        return f"## What it does\n{self.what}\n\n## Why is this bad?\n{self.why}\n"

    def sample_path(self, which: str) -> Path | None:
        name = self.bad_sample if which == "bad" else self.good_sample
        return SAMPLES_DIR / name if name else None

    def sample_text(self, which: str) -> str | None:
        path = self.sample_path(which)
        return path.read_text(encoding="utf-8") if path and path.is_file() else None

    def finding(self, *, location: Location | None = None, **fields: Any) -> Finding:
        """A finding of this rule at the catalog's severity, its message and fix filled from `fields`.

        A missing or unexpected field is jaxdiag's own bug (TypeError): the check's status becomes `error`.
        """
        expected = self.fields
        unknown = sorted(set(fields) - expected)
        missing = sorted(expected - set(fields))
        if unknown or missing:
            raise TypeError(f"{self.code} {self.name}: template fields {sorted(expected)}; unexpected "
                            f"{unknown}, missing {missing}")
        return Finding(
            code=self.code,
            name=self.name,
            severity=self.severity,
            message=self.message.format(**fields),
            fix=self.fix.format(**fields),
            location=location,
        )
