"""`[tool.jaxdiag]` in pyproject.toml: select, ignore, per-target-ignores, paths, seed, and per-target inputs."""

from __future__ import annotations

import fnmatch
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from .. import _rules as rules
from ._errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KNOWN_KEYS = {"select", "ignore", "per-target-ignores", "paths", "seed", "targets", "sharding", "timeout", "platforms",
              "allow-unchecked"}
PLATFORMS = ("cpu", "cuda", "rocm", "tpu")


def parse_platforms(value: Any, where: str) -> tuple[str, ...]:
    """`cpu,cuda` or `["cpu", "cuda"]` -> ("cpu", "cuda"); a UsageError naming `where` for anything else."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(v, str) for v in items):
        raise UsageError(f"{where} must be a list of platforms ({', '.join(PLATFORMS)})")
    names = [v.strip().lower() for v in items if v.strip()]
    bad = [n for n in names if n not in PLATFORMS]
    if bad or not names:
        raise UsageError(f"{where}: unknown platform {bad[0] if bad else '(none)'!r}; choose from "
                         f"{', '.join(PLATFORMS)}")
    return tuple(dict.fromkeys(names))


@dataclass
class TargetConfig:
    args: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class Config:
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_target_ignores: dict[str, list[str]] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)
    seed: int = 0
    targets: dict[str, TargetConfig] = field(default_factory=dict)
    timeout: float | None = None  # seconds per target under `jaxdiag check`; 0: no limit; None: the default
    source: str | None = None
    sharding: bool = False  # `jaxdiag check` also runs the sharding checks (in a child process)
    platforms: tuple[str, ...] = ("cpu",)
    # target glob -> why it may stay unverified: the one way to accept a target that was not checked (exit 0)
    allow_unchecked: dict[str, str] = field(default_factory=dict)

    def ignores_for(self, target: str) -> list[str]:
        """Codes per-target-ignores lists for `target`, its keys matched by glob (`pkg.mod:*`), as `check` does."""
        return [c for pattern, codes in self.per_target_ignores.items() if fnmatch.fnmatchcase(target, pattern)
                for c in codes]

    def target(self, ref: str) -> TargetConfig | None:
        return self.targets.get(ref)


def find_pyproject(start: str) -> str | None:
    folder = os.path.abspath(start)
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def load(app_dir: str = ".") -> Config:
    """The `[tool.jaxdiag]` table of the nearest pyproject.toml (defaults when there is none)."""
    path = find_pyproject(app_dir)
    if path is None:
        return Config()
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    except UnicodeDecodeError as exc:  # TOML is UTF-8; tomllib decodes before it parses
        raise UsageError(f"cannot read {path}: not UTF-8 (byte {exc.start}: {exc.reason}); TOML files are "
                         "UTF-8") from None
    table = data.get("tool", {}).get("jaxdiag")
    if table is None:
        return Config(source=path)
    return parse(table, path)


def _codes(value: Any, key: str, path: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{path}: [tool.jaxdiag] {key} must be a list of rule codes or prefixes")
    unknown = rules.validate_codes(value)
    if unknown:
        raise UsageError(f"{path}: [tool.jaxdiag] {key}: unknown rule code{'s' * (len(unknown) > 1)} "
                         f"{', '.join(map(repr, unknown))} (see `jaxdiag rules` for the codes and prefixes)")
    return [v.strip().upper() for v in value if v.strip()]


def parse(table: dict, path: str = "pyproject.toml") -> Config:
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise UsageError(f"{path}: unknown key(s) in [tool.jaxdiag]: {', '.join(unknown)} "
                         f"(known: {', '.join(sorted(KNOWN_KEYS))})")
    config = Config(source=path)
    config.select = _codes(table.get("select", []), "select", path)
    config.ignore = _codes(table.get("ignore", []), "ignore", path)
    per_target = table.get("per-target-ignores", {})
    if not isinstance(per_target, dict):
        raise UsageError(f"{path}: [tool.jaxdiag] per-target-ignores must be a table of target = [codes]")
    config.per_target_ignores = {k: _codes(v, f"per-target-ignores.{k}", path) for k, v in per_target.items()}
    paths = table.get("paths", [])
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise UsageError(f"{path}: [tool.jaxdiag] paths must be a list of strings")
    config.paths = paths
    seed = table.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise UsageError(f"{path}: [tool.jaxdiag] seed must be an integer")
    config.seed = seed
    sharding = table.get("sharding", False)
    if not isinstance(sharding, bool):
        raise UsageError(f"{path}: [tool.jaxdiag] sharding must be true or false")
    config.sharding = sharding
    timeout = table.get("timeout")
    if timeout is not None and (not isinstance(timeout, (int, float)) or isinstance(timeout, bool)
                                or not math.isfinite(timeout) or timeout < 0):  # TOML has nan and inf
        raise UsageError(f"{path}: [tool.jaxdiag] timeout must be a number of seconds >= 0 and finite (0: no limit), "
                         f"got {timeout!r}")
    config.timeout = None if timeout is None else float(timeout)
    if "platforms" in table:
        config.platforms = parse_platforms(table["platforms"], f"{path}: [tool.jaxdiag] platforms")
    config.allow_unchecked = _allow_unchecked(table.get("allow-unchecked", {}), path)
    targets = table.get("targets", {})
    if not isinstance(targets, dict):
        raise UsageError(f"{path}: [tool.jaxdiag.targets] must be a table keyed by target")
    for ref, entry in targets.items():
        if not isinstance(entry, dict) or not set(entry) <= {"args", "params"}:
            raise UsageError(f"{path}: [tool.jaxdiag.targets.\"{ref}\"] takes args = [...] and params = {{...}}")
        args = entry.get("args", [])
        params = entry.get("params", {})
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args) or not isinstance(params, dict):
            raise UsageError(f"{path}: [tool.jaxdiag.targets.\"{ref}\"] args must be a list of SPEC strings and "
                             "params a table")
        config.targets[ref] = TargetConfig(list(args), dict(params))
    return config


def _allow_unchecked(value: Any, path: str) -> dict[str, str]:
    """`allow-unchecked = {"pkg.mod:kernel" = "needs a GPU"}` (or a list of `{target = ..., reason = ...}`): every
    entry names a target (a glob) and gives a non-empty reason."""
    if isinstance(value, list):
        if not all(isinstance(v, dict) and set(v) == {"target", "reason"} for v in value):
            raise UsageError(f"{path}: [tool.jaxdiag] allow-unchecked entries are {{target = \"pkg.mod:attr\", "
                             "reason = \"why\"}")
        value = {v["target"]: v["reason"] for v in value}
    if not isinstance(value, dict):
        raise UsageError(f"{path}: [tool.jaxdiag] allow-unchecked must be a table of target = \"reason\"")
    for target, reason in value.items():
        if not isinstance(reason, str) or not reason.strip():
            raise UsageError(f"{path}: [tool.jaxdiag] allow-unchecked[{target!r}] needs a reason: why may this "
                             "target stay unverified?")
    return {str(k): v.strip() for k, v in value.items()}
