"""Source edits: the model (`SourceEdit`, `Fix`), applying edits to a copy of a file's text, and unified diffs that
`git apply` and `patch -p1` accept. No JAX here."""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field

from .._core._atomic import write_atomic
from .._core._locate import relative_path


@dataclass(frozen=True)
class SourceEdit:
    """Replace lines `start..end` (1-based, inclusive) of `path` with `replacement` (whole lines, each ending in a
    newline). `end == start - 1` inserts `replacement` before line `start` without removing anything."""

    path: str  # absolute
    start: int
    end: int
    replacement: str

    def overlaps(self, other: SourceEdit) -> bool:
        if self.path != other.path:
            return False
        # an insertion (end < start) still claims its anchor line, so two edits never fight over one place
        return not (max(self.end, self.start) < other.start or max(other.end, other.start) < self.start)


@dataclass
class Fix:
    """A candidate fix: what it does (for the report) and the edits that make it. `verified` is set once jaxdiag has
    re-run the failing check on the edited code and seen the finding disappear with no new error."""

    description: str
    edits: tuple[SourceEdit, ...]
    verified: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def paths(self) -> list[str]:
        return list(dict.fromkeys(e.path for e in self.edits))


def read_source(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def apply_edits(source: str, edits: list[SourceEdit] | tuple[SourceEdit, ...]) -> str:
    """`source` with `edits` (all for the same file, not overlapping) applied; later lines first so that earlier
    line numbers stay valid."""
    lines = source.splitlines(keepends=True)
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        if not 1 <= edit.start <= len(lines) + 1:
            raise ValueError(f"edit outside the file: line {edit.start} of {len(lines)}")
        replacement = edit.replacement
        if replacement and not replacement.endswith("\n"):
            replacement += "\n"
        lines[edit.start - 1:max(edit.end, edit.start - 1)] = replacement.splitlines(keepends=True)
    return "".join(lines)


def unified_diff(path: str, old: str, new: str) -> str:
    """A `git diff`-style patch for one file: paths relative to the current directory with `a/` and `b/`
    prefixes, so `git apply` and `patch -p1` accept it from there."""
    rel = relative_path(path).replace(os.sep, "/")
    if os.path.isabs(rel):  # outside the current directory: `git apply` needs a relative path; keep it absolute
        rel = rel.lstrip("/")
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    body = list(difflib.unified_diff(old_lines, new_lines, f"a/{rel}", f"b/{rel}", n=3))
    if not body:
        return ""
    out = [f"diff --git a/{rel} b/{rel}\n"]
    for line in body:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def dedupe(edits: list[SourceEdit]) -> list[SourceEdit]:
    """The edits without repeats and without any that overlaps an earlier one."""
    kept: list[SourceEdit] = []
    for edit in edits:
        if edit not in kept and not any(edit.overlaps(k) for k in kept):
            kept.append(edit)
    return kept


def _edits_by_path(fixes: list[Fix]) -> dict[str, list[SourceEdit]]:
    """Per file, every edit of the fixes that overlaps no edit taken before it (the first fix wins a conflict)."""
    by_path: dict[str, list[SourceEdit]] = {}
    for fix in fixes:
        taken = [e for p in fix.paths for e in by_path.get(p, [])]
        if any(e.overlaps(t) for e in fix.edits for t in taken):
            continue
        for edit in fix.edits:
            by_path.setdefault(edit.path, []).append(edit)
    return by_path


def combined_diff(fixes: list[Fix]) -> str:
    """One patch for several fixes: per file, every non-overlapping edit (the first fix wins a conflict)."""
    by_path = _edits_by_path(fixes)
    parts = []
    for path in sorted(by_path):
        old = read_source(path)
        parts.append(unified_diff(path, old, apply_edits(old, by_path[path])))
    return "".join(parts)


def write_fixes(fixes: list[Fix]) -> list[str]:
    """Apply the fixes to the files on disk (like `ruff --fix`); returns the paths written."""
    by_path = _edits_by_path(fixes)
    for path, edits in by_path.items():
        new = apply_edits(read_source(path), edits)
        # whole or not at all, keeping the file's mode: an interrupted --fix never leaves half a source file
        write_atomic(path, new, durable=True)
    return sorted(by_path)
