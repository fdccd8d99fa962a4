"""What checking one target in a `jaxdiag check` run gave (`Outcome`: plain dicts, the same across processes and
in the cache): run in this process, applied to the run, or made for a worker that timed out, crashed or failed."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .._core._outcomes import ended_early
from .._core._errors import UsageError
from .._core._report import CheckResult, Location, TargetReport, target_report_from_dict, target_report_to_dict

if TYPE_CHECKING:
    from ._discovery import Found
    from ._reach import RecordedCall


class Lint(Protocol):
    """What this module uses of the lint layer's run (`_lint._Lint`, which imports this module)."""

    seed: int
    app_dir: str
    config: Any
    discovery: Any
    unchecked_lines: set[tuple[str, int]]

    def _check(self, found: Found | RecordedCall) -> list[TargetReport]: ...

    def _mark_unchecked(self, found: Found | RecordedCall, anchors: list[Location]) -> None: ...


@dataclass
class Outcome:
    """What checking one target gave: its unfiltered reports and the lines whose suppressions cannot be judged
    because it was not fully checked (merged into the parent's set by union)."""

    reports: list[dict[str, Any]] = field(default_factory=list)
    unchecked_lines: list[tuple[str, int]] = field(default_factory=list)
    usage_error: str | None = None
    # False when the run did not finish normally (internal error, crash, time limit): never cached.
    complete: bool = True
    # The reports themselves, in the process that made them (their live subjects serve --repro): never serialized.
    live: list[TargetReport] | None = field(default=None, repr=False, compare=False, metadata={"serialized": False})

    def to_dict(self) -> dict[str, Any]:
        return {"reports": copy.deepcopy(self.reports), "unchecked_lines": [tuple(u) for u in self.unchecked_lines],
                "usage_error": self.usage_error, "complete": self.complete}  # `live` stays in this process

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Outcome:
        return cls(reports=list(data["reports"]), unchecked_lines=[tuple(u) for u in data["unchecked_lines"]],
                   usage_error=data["usage_error"], complete=data["complete"])


def run_in_process(lint: Lint, found: Found | RecordedCall) -> Outcome:
    """Check one target here, recording the lines it leaves unchecked separately from the other targets'. A
    `SystemExit` or other `BaseException` from user code is this target's result (`_contain`)."""
    from .._run import _contain
    from .._harness import catch_abort

    saved = lint.unchecked_lines
    lint.unchecked_lines = set()
    try:
        try:
            with catch_abort() as caught:  # SystemExit & co. from user code outside the engine (a carrier)
                reports = lint._check(found)
        except UsageError as exc:
            return Outcome(usage_error=str(exc), complete=False)
        if caught.abort is not None:
            reports = [_contain.abort_report(caught.abort, found.label, found.kind, f"preparing {found.label}")]
        outcome = Outcome(reports=[target_report_to_dict(r) for r in reports],
                          unchecked_lines=sorted(lint.unchecked_lines),
                          complete=not any(r.internal_errors or r.problems for r in reports))
        # in this process, keep the report objects themselves: --fix and --repro need what is not serialized
        outcome.live = reports
        return outcome
    finally:
        lint.unchecked_lines = saved


def apply(lint: Lint, outcome: Outcome) -> list[TargetReport]:
    """Merge an outcome into the parent's lint state and return its reports (a usage error stops the run)."""
    if outcome.usage_error is not None:
        raise UsageError(outcome.usage_error)
    lint.unchecked_lines.update(outcome.unchecked_lines)
    return list(outcome.live) if outcome.live is not None else [target_report_from_dict(r) for r in outcome.reports]


def suppression_anchor(found: Found | RecordedCall) -> Location | None:
    from .._run import _anchors
    from .._loading._targets import Target
    from ._reach import RecordedCall

    if isinstance(found, RecordedCall):  # made at run time: where the recording says it is defined
        return found.location

    target = Target(ref=found.label, obj=found.obj, kind=found.kind, module=found.walked.module)
    anchors = _anchors.suppression_anchors(target)
    return anchors[0] if anchors else None


def timed_out(lint: Lint, found: Found | RecordedCall, running: str, seconds: float, limit: float,
              inputs: dict[str, Any] | None = None) -> Outcome:
    """The report of a target stopped at the time limit: a note naming the check that was running (`inputs`: what
    it ran on)."""
    subject, check = _running(running)
    anchor = suppression_anchor(found)
    finding, check_result = ended_early(found.label, check, f"check `{check}` on {subject}" if check else
                                        "preparing its inputs (no check had started)", stopped=(seconds, limit))
    finding.location, finding.inputs = anchor, inputs
    anchors = [anchor] if anchor else []
    report = TargetReport(found.label, found.kind, checks=[check_result], findings=[finding],
                          module=found.walked.label, config_keys=list(found.keys), anchors=anchors)
    saved = lint.unchecked_lines
    lint.unchecked_lines = set()
    try:
        lint._mark_unchecked(found, anchors)
        unchecked = sorted(lint.unchecked_lines)
    finally:
        lint.unchecked_lines = saved
    return Outcome(reports=[target_report_to_dict(report)], unchecked_lines=unchecked, complete=False)


def crashed(found: Found | RecordedCall, running: str, code: int | None, inputs: dict[str, Any] | None = None
            ) -> Outcome:
    """A worker that died mid-target: the user's code it ran ended the process (`os._exit`) or crashed it (a
    segfault): that target's blocking JXU001/JXU002 result, graded by the inputs it died on (`inputs`, as the
    worker said); a replacement worker checks the rest."""
    subject, check = _running(running)
    where = f"check `{check}` on {subject}" if check else f"preparing {found.label} (no check had started)"
    finding, result = ended_early(found.label, check, where, code)
    finding.location, finding.inputs = suppression_anchor(found), inputs
    report = TargetReport(found.label, found.kind, checks=[result], findings=[finding], module=found.walked.label,
                          config_keys=list(found.keys))
    return Outcome(reports=[target_report_to_dict(report)], complete=False)


def crashed_unit(unit: str, running: str, code: int | None, stopped: tuple[float, float] | None = None,
                 inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report (as plain data) of a unit of the traced-reach phase (a public function traced on inferred inputs,
    a factory called) during which the worker died, or which ran past the time limit (`stopped`: its seconds and
    the limit): a blocking JXU001/JXU002/JXU004 at that function, named by its `module:function` label."""
    import sys

    from .._core import _locate

    subject, check = _running(running)
    through = "" if subject == unit else f", reached through {unit}"
    where = (f"check `{check}` on {subject}{through}" if check else
             f"the trace of {unit} on inferred inputs (no check had started)")
    finding, result = ended_early(unit, check, where, code, stopped)
    module, _, name = unit.partition(":")
    fn = _locate.dotted_attribute(sys.modules.get(module), name) if name else None
    finding.location = _locate.locate(fn) if fn is not None else None
    finding.inputs = inputs
    report = TargetReport(unit, "function", checks=[result], findings=[finding], module=module)
    return target_report_to_dict(report)


def _running(running: str) -> tuple[str, str]:
    """(subject, check) of a worker's last "subject: check" message ("" for both before its first check)."""
    subject, _, check = running.rpartition(": ") if running else ("", "", "")
    return subject, check


def internal(found: Found | RecordedCall, detail: str) -> Outcome:
    report = internal_report(found, detail, module=found.walked.label, config_keys=list(found.keys))
    return Outcome(reports=[target_report_to_dict(report)], complete=False)


def internal_report(found: Found | RecordedCall, detail: str, **fields: Any) -> TargetReport:
    """The report of a target on which jaxdiag itself failed: an `error` check (exit 3), never a pass."""
    return TargetReport(found.label, found.kind, checks=[CheckResult("engine", "error", 0.0, detail)], **fields)
