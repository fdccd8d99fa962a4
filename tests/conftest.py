"""Test helpers shared by several test files."""

from __future__ import annotations

from typing import Any


def jax_state_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What differs between two `_compat.snapshot_jax_state()` snapshots: entries that changed or disappeared.

    New registry entries are allowed (importing user modules registers their rules; JAX registers some of its own
    lazily on first use). Everything else must be the same object or an equal value.
    """
    changes: list[str] = []

    def table(name: str, old: dict, new: dict) -> None:
        for key, value in old.items():
            if key not in new:
                changes.append(f"{name}[{getattr(key, 'name', key)}] removed")
            elif isinstance(value, dict) and isinstance(new[key], dict):
                table(f"{name}[{key}]", value, new[key])
            elif new[key] is not value and new[key] != value:
                changes.append(f"{name}[{getattr(key, 'name', key)}] changed")

    for name, value in before.items():
        if isinstance(value, dict):
            table(name, value, after[name])
        elif after[name] is not value and after[name] != value:
            changes.append(f"{name} changed")
    return changes
