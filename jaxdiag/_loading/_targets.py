"""Load a TARGET (`pkg.mod:attr.sub` or `path/file.py:attr`) and classify what it names."""

from __future__ import annotations

import difflib
import functools
import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import sys
import traceback
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .. import _compat
from .._harness import call_user
from .._core._errors import TargetLoadError, dependency_failure
from .._core import _locate
from .._core._locate import relative_path

KINDS = ("primitive", "custom_vjp", "custom_jvp", "custom_vmap", "function")


@dataclass
class Target:
    """A checkable object and how the user named it."""

    ref: str
    obj: Any
    kind: str
    module: ModuleType | None = None

    @property
    def module_name(self) -> str:
        return self.module.__name__ if self.module else self.ref.split(":")[0]


def classify(obj: Any) -> tuple[str, Any]:
    """(kind, object to check); unwraps `jax.jit` around custom_* objects. Raises TargetLoadError otherwise."""
    if _compat.is_primitive(obj):
        return "primitive", obj
    for kind, test in (("custom_vjp", _compat.is_custom_vjp), ("custom_jvp", _compat.is_custom_jvp),
                       ("custom_vmap", _compat.is_custom_vmap)):
        if test(obj):
            return kind, obj
    if _compat.is_jit_wrapped(obj):
        inner = obj.__wrapped__
        kind, inner_obj = classify(inner) if callable(inner) else ("function", obj)
        return (kind, inner_obj) if kind != "function" else ("function", obj)
    if isinstance(obj, functools.partial):
        return "function", obj
    if isinstance(obj, type):
        raise TargetLoadError(f"{obj.__module__}.{obj.__qualname__} is a class; jaxdiag checks a primitive, a "
                              "custom_vjp/custom_jvp/custom_vmap function, or a callable")
    if callable(obj):
        return "function", obj
    what = type(obj).__name__
    raise TargetLoadError(f"the target is a {what} object ({_short_repr(obj)}), not something jaxdiag can check: "
                          "expected a Primitive, a custom_vjp/custom_jvp/custom_vmap function, or a callable")


def _short_repr(obj: Any) -> str:
    text = repr(obj)
    return text if len(text) <= 60 else text[:57] + "..."


def split_target(text: str) -> tuple[str, str]:
    text = (text or "").strip()
    if not text:
        raise TargetLoadError("empty target: expected package.module:attr or path/to/file.py:attr")
    module_part, sep, attr = text.rpartition(":")
    if not sep or (len(module_part) == 1 and module_part.isalpha()):  # bare name or a Windows drive letter
        raise TargetLoadError(f"bad target {text!r}: missing ':' (expected package.module:attr or "
                              "path/to/file.py:attr)")
    if not module_part or not attr:
        raise TargetLoadError(f"bad target {text!r}: expected package.module:attr or path/to/file.py:attr")
    if not all(part.isidentifier() for part in attr.split(".")):
        raise TargetLoadError(f"bad target {text!r}: {attr!r} is not an attribute path (expected name or name.sub)")
    return module_part, attr


def load_target(text: str, app_dir: str = ".") -> Target:
    """Import the module or file and return the classified object. Every failure is a TargetLoadError."""
    from .._core._validate import folder_named

    module_part, attr = split_target(text)
    if folder_named(module_part, app_dir):  # a folder holds no attribute: never imported as a namespace package
        raise TargetLoadError(f"{module_part!r} is a directory; name a module (pkg.module:attr) or a file "
                              "(path/to/file.py:attr)")
    try:
        module = load_module(module_part, app_dir)
    except TargetLoadError as exc:
        if module_part.endswith(".py") and "relative import" in str(exc):  # a package's module, loaded as a file
            dotted = os.path.relpath(os.path.abspath(module_part), os.path.abspath(app_dir))[:-3]
            hint = ".".join(p for p in dotted.replace(os.sep, "/").split("/") if p not in ("", "."))
            raise TargetLoadError(f"{exc}; the file uses relative imports, so name it as a module: "
                                  f"{hint}:{attr} (with --app-dir set to the folder above the package)") from None
        raise
    obj = resolve_attr(module, attr, module_part)
    kind, checked = classify(obj)
    return Target(ref=f"{module_part}:{attr}", obj=checked, kind=kind, module=module)


def add_app_dir(app_dir: str) -> None:
    path = os.path.abspath(app_dir)
    if path not in sys.path:
        sys.path.insert(0, path)


def load_module(module_part: str, app_dir: str = ".") -> ModuleType:
    add_app_dir(app_dir)
    if module_part.endswith(".py") or os.sep in module_part or "/" in module_part:
        return _load_file(module_part, app_dir)
    if not all(part.isidentifier() for part in module_part.split(".")):
        raise TargetLoadError(f"bad module name {module_part!r}: expected package.module or path/to/file.py")
    imported = call_user(importlib.import_module, module_part)  # importing runs the user's module
    exc = imported.error
    if exc is None:
        return imported.value
    if isinstance(exc, ModuleNotFoundError):
        missing = exc.name or ""
        if missing and (module_part == missing or module_part.startswith(missing + ".")):
            raise TargetLoadError(f"module {module_part!r} not found (looked in --app-dir "
                                  f"{os.path.abspath(app_dir)!r} and on sys.path)") from None
    if isinstance(exc, SyntaxError):
        raise TargetLoadError(_syntax_error(module_part, exc)) from None
    raise TargetLoadError(_user_error(module_part, exc)) from None


# Files loaded by path, by real path: (content hash, module). A file edited since it was loaded is loaded again, so
# a second `check_batching("ops.py:f")` in the same process reports on the code now on disk.
_FILE_MODULES: dict[str, tuple[str, ModuleType]] = {}


class _SourceLoader(importlib.machinery.SourceFileLoader):
    """Compiles the file's current source: a `.pyc` is matched by mtime in seconds and size, so an edit within the
    same second that keeps the size would run the old code."""

    def get_code(self, fullname: str) -> Any:
        return compile(self.get_data(self.path), self.path, "exec", dont_inherit=True)


def _content_hash(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:  # unreadable now: the import below reports it
        return ""


def _load_file(path: str, app_dir: str) -> ModuleType:
    full = path if os.path.isabs(path) else os.path.join(os.path.abspath(app_dir), path)
    if not os.path.isfile(full) and os.path.isfile(path):
        full = os.path.abspath(path)
    if not os.path.isfile(full):
        raise TargetLoadError(f"file {path!r} not found")
    full = os.path.realpath(full)
    digest = _content_hash(full)
    cached = _FILE_MODULES.get(full)
    if cached is not None and cached[0] == digest:
        return cached[1]
    # the file changed (or was never loaded): a fresh module object, and no stale bytecode for it
    importlib.invalidate_caches()
    name = os.path.splitext(os.path.basename(full))[0]
    existing = sys.modules.get(name)
    if existing is not None and os.path.realpath(getattr(existing, "__file__", "") or "") != full:
        name = f"_jaxdiag_user_{name}_{abs(hash(full)) % 10**8}"
    folder = os.path.dirname(full)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, full, loader=_SourceLoader(name, full))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loaded_ok = False
    try:
        loaded = call_user(spec.loader.exec_module, module)  # running the file is running the user's code
        loaded_ok = loaded.error is None
    except SystemExit as exc:  # `sys.exit()` at import time is a broken module, not a reason to stop jaxdiag
        raise TargetLoadError(_user_error(path, exc)) from None
    finally:
        if not loaded_ok:  # a half-imported module must not be found by the next import
            sys.modules.pop(name, None)
    if isinstance(loaded.error, SyntaxError):
        raise TargetLoadError(_syntax_error(path, loaded.error)) from None
    if loaded.error is not None:
        raise TargetLoadError(_user_error(path, loaded.error)) from None
    _FILE_MODULES[full] = (digest, module)
    return module


def _syntax_error(what: str, exc: SyntaxError) -> str:
    where = f"{relative_path(exc.filename)}:{exc.lineno}" if exc.filename else what
    return f"syntax error in {where}: {exc.msg}"


def _user_error(what: str, exc: BaseException) -> str:
    """`importing X failed: file:line: ExcType: message`, pointing at the user's innermost frame."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if "importlib" not in f.filename and os.sep + "jaxdiag" + os.sep not in f.filename]
    # the user's own line, not JAX's where it raised (`jax.core.Primitive` raises inside jax's deprecation module)
    frames = [f for f in frames if _locate.is_user_file(f.filename)] or frames
    where = f" at {relative_path(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    message = str(exc).splitlines()[0] if str(exc) else ""
    text = dependency_failure(exc) or f"{type(exc).__name__}: {message}"
    return f"importing {what} failed{where}: {text}".rstrip(": ")


def resolve_attr(module: ModuleType, attr: str, module_part: str) -> Any:
    obj: Any = module
    walked: list[str] = []
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("__")]
            close = difflib.get_close_matches(part, names, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            owner = module_part if not walked else f"{module_part}:{'.'.join(walked)}"
            raise TargetLoadError(f"{owner} has no attribute {part!r}{hint}")
        obj = getattr(obj, part)
        walked.append(part)
    return obj


def describe(target: Any) -> str:
    """A display name for an object given directly to the Python API."""
    if isinstance(target, str):
        return target
    if _compat.is_primitive(target):
        return f"primitive {target.name}"
    fn = getattr(target, "fun", None) or getattr(target, "__wrapped__", None) or target
    module = getattr(fn, "__module__", None)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(target).__name__
    return f"{module}:{name}" if module else name
