"""Discovery for `jaxdiag check`: import what the user named and find the targets in it.

Imports module names, package folders, `.py` files and plain folders of files, walks packages with pkgutil
(tests are skipped unless asked), and collects module-level `Primitive`s with a user rule registered and
`custom_vjp` / `custom_jvp` / `custom_vmap` objects (also behind `jax.jit`), and the user primitives a found
primitive's JVP or transpose rule holds that no attribute does (`foo_p > foo_jvp`). An object found in several modules
(re-exports) is checked once, in the module that defines it. A module that fails to import stops the run
(exit 2), or with `--keep-going` becomes a blocking `import-failed` problem that no filter can hide. A module whose
import kills the process (a segfault in an extension, `os._exit`) ends the walk; the supervisor hears which module
it was (`on_import`) and, with `--keep-going`, walks again without it (`crashed`): that module gets the crash's
JXU001/JXU002 and the others are checked.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import inspect
import os
import pkgutil
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from .. import _compat
from .._core import _config, _locate
from . import _reach
from .._harness import call_user
from .._core._errors import TargetLoadError, UsageError
from .._core._report import CheckResult, Finding, Location, Problem, TargetReport
from .._loading._targets import add_app_dir, classify, load_module

CUSTOM_KINDS = ("custom_vjp", "custom_jvp", "custom_vmap")
JAX_ROOTS = ("jax", "jaxlib")
# Folders never walked when a plain directory is given: caches, virtual environments, build output.
SKIPPED_DIRS = {"__pycache__", "build", "dist", "node_modules", "site-packages", "venv", ".venv", "env"}
# Files never imported from a plain directory: running them has side effects or they belong to the test runner.
SKIPPED_FILES = {"setup.py", "conftest.py", "__main__.py", "noxfile.py"}

# Called with (module or file, label) before the walk imports it and with (module or file, None) once the import
# returned: `_child` tells the supervisor, which names the module if the process dies in its import.
on_import: Callable[[str, str | None], None] | None = None


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
    # the module attribute holding it when it is held by a wrapper (`foo_p = Kernel(...)` keeps the Primitive in
    # `foo_p.primitive`; a class keeps a custom_jvp as a class attribute): `attr` is then `foo_p.primitive`
    holder: Any = None

    @property
    def label(self) -> str:
        return f"{self.walked.label}:{self.attr}"


def _is_test_name(name: str) -> bool:
    """Test modules, and the modules of test helpers a package ships for its own tests (`testing`, `_testing`:
    stand-ins that are not the library's rules)."""
    return (name in ("tests", "test", "conftest", "testing", "_testing") or name.startswith("test_")
            or name.endswith("_test"))


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
    return getattr(module, "__file__", None) or next(iter(_locate.package_folders(module)), None)


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


class Discovery:
    """The modules walked (in order), the import failures (with --keep-going), and the targets in them."""

    def __init__(self, config: _config.Config, app_dir: str, keep_going: bool, include_tests: bool,
                 crashed: dict[str, dict[str, Any]] | None = None) -> None:
        self.config = config
        self.app_dir = app_dir
        self.keep_going = keep_going
        self.include_tests = include_tests
        # modules (or files) whose import killed an earlier walk of this run: {what: {exitcode, seconds}}
        self.crashed = dict(crashed or {})
        self.walked: list[Walked] = []
        self.failed: list[TargetReport] = []
        self._removed_lines: set[tuple[str, int]] = set()  # lines whose removed JAX name is already a finding
        self.config_dir = Path(config.source).parent if config.source else Path.cwd()

    def walk(self, items: Sequence[ModuleType | str], from_config: bool) -> None:
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
        namespace = _reach.namespace_name(path, self.app_dir)
        if namespace is not None:  # inside a namespace package: import by name so relative imports work
            add_app_dir(self.app_dir)
            module = self._import(namespace, _posix(_locate.relative_path(str(path))))
            if module is not None:
                self._walk_module(module, namespace, by_path=False)
            return
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
        found = call_user(importlib.util.find_spec, name)  # imports the parent packages: the user's code
        # a parent package that failed to import is reported like any import failure
        spec = found.value if found.error is None else None if isinstance(found.error, ModuleNotFoundError) else True
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
        """Import a module name or file; a failure is exit 2, or with --keep-going a blocking problem (exit 2 at
        the end of the run, after the other modules are checked). One whose import killed an earlier walk is not
        imported again: it is reported as that crash."""
        if what in self.crashed:
            self.failed.append(_import_crash(label, what, self.crashed[what]))
            return None
        if on_import is not None:
            on_import(what, label)
        try:
            module = load_module(what, self.app_dir)
        except TargetLoadError as exc:
            if _NOT_A_PYTHON_MODULE in str(exc) and _is_extension_file(what):  # a plain shared library the package
                return None  # loads itself (ctypes, an FFI); never a Python module raising those words
            if not self.keep_going:
                raise TargetLoadError(f"{exc} (pass --keep-going to report it and check the other modules)"
                                      ) from None
            self.failed.append(self._once(_import_failure(label, str(exc), what)))
            return None
        finally:
            if on_import is not None:
                on_import(what, None)
        placeholder = _placeholder(module)
        if placeholder is not None:  # nothing in it to walk, and every attribute read would raise
            self.failed.append(_placeholder_report(label, what, placeholder))
            return None
        return module

    def _once(self, report: TargetReport) -> TargetReport:
        """One line using a removed JAX name is one JXR008, on the first module whose import fails on it: every
        module importing a package's broken helper fails there too (each stays an import failure at that line)."""
        from .. import _rules as rules

        kept = []
        for finding in report.findings:
            line = (finding.location.path, finding.location.line) if finding.location is not None else None
            if finding.code == rules.REMOVED_JAX_API.code and line is not None:
                if line in self._removed_lines:
                    continue
                self._removed_lines.add(line)
            kept.append(finding)
        report.findings = kept
        return report

    def _path_label(self, module: ModuleType) -> str:
        where = _module_file(module)
        return _posix(_locate.relative_path(where)) if where else module.__name__

    def _walk_module(self, module: ModuleType, label: str, by_path: bool) -> None:
        self._add(module, label, by_path)
        folders = _locate.package_folders(module)
        if not folders:
            return
        for info in pkgutil.iter_modules(folders, module.__name__ + "."):
            short = info.name.rsplit(".", 1)[-1]
            if short == "__main__" or (_is_test_name(short) and not self.include_tests):
                continue
            sub = self._import(info.name, _submodule_label(info, short) if by_path else info.name)
            if sub is not None:
                self._walk_module(sub, self._path_label(sub) if by_path else info.name, by_path)
        for name in _reach.namespace_children(module):  # subfolders without __init__.py (pkgutil skips them)
            if _is_test_name(name.rsplit(".", 1)[-1]) and not self.include_tests:
                continue
            sub = self._import(name, name)
            if sub is not None:
                self._walk_module(sub, name, by_path)

    def _add(self, module: ModuleType, label: str, by_path: bool) -> None:
        if all(w.module is not module for w in self.walked):
            self.walked.append(Walked(module, label, by_path))

    # -- finding targets ---------------------------------------------------------------------------------------

    def discover(self) -> list[Found]:
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
                    continue
                for inner, held in _reach.held_by(value, roots):  # wrapper objects and classes, one level
                    candidate = _candidate(held, roots)
                    if candidate is not None:
                        kind, obj = candidate
                        seen.setdefault(id(obj), []).append(Found(obj, kind, walked, f"{attr}.{inner}", holder=value))
        chosen = [_defining(places) for places in seen.values()]
        order = {id(w.module): i for i, w in enumerate(self.walked)}
        chosen.sort(key=lambda f: (order[id(f.walked.module)], list(vars(f.walked.module)).index(
            f.attr.split(".")[0]), f.attr))
        chosen = _with_rule_held(chosen, roots)
        for found in chosen:
            found.keys = [f"{prefix}:{found.attr}" for prefix in self.prefixes(found.walked)]
        return chosen

    def _configured_attrs(self, walked: Walked) -> set[str]:
        """Attributes of this module named by pyproject targets or its JAXDIAG dict; a missing one is exit 2."""
        prefixes = set(self.prefixes(walked))
        names = {key.rpartition(":")[2] for key in self.config.targets if key.rpartition(":")[0] in prefixes}
        table = getattr(walked.module, "JAXDIAG", None)
        if isinstance(table, dict):
            names.update(k for k in table if isinstance(k, str))
        missing = sorted(n for n in names if not hasattr(walked.module, n))
        if missing:
            raise UsageError(f"{walked.label} has no attribute {missing[0]!r}, named as a target in "
                             f"{'JAXDIAG' if isinstance(table, dict) and missing[0] in table else 'pyproject.toml'}")
        return names

    def prefixes(self, walked: Walked) -> list[str]:
        """How configuration may name a module: `pkg.mod`, its label, `path/file.py` from the config folder or cwd."""
        prefixes = [walked.module.__name__, walked.label]
        for base in (self.config_dir, Path.cwd()):
            relative = _relative_file(walked.module, base)
            if relative:
                prefixes.append(relative)
        return list(dict.fromkeys(prefixes))

    def config_key(self, found: Found) -> str:
        """The key to suggest in pyproject.toml: the form the user checks with (path from the config's folder)."""
        relative = _relative_file(found.walked.module, self.config_dir) if found.walked.by_path else None
        return f"{relative}:{found.attr}" if relative else f"{found.walked.module.__name__}:{found.attr}"


# ---------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------


def _with_rule_held(chosen: list[Found], roots: set[str]) -> list[Found]:
    """`chosen`, each primitive followed by the user primitives its JVP and transpose rules hold that no module
    attribute does (a factory's JVP primitive, kept only by the forward primitive's JVP rule): one target each, by
    identity, named `parent_p > name` and held by the parent, so it is checked where the parent's rules bind it.
    A primitive JAX can only transpose (`_compat.transpose_only`: a reverse-mode-only JVP's tangent) has nothing to
    run on its own: it is checked through the primitive whose JVP rule binds it (JXN019), never a target itself."""
    covered = {id(held) for found in chosen if found.kind == "primitive"
               for held in _compat.transposed_tangents(found.obj)}
    known = {id(f.obj) for f in chosen} | covered
    out: list[Found] = []
    for found in chosen:
        if id(found.obj) in covered:
            continue
        out.append(found)
        # a JVP primitive, the reverse primitive its transpose binds, one more
        for held in _compat.rule_reachable_primitives(found.obj) if found.kind == "primitive" else []:
            if id(held) not in known and _candidate(held, roots) is not None:
                known.add(id(held))
                out.append(Found(held, "primitive", found.walked, f"{found.attr} > {held.name}", holder=found.obj))
    return out


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
    unwrapped = call_user(lambda: classify(value)[1] if _compat.is_jit_wrapped(value) else value)
    return unwrapped.value if unwrapped.error is None else value


def _origin(obj: Any, kind: str) -> str | None:
    """The module that defines the object: its function's module, or for a primitive its first user rule's."""
    if kind == "primitive":
        for rule in _compat.registered_rules(obj).values():
            module = getattr(_locate.unwrap(rule), "__module__", None) if rule is not None else None
            if module and module.split(".")[0] not in JAX_ROOTS:
                return module
        return None
    if kind == "function" and not inspect.isfunction(obj):
        # a wrapper object (equinox's `filter_custom_vjp`): defined where the function it wraps is, not in the
        # module of the wrapper's class
        held = _locate.held_function(obj)
        if held is not None:
            return getattr(held, "__module__", None)
    return getattr(_locate.unwrap(getattr(obj, "fun", None) or obj), "__module__", None)


def _kind_of(value: Any, roots: set[str]) -> tuple[str, Any] | None:
    if _compat.is_primitive(value):
        return None if _compat.is_builtin_primitive(value) else ("primitive", value)
    if isinstance(value, (ModuleType, type)) or not callable(value):
        return None
    if any(test(value) for test in (_compat.is_custom_vjp, _compat.is_custom_jvp, _compat.is_custom_vmap)) \
            or _compat.is_jit_wrapped(value):
        kind, obj = classify(value)
        return (kind, obj) if kind in CUSTOM_KINDS else _reach.wrapped_candidate(value, roots)
    return _reach.wrapped_candidate(value, roots)  # filter-style decorators: a callable holding the custom function


def _candidate(value: Any, roots: set[str]) -> tuple[str, Any] | None:
    """(kind, object) when `value` is a user target; JAX's own objects and other libraries' are skipped."""
    probed = call_user(_kind_of, value, roots)  # probing a module attribute may run its code (lazy proxies)
    if probed.value is None:  # not a target, or an exotic attribute that raised: not a target either
        return None
    kind, obj = probed.value
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
            if _locate.locate_assignment(found.walked.module, found.obj, [found.attr.split(".")[0]]) is not None:
                return found
    origin = _origin(first.obj, first.kind)
    for found in places:
        if found.walked.module.__name__ == origin:
            return found
    direct = [f for f in places if vars(f.walked.module).get(f.attr) is f.obj]  # prefer `g` over `jit(g)`
    unheld = [f for f in places if f.holder is None]  # the object's own name over a wrapper holding it
    return (direct or unheld or places)[0]


def _submodule_label(info: pkgutil.ModuleInfo, short: str) -> str:
    """The file of a submodule that pkgutil listed, for reports about it before (or without) importing it."""
    folder = Path(getattr(info.module_finder, "path", "."))
    path = folder / short / "__init__.py" if info.ispkg else folder / f"{short}.py"
    return _posix(_locate.relative_path(str(path)))


def _import_crash(label: str, what: str, crash: dict[str, Any]) -> TargetReport:
    """The report of a module whose import killed the process (JXU001/JXU002), at the module's line the crash's
    Python stack (faulthandler's) names, else its first line."""
    from .._core._outcomes import ended_early

    finding, result = ended_early(label, "", f"the import of {what}", crash.get("exitcode"),
                                  seconds=float(crash.get("seconds", 0.0)))
    found = call_user(importlib.util.find_spec, what) if not what.endswith(".py") else None
    origin = found.value.origin if found is not None and found.error is None and found.value else what
    if origin and origin.endswith(".py"):
        lines = [line for path, line in crash.get("frames", ()) if os.path.realpath(path) == os.path.realpath(origin)]
        finding.location = Location(_posix(_locate.relative_path(origin)), lines[0] if lines else 1, "<module>")
    # what the dying process printed (faulthandler's stack among it), shown with -v
    return TargetReport(label, "module", checks=[result], findings=[finding], module=label,
                        output=str(crash.get("output") or ""))


def _placeholder(module: ModuleType) -> str | None:
    """The error a placeholder module raises for every attribute, or None for a module: a package's stand-in for a
    missing optional dependency (haiku puts one at `haiku.experimental.flax` when flax is not installed, whose
    `__getattr__` raises ImportError for any name, `__path__` and a config table's name included)."""
    probe = call_user(getattr, module, "__jaxdiag_probe__", quiet=True)
    # only an ImportError says "what you want is not installed"; a lazy module's other errors for an unknown name
    # (a ValueError, a warning turned error) leave it a module to walk
    if not isinstance(probe.error, ImportError):
        return None
    return f"{type(probe.error).__name__}: {probe.error}"


_REQUIRES = re.compile(r"`?([A-Za-z_][\w.-]*)`? (?:to be|is not|be) installed")


def _placeholder_report(label: str, what: str, error: str) -> TargetReport:
    """A note naming the missing dependency the placeholder's error names ("features require `flax` to be
    installed"); an import failure where it names none."""
    dependency = _REQUIRES.search(error)
    if dependency is None:
        return _import_failure(label, f"importing {what} gives a placeholder module that raises {error}", what)
    return _dependency_note(label, f"{what} is a placeholder module: {error}", dependency.group(1), None)


def _dependency_note(label: str, message: str, dependency: str, location: Location | None) -> TargetReport:
    """A module not checked because an optional dependency of the package is not installed: a note (JXN011)."""
    from .. import _rules as rules

    finding = rules.DEPENDENCY_MISSING.finding(error=message, dependency=dependency, what=label, location=location)
    return TargetReport(label, "module", checks=[CheckResult("import", "skipped", 0.0, message)],
                        findings=[finding], module=label)


def _import_failure(label: str, message: str, what: str) -> TargetReport:
    match = re.search(r" at (.+?):(\d+): ", message)
    if match:
        location: Location | None = Location(_posix(match.group(1)), int(match.group(2)), "<module>")
    else:
        location = Location(_posix(what), 1, "<module>") if what.endswith(".py") else None
    missing = re.search(r"(?:ModuleNotFoundError|ImportError): No module named '([\w.]+)'", message)
    # a module of JAX that this JAX does not have (`jax.config`) is a removed API (below), never a missing dependency
    if missing and missing.group(1).split(".")[0] not in (what.replace("/", ".").split(".")[0], "jax"):
        # an optional dependency of the package, not installed here: a note, not a failure of the package
        return _dependency_note(label, message, missing.group(1).split(".")[0], location)
    problem = Problem("import-failed", message, location,
                      fix=f"Make `{what}` importable (reproduce with `python -c \"import ...\"` or run the file), or "
                          "leave it out of the checked paths.")
    return TargetReport(label, "module", checks=[CheckResult("import", "failed", 0.0, message)],
                        problems=[problem], module=label,
                        findings=_removed_api_at_import(label, message, location) if _own(location, what) else [])


def _own(location: Location | None, what: str) -> bool:
    """Whether the failing line is in the checked package itself (or the checked file's folder), not in a
    dependency it imports: a removed API in an installed dependency is fixed by upgrading it, not by editing."""
    if location is None:
        return False
    if what.endswith(".py"):
        folders = [os.path.dirname(os.path.abspath(what))]
    else:  # the package itself may be the module that failed (not in sys.modules then): its spec says where it is
        top = what.split(".")[0]
        found = call_user(importlib.util.find_spec, top) if top not in sys.modules else None
        spec = found.value if found is not None and found.error is None else None
        folders = (list(_locate.package_folders(sys.modules.get(top))) if found is None
                   else list(getattr(spec, "submodule_search_locations", None) or []))
    where = os.path.realpath(location.path)
    return any(where.startswith(os.path.realpath(folder) + os.sep) for folder in folders)


def _is_extension_file(what: str) -> bool:
    """Whether the module `what` names is an extension file (`.so`, `.pyd`) on disk, not Python source."""
    found = call_user(importlib.util.find_spec, what) if not what.endswith(".py") else None
    origin = getattr(found.value, "origin", None) if found is not None and found.error is None else None
    return bool(origin) and str(origin).endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


# What Python says importing a `.so` in a package folder that is a plain shared library, not an extension module:
# the package loads it itself (`ctypes.CDLL`, an FFI's loader), and the walk leaves it alone.
_NOT_A_PYTHON_MODULE = "dynamic module does not define module export function"


def _removed_api_at_import(label: str, message: str, location: Location | None) -> list[Finding]:
    """JXR008 when the import failed, on a line of the package's own, on a JAX name this release removed
    (`jax.core.Primitive` at module level, `from jax.lib import xla_client`): the package cannot be imported on this
    JAX at all, and the table says what replaces it."""
    from .._checks._shared import removed_api, removed_api_finding

    if removed_api(message) is None:
        return []
    return [removed_api_finding(message, f"module {label}", location)]

