"""Settings for every test: a pinned terminal, the two tiers, and the compiled FFI sample kernels.

Tiers: `python -m pytest` runs the fast tier (tests marked `slow` are deselected); `python -m pytest -m slow` runs
only the slow tier, and `JAXDIAG_SLOW=1 python -m pytest` (or any `-m` expression, or a test named by its node id)
runs everything selected. `.ci/run` runs both tiers.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

# Pin the terminal before rich or typer look at it: reports wrap at one known width and carry no colour, whatever
# the developer's terminal or the CI runner sets (COLUMNS=100, FORCE_COLOR, ...).
os.environ["COLUMNS"] = "80"
os.environ["NO_COLOR"] = "1"
for _name in ("FORCE_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JAXDIAG_DEBUG"):
    os.environ.pop(_name, None)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # helpers (ffi_build, markers, clirun) import by name


def _runs_slow(config: pytest.Config) -> bool:
    return (os.environ.get("JAXDIAG_SLOW") == "1" or bool(config.getoption("markexpr"))
            or any("::" in arg for arg in config.args))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _runs_slow(config):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


@pytest.fixture(scope="session")
def ffi_kernels() -> None:
    """Compile samples/ffi_kernels.cc into a private build folder and register its targets (skip without a
    compiler): the JXB020-JXB022 samples call them by name."""
    import ffi_build

    try:
        ffi_build.register()
    except ffi_build.CompilerNotFound as exc:
        pytest.skip(str(exc))


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
