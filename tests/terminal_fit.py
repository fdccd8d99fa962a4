"""What the text report must look like in a narrow terminal, shared by tests/test_terminal_fit.py and the sample
table's 60-column check (tests/test_samples_table.py)."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from jaxdiag._core._report import Report
from jaxdiag._render.text import THEME, draw

WIDTH = 60
BORDER = re.compile(r"^[│╭╰]\s?|\s?[│╮╯]$")
MARKER_ROW = re.compile(r"<-- (\S+:\d+( \([^()]*\))?|[\w.]+)$")


def rows(text: str) -> list[str]:
    return [BORDER.sub("", row.rstrip()) for row in text.splitlines()]


def render(report: Report, width: int = WIDTH) -> str:
    buffer = io.StringIO()
    draw(report, Console(file=buffer, theme=THEME, width=width, no_color=True, color_system=None,
                         force_terminal=False))
    return buffer.getvalue()


def assert_fits(text: str, width: int = WIDTH) -> None:
    too_wide = [row for row in text.splitlines() if len(row) > width]
    assert not too_wide, f"rows wider than {width}:\n" + "\n".join(too_wide)
    for row in rows(text):
        if "<--" in row:
            assert MARKER_ROW.search(row.strip()), f"a `<--` marker wrapped or was cut: {row!r}"


def faulty_line_shown(text: str, line: int) -> list[str]:
    """The rendered source line `line` of every excerpt that marks it, its continuation rows joined (gutter and
    ellipses dropped)."""
    lines, shown = rows(text), []
    for i, row in enumerate(lines):
        match = re.match(rf"\s*❱ +{line} (.*)$", row)
        if not match:
            continue
        parts = [match.group(1)]
        for follow in lines[i + 1:]:
            cont = re.match(r"\s*… (.*)$", follow)
            if not cont:
                break
            parts.append(cont.group(1))
        shown.append(" ".join(parts))
    return shown


def assert_line_visible(text: str, path: Path, line: int) -> None:
    source = path.read_text(encoding="utf-8").splitlines()[line - 1]
    shown = faulty_line_shown(text, line)
    assert shown, f"{path.name}:{line} is not shown as the faulty line:\n{text}"
    for rendered in shown:
        assert "".join(rendered.split()) == "".join(source.split()), (
            f"{path.name}:{line}: the faulty line is not shown whole\nsource:   {source.strip()}\nrendered: {rendered}")
