"""Source locations of the user's rules and functions, inline `# jaxdiag: ignore[...]` comments, and the parsed
source of a user's file (`parsed_file`: the one reader of a whole file by AST, here so that both the checks and the
parent's filtering, which runs on cached results without the module, share it)."""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import os
import re
from typing import Any

from ._report import Location

# `# jaxdiag: ignore[CODE, ...]` (or bare: every code), and its variant `# jaxdiag: intended[CODE, ...]`: the same
# suppression, naming warnings whose deliberate reading is the right one (an estimator, a hyperparameter); it needs
# codes, and `_validate` refuses errors in it.
_IGNORE_RE = re.compile(r"#\s*jaxdiag:\s*(ignore|intended)(?:\[([A-Za-z0-9_,\s]*)\])?")


ABSENT = object()


def declared_attribute(obj: Any, name: str, default: Any = None) -> Any:
    """`getattr(obj, name, default)` for an attribute that `obj`, its class or its metaclass declares (an instance
    or class `__dict__` entry, a slot, a property), without asking a `__getattr__` for it. jaxdiag reads attributes
    of every module-level object of the user's package, and a `__getattr__` may raise anything for every name: a
    placeholder class for a missing optional backend raises ModuleNotFoundError for `cls.__wrapped__`."""
    try:
        inspect.getattr_static(obj, name)
    except AttributeError:
        return default
    return getattr(obj, name, default)


def unwrap(fn: Any) -> Any:
    """The user's own function behind partials, decorators and `functools.wraps` wrappers."""
    for _ in range(20):
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif (inner := declared_attribute(fn, "__wrapped__", ABSENT)) is not ABSENT:
            fn = inner
        elif (inner := declared_attribute(fn, "__func__", ABSENT)) is not ABSENT:
            fn = inner
        else:
            break
    return fn


def package_folders(module: Any) -> list[str]:
    """The folders a package's submodules are imported from, [] for a plain module: the import system's own record
    (`__spec__.submodule_search_locations`), since a plain module may hold a global named `__path__` (a `Path`)."""
    # declared only: a stub module's `__getattr__` raises for every name (haiku's placeholder for a missing flax
    # raises ImportError for `__path__`)
    spec = declared_attribute(module, "__spec__", None)
    found = declared_attribute(module, "__path__", None) if spec is None else spec.submodule_search_locations
    try:
        return [os.fspath(folder) for folder in found or []]
    except TypeError:
        return []


# The attributes a wrapper object keeps the function it wraps in (equinox's `filter_custom_vjp` keeps `.fn`).
HOLDING_ATTRIBUTES = ("__wrapped__", "fn", "func")


def held_function(obj: Any) -> Any | None:
    """The function a wrapper object holds (`HOLDING_ATTRIBUTES`), unwrapped; None when it holds none."""
    held = next((declared_attribute(obj, n) for n in HOLDING_ATTRIBUTES if inspect.isfunction(
        unwrap(declared_attribute(obj, n)))), None)
    return unwrap(held) if held is not None else None


def relative_path(path: str) -> str:
    """Relative to the current directory for files under it (what editors and CI annotations expect); absolute
    for files elsewhere (site-packages), where `../../..` chains help nobody."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # different drive on Windows
        return path
    return os.path.abspath(path) if rel == ".." or rel.startswith(".." + os.sep) else rel


def def_line(filename: str, first_line: int) -> int:
    """The `def` line of a function whose code starts at `first_line` (which may be a decorator)."""
    for offset in range(0, 50):
        text = linecache.getline(filename, first_line + offset).lstrip()
        if not text:
            if offset and not linecache.getline(filename, first_line + offset):
                break
            continue
        if text.startswith(("def ", "async def ")) or re.search(r"\blambda\b", text):
            return first_line + offset
        if not text.startswith("@") and offset:
            break
    return first_line


def locate(fn: Any) -> Location | None:
    """The file, `def` line and name of a user's function, relative to the current directory."""
    fn = unwrap(fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        call = getattr(type(fn), "__call__", None)  # noqa: B004 - its code object, not a callable test
        code = getattr(call, "__code__", None)
        if code is None:
            return None
    filename = code.co_filename
    if not filename or filename.startswith("<"):
        return None
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or code.co_name
    # a lambda starts on its own line (`p.def_abstract_eval(lambda x: ...)`): no `def` to look for below it
    line = code.co_firstlineno if code.co_name == "<lambda>" else def_line(filename, code.co_firstlineno)
    return Location(relative_path(filename), line, name)


# What is not the user's code: JAX, NumPy, the wrappers of the standard library, and jaxdiag itself (except the
# samples it ships, which stand for user code). `is_user_code` decides by a function's module, `is_user_file` by
# a traceback frame's file; every "is this the user's?" question in jaxdiag is one of these two.
_LIBRARY_ROOTS = ("jax", "jaxlib", "jaxdiag", "numpy", "ml_dtypes", "functools")
_STDLIB_WRAPPERS = (f"{os.sep}contextlib.py", f"{os.sep}functools.py")
_SAMPLES_MODULE = "jaxdiag.samples"


@functools.cache
def _library_folders() -> tuple[str, ...]:
    """The folders the library packages are installed in (found, never imported: the parent process imports no
    JAX), each ending in a separator. By folder, not by a `/jax/` in the path: a user's package may have a
    subpackage named `jax` (`mylib/_src/jax/transpose.py`, a backend folder) and is still the user's."""
    import importlib.util

    out: list[str] = []
    for root in _LIBRARY_ROOTS:
        try:
            spec = importlib.util.find_spec(root)
        except (ImportError, ValueError):
            spec = None
        out += [os.path.join(os.path.realpath(d), "") for d in (spec.submodule_search_locations or [])
                if spec is not None] if spec is not None else []
    return tuple(out)


def is_user_code(fn: Any) -> bool:
    """True for the user's function (by its module): not JAX's, NumPy's, functools' or jaxdiag's own."""
    module = getattr(unwrap(fn), "__module__", "") or ""
    if module == _SAMPLES_MODULE or module.startswith(_SAMPLES_MODULE + "."):
        return True
    return module.split(".")[0] not in _LIBRARY_ROOTS


def is_user_file(filename: str) -> bool:
    """True for a traceback frame in the user's code (by its file), the same split as `is_user_code`."""
    if f"{os.sep}jaxdiag{os.sep}samples{os.sep}" in filename:
        return True
    if filename.startswith("<frozen") or filename.endswith(_STDLIB_WRAPPERS):
        return False
    return not _in_library(filename)


@functools.lru_cache(maxsize=8192)
def _in_library(filename: str) -> bool:
    real = os.path.realpath(filename) if os.path.isabs(filename) else filename
    return real.startswith(_library_folders())


def locate_assignment(module: Any, obj: Any, names: list[str] | None = None) -> Location | None:
    """The line in `module` that assigns `obj` (e.g. `my_p = Primitive("my")`)."""
    try:
        filename = inspect.getsourcefile(module)
        lines = inspect.getsourcelines(module)[0]
    except (TypeError, OSError):
        return None
    if filename is None:
        return None
    if names is None:  # the object's own names, then a wrapper's holding it one level down (`foo_p = Kernel(...)`)
        names = [k for k, v in vars(module).items() if v is obj] + [
            k for k, v in vars(module).items() if v is not obj and _holds(v, obj)]
    for name in names:
        pattern = re.compile(rf"^\s*{re.escape(name)}\s*(:[^=]*)?=")
        # one of several names a factory's result is unpacked into (`foo_p, foo_rev_p = make_op(...)`)
        unpacked = re.compile(rf"^\s*\(?\s*(?:\*?\w+\s*,\s*)*{re.escape(name)}\s*(?:,\s*\*?\w+\s*)*,?\s*\)?\s*=[^=]")
        for candidate in (pattern, unpacked):
            for i, text in enumerate(lines, start=1):
                if candidate.match(text):
                    return Location(relative_path(filename), i, name)
    return None


def dotted_attribute(obj: Any, dotted: str) -> Any:
    """`obj.a.b` for "a.b", or None where a part is missing (a name read from a report or a plan, not a target the
    user spelled: `_targets.resolve_attr` explains a missing part)."""
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
    return obj


def _holds(value: Any, obj: Any) -> bool:
    if isinstance(value, type) or inspect.ismodule(value) or inspect.isroutine(value):
        return False
    try:
        return any(v is obj for v in vars(value).values())
    except TypeError:  # no __dict__
        return False


def inline_ignores(location: Location | None) -> set[str] | None:
    """Codes suppressed by `# jaxdiag: ignore[...]` on the location's line: None if none, {"*"} for a bare one."""
    if location is None or not os.path.isfile(location.path):
        return None
    # Absolute key and a fresh check: in a long-lived process (pytest plugin, tests) the same relative path can
    # name another file, or the file may have been edited since linecache read it.
    full = os.path.abspath(location.path)
    linecache.checkcache(full)
    match = _IGNORE_RE.search(linecache.getline(full, location.line))
    if not match:
        return None
    if not match.group(2):
        return {"*"} if match.group(1) == "ignore" else None
    return {c.strip().upper() for c in match.group(2).split(",") if c.strip()}


def inline_keyword(location: Location) -> str:
    """`ignore` or `intended`: the keyword of the inline suppression on the location's line (`ignore` if none)."""
    full = os.path.abspath(location.path)
    match = _IGNORE_RE.search(linecache.getline(full, location.line))
    return match.group(1) if match else "ignore"


_TREES: dict[tuple[str, float], ast.Module | None] = {}


def parsed_file(path: str) -> ast.Module | None:
    """The parsed source of a Python file, cached by path and modification time (a package's modules are read for
    each of its rules); None when it cannot be read or parsed."""
    full = os.path.abspath(path)
    try:
        key = (full, os.path.getmtime(full))
    except OSError:
        return None
    if key not in _TREES:
        try:
            with open(full, "rb") as handle:
                _TREES[key] = ast.parse(handle.read(), filename=full)
        except (OSError, SyntaxError, ValueError):
            _TREES[key] = None
    return _TREES[key]
