"""The `Rule` type and the registry every rule module adds to. See `jaxdiag/_rules/__init__.py`."""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import string
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .._core._report import NOT_VERIFIED_REASONS, Finding, Location

if TYPE_CHECKING:
    from ._fields import Emits  # `finding`'s signature for each rule's fields, generated from the templates
else:
    Emits = Generic  # at run time `finding` below checks the fields; the generated module is never imported

F = TypeVar("F")  # the rule's template fields, a TypedDict of `_fields` (`Rule[_fields.JXB001]`)

SEVERITIES = ("error", "warning", "info")
CATEGORIES = {
    "JXB": "batching",
    "JXR": "registration",
    "JXG": "differentiation",
    "JXV": "custom_vmap",
    "JXS": "sharding",
    "JXU": "user-code",
    "JXN": "note",
}
NOTE_PREFIX = "JXN"

# Findings seen only on inputs jaxdiag inferred (`_provenance.grade`): the code may never receive such inputs, so
# they cannot make an error, and the message names the assumption.
INFERRED_MAX_SEVERITY = "warning"
INFERRED_MESSAGE = "on {specs} inferred; your callers may never pass such inputs. {message}"
# A target that raises on values drawn for a recorded call's shapes (`Rule.drawn_values_only`): the call ran in the
# user's program on its own values, so the drawn ones are what differs.
RECORDED_DRAWN_MESSAGE = ("on values drawn for the recorded shapes {specs}; your program's own call ran, so these "
                          "values may be outside what the code accepts. {message}")
INFERRED_FIX = ("{fix}\nTo confirm it on the inputs your code really passes, declare them ([tool.jaxdiag.targets] "
                "`args`, or --arg) or record them (`jaxdiag record -- pytest`).")


@functools.cache
def samples_dir() -> Path:
    """The samples shipped with this jaxdiag (package data of `jaxdiag.samples`, never a `samples/` folder that
    happens to be on sys.path); a source checkout used without installing falls back to its own folder."""
    try:
        return Path(str(importlib.resources.files("jaxdiag.samples")))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent.parent / "samples"



def __getattr__(name: str) -> Path:
    if name == "SAMPLES_DIR":  # resolved on first use: finding the package data imports `jaxdiag.samples`
        return samples_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

RULES: dict[str, Rule[Any]] = {}

# Wording shared by sibling rules of two families (the same kind of finding about a primitive's batching rule and a
# custom_vmap rule, or about batching and differentiation under x64): written once here.
VS_LOOP_MESSAGE = "vmap differs from the per-example loop: {evidence}"
X64_ONLY_MESSAGE = ("Only under x64 ({wide}): {original} {evidence} With {narrow} and x64 off the same check passes, "
                    "so this shows only when jax_enable_x64 is on.")
X64_ONLY_FIX = "{fix} If your code never enables x64, this does not affect you."
# How a fix that stays text names what only the user can decide (`Rule.decision`): one phrase, so a reader, a
# script and the catalog tests find it in every such fix.
DECISION_FIX = "{fix} Design decision: {decision}."


def template_fields(template: str) -> set[str]:
    """The named fields of a `str.format` template (`"{owner} returned {dim}"` -> {"owner", "dim"})."""
    return {name.split(".")[0].split("[")[0] for _, name, _, _ in string.Formatter().parse(template) if name}


@dataclass(frozen=True)
class Rule(Emits[F]):
    """One diagnostic. `message` and `fix` are `str.format` templates with named fields: the wording that names
    the defect lives here, so a rule reads the same wherever it is emitted; the emission site passes only what
    it observed (names, shapes, dims, numbers, the error text) as fields.

    `F` is the TypedDict of those fields, generated from the templates into `_fields.py` (`python
    scripts/rule_fields.py`): a rule is declared `X: Rule[_fields.JXB001] = Rule("JXB001", ...)`, and mypy then
    checks the fields of every `X.finding(...)` (`Emits`, one overload per set of fields)."""

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
    # A variant reports its parent's defect in another context (a missing JVP rule is a note under `check`, which
    # cannot know whether anyone differentiates the primitive, and an error under `grad`). Declared with
    # `variant(parent, ...)`: the parent's code here, and `differs` says what differs, in one sentence.
    variant_of: str | None = None
    differs: str = ""
    # Whether the evidence can depend on the values drawn. False for a registration, a rule's signature, a shape,
    # dtype or pytree structure, or an exception from a rule or a transformation (rules see the same avals on
    # every draw): such findings are never re-tried on fresh draws (`_fresh_draws.py`). A target that itself
    # raises (JXR011) keeps the default: that is typically an implicit precondition on the values.
    depends_on_values: bool = True
    # Never filtered: `--ignore`, per-target ignores and inline suppressions cannot hide it (a crash, an exit, a
    # time limit: the run did not verify the target, and hiding that would turn a CI job green).
    blocking: bool = False
    # A finding of this rule means its target was not verified, for this reason (a key of
    # `_report.NOT_VERIFIED_REASONS`); the run then exits 5 unless `allow-unchecked` accepts the target.
    leaves_unverified: str = ""
    # Whether the evidence comes from running rules on example inputs. False for a fact read off the object (a
    # rule never registered, a removed API, a declared vmap_method) that no choice of inputs changes. A finding
    # whose evidence comes from inputs jaxdiag synthesised (none declared, recorded or observed) is graded by
    # `_provenance`: at most INFERRED_MAX_SEVERITY, its message prefixed with INFERRED_MESSAGE.
    evidence_from_inputs: bool = True
    # Whether a finding of this rule on a recorded call says more about the values jaxdiag drew than about the code:
    # the recorded call ran in the user's program on its own values (a recording keeps shapes and ranges, not the
    # values themselves), so the target failing on drawn ones of those shapes is graded as on synthesised inputs.
    drawn_values_only: bool = False
    # Why the fix stays text: the design decision it needs from the user, as one clause ("whether the difference
    # is deliberate ... or a bug ..."), appended to every fix as DECISION_FIX. Empty when the fix is an edit jaxdiag
    # computes from the evidence and verifies (`--diff`): then the rule's bad sample must get a verified diff.
    decision: str = ""
    # Which deliberate reading, stated in the documentation of the rule it points at (a sentence of a docstring or
    # of the comment leading the function, or for a primitive of a function that binds it: `_core/_documented.py`),
    # stands for `# jaxdiag: intended[CODE]` there:
    # "derivative" (a surrogate, straight-through or score-function derivative) or "batch" (a batch-wide maximum,
    # sum or statistic under vmap); "" for none. Only for warnings whose message names that reading already.
    stated_intent: str = ""

    def __post_init__(self) -> None:
        assert self.severity in SEVERITIES, self.severity
        assert self.code[:3] in CATEGORIES, self.code
        assert self.code not in RULES, f"duplicate rule code {self.code}"
        assert self.code[:3] != NOTE_PREFIX or self.severity == "info", f"{self.code}: notes are info"
        assert self.message, f"{self.code}: a rule needs a message template"
        assert not self.leaves_unverified or self.leaves_unverified in NOT_VERIFIED_REASONS, self.leaves_unverified
        assert not self.stated_intent or self.severity == "warning", f"{self.code}: only warnings are intended"
        assert self.stated_intent in ("", "derivative", "batch"), self.stated_intent
        assert not self.variant_of or (self.variant_of in RULES and self.differs), \
            f"{self.code}: declare a variant with variant(parent, ..., differs=...) after its parent"
        RULES[self.code] = self

    @property
    def lineage(self) -> tuple[str, ...]:
        """This rule's code, then its parent's, its parent's parent's...: a selector naming any of them names this
        rule (`--ignore JXR007` also ignores its variant JXR014), as mypy's `sub_code_of` does."""
        parent = RULES.get(self.variant_of) if self.variant_of else None
        return (self.code, *(parent.lineage if parent else ()))

    @property
    def has_own_samples(self) -> bool:
        """Samples of its own: a rule's, or a variant's that is told apart from its parent on other code (JXB024's
        batch aggregate), not one that shares its parent's samples (the same defect in another command)."""
        parent = RULES.get(self.variant_of) if self.variant_of else None
        return bool(self.bad_sample) and (parent is None or self.bad_sample != parent.bad_sample)

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
        return samples_dir() / name if name else None

    def sample_text(self, which: str) -> str | None:
        path = self.sample_path(which)
        return path.read_text(encoding="utf-8") if path and path.is_file() else None

    def rendered_fix(self, fields: dict[str, Any]) -> str:
        """The fix template filled in, with the design decision it leaves to the user, if any."""
        fix = self.fix.format(**fields)
        return DECISION_FIX.format(fix=fix.rstrip(), decision=self.decision).strip() if self.decision else fix

    if not TYPE_CHECKING:  # mypy reads the typed overloads of `_fields.Emits` instead
        def finding(self, *, location: Location | None = None, **fields: Any) -> Finding:
            """A finding of this rule at the catalog's severity, its message and fix filled from `fields`."""
            return self._finding(location, fields)

    def _finding(self, location: Location | None, fields: dict[str, Any]) -> Finding:
        """`finding`, type-checked. A missing or unexpected field is jaxdiag's own bug (TypeError): the check's
        status becomes `error`. mypy rejects it first at a typed call site; this guards the rest (a `Rule[Any]`
        whose fields fit another rule, a test, a plugin)."""
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
            fix=self.rendered_fix(fields),
            location=location,
        )


_OWN = ("code", "name", "severity", "variant_of", "differs")


def variant(parent: Rule[Any], code: str, name: str, severity: str, *, differs: str, **changes: Any) -> Rule[Any]:
    """A rule for `parent`'s defect in another context, declared as (parent, what differs): it inherits every field
    of the parent (summary, explanation, samples, message and fix templates, `depends_on_values`) but those
    `changes` replace, so the shared wording is written once. `--select`/`--ignore`, per-target ignores and inline
    suppressions naming the parent cover the variant too (`Rule.lineage`)."""
    unknown = set(changes) - {f.name for f in dataclasses.fields(Rule)} | set(changes) & set(_OWN)
    assert not unknown, f"{code}: variant() cannot change {sorted(unknown)}"
    inherited = {f.name: getattr(parent, f.name) for f in dataclasses.fields(Rule) if f.name not in _OWN}
    return Rule(code=code, name=name, severity=severity, variant_of=parent.code, differs=differs,
                **{**inherited, **changes})
