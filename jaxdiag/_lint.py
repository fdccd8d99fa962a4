"""`jaxdiag check`: discover targets in modules, packages and files, run every check, report like a linter.

Discovery imports what the user named (module names, package folders, `.py` files, plain folders of files),
walks packages with pkgutil (tests are skipped unless asked), and collects module-level `Primitive`s with a user
rule registered and `custom_vjp` / `custom_jvp` / `custom_vmap` objects (also behind `jax.jit`). An object found
in several modules (re-exports) is checked once, in the module that defines it. Example inputs come from
`[tool.jaxdiag.targets."<target>"]`, else from a `JAXDIAG = {"attr": {"args": [...], "params": {...}}}` dict in
the defining module, else the engine infers them (a target it cannot infer becomes a JXR903 note that says what
to add to pyproject.toml). Suppressions that suppress nothing are reported as JXR904, as ruff's RUF100 does.
"""

from __future__ import annotations

import fnmatch
import importlib
import importlib.util
import inspect
import linecache
import os
import pkgutil
import re
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator, Sequence

from . import __version__, _compat, _config, _engine, _locate
from . import _rules as rules
from ._checks._base import Options
from ._errors import InferenceError, TargetLoadError, UsageError
from ._report import CheckResult, Finding, Location, Report, TargetReport
from ._targets import Target, add_app_dir, classify, load_module

CUSTOM_KINDS = ("custom_vjp", "custom_jvp", "custom_vmap")
JAX_ROOTS = ("jax", "jaxlib")
# Folders never walked when a plain directory is given: caches, virtual environments, build output.
SKIPPED_DIRS = {"__pycache__", "build", "dist", "node_modules", "site-packages", "venv", ".venv", "env"}
# Files never imported from a plain directory: running them has side effects or they belong to the test runner.
SKIPPED_FILES = {"setup.py", "conftest.py", "__main__.py", "noxfile.py"}
_NAME_RE = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)|^\s*(\w+)\s*(?::[^=]*)?=")


# ---------------------------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------------------------


def check_module(
    module_or_path: ModuleType | str,
    *,
    seed: int | None = None,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    app_dir: str = ".",
    keep_going: bool = False,
    include_tests: bool = False,
) -> Report:
    """Discover and check every target in a module, package, file or folder, as `jaxdiag check` does.

    `module_or_path` is a module object, a dotted module name or a path. `[tool.jaxdiag]` in the nearest
    pyproject.toml (from `app_dir`) supplies per-target inputs and ignores; `select`/`ignore` add to it.
    """
    return check_paths([module_or_path], app_dir=app_dir, seed=seed, select=select, ignore=ignore,
                       keep_going=keep_going, include_tests=include_tests)


def check_paths(
    paths: Sequence[ModuleType | str],
    app_dir: str = ".",
    seed: int | None = None,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    keep_going: bool = False,
    include_tests: bool = False,
) -> Report:
    """`jaxdiag check [PATHS]`: with no paths, `[tool.jaxdiag] paths`; with neither, a UsageError (exit 2)."""
    config = _config.load(app_dir)
    from_config = not paths
    items: list[ModuleType | str] = list(paths) if paths else _config_paths(config)
    if not items:
        raise UsageError("nothing to check: name modules, packages or files (e.g. `jaxdiag check mypkg`) or set "
                         "`paths = [\"mypkg\"]` under [tool.jaxdiag] in pyproject.toml")
    lint = _Lint(config, app_dir, seed if seed is not None else config.seed,
                 list(select) or config.select, list(ignore) + config.ignore, keep_going, include_tests)
    return lint.run(items, from_config=from_config)


def _config_paths(config: _config.Config) -> list[ModuleType | str]:
    """Config paths are relative to the pyproject.toml that names them; module names stay as they are."""
    base = Path(config.source).parent if config.source else Path.cwd()
    out: list[ModuleType | str] = []
    for item in config.paths:
        candidate = base / item
        out.append(_locate.relative_path(str(candidate)) if candidate.exists() else item)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Discovery
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Walked:
    """A module that was imported and scanned; `label` is how reports name it (dotted name or file path)."""

    module: ModuleType
    label: str
    by_path: bool


@dataclass
class Found:
    """One target: the object to check, where it is defined, and every name configuration may use for it."""

    obj: Any
    kind: str
    walked: Walked
    attr: str
    keys: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.walked.label}:{self.attr}"


def _is_test_name(name: str) -> bool:
    return name in ("tests", "test", "conftest") or name.startswith("test_") or name.endswith("_test")


def _posix(path: str) -> str:
    return path.replace(os.sep, "/")


def _package_root(path: Path) -> tuple[str, Path] | None:
    """(dotted name, sys.path root) for a file or folder inside a package, or None for a loose file/folder."""
    path = path.resolve()
    parts = [] if path.name == "__init__.py" else [path.stem if path.is_file() else path.name]
    folder = path.parent
    if path.is_dir():
        if not (path / "__init__.py").is_file():
            return None
    elif not (folder / "__init__.py").is_file():
        return None
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts), folder


def _module_file(module: ModuleType) -> str | None:
    return getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", []) or []), None)


def _forget_foreign(name: str, root: Path) -> None:
    """Drop an already-imported package of the same name that lives elsewhere (two checkouts, two temp dirs).

    A clash with an installed or standard-library module is an error: unloading it would break whoever uses it.
    """
    top = name.split(".")[0]
    existing = sys.modules.get(top)
    where = _module_file(existing) if existing is not None else None
    if existing is None or (where is not None and Path(where).resolve().is_relative_to(root.resolve())):
        return
    installed = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    if where is None or any(Path(where).resolve().is_relative_to(p) for p in installed):
        raise UsageError(f"package {top!r} under {str(root)!r} has the name of an installed module "
                         f"({where or 'built in'}); rename it or check it by module name with --app-dir")
    for key in [k for k in sys.modules if k == top or k.startswith(top + ".")]:
        del sys.modules[key]


class _Lint:
    def __init__(self, config: _config.Config, app_dir: str, seed: int, select: list[str], ignore: list[str],
                 keep_going: bool, include_tests: bool):
        self.config = config
        self.app_dir = app_dir
        self.seed = seed
        self.select = select
        self.ignore = ignore
        self.keep_going = keep_going
        self.include_tests = include_tests
        self.walked: list[Walked] = []
        self.failed: list[TargetReport] = []
        self.used_inline: set[tuple[str, int, str]] = set()
        self.used_config: set[tuple[str, str]] = set()
        self.matched_keys: set[str] = set()
        self.unchecked_lines: set[tuple[str, int]] = set()
        self.config_dir = Path(config.source).parent if config.source else Path.cwd()

    # -- the run ---------------------------------------------------------------------------------------------

    def run(self, items: Sequence[ModuleType | str], from_config: bool) -> Report:
        importlib.invalidate_caches()  # files written since the interpreter started (tests, generators)
        for item in items:
            try:
                self._walk_item(item)
            except TargetLoadError:
                raise
            except UsageError as exc:
                if from_config:
                    raise UsageError(f"{exc} (from `paths` under [tool.jaxdiag] in {self.config.source})") from None
                raise
        reports: list[TargetReport] = list(self.failed)
        for found in self._discover():
            reports.extend(self._check(found))
        reports.extend(self._unused_suppressions(report_stale_keys=from_config))
        for report in reports:
            if report.kind in ("module", "config"):
                report.findings = self._filter_notes(report.findings)
        return Report(reports, jaxdiag_version=__version__, jax_version=_compat.JAX_VERSION)

    # -- importing ---------------------------------------------------------------------------------------------

    def _walk_item(self, item: ModuleType | str) -> None:
        if isinstance(item, ModuleType):
            self._walk_module(item, item.__name__, by_path=False)
            return
        text = item.strip()
        path = Path(text)
        if path.exists() or text.endswith(".py") or "/" in text or os.sep in text:
            self._walk_path(path, text)
        else:
            self._walk_name(text)

    def _walk_path(self, path: Path, text: str) -> None:
        if not path.exists():
            raise UsageError(f"{text!r}: no such file or directory")
        if path.is_file() and path.suffix != ".py":
            raise UsageError(f"{text!r} is not a Python file (expected a .py file, a folder, or a module name)")
        package = _package_root(path)
        if package is not None:
            name, root = package
            module = self._import_from_root(name, root, _locate.relative_path(str(path)))
            if module is not None:
                self._walk_module(module, self._path_label(module), by_path=True)
        elif path.is_file():
            module = self._import(str(path), _posix(_locate.relative_path(str(path))))
            if module is not None:
                self._add(module, _posix(_locate.relative_path(str(path))), by_path=True)
        else:
            self._walk_folder(path)

    def _walk_folder(self, folder: Path) -> None:
        """A folder without `__init__.py`: its files, its packages, and its plain subfolders, sorted."""
        for entry in sorted(folder.iterdir(), key=lambda p: p.name):
            if entry.name.startswith(".") or entry.name.endswith(".egg-info"):
                continue
            if entry.is_dir():
                if entry.name in SKIPPED_DIRS or (entry / "pyvenv.cfg").exists():
                    continue
                if _is_test_name(entry.name) and not self.include_tests:
                    continue
                self._walk_path(entry, str(entry))
            elif entry.suffix == ".py" and entry.name not in SKIPPED_FILES:
                if _is_test_name(entry.stem) and not self.include_tests:
                    continue
                self._walk_path(entry, str(entry))

    def _walk_name(self, name: str) -> None:
        if not all(part.isidentifier() for part in name.split(".")):
            hint = (" (jaxdiag check takes modules, packages or files; check one target with `jaxdiag batching` "
                    "or `jaxdiag grad`)") if ":" in name else ""
            raise UsageError(f"{name!r} is neither an existing path nor a module name{hint}")
        add_app_dir(self.app_dir)
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            spec = None
        except Exception:  # a parent package failed to import: report it like any import failure
            spec = True  # type: ignore[assignment]
        if spec is None:
            raise UsageError(f"module {name!r} not found (not a path either; looked in --app-dir "
                             f"{os.path.abspath(self.app_dir)!r} and on sys.path)")
        module = self._import(name, name)
        if module is not None:
            self._walk_module(module, name, by_path=False)

    def _import_from_root(self, name: str, root: Path, label: str) -> ModuleType | None:
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
        _forget_foreign(name, root)
        return self._import(name, label)

    def _import(self, what: str, label: str) -> ModuleType | None:
        """Import a module name or file; a failure is exit 2, or a JXR905 report with --keep-going."""
        try:
            return load_module(what, self.app_dir)
        except TargetLoadError as exc:
            if not self.keep_going:
                raise TargetLoadError(f"{exc} (pass --keep-going to report it and check the other modules)"
                                      ) from None
            self.failed.append(_import_failure(label, str(exc), what))
            return None

    def _path_label(self, module: ModuleType) -> str:
        where = _module_file(module)
        return _posix(_locate.relative_path(where)) if where else module.__name__

    def _walk_module(self, module: ModuleType, label: str, by_path: bool) -> None:
        self._add(module, label, by_path)
        if not hasattr(module, "__path__"):
            return
        for info in pkgutil.iter_modules(module.__path__, module.__name__ + "."):
            short = info.name.rsplit(".", 1)[-1]
            if short == "__main__" or (_is_test_name(short) and not self.include_tests):
                continue
            sub = self._import(info.name, _submodule_label(info, short) if by_path else info.name)
            if sub is not None:
                self._walk_module(sub, self._path_label(sub) if by_path else info.name, by_path)

    def _add(self, module: ModuleType, label: str, by_path: bool) -> None:
        if all(w.module is not module for w in self.walked):
            self.walked.append(Walked(module, label, by_path))

    # -- finding targets ---------------------------------------------------------------------------------------

    def _discover(self) -> list[Found]:
        """Every target once (by identity), attributed to its defining module, in walk and definition order.

        Discovered: primitives with a user rule and custom_* objects. Configured: any attribute named in
        `[tool.jaxdiag.targets]` or the module's JAXDIAG dict, whatever its kind (e.g. a function calling ffi_call).
        """
        roots = {w.module.__name__.split(".")[0] for w in self.walked}
        seen: dict[int, list[Found]] = {}
        for walked in self.walked:
            configured = self._configured_attrs(walked)
            for attr, value in list(vars(walked.module).items()):
                if attr.startswith("__"):
                    continue
                candidate = _candidate(value, roots)
                if candidate is None and attr in configured:
                    candidate = _configured_candidate(value, f"{walked.label}:{attr}")
                if candidate is not None:
                    kind, obj = candidate
                    seen.setdefault(id(obj), []).append(Found(obj, kind, walked, attr))
        chosen = [_defining(places) for places in seen.values()]
        order = {id(w.module): i for i, w in enumerate(self.walked)}
        chosen.sort(key=lambda f: (order[id(f.walked.module)], list(vars(f.walked.module)).index(f.attr)))
        for found in chosen:
            found.keys = [f"{prefix}:{found.attr}" for prefix in self._prefixes(found.walked)]
        return chosen

    def _configured_attrs(self, walked: Walked) -> set[str]:
        """Attributes of this module named by pyproject targets or its JAXDIAG dict; a missing one is exit 2."""
        prefixes = set(self._prefixes(walked))
        names = {key.rpartition(":")[2] for key in self.config.targets if key.rpartition(":")[0] in prefixes}
        table = getattr(walked.module, "JAXDIAG", None)
        if isinstance(table, dict):
            names.update(k for k in table if isinstance(k, str))
        missing = sorted(n for n in names if not hasattr(walked.module, n))
        if missing:
            raise UsageError(f"{walked.label} has no attribute {missing[0]!r}, named as a target in "
                             f"{'JAXDIAG' if isinstance(table, dict) and missing[0] in table else 'pyproject.toml'}")
        return names

    def _prefixes(self, walked: Walked) -> list[str]:
        """How configuration may name a module: `pkg.mod`, its label, `path/file.py` from the config folder or cwd."""
        prefixes = [walked.module.__name__, walked.label]
        for base in (self.config_dir, Path.cwd()):
            relative = _relative_file(walked.module, base)
            if relative:
                prefixes.append(relative)
        return list(dict.fromkeys(prefixes))

    def _config_key(self, found: Found) -> str:
        """The key to suggest in pyproject.toml: the form the user checks with (path from the config's folder)."""
        relative = _relative_file(found.walked.module, self.config_dir) if found.walked.by_path else None
        return f"{relative}:{found.attr}" if relative else f"{found.walked.module.__name__}:{found.attr}"

    # -- checking ----------------------------------------------------------------------------------------------

    def _check(self, found: Found) -> list[TargetReport]:
        args, params, origin = self._inputs_for(found)
        target = Target(ref=found.label, obj=found.obj, kind=found.kind, module=found.walked.module)
        anchors = _engine.suppression_anchors(target)
        try:
            report = _engine.run(target, args, params, Options(command="check", seed=self.seed),
                                 app_dir=self.app_dir, used_suppressions=self.used_inline)
        except InferenceError as exc:
            report = Report([self._not_inferred(found, exc, anchors)])
            self._mark_unchecked(found, anchors)
        except UsageError as exc:
            raise UsageError(f"{found.label}{origin}: {exc}") from None
        except Exception as exc:  # jaxdiag's own bug on this target: report it (exit 3), check the others
            if os.environ.get("JAXDIAG_DEBUG"):
                raise
            report = Report([TargetReport(found.label, found.kind, checks=[CheckResult(
                "engine", "error", 0.0, f"internal error: {type(exc).__name__}: {exc}")])])
            self._mark_unchecked(found, anchors)
        for tr in report.targets:
            tr.module = found.walked.label
            if any(c.status == "error" for c in tr.checks):
                self._mark_unchecked(found, anchors)
            tr.findings = self._filter(tr.findings, found.keys, anchors)
            for finding in tr.findings:  # SARIF and GitHub annotations need a file and line for every finding
                if finding.location is None and anchors:
                    finding.location = anchors[0]
        return report.targets

    def _inputs_for(self, found: Found) -> tuple[list[str], dict[str, Any], str]:
        """(args, params, where they came from) from pyproject, else the module's JAXDIAG dict, else none."""
        for key in found.keys:
            entry = self.config.target(key)
            if entry is not None:
                return list(entry.args), _hashable(entry.params), f" ([tool.jaxdiag.targets.\"{key}\"])"
        table = getattr(found.walked.module, "JAXDIAG", None)
        if table is None:
            return [], {}, ""
        where = f" (JAXDIAG in {found.walked.label})"
        if not isinstance(table, dict):
            raise UsageError(f"{found.walked.label}: JAXDIAG must be a dict mapping attribute names to "
                             "{'args': [SPEC, ...], 'params': {...}}")
        names = [n for n, v in vars(found.walked.module).items() if v is found.obj or _unjit(v) is found.obj]
        for name in [found.attr] + names:
            entry = table.get(name)
            if entry is None:
                continue
            args, params = (entry.get("args", []), entry.get("params", {})) if isinstance(entry, dict) else (
                None, None)
            if not isinstance(args, (list, tuple)) or not all(isinstance(a, str) for a in args) or not isinstance(
                    params, dict) or not set(entry) <= {"args", "params"}:
                raise UsageError(f"{found.walked.label}: JAXDIAG[{name!r}] must be {{'args': [SPEC, ...], "
                                 "'params': {...}}} with SPEC strings such as 'f32[3]'")
            return list(args), _hashable(params), where
        return [], {}, ""

    def _not_inferred(self, found: Found, exc: InferenceError, anchors: list[Location]) -> TargetReport:
        key = self._config_key(found)
        args = ", ".join('"f32[3]"' for _ in range(max(exc.arity, 1)))
        snippet = f"[tool.jaxdiag.targets.\"{key}\"]\nargs = [{args}]"
        missing = _missing_params(found) if found.kind == "primitive" else []
        if missing:
            snippet += "\nparams = {" + ", ".join(f"{m} = 0" for m in missing) + "}"
        tried = "; ".join(exc.tried[:6])
        finding = rules.INPUTS_NOT_INFERRED.finding(
            f"could not infer example inputs for {found.label} (tried {tried}; last error: {exc.last_error}); "
            "it was not checked.",
            fix=f"Add its inputs to pyproject.toml (one SPEC per positional argument, e.g. f32[2,3], i32[5]"
                f"{', and its bind params' if missing else ''}):\n{snippet}\n"
                f"or define JAXDIAG = {{\"{found.attr}\": {{\"args\": [{args}]}}}} in {found.walked.label}.",
            location=anchors[0] if anchors else None)
        return TargetReport(found.label, found.kind, checks=[CheckResult(
            "infer-inputs", "skipped", 0.0, "could not infer example inputs")], findings=[finding],
            module=found.walked.label)

    def _mark_unchecked(self, found: Found, anchors: list[Location]) -> None:
        """Lines whose suppressions cannot be judged because this target was not (fully) checked."""
        for loc in [*anchors, *_rule_locations(found)]:
            self.unchecked_lines.add((os.path.abspath(loc.path), loc.line))

    # -- filtering ---------------------------------------------------------------------------------------------

    def _filter(self, findings: list[Finding], keys: list[str], anchors: Sequence[Location]) -> list[Finding]:
        """Inline comments, then per-target-ignores, then select/ignore; records which suppressions were used."""
        codes = self._per_target_codes(keys)
        kept = []
        for f in findings:
            if _engine.suppressed_inline(f, anchors, self.used_inline):
                continue
            hits = [(k, c) for k, c in codes if rules.matches(f.code, [c])]
            if hits:
                self.used_config.update(hits)
                continue
            if not self._deselected(f):
                kept.append(f)
        return kept

    def _filter_notes(self, findings: list[Finding]) -> list[Finding]:
        """Module-level notes: a JXR904 is silenced only by a comment naming JXR904 (a bare `# jaxdiag: ignore`
        must not hide the report that it is itself unused)."""
        kept = []
        for f in findings:
            if f.code == rules.UNUSED_SUPPRESSION.code:
                silenced = rules.UNUSED_SUPPRESSION.code in (_locate.inline_ignores(f.location) or set())
            else:
                silenced = _engine.suppressed_inline(f, (), self.used_inline)
            if not silenced and not self._deselected(f):
                kept.append(f)
        return kept

    def _deselected(self, finding: Finding) -> bool:
        return bool((self.select and not rules.matches(finding.code, self.select))
                    or (self.ignore and rules.matches(finding.code, self.ignore)))

    def _per_target_codes(self, keys: list[str]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for pattern, codes in self.config.per_target_ignores.items():
            if any(fnmatch.fnmatchcase(k, pattern) for k in keys):
                self.matched_keys.add(pattern)
                out.extend((pattern, c) for c in codes)
        return out

    # -- unused suppressions -----------------------------------------------------------------------------------

    def _unused_suppressions(self, report_stale_keys: bool) -> list[TargetReport]:
        reports = []
        for walked in self.walked:
            where = getattr(walked.module, "__file__", None)
            if not where or not where.endswith(".py"):
                continue
            findings = _unused_inline(where, self.used_inline, self.unchecked_lines)
            if findings:
                reports.append(TargetReport(walked.label, "module", findings=findings, module=walked.label))
        config_findings = self._unused_config(report_stale_keys)
        if config_findings:
            label = _posix(_locate.relative_path(self.config.source or "pyproject.toml"))
            reports.append(TargetReport(label, "config", findings=config_findings, module=label))
        return reports

    def _unused_config(self, report_stale_keys: bool) -> list[Finding]:
        out = []
        source = self.config.source or "pyproject.toml"
        for pattern, codes in self.config.per_target_ignores.items():
            location = _config_key_location(source, pattern)
            if pattern not in self.matched_keys:
                if report_stale_keys:
                    out.append(rules.UNUSED_SUPPRESSION.finding(
                        f"per-target-ignores key {pattern!r} matches no target found in the configured paths.",
                        fix="Use a key of the form `package.module:attr` or `path/file.py:attr` (globs allowed, "
                            "e.g. `pkg.mod:*`), as printed in the report, or remove it.",
                        location=location))
                continue
            unused = [c for c in codes if (pattern, c) not in self.used_config]
            if unused:
                out.append(rules.UNUSED_SUPPRESSION.finding(
                    f"per-target-ignores[{pattern!r}] lists {', '.join(unused)}, which suppressed nothing.",
                    fix=f"Remove {', '.join(unused)} from per-target-ignores[{pattern!r}] in pyproject.toml.",
                    location=location))
        return out


# ---------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------


def _relative_file(module: ModuleType, base: Path) -> str | None:
    where = getattr(module, "__file__", None)
    try:
        return Path(where).resolve().relative_to(base.resolve()).as_posix() if where else None
    except ValueError:
        return None


def _configured_candidate(value: Any, label: str) -> tuple[str, Any]:
    try:
        return classify(value)
    except TargetLoadError as exc:
        raise UsageError(f"{label} is configured as a target, but {exc}") from None


def _unjit(value: Any) -> Any:
    try:
        return classify(value)[1] if _compat.is_jit_wrapped(value) else value
    except Exception:
        return value


def _origin(obj: Any, kind: str) -> str | None:
    """The module that defines the object: its function's module, or for a primitive its first user rule's."""
    if kind == "primitive":
        for rule in _compat.registered_rules(obj).values():
            module = getattr(_locate.unwrap(rule), "__module__", None) if rule is not None else None
            if module and module.split(".")[0] not in JAX_ROOTS:
                return module
        return None
    return getattr(_locate.unwrap(getattr(obj, "fun", None) or obj), "__module__", None)


def _candidate(value: Any, roots: set[str]) -> tuple[str, Any] | None:
    """(kind, object) when `value` is a user target; JAX's own objects and other libraries' are skipped."""
    try:
        if _compat.is_primitive(value):
            if _compat.is_builtin_primitive(value):
                return None
            kind, obj = "primitive", value
        elif isinstance(value, (ModuleType, type)) or not callable(value):
            return None
        elif any(test(value) for test in (_compat.is_custom_vjp, _compat.is_custom_jvp, _compat.is_custom_vmap)) \
                or _compat.is_jit_wrapped(value):
            kind, obj = classify(value)
            if kind not in CUSTOM_KINDS:
                return None
        else:
            return None
    except Exception:  # an exotic module attribute (lazy proxies, broken descriptors) is not a target
        return None
    origin = _origin(obj, kind)
    root = origin.split(".")[0] if origin else None
    if root in JAX_ROOTS or (root is not None and root not in roots):
        return None
    return kind, obj


def _defining(places: list[Found]) -> Found:
    """Of the modules holding the same object, the one that defines it (assignment line, or its function's)."""
    if len(places) == 1:
        return places[0]
    first = places[0]
    if first.kind == "primitive":
        for found in places:
            if _locate.locate_assignment(found.walked.module, found.obj, [found.attr]) is not None:
                return found
    origin = _origin(first.obj, first.kind)
    for found in places:
        if found.walked.module.__name__ == origin:
            return found
    direct = [f for f in places if vars(f.walked.module).get(f.attr) is f.obj]  # prefer `g` over `jit(g)`
    return (direct or places)[0]


def _hashable(value: Any) -> Any:
    """TOML arrays become tuples: JAX hashes bind params (jit caches on them)."""
    if isinstance(value, dict):
        return {k: _hashable(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def _missing_params(found: Found) -> list[str]:
    """Keyword-only parameters without defaults in a primitive's impl or abstract eval: bind params to give."""
    for fn in (_compat.impl(found.obj), _compat.abstract_eval_rule(found.obj)):
        if fn is None or not _locate.is_user_code(fn):
            continue
        try:
            params = inspect.signature(_locate.unwrap(fn)).parameters.values()
        except (TypeError, ValueError):
            continue
        return [p.name for p in params if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    return []


def _rule_locations(found: Found) -> list[Location]:
    if found.kind == "primitive":
        fns = list(_compat.registered_rules(found.obj).values())
    else:
        fns = [getattr(found.obj, name, None) for name in ("fun", "fwd", "bwd", "jvp", "vmap_rule")]
    locs = [_locate.locate(fn) for fn in fns if fn is not None and callable(fn)]
    return [loc for loc in locs if loc is not None]


def _submodule_label(info: pkgutil.ModuleInfo, short: str) -> str:
    """The file of a submodule that pkgutil listed, for reports about it before (or without) importing it."""
    folder = Path(getattr(info.module_finder, "path", "."))
    path = folder / short / "__init__.py" if info.ispkg else folder / f"{short}.py"
    return _posix(_locate.relative_path(str(path)))


def _import_failure(label: str, message: str, what: str) -> TargetReport:
    match = re.search(r" at (.+?):(\d+): ", message)
    if match:
        location: Location | None = Location(_posix(match.group(1)), int(match.group(2)), "<module>")
    else:
        location = Location(_posix(what), 1, "<module>") if what.endswith(".py") else None
    finding = rules.IMPORT_FAILED.finding(
        message, fix=f"Make `{what}` importable (reproduce with `python -c \"import ...\"` or run the file), or "
                     "leave it out of the checked paths.", location=location)
    return TargetReport(label, "module", checks=[CheckResult("import", "failed", 0.0, message)],
                        findings=[finding], module=label)


def _suppression_lines(path: str) -> Iterator[int]:
    """Lines holding a real `# jaxdiag: ignore` comment (tokenize: not text inside strings)."""
    try:
        with tokenize.open(path) as handle:
            for tok in tokenize.generate_tokens(handle.readline):
                if tok.type == tokenize.COMMENT and "jaxdiag" in tok.string:
                    yield tok.start[0]
    except (OSError, SyntaxError, tokenize.TokenError, UnicodeDecodeError):
        return


def _unused_inline(path: str, used: set[tuple[str, int, str]], unchecked: set[tuple[str, int]]) -> list[Finding]:
    full = os.path.abspath(path)
    out = []
    for line in _suppression_lines(path):
        if (full, line) in unchecked:
            continue
        location = Location(_posix(_locate.relative_path(path)), line, "")
        codes = _locate.inline_ignores(location)
        if not codes:
            continue
        unused = sorted(c for c in codes if (full, line, c) not in used)
        if not unused:
            continue
        text = linecache.getline(path, line)
        match = _NAME_RE.match(text)
        name = (match.group(1) or match.group(2)) if match else "<module>"
        location = Location(location.path, line, name)
        if "*" in unused:
            message, fix = "`# jaxdiag: ignore` suppressed nothing on this line.", "Remove the comment."
        else:
            listed = ", ".join(unused)
            message = f"`# jaxdiag: ignore[{listed}]` suppressed nothing on this line."
            fix = "Remove the comment." if len(unused) == len(codes) else f"Remove {listed} from the comment."
        out.append(rules.UNUSED_SUPPRESSION.finding(message, fix=fix, location=location))
    return out


def _config_key_location(source: str, key: str) -> Location:
    """The pyproject.toml line that names a per-target-ignores key (line 1 when it cannot be found)."""
    label = _posix(_locate.relative_path(source))
    try:
        lines = Path(source).read_text(encoding="utf-8").splitlines()
    except OSError:
        return Location(label, 1, "per-target-ignores")
    inside = False
    for number, text in enumerate(lines, start=1):
        if "per-target-ignores" in text:
            inside = True
        if inside and (f'"{key}"' in text or f"'{key}'" in text or text.strip().startswith(f"{key} ")):
            return Location(label, number, "per-target-ignores")
    return Location(label, 1, "per-target-ignores")
