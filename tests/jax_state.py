"""The whole of JAX's global state a run of jaxdiag could leave changed, read independently of jaxdiag's own
snapshot (`_compat.snapshot_jax_state`, which covers only what jaxdiag knows it patches): every JAX config option,
every rule registry, the public classes whose methods a run may wrap, the attributes of the user's module-level
objects, and the interpreter hooks. A test compares two `whole_state()` readings with `changes()`; two readings of
jaxdiag's own snapshot (what its restore puts back) with `snapshot_changes()`."""

from __future__ import annotations

import sys
import threading
from types import ModuleType
from typing import Any

import jax
from jax.custom_batching import custom_vmap
from jax.extend.core import Primitive

from jaxdiag import _compat

PATCHABLE_CLASSES = {"Primitive": Primitive, "custom_vjp": jax.custom_vjp, "custom_jvp": jax.custom_jvp,
                     "custom_vmap": custom_vmap}


def whole_state(*modules: ModuleType) -> dict[str, dict[Any, Any]]:
    """Name -> {key: value} for everything compared; values are compared by identity or, failing that, equality."""
    state: dict[str, dict[Any, Any]] = {"config": _compat.config_values()}
    for name, table in _compat.rule_registries().items():
        state[f"registry {name}"] = dict(table)
    for name, cls in PATCHABLE_CLASSES.items():
        state[f"class {name}"] = dict(vars(cls))
    for module in modules:
        for attr, obj in vars(module).items():
            if hasattr(obj, "__dict__") and not isinstance(obj, (type, ModuleType)):
                state[f"{module.__name__}.{attr}"] = dict(vars(obj))
    state["interpreter"] = {"sys.path": list(sys.path), "sys.getprofile": sys.getprofile(),
                            "sys.gettrace": sys.gettrace(), "threading.setprofile": threading.getprofile()
                            if hasattr(threading, "getprofile") else None}
    return state


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001  # an array-valued option compares elementwise: then it is not the same object
        return False


def changes(before: dict[str, dict[Any, Any]], after: dict[str, dict[Any, Any]]) -> list[str]:
    """Entries that changed or disappeared. New entries are allowed: importing the user's module registers its rules
    and JAX registers some of its own lazily on first use; those are not jaxdiag's doing."""
    out = []
    for group, entries in before.items():
        now = after.get(group, {})
        for key, value in entries.items():
            label = f"{group}[{getattr(key, 'name', key)}]"
            if key not in now:
                out.append(f"{label} removed")
            elif not _same(value, now[key]):
                out.append(f"{label} changed: {value!r} -> {now[key]!r}"[:300])
    return out


def snapshot_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
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
