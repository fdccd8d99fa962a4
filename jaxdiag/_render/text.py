"""`--format text`: one rich panel per finding (code, severity, title, what was observed, the user's source with
the faulty line highlighted, the fix), then a summary line. Colour only on a terminal; `NO_COLOR` is honoured by
rich itself."""

from __future__ import annotations

import io
import os

from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text
from rich.theme import Theme

from .._report import Finding, Problem, Report, TargetReport, register_text_view
from .._rules import INPUTS_INFERRED as _INPUTS_INFERRED_RULE

INPUTS_INFERRED = _INPUTS_INFERRED_RULE.code  # folded into the target's header unless -v

THEME = Theme({
    "jaxdiag.error": "bold red",
    "jaxdiag.warning": "bold yellow",
    "jaxdiag.info": "bold cyan",
    "jaxdiag.code": "bold",
    "jaxdiag.label": "bold",
    "jaxdiag.location": "underline",
    "jaxdiag.fix": "green",
    "jaxdiag.dim": "dim",
})
WIDTH = 110
CONTEXT_LINES = 3


def make_console(file=None, color: bool | None = None) -> Console:
    """A console on `file` (stdout by default); colour only when it is a terminal unless forced. On stdout and
    stderr the width is the terminal's (or COLUMNS); a report file is WIDTH wide."""
    import sys

    terminal = file is None or file is sys.stderr
    return Console(file=file, theme=THEME, width=None if terminal else WIDTH, highlight=False,
                   soft_wrap=False, no_color=(color is False) or None, force_terminal=color or None)


def render_plain(report: Report, verbosity: int = 0) -> str:
    """The text report without colour (for files, `raise_if_failed` and tests)."""
    buffer = io.StringIO()
    console = Console(file=buffer, theme=THEME, width=WIDTH, no_color=True, highlight=False, color_system=None,
                      force_terminal=False)
    draw(report, console, verbosity)
    return buffer.getvalue()


def draw(report: Report, console: Console, verbosity: int = 0) -> None:
    """`verbosity` -1 (`-q`): only targets with errors, warnings or problems, without notes; 0: notes on one line
    each, inferred inputs in the target's header; 1 (`-v`): every note in full."""
    for target in report.targets:
        if verbosity < 0 and not _has_problems(target):
            continue
        _draw_target(target, console, verbosity)
    console.print(summary_line(report))


def _has_problems(target: TargetReport) -> bool:
    return (any(f.severity in ("error", "warning") for f in target.findings) or bool(target.all_problems())
            or bool(target.internal_errors))


def summary_line(report: Report) -> Text:
    s = report.summary
    checked, discovered = s["checked"], s["discovered"]
    head = (f"{checked} target{'s' * (checked != 1)} checked" if checked == discovered
            else f"{checked} of {discovered} target{'s' * (discovered != 1)} checked")
    text = Text(head + ": ")
    text.append(f"{s['errors']} error{'s' * (s['errors'] != 1)}", style="jaxdiag.error" if s["errors"] else "")
    text.append(", ")
    text.append(f"{s['warnings']} warning{'s' * (s['warnings'] != 1)}",
                style="jaxdiag.warning" if s["warnings"] else "")
    text.append(f", {s['infos']} note{'s' * (s['infos'] != 1)}")
    if s["import_failures"]:
        text.append(f"; {s['import_failures']} module(s) failed to import (exit 2)", style="jaxdiag.error")
    if s["internal_errors"]:
        text.append(f"; {s['internal_errors']} internal error(s) in jaxdiag (exit 3)", style="jaxdiag.error")
    unverified = report.not_verified
    if unverified:
        reasons = sorted({t.unverified for t in unverified})
        text.append(f"; NOT VERIFIED: {len(unverified)} ({', '.join(reasons)}; exit 5)", style="jaxdiag.error")
    allowed = [t for t in report.targets if t.unverified and t.allowed]
    if allowed:
        text.append(f"; {len(allowed)} unverified by allow-unchecked")
    return text


def _draw_target(target: TargetReport, console: Console, verbosity: int = 0) -> None:
    inferred = verbosity <= 0 and any(f.code == INPUTS_INFERRED for f in target.findings)
    header = Text()
    header.append(target.target, style="jaxdiag.label")
    header.append(f"  ({target.kind}", style="jaxdiag.dim")
    if target.inputs:
        header.append(f"; inputs {' '.join(target.inputs)}{' (inferred)' if inferred else ''}", style="jaxdiag.dim")
    header.append(")", style="jaxdiag.dim")
    counts = {sev: sum(1 for f in target.findings if f.severity == sev) for sev in ("error", "warning")}
    problems = target.all_problems()
    if target.unverified:
        from .._report import NOT_VERIFIED_REASONS

        why = NOT_VERIFIED_REASONS.get(target.unverified, target.unverified)
        accepted = f"; accepted by allow-unchecked: {target.allowed}" if target.allowed else ""
        header.append(f"  NOT VERIFIED: {why}{accepted}", style="jaxdiag.warning" if target.allowed
                      else "jaxdiag.error")
    elif problems:
        header.append("  not fully checked", style="jaxdiag.error")
    elif all(c.status == "skipped" for c in target.checks):
        header.append("  not checked", style="jaxdiag.warning")
    elif not counts["error"] and not counts["warning"]:
        header.append("  ok", style="green")
    console.print(header)
    for problem in target.problems:
        console.print(_problem_panel(problem))
    for finding in target.findings:
        if finding.severity != "info" or verbosity > 0:
            console.print(_panel(finding))
        elif verbosity == 0 and not (inferred and finding.code == INPUTS_INFERRED):
            console.print(_note_line(finding))
    for check in target.internal_errors:
        detail = check.detail.splitlines()[0] if check.detail else f"internal error in check {check.name}"
        console.print(Text(f"  {detail} (jaxdiag's own bug, not a defect in your code)", style="jaxdiag.error"))
    if target.output and (verbosity > 0 or target.unverified):  # as pytest shows captured output on a failure
        console.print(Text(target.output, style="jaxdiag.dim"))


def _note_line(finding: Finding) -> Text:
    """A note on one line (`-v` shows it as a panel, with its fix)."""
    line = Text("  note ", style="jaxdiag.info")
    line.append(f"{finding.code} {finding.name}", style="jaxdiag.code")
    where = f" ({finding.location})" if finding.location else ""
    line.append(f": {' '.join(finding.message.split())}{where}")
    return line


def _problem_panel(problem: Problem) -> Panel:
    title = Text()
    title.append(problem.kind, style="jaxdiag.code")
    title.append(" [error]", style="jaxdiag.error")
    parts: list = []
    if problem.location:
        loc = problem.location
        parts.append(Text(f"{loc.path}:{loc.line} in {loc.function}", style="jaxdiag.location"))
    parts.append(Text(problem.message))
    if problem.fix:
        fix = Text("fix: ", style="jaxdiag.label")
        fix.append(problem.fix, style="jaxdiag.fix")
        parts.append(fix)
    return Panel(Group(*parts), title=title, title_align="left", border_style="jaxdiag.error", expand=True)


def _panel(finding: Finding) -> Panel:
    style = f"jaxdiag.{finding.severity}"
    title = Text()
    title.append(finding.code, style="jaxdiag.code")
    title.append(f" {finding.name} ")
    title.append(f"[{finding.severity}]", style=style)
    parts: list = []
    if finding.location:
        loc = finding.location
        parts.append(Text(f"{loc.path}:{loc.line} in {loc.function}", style="jaxdiag.location"))
    parts.append(Text(finding.message))
    snippet = _snippet(finding)
    if snippet is not None:
        parts.append(snippet)
    if finding.fix:
        status = "fix: " if finding.fix_verified is None else ("fix (verified): " if finding.fix_verified
                                                              else "fix (unverified): ")
        fix = Text(status, style="jaxdiag.label")
        fix.append(finding.fix, style="jaxdiag.fix")
        parts.append(fix)
    if finding.diff:
        parts.append(Syntax(finding.diff.rstrip("\n"), "diff", theme="ansi_dark", background_color="default"))
    if finding.jaxpr:
        parts.append(Text("jaxpr that exposed it:", style="jaxdiag.label"))
        parts.append(Text(finding.jaxpr.rstrip("\n"), style="jaxdiag.dim"))
    return Panel(Group(*parts), title=title, title_align="left", border_style=style, expand=True)


def _snippet(finding: Finding) -> Syntax | None:
    loc = finding.location
    if loc is None or finding.severity == "info" or not os.path.isfile(loc.path):
        return None
    try:
        code = open(loc.path, encoding="utf-8").read()
    except (OSError, UnicodeDecodeError):
        return None
    return Syntax(code, "python", line_numbers=True, line_range=(max(1, loc.line - CONTEXT_LINES),
                                                                 loc.line + CONTEXT_LINES),
                  highlight_lines={loc.line}, theme="ansi_dark", word_wrap=False, background_color="default")


register_text_view(render_plain)
