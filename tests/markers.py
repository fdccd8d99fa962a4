"""Where a sample expects each finding: a trailing `# jaxdiag-expect: CODE` comment on the line a finding of that
code is located at (several codes comma-separated). Tests read lines from these markers, never from numbers copied
out of a report, and `expected_codes.py` checks every error and warning location against them."""

from __future__ import annotations

import re
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
_MARKER_RE = re.compile(r"#\s*jaxdiag-expect:\s*([A-Z0-9, ]+?)\s*$")


def markers(path: Path | str) -> dict[str, list[int]]:
    """{code: [line, ...]} of the markers in a file (a bare name is looked up under samples/)."""
    path = Path(path)
    if not path.is_absolute() and not path.exists():
        path = SAMPLES / path
    found: dict[str, list[int]] = {}
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = _MARKER_RE.search(text)
        if match:
            for code in match.group(1).split(","):
                if code.strip():
                    found.setdefault(code.strip(), []).append(number)
    return found


def expect_line(path: Path | str, code: str, nth: int = 0) -> int:
    """The line of the `nth` marker for `code` (a test fails loudly when the sample lost its marker)."""
    lines = markers(path).get(code, [])
    assert len(lines) > nth, f"{path} has no `# jaxdiag-expect: {code}` marker #{nth + 1}"
    return lines[nth]


def line_of(path: Path | str, text: str) -> int:
    """The only line of a sample that contains `text` (for lines a message cites, e.g. where a rule raised)."""
    path = Path(path) if Path(path).is_absolute() else SAMPLES / path
    hits = [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if text in line]
    assert len(hits) == 1, f"{path}: {text!r} is on lines {hits}, expected exactly one"
    return hits[0]
