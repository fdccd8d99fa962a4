"""Plain data: what the checks found. No JAX, and no renderer imported (renderers import this module).

`str(report)` is the plain-text report the CLI prints; the text renderer registers itself here with
`register_text_view` when `jaxdiag._render` is imported (the engine registers a view that imports it on first use),
so this module never imports a renderer and the import graph has no cycle.
"""

from __future__ import annotations

from collections.abc import Callable
import copy
from dataclasses import asdict, dataclass, field, fields
from typing import Any

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
CHECK_STATUSES = ("passed", "failed", "skipped", "error")
# The exit codes of docs/cli.md. NOT_VERIFIED follows pytest's 5 ("no tests collected"): the run verified less than
# it discovered (a target crashed, exited, hung, timed out, had no inputs, or its module failed to import; an empty
# `check`). Precedence when several apply: internal error, usage, not verified, findings.
EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL, EXIT_NOT_VERIFIED = 0, 1, 2, 3, 5
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
# Blocking problems: not rules, never filtered, always fail the run. The exit code each one forces.
PROBLEM_KINDS = {"import-failed": EXIT_NOT_VERIFIED, "internal-error": EXIT_INTERNAL}
# Why a discovered target (or module) was not verified: the `reason` of `summary.not_verified`.
NOT_VERIFIED_REASONS = {
    "exited": "user code ended the process (SystemExit, sys.exit, os._exit)",
    "crashed": "the process checking it was killed by a signal (a segfault, an abort, out of memory)",
    "raised": "user code raised a BaseException that is not an Exception (KeyboardInterrupt, a custom one)",
    "timed-out": "it ran past the per-target time limit",
    "no-inputs": "no example inputs could be inferred or were given",
    "not-checkable": "jaxdiag cannot build inputs for it from what it knows",
    "dependency-missing": "it needs a module that is not installed",
    "import-failed": "its module failed to import",
    "internal-error": "jaxdiag's own internal error",
    "no-check-ran": "every check was skipped",
    "no-targets": "nothing to check was discovered",
}

_text_view: Callable[[Report], str] | None = None


def register_text_view(view: Callable[[Report], str]) -> None:
    """Called by the text renderer: `str(report)` and `raise_if_failed()` use it."""
    global _text_view
    _text_view = view


@dataclass(frozen=True)
class Location:
    path: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class Finding:
    code: str
    name: str
    severity: str
    message: str
    fix: str = ""
    location: Location | None = None
    # Optional evidence: the verified fix as a unified diff, and the jaxpr that exposed the defect.
    diff: str = ""
    jaxpr: str = ""
    # None: no source edit was attempted; False: candidate edits failed verification (the fix stays text); True.
    fix_verified: bool | None = None
    # The inputs that showed it: {"provenance": "declared|recorded|observed|inferred", "specs": [...]} (set by
    # `_provenance.stamp` where inputs are chosen; None for findings about no inputs, e.g. an import note).
    inputs: dict[str, Any] | None = None
    # The verified `_fixes.Fix` behind `diff` (for --fix, in the process that verified it): never serialized.
    verified_fix: Any = field(default=None, repr=False, compare=False, metadata={"serialized": False})

    def fields_dict(self) -> dict[str, Any]:
        """Every serialized field, the location as a dict (what crosses processes and goes into the cache)."""
        data = {f.name: copy.deepcopy(getattr(self, f.name)) for f in serialized_fields(Finding)}
        data["location"] = asdict(self.location) if self.location else None
        return data

    def to_dict(self) -> dict[str, Any]:
        data = self.fields_dict()
        for optional in ("diff", "jaxpr"):
            if not data[optional]:
                del data[optional]
        for unset in ("fix_verified", "inputs"):
            if data[unset] is None:
                del data[unset]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Finding":
        """The inverse of `to_dict`, for findings made by another jaxdiag process (the sharding child, a `check` worker,
        the cache), which the catalog already built; keys this version does not know are dropped."""
        known = {f.name for f in fields(cls)}
        location = Location(**data["location"]) if data.get("location") else None
        return cls(**{**{k: v for k, v in data.items() if k in known}, "location": location})

    def sort_key(self) -> tuple:
        return (SEVERITY_ORDER[self.severity], self.code, self.message)


@dataclass
class Problem:
    """A blocking problem, like mypy's blocking errors: a module that failed to import (`import-failed`) or
    jaxdiag's own bug (`internal-error`). Not a rule: `--select`/`--ignore` and suppressions never hide it, and it
    makes `Report.ok` False."""

    kind: str
    message: str
    location: Location | None = None
    fix: str = ""

    def __post_init__(self) -> None:
        assert self.kind in PROBLEM_KINDS, self.kind

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "fix": self.fix,
                "location": asdict(self.location) if self.location else None}


@dataclass
class CheckResult:
    name: str
    status: str
    seconds: float
    detail: str = ""
    # a check that reads the rule's source only (`Check.static`): its pass says nothing of what the rule computes,
    # so it never makes the target verified alone (`_filtering.mark_coverage`); not in the JSON format
    static: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "seconds": round(self.seconds, 4), "detail": self.detail}


@dataclass
class TargetReport:
    target: str
    kind: str
    inputs: list[str] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    module: str = ""
    # Keyword options every call passed, as `name=value` (`Subject.keywords`: what the target's own error asked for).
    keywords: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # For filtering only (not serialized): the names configuration may use for this target (matched by glob
    # against per-target-ignores) and the lines where an inline suppression covers every finding about it.
    config_keys: list[str] = field(default_factory=list, repr=False, compare=False)
    anchors: list[Location] = field(default_factory=list, repr=False, compare=False)
    # Coverage: why the target was not verified (a key of NOT_VERIFIED_REASONS; "" when it was), and the reason an
    # `allow-unchecked` entry of [tool.jaxdiag] gives for accepting that. Set before filtering (`_filtering`).
    unverified: str = ""
    allowed: str = ""
    # What the user's code printed while this target was checked (captured in the child process; shown with -v).
    output: str = ""
    # The live `Subject` checked (for --repro, in the process that ran the checks): never serialized.
    subject: Any = field(default=None, repr=False, compare=False, metadata={"serialized": False})

    @property
    def internal_errors(self) -> list[CheckResult]:
        return [c for c in self.checks if c.status == "error"]

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "target": self.target,
            "kind": self.kind,
            "inputs": list(self.inputs),
            **({"keywords": list(self.keywords)} if self.keywords else {}),
            "checks": [c.to_dict() for c in self.checks],
            "findings": [f.to_dict() for f in self.findings],
            "problems": [p.to_dict() for p in self.all_problems()],
            "verified": not self.unverified,
        }
        if self.unverified:
            data["not_verified"] = {"reason": self.unverified, "allowed": self.allowed or None}
        if self.output:
            data["output"] = self.output
        return data

    @property
    def counted(self) -> bool:
        """A discovered target (module and config entries are notes about the run, not targets)."""
        return self.kind not in ("module", "config")

    def all_problems(self) -> list[Problem]:
        """Recorded problems plus one `internal-error` per check that crashed."""
        crashed = [Problem("internal-error", c.detail.splitlines()[0] if c.detail else f"check {c.name} failed")
                   for c in self.internal_errors]
        return self.problems + crashed


@dataclass
class Report:
    targets: list[TargetReport] = field(default_factory=list)
    jaxdiag_version: str = ""
    jax_version: str = ""

    @property
    def findings(self) -> list[Finding]:
        return [f for t in self.targets for f in t.findings]

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def not_verified(self) -> list[TargetReport]:
        """Targets (and modules, and the run itself) not verified, unless `allow-unchecked` accepts them."""
        return [t for t in self.targets if t.unverified and not t.allowed]

    @property
    def summary(self) -> dict[str, Any]:
        """Targets discovered and checked (module and config entries are notes about the run, not targets), the
        ones not verified with their reason, and counts."""
        discovered = [t for t in self.targets if t.counted]
        return {
            "targets": len(discovered),
            "discovered": len(discovered),
            "checked": sum(1 for t in discovered if not t.unverified),
            "not_verified": [{"target": t.target, "reason": t.unverified, **({"allowed": t.allowed} if t.allowed
                                                                            else {})}
                             for t in self.targets if t.unverified],
            "errors": self.count("error"),
            "warnings": self.count("warning"),
            "infos": self.count("info"),
            "import_failures": len(self.problems_of("import-failed")),
            "internal_errors": len(self.problems_of("internal-error")),
        }

    @property
    def problems(self) -> list[Problem]:
        return [p for t in self.targets for p in t.all_problems()]

    def problems_of(self, kind: str) -> list[Problem]:
        return [p for p in self.problems if p.kind == kind]

    @property
    def ok(self) -> bool:
        """False when an error or warning remains (after select/ignore and suppressions), a check hit an internal
        error, a module failed to import, or a target was not verified: a run jaxdiag could not finish never
        passes."""
        return (self.count("error") == 0 and self.count("warning") == 0 and not self.problems
                and not self.not_verified)

    @property
    def internal_errors(self) -> list[CheckResult]:
        return [c for t in self.targets for c in t.checks if c.status == "error"]

    @property
    def exit_code(self) -> int:
        """The CLI's exit code before `--exit-zero`: 3 on an internal error (it wins: the report may be missing
        findings anywhere), else 5 when a discovered target was not verified (an import failure among them), else 1
        when an error or warning remains, else 0."""
        if self.problems_of("internal-error"):
            return EXIT_INTERNAL
        if self.not_verified or self.problems_of("import-failed"):
            return EXIT_NOT_VERIFIED
        return EXIT_CLEAN if self.ok else EXIT_FINDINGS

    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    def raise_if_failed(self) -> None:
        """Raise AssertionError carrying the same text the CLI prints, if the run did not pass (see `ok`)."""
        if not self.ok:
            raise AssertionError("jaxdiag found problems:\n" + str(self))

    def __str__(self) -> str:
        """The plain-text report, as the CLI prints it (without colour)."""
        if _text_view is not None:
            return _text_view(self)
        return self._plain_fallback()

    def _plain_fallback(self) -> str:
        """Used only when no renderer was imported (a Report built by hand): one line per finding and problem."""
        lines = [f"{t.target}: {p.kind}: {p.message}" for t in self.targets for p in t.all_problems()]
        lines += [f"{t.target}: {f.code} {f.name} [{f.severity}]"
                  f"{' at ' + str(f.location) if f.location else ''}: {f.message}"
                  for t in self.targets for f in t.findings]
        return "\n".join(lines + [repr(self)]) + "\n"

    def __repr__(self) -> str:
        s = self.summary
        state = "ok" if self.ok else "failed"
        return (f"<Report {state}: {s['checked']}/{s['discovered']} target(s) checked, {s['errors']} error(s), "
                f"{s['warnings']} warning(s), {s['infos']} note(s), {len(s['not_verified'])} not verified, "
                f"{s['import_failures']} import failure(s), {s['internal_errors']} internal error(s)>")

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "jaxdiag_version": self.jaxdiag_version,
            "jax_version": self.jax_version,
            "targets": [t.to_dict() for t in self.targets],
            "summary": self.summary,
        }

    def merge(self, other: Report) -> Report:
        return Report(self.targets + other.targets, self.jaxdiag_version, self.jax_version)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        """A report sent by another jaxdiag process (`_supervisor`), in `to_full_dict`'s form."""
        return cls([target_report_from_dict(t) for t in data["targets"]], data.get("jaxdiag_version", ""),
                   data.get("jax_version", ""))

    def to_full_dict(self) -> dict[str, Any]:
        """Every field, the ones only filtering needs included (`to_dict` is the JSON format)."""
        return {"jaxdiag_version": self.jaxdiag_version, "jax_version": self.jax_version,
                "targets": [target_report_to_dict(t) for t in self.targets]}


# ---------------------------------------------------------------------------------------------------------------
# Serialisation across processes (a `check` worker, the supervised child, the cache): every field
# ---------------------------------------------------------------------------------------------------------------


def _location(data: dict[str, Any] | None) -> Location | None:
    return Location(**data) if data else None


def serialized_fields(record: type) -> list[Any]:
    """A report record's fields that cross processes and go into the cache (not the live objects it carries for
    the process that ran the checks, marked `metadata={"serialized": False}`)."""
    return [f for f in fields(record) if f.metadata.get("serialized", True)]


def target_report_to_dict(report: TargetReport) -> dict[str, Any]:
    """Every field, `module`, `config_keys` and `anchors` included (`TargetReport.to_dict` is the JSON format,
    which leaves out what only filtering needs)."""
    data = {f.name: getattr(report, f.name) for f in serialized_fields(TargetReport)}
    data.update(inputs=list(report.inputs), config_keys=list(report.config_keys),
                checks=[asdict(c) for c in report.checks], problems=[asdict(p) for p in report.problems],
                anchors=[asdict(a) for a in report.anchors],
                findings=[f.fields_dict() for f in report.findings])
    return data


def target_report_from_dict(data: dict[str, Any]) -> TargetReport:
    known = {f.name for f in fields(TargetReport)}
    return TargetReport(**{
        **{k: v for k, v in data.items() if k in known},
        "checks": [CheckResult(**c) for c in data["checks"]],
        "findings": [Finding.from_dict(f) for f in data["findings"]],
        "problems": [Problem(**{**p, "location": _location(p.get("location"))}) for p in data.get("problems", [])],
        "anchors": [Location(**a) for a in data.get("anchors", [])],
    })
