"""The `jaxdiag check` result cache: one JSON file per target in `.jaxdiag_cache/`, like ruff's and mypy's caches.

A stale verdict is worse than none, so the key is conservative. It covers:

- the target itself (its label, kind and the attribute it is bound to);
- the source of every module of the user's project it can depend on: its own module, every project module that
  module imports (read from the import statements, followed transitively) or holds a reference to (a function,
  class or module in its namespace), the modules defining its registered rules, and the packages above them;
  content hashes, not modification times;
- everything outside the source that changes a verdict or a report: jaxdiag (version and a hash of its own source,
  so a development checkout never reuses another build's results), JAX, jaxlib, Python and the platform, the
  installed distributions (the names of the `*.dist-info` folders on `sys.path`, which carry their versions),
  `JAX_*`/`XLA_*` environment variables, the working directory (reports hold paths relative to it), the seed,
  and the whole `[tool.jaxdiag]` table (per-target inputs among it). Results are stored unfiltered (the whole
  report is filtered once, after), so `--select`/`--ignore` are not part of the key.

Only complete results are stored: a target whose run hit an internal error, a crashed worker or the time limit is
checked again next time. Code that imports modules dynamically (`importlib.import_module` with a computed name)
can hide a dependency from the key; `--no-cache` bypasses the cache.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import os
import sys
import tempfile
import weakref
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from . import __version__

CACHE_DIR_NAME = ".jaxdiag_cache"
# module object -> the hash of its file when this process first looked at it (weak: a module dropped from
# sys.modules and imported again is a new object, possibly at the same address).
_FIRST_SEEN: weakref.WeakKeyDictionary[ModuleType, str] = weakref.WeakKeyDictionary()
# Bump when the stored layout changes.
CACHE_FORMAT = 1
_PACKAGE_DIR = Path(__file__).resolve().parent


# ---------------------------------------------------------------------------------------------------------------
# Where the cache lives
# ---------------------------------------------------------------------------------------------------------------


def cache_root(config_source: str | None) -> Path:
    """Next to the pyproject.toml that configures the run, else in the working directory."""
    base = Path(config_source).parent if config_source else Path.cwd()
    return base / CACHE_DIR_NAME


def ensure_root(root: Path) -> None:
    """Create the cache folder with a `.gitignore` of `*` in it, as pytest's and ruff's caches do, so it is never
    committed by accident."""
    root.mkdir(parents=True, exist_ok=True)
    ignore = root / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# Created by jaxdiag: the `jaxdiag check` result cache.\n*\n", encoding="utf-8")


class ResultCache:
    """Get and put JSON outcomes by key. Writes are atomic; an unreadable entry is a miss."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.root / f"v{CACHE_FORMAT}" / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            with open(self._path(key), encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            self.misses += 1
            return None
        if not isinstance(data, dict) or data.get("key") != key:
            self.misses += 1
            return None
        self.hits += 1
        return data.get("outcome")

    def put(self, key: str, outcome: dict[str, Any]) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            ensure_root(self.root)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"key": key, "outcome": outcome}, handle)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only checkout still gets its report; it is just not cached


# ---------------------------------------------------------------------------------------------------------------
# The key
# ---------------------------------------------------------------------------------------------------------------


def _digest(parts: Iterable[Any]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(json.dumps(part, sort_keys=True, default=repr).encode())
        h.update(b"\0")
    return h.hexdigest()


def _file_hash(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "missing"


def _own_source_hash() -> str:
    """jaxdiag's own source: an edited checkout must not reuse results of the code before the edit."""
    files = sorted(p for p in _PACKAGE_DIR.rglob("*.py") if "__pycache__" not in p.parts)
    return _digest((p.relative_to(_PACKAGE_DIR).as_posix(), _file_hash(str(p))) for p in files)


def _installed_distributions() -> list[str]:
    """`name-version.dist-info` folder names on sys.path: a pip install or upgrade of any library changes them."""
    names: set[str] = set()
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                names.update(e.name for e in it if e.name.endswith((".dist-info", ".egg-info", ".egg-link")))
        except OSError:
            continue
    return sorted(names)


def environment_fingerprint(*, seed: int, config: Any, app_dir: str) -> str:
    """Everything outside the user's source that a verdict or a report depends on, as one digest."""
    from . import _compat

    config_data = dataclasses.asdict(config) if dataclasses.is_dataclass(config) and not isinstance(
        config, type) else repr(config)
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(("JAX_", "XLA_")))
    # the recorded calls `jaxdiag check` reads, found where _reach.Recorded.load looks (first folder that has one)
    source = getattr(config, "source", None)
    folders = [os.path.dirname(source) if source else os.getcwd(), app_dir, os.getcwd()]
    recorded = next((p for p in (Path(f) / ".jaxdiag" / "calls.json" for f in folders) if p.is_file()),
                    Path(app_dir) / ".jaxdiag" / "calls.json")
    return _digest([
        CACHE_FORMAT, __version__, _own_source_hash(), _compat.JAX_VERSION, _compat.JAXLIB_VERSION,
        sys.version, sys.platform, _installed_distributions(), env, _compat.x64_enabled(),
        os.getcwd(), os.path.abspath(app_dir), seed, config_data,
        _file_hash(str(recorded)) if recorded.is_file() else None,
    ])


class SourceGraph:
    """Which files of the user's project a module depends on (memoised over one run)."""

    def __init__(self) -> None:
        prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix}
        self._installed = tuple(str(Path(p).resolve()) + os.sep for p in prefixes)
        self._direct: dict[str, set[str]] = {}
        self._hashes: dict[str, str] = {}

    def project_file(self, module: ModuleType | None) -> str | None:
        """The module's source file when it belongs to the user's project (not installed, not jaxdiag)."""
        where = getattr(module, "__file__", None) if module is not None else None
        if not where or not where.endswith(".py"):
            return None
        full = str(Path(where).resolve())
        if full.startswith(self._installed) or Path(full).is_relative_to(_PACKAGE_DIR):
            return None
        if any(part in ("site-packages", "dist-packages") for part in Path(full).parts):
            return None
        return full

    def files_of(self, modules: Iterable[ModuleType]) -> list[tuple[str, str]] | None:
        """(path, content hash) of every project file the modules depend on, transitively, sorted; None when one
        of those modules is stale (its file changed since this process imported it), so no key can describe the
        code that actually runs."""
        seen: set[str] = set()
        todo = [name for name in (getattr(m, "__name__", None) for m in modules) if name]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            todo.extend(self._direct_deps(name) - seen)
        out = []
        for name in seen:
            module = sys.modules.get(name)
            path = self.project_file(module)
            if path is None or module is None:
                continue
            digest = self._hash(path)
            # The hash when this module object was first seen; a running process never re-imports a module,
            # so a different hash now means the code in memory is not the code on disk.
            first = _FIRST_SEEN.setdefault(module, digest)
            if first != digest:
                return None
            out.append((path, digest))
        return sorted(out)

    def _hash(self, path: str) -> str:
        if path not in self._hashes:
            self._hashes[path] = _file_hash(path)
        return self._hashes[path]

    def _direct_deps(self, name: str) -> set[str]:
        """Project modules `name` imports or references, and its parent packages (importing it ran them)."""
        if name in self._direct:
            return self._direct[name]
        module = sys.modules.get(name)
        deps: set[str] = set()
        if module is not None and self.project_file(module):
            parts = name.split(".")
            deps.update(".".join(parts[:i]) for i in range(1, len(parts)))
            deps.update(_static_imports(module))
            deps.update(_referenced_modules(module))
            deps = {d for d in deps if d != name and self.project_file(sys.modules.get(d))}
        self._direct[name] = deps
        return deps


def _static_imports(module: ModuleType) -> set[str]:
    """Module names named by the import statements anywhere in the module's source (functions included)."""
    path = getattr(module, "__file__", None)
    try:
        tree = ast.parse(Path(path).read_bytes()) if path else None
    except (OSError, SyntaxError, ValueError):
        return set()
    if tree is None:
        return set()
    package = getattr(module, "__package__", None) or ""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module or "", node.level, package)
            if base is None:
                continue
            if base:
                parts = base.split(".")
                names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
            names.update(f"{base}.{a.name}" if base else a.name for a in node.names if a.name != "*")
    return names


def _absolute(name: str, level: int, package: str) -> str | None:
    if level == 0:
        return name
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _referenced_modules(module: ModuleType) -> set[str]:
    """Modules whose objects this module holds: `from helpers import rule` leaves `rule.__module__ == "helpers"`,
    which also catches imports the static reading cannot resolve (a name computed at import time)."""
    names: set[str] = set()
    for value in list(vars(module).values()):
        if isinstance(value, ModuleType):
            names.add(value.__name__)
            continue
        for obj in (value, getattr(value, "fun", None), getattr(value, "__wrapped__", None)):
            owner = getattr(obj, "__module__", None) if obj is not None else None
            if isinstance(owner, str):
                names.add(owner)
    return names


def target_key(environment: str, label: str, kind: str, files: list[tuple[str, str]] | None) -> str | None:
    """The cache key of one target; None (not cacheable) when its files are stale in this process."""
    return None if files is None else _digest([environment, label, kind, files])
