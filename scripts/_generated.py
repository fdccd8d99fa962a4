"""What the scripts writing checked-in generated files share (`rule_fields.py`, `docs_tables.py`): under `--check`,
a stale file prints its unified diff and one line saying how to regenerate it."""

from __future__ import annotations

import difflib
import sys


def check_current(current: str, wanted: str, name: str, origin: str, fix: str) -> int:
    """0 when `current` (the checked-in text of `name`) is `wanted` (made from `origin`); else print the diff, then
    `fix` on stderr, and return 1."""
    if current == wanted:
        return 0
    diff = difflib.unified_diff(current.splitlines(), wanted.splitlines(), f"{name} (checked in)",
                                f"{name} ({origin})", lineterm="")
    print("\n".join(diff))
    print(fix, file=sys.stderr)
    return 1
