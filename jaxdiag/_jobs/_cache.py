"""The `jaxdiag check` result cache: one JSON file per target, like ruff's and mypy's caches.

Where: `.jaxdiag_cache/` next to the pyproject.toml that configures the run (as ruff, mypy and pytest do); with no
pyproject.toml, the per-user cache folder `$XDG_CACHE_HOME/jaxdiag` (else `~/.cache/jaxdiag`), never the working
folder. A folder jaxdiag creates is private (0o700). A folder owned by another user, or writable by its group or by
others, is refused with one warning line and the run goes on without the result cache: whoever can write there could
plant a passing verdict.

A stale verdict is worse than none, so the key is conservative. It covers:

- the target itself (its label, kind and the attribute it is bound to);
- the source of every module of the user's project it can depend on: its own module, every project module that
  module imports (read from the import statements, followed transitively) or holds a reference to (a function,
  class or module in its namespace), the modules defining its registered rules, and the packages above them
  (importing a module runs its packages' `__init__`); content hashes, not modification times. A package's other
  submodules are not among them: the import system sets `pkg.b` on `pkg` whenever anyone imports `pkg.b`, so that
  attribute is no sign that `pkg` (or its submodule `pkg.a`) uses `pkg.b`; an `__init__` that imports `b` itself
  names it in an import statement, which keeps it;
- everything outside the source that changes a verdict or a report: jaxdiag (version and a hash of its own source,
  so a development checkout never reuses another build's results), JAX, jaxlib, Python and the platform, the
  installed distributions (the names of the `*.dist-info` folders on `sys.path`, which carry their versions),
  `JAX_*`/`XLA_*` environment variables, the working directory (reports hold paths relative to it), the seed,
  and the whole `[tool.jaxdiag]` table (per-target inputs among it). Results are stored unfiltered (the whole
  report is filtered once, after), so `--select`/`--ignore` are not part of the key.

An entry cannot lie: it holds its own key and a digest of the key and its payload, and the payload must have
exactly the shape of a stored outcome (every field, with its type and allowed values). Anything else (bad JSON, a
truncated or edited file, an entry copied under another key, a folder or a link where a file should be, a file
another user owns) is a miss, and the target is checked again. Entries are written whole or not at all (a temporary
file, then `os.replace`). The digest is keyed (HMAC-SHA256) with a secret of this user's, kept outside any project
(`key` in the per-user cache folder, 0o600, made on first use): an entry someone else wrote (committed to a
repository, restored from another machine, or forged by someone who read this docstring) never matches, whatever
digest it carries. Without a per-user folder to keep the secret in, it lives only as long as the process: the
cache then serves only that run.

Only complete results are stored: a target whose run hit an internal error, a crashed worker or the time limit is
checked again next time. The run's phase after its targets, the rules reached by tracing the package's
functions (`_traced_reach`), is one entry of its own (`_keys.check_traced`), keyed by the source of every
walked module and of the discovered targets' rules, the discovered targets and the recorded rules already checked.
Code that imports modules dynamically (`importlib.import_module` with a computed name)
can hide a dependency from the key; `--no-cache` bypasses the cache.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import hmac
import json
import os
import sys
import types
import typing
import weakref
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from .. import __version__
from .._core._atomic import write_atomic
from .._core._report import (
    CHECK_STATUSES, PROBLEM_KINDS, SEVERITY_ORDER, CheckResult, Finding, Problem, TargetReport, serialized_fields,
)
from ._cache_trust import ensure_root, read_private_file, signing_secret, untrusted, user_cache_dir

CACHE_DIR_NAME = ".jaxdiag_cache"
# module object -> the hash of its file when this process first looked at it (weak: a module dropped from
# sys.modules and imported again is a new object, possibly at the same address).
_FIRST_SEEN: weakref.WeakKeyDictionary[ModuleType, str] = weakref.WeakKeyDictionary()
# Bump when the stored layout changes (2: entries carry a digest of their key and payload; 3: the digest is keyed).
CACHE_FORMAT = 3
_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # the jaxdiag package (this module is in jaxdiag/_jobs/)


# ---------------------------------------------------------------------------------------------------------------
# Where the cache lives, and whether it can be trusted
# ---------------------------------------------------------------------------------------------------------------


def cache_root(config_source: str | None) -> Path | None:
    """Next to the pyproject.toml that configures the run, else the per-user cache folder (None: no cache)."""
    return Path(config_source).parent / CACHE_DIR_NAME if config_source else user_cache_dir()


def usable(config_source: str | None) -> bool:
    """Whether the run may use its cache folder; when not, says why in one warning line on stderr. The CLI asks
    this before it starts the child that runs the checks (whose stderr is the user code's captured output), and
    turns the cache off when the answer is no."""
    return open_cache(config_source) is not None


def holds_results(enabled: bool, config_source: str | None) -> bool:
    """Whether the run's result cache (`enabled`) may answer for some target: its folder holds entries of this
    format. Read without opening the cache (no folder made, no warning)."""
    root = cache_root(config_source) if enabled else None
    return root is not None and (root / f"v{CACHE_FORMAT}").is_dir()


def open_cache(config_source: str | None) -> ResultCache | None:
    """The result cache of one run, or None (with one warning line on stderr) when its folder is refused."""
    root = cache_root(config_source)
    if root is None:
        return None
    try:
        refused = ensure_root(root)
    except OSError:  # a read-only checkout: entries already there are still read, nothing is written
        refused = untrusted(root)
    if refused is not None:
        sys.stderr.write(f"jaxdiag: warning: not using cache folder {root}: {refused}\n")
        return None
    return ResultCache(root)


class ResultCache:
    """Get and put JSON outcomes by key. Writes are atomic; an entry that is not exactly what `put` wrote for this
    key is a miss."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._secret = signing_secret()
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.root / f"v{CACHE_FORMAT}" / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        outcome = self._read(key)
        if outcome is None:
            self.misses += 1
        else:
            self.hits += 1
        return outcome

    def _read(self, key: str) -> dict[str, Any] | None:
        raw = read_private_file(self._path(key))
        if raw is None:
            return None
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested deeper than the parser goes
            return None
        if not isinstance(data, dict) or set(data) != {"format", "key", "digest", "outcome"}:
            return None
        if data["format"] != CACHE_FORMAT or data["key"] != key or not isinstance(data["digest"], str):
            return None
        outcome = data["outcome"]
        try:
            digest = _entry_digest(self._secret, key, outcome)
        except (TypeError, ValueError, RecursionError):
            return None
        if digest != data["digest"] or not valid_outcome(outcome):
            return None
        return outcome

    def put(self, key: str, outcome: dict[str, Any]) -> None:
        path = self._path(key)
        try:
            text = json.dumps({"format": CACHE_FORMAT, "key": key, "digest": _entry_digest(self._secret, key, outcome),
                               "outcome": outcome})
        except (TypeError, ValueError):  # not JSON data: never stored, checked again next time
            return
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_atomic(path, text, keep_mode=False)
        except OSError:
            pass  # a read-only checkout still gets its report; it is just not cached


    # Seconds each work item took in the runs before (by task key): how `_schedule` orders the next run's work.
    # Never part of a verdict: a missing, unreadable or odd file is no estimate.

    def _durations_path(self) -> Path:
        return self.root / f"v{CACHE_FORMAT}" / "durations.json"

    def durations(self) -> dict[str, float]:
        raw = read_private_file(self._durations_path())
        try:
            data = json.loads(raw) if raw is not None else {}
        except (ValueError, RecursionError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {k: float(v) for k, v in data.items()
                if isinstance(k, str) and type(v) in (int, float) and 0 <= v < _MAX_SECONDS}

    def put_durations(self, seconds: dict[str, float]) -> None:
        """Merge this run's figures into the file (the items not run keep theirs), at most _MAX_DURATIONS of them."""
        merged = {**self.durations(), **seconds}
        kept = dict(list(merged.items())[-_MAX_DURATIONS:])
        path = self._durations_path()
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_atomic(path, json.dumps(kept), keep_mode=False)
        except OSError:
            pass  # a read-only checkout: the next run estimates by kind


_MAX_SECONDS = 1e6
_MAX_DURATIONS = 100_000


def _entry_digest(secret: bytes, key: str, outcome: Any) -> str:
    """Binds a payload to its key, keyed by this user's secret: an entry edited by hand, copied under another key or
    written by anyone without the secret does not match, even with a digest recomputed by the same recipe."""
    canonical = json.dumps(outcome, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    message = f"jaxdiag-cache-{CACHE_FORMAT}\0{key}\0{canonical}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


# ---------------------------------------------------------------------------------------------------------------
# The shape of a stored outcome
# ---------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _StoredOutcome:
    """What `_parallel.Outcome.to_dict()` stores for a complete run, its reports spelled out
    (`_parallel.target_report_to_dict`, which is `dataclasses.asdict`). Only complete outcomes are stored."""

    reports: list[TargetReport]
    unchecked_lines: list[tuple[str, int]]
    usage_error: None
    complete: bool


# Fields whose values come from a fixed set: anything else would make the report's code fail (a severity that
# has no order) or mean something jaxdiag never wrote.
_ALLOWED: dict[tuple[type, str], Iterable[Any]] = {
    (_StoredOutcome, "complete"): (True,),
    (Finding, "severity"): SEVERITY_ORDER,
    (CheckResult, "status"): CHECK_STATUSES,
    (Problem, "kind"): PROBLEM_KINDS,
}


def valid_outcome(data: Any) -> bool:
    """Whether `data` has exactly the shape of a stored outcome: every field of every record present, no other
    key, each value of its declared type (read from the dataclasses' annotations, so a field added to a report
    record is checked too), fixed-set fields within their set, and finding codes in the rule catalog."""
    return _conforms(data, _StoredOutcome)


def _conforms(value: Any, hint: Any) -> bool:
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, a) for a in args)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _conforms_record(value, hint)
    if origin is list:
        return isinstance(value, list) and all(_conforms(v, args[0]) for v in value)
    if origin is typing.Literal:
        return any(type(value) is type(a) and value == a for a in args)
    if origin is tuple:  # JSON has no tuples: a list (of the same length, unless `tuple[X, ...]`)
        if len(args) == 2 and args[1] is Ellipsis:
            return isinstance(value, list) and all(_conforms(v, args[0]) for v in value)
        return (isinstance(value, list) and len(value) == len(args)
                and all(_conforms(v, a) for v, a in zip(value, args, strict=True)))
    if origin is dict:
        return isinstance(value, dict) and all(isinstance(k, str) and _conforms(v, args[1])
                                               for k, v in value.items())
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint in (str, int, bool):
        return type(value) is hint  # bool is an int, and an int is no bool
    return False  # a type this check does not know: refuse, so a new kind of field is never waved through


def _conforms_record(value: Any, record: type) -> bool:
    hints = _hints(record)
    if not isinstance(value, dict) or set(value) != set(hints):
        return False
    for name, hint in hints.items():
        if not _conforms(value[name], hint):
            return False
        allowed = _ALLOWED.get((record, name))
        if allowed is not None and value[name] not in allowed:
            return False
    if record is Finding:
        from .. import _rules

        return value["code"] in _rules.RULES
    return True


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(record: type) -> dict[str, Any]:
    """A dataclass's fields and their resolved annotations (memoised: the same few records for every entry)."""
    if record not in _HINTS:
        resolved = typing.get_type_hints(record)
        _HINTS[record] = {f.name: resolved[f.name] for f in serialized_fields(record)}
    return _HINTS[record]


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
    from .. import _compat

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
    own = getattr(module, "__name__", "")
    for attribute, value in list(vars(module).items()):
        if isinstance(value, ModuleType):
            # A package's submodule bound under its own name was put there by the import system when anything
            # imported it, not by the package's code (which names it in an import statement when it does).
            if value.__name__ != f"{own}.{attribute}":
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
