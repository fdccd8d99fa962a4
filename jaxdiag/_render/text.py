"""`--format text`: one rich panel per finding (code, severity, title, what was observed, the user's source with
the faulty line highlighted, the fix), then a summary line. Colour only on a terminal; `NO_COLOR` is honoured by
rich itself."""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator

from rich.console import Console, ConsoleOptions, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text
from rich.theme import Theme

from .._core._report import Finding, Problem, Report, TargetReport, register_text_view
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


def draw(report: Report, console: Console, verbosity: int = 0, show_diffs: bool = True) -> None:
    """`verbosity` -1 (`-q`): only targets with errors, warnings or problems, without notes; 0: notes on one line
    each, inferred inputs in the target's header; 1 (`-v`): every note in full. `show_diffs` False leaves each
    finding's diff out (`--diff` prints them all as one patch on stdout)."""
    for target in report.targets:
        if verbosity < 0 and not _has_problems(target):
            continue
        _draw_target(target, console, verbosity, show_diffs)
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


def _draw_target(target: TargetReport, console: Console, verbosity: int = 0, show_diffs: bool = True) -> None:
    inferred = verbosity <= 0 and any(f.code == INPUTS_INFERRED for f in target.findings)
    header = Text()
    header.append(target.target, style="jaxdiag.label")
    header.append(f"  ({target.kind}", style="jaxdiag.dim")
    if target.inputs:
        shown = " ".join([*target.inputs, *target.keywords])
        header.append(f"; inputs {shown}{' (inferred)' if inferred else ''}", style="jaxdiag.dim")
    header.append(")", style="jaxdiag.dim")
    counts = {sev: sum(1 for f in target.findings if f.severity == sev) for sev in ("error", "warning")}
    problems = target.all_problems()
    if target.unverified:
        from .._core._report import NOT_VERIFIED_REASONS

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
            console.print(_panel(finding, show_diffs))
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


def _panel(finding: Finding, show_diff: bool = True) -> Panel:
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
    if finding.diff and show_diff:
        parts.append(CodeLines(_highlighted(finding.diff.rstrip("\n"), "diff"), break_all=True))
    if finding.jaxpr:
        parts.append(Text("jaxpr that exposed it:", style="jaxdiag.label"))
        parts.append(JaxprText(finding.jaxpr.rstrip("\n")))
    return Panel(Group(*parts), title=title, title_align="left", border_style=style, expand=True)


def _snippet(finding: Finding) -> CodeLines | None:
    """The user's lines around the finding, numbered, the faulty one marked, fitted to the panel (`CodeLines`)."""
    loc = finding.location
    if loc is None or finding.severity == "info" or not os.path.isfile(loc.path):
        return None
    try:
        code = open(loc.path, encoding="utf-8").read()
    except (OSError, UnicodeDecodeError):
        return None
    lines = _highlighted(code, "python")
    first, last = max(1, loc.line - CONTEXT_LINES), min(len(lines), loc.line + CONTEXT_LINES)
    if not first <= loc.line <= last:
        return None
    return CodeLines(lines[first - 1:last], first=first, marked=loc.line)


def _highlighted(code: str, lexer: str) -> list[Text]:
    """One styled Text per line (colour shows only on a terminal)."""
    text = Syntax(code, lexer, theme="ansi_dark", background_color="default").highlight(code)
    lines = text.split("\n", allow_blank=True)
    return lines[:len(code.splitlines())] or [Text("")]


# ---------------------------------------------------------------------------------------------------------------
# Fitting code and jaxprs to the terminal: broken between tokens, never inside one, never silently cut
# ---------------------------------------------------------------------------------------------------------------

ELLIPSIS = "\u2026"
CONTINUATION_INDENT = 4


class CodeLines:
    """Source lines fitted to the width they get. The window's common left margin is trimmed first. A line still
    too wide is broken between tokens (preferably after a comma), its continuation rows marked with an ellipsis in
    the line-number gutter: every token of the faulty (`marked`) line stays visible, at any width. Context lines
    keep one row, ended by an ellipsis where they are cut, unless `break_all` (a diff: every line matters)."""

    def __init__(self, lines: list[Text], first: int | None = None, marked: int | None = None,
                 break_all: bool = False) -> None:
        self.lines, self.first, self.marked, self.break_all = lines, first, marked, break_all

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        width = max(options.max_width, 20)
        margin = min((len(t.plain) - len(t.plain.lstrip()) for t in self.lines if t.plain.strip()), default=0)
        digits = len(str(self.first + len(self.lines) - 1)) if self.first is not None else 0
        for i, line in enumerate(self.lines):
            number = self.first + i if self.first is not None else None
            marked = number is not None and number == self.marked
            gutter = ("" if number is None else
                      f"{'❱' if marked else ' '} {number:>{digits}} ")
            body = line[margin:] if line.plain[:margin].strip() == "" else line
            room = width - len(gutter)
            if len(body.plain) <= room:
                yield Text(gutter, style="jaxdiag.error" if marked else "jaxdiag.dim") + body
                continue
            if not (marked or self.break_all):
                yield Text(gutter, style="jaxdiag.dim") + body[:room - 1] + Text(ELLIPSIS, style="jaxdiag.dim")
                continue
            indent = len(body.plain) - len(body.plain.lstrip()) + CONTINUATION_INDENT
            for n, (start, end) in enumerate(break_code(body.plain, room, indent)):
                lead = gutter if n == 0 else " " * (len(gutter) - 2) + ELLIPSIS + " "
                row = body[start:end]
                row.rstrip()  # in place
                if n:
                    row = Text(" " * indent) + row
                yield Text(lead, style="jaxdiag.error" if marked else "jaxdiag.dim") + row


def break_code(line: str, width: int, indent: int) -> list[tuple[int, int]]:
    """(start, end) spans of `line` in rows of at most `width` characters, the rows after the first indented by
    `indent`. A break falls between tokens, preferably after a comma, else at a space; only a string literal wider
    than a row is broken, between its words, and only a single word wider than a row is folded."""
    points = _break_points(line)
    spaces = [m.end() for m in re.finditer(r"(?<=\S) +", line)]
    spans: list[tuple[int, int]] = []
    start, room = 0, width
    while len(line) - start > room:
        fitting = [p for p in points if start < p <= start + room]
        commas = [p for p in fitting if line[:p].rstrip().endswith(",")]
        inside = [p for p in spaces if start < p <= start + room]
        # between tokens; else between the words of a string literal; else (one word wider than the row) folded
        end = (commas or fitting or inside or [start + room])[-1]
        if end >= len(line):
            break
        spans.append((start, end))
        start = end
        while start < len(line) and line[start] == " ":
            start += 1
        room = max(width - indent, 10)
    spans.append((start, len(line)))
    return spans


def _break_points(line: str) -> list[int]:
    """Positions after a space outside string literals (a comment is words too): where a row may end."""
    points: list[int] = []
    quote, i = "", 0
    while i < len(line):
        char = line[i]
        if quote:
            if char == "\\":
                i += 1
            elif line.startswith(quote, i):
                i += len(quote) - 1
                quote = ""
        elif char == "#":  # a comment: every space in it
            points += [i + m.end() for m in re.finditer(r" +", line[i:])]
            break
        elif char in "\"'":
            quote = line[i:i + 3] if line[i:i + 3] in ('"""', "'''") else char
            i += len(quote) - 1
        elif char == " ":
            points.append(i + 1)
        i += 1
    return sorted(set(points))


_MARKER = re.compile(r"\s{2,}(<-- .*)$")


class JaxprText:
    """A jaxpr (and the line naming the transformation) fitted to the width: long lines wrap between words with an
    indented continuation; a `<-- path:line (fn)` marker never wraps: it shares the equation's last row when it
    fits there, else takes a row of its own."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        width = max(options.max_width, 20)
        for raw in self.text.splitlines():
            match = _MARKER.search(raw)
            line, marker = (raw[:match.start()], match.group(1)) if match else (raw, "")
            indent = len(line) - len(line.lstrip())
            rows = [line[a:b].rstrip() if k == 0 else " " * (indent + CONTINUATION_INDENT) + line[a:b].rstrip()
                    for k, (a, b) in enumerate(break_words(line, width, indent + CONTINUATION_INDENT))]
            if marker and len(rows[-1]) + 3 + len(marker) <= width:
                rows[-1] = f"{rows[-1]}   {marker}"
            elif marker:
                marker = _shorter_marker(marker, width)
                rows.append(" " * max(0, min(indent + CONTINUATION_INDENT, width - len(marker))) + marker)
            for row in rows:
                styled = Text(row, style="jaxdiag.dim", no_wrap=True, overflow="ignore")
                if "<-- " in row:
                    styled.stylize("jaxdiag.label", row.index("<-- "))
                yield styled


def _shorter_marker(marker: str, width: int) -> str:
    """`<-- path:line (fn)` for a row of `width`: whole when it fits, else without `(fn)`, else with the file's
    name only; path:line is what the marker is for, so it is never cut."""
    match = re.match(r"<-- (\S+):(\d+)(?: \((.*)\))?$", marker)
    if match is None or len(marker) <= width:
        return marker
    shorter = f"<-- {match.group(1)}:{match.group(2)}"
    return shorter if len(shorter) <= width else f"<-- {os.path.basename(match.group(1))}:{match.group(2)}"


def break_words(line: str, width: int, indent: int) -> list[tuple[int, int]]:
    """(start, end) spans of `line` broken at spaces, rows after the first indented by `indent`; only a word wider
    than a row is folded."""
    points = [m.end() for m in re.finditer(r"(?<=\S) +", line)]
    spans: list[tuple[int, int]] = []
    start, room = 0, width
    while len(line) - start > room:
        fitting = [p for p in points if start < p <= start + room]
        end = fitting[-1] if fitting else start + room  # one word wider than the row: folded, never dropped
        if end >= len(line):
            break
        spans.append((start, end))
        start = end
        room = max(width - indent, 10)
    spans.append((start, len(line)))
    return spans


register_text_view(render_plain)
