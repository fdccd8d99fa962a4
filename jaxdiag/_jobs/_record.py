"""`jaxdiag record -- COMMAND...` and `pytest --jaxdiag-record`: record every distinct call of a user rule.

While the user's own examples or tests run, every bind of a user primitive and every call of a custom_vjp,
custom_jvp or custom_vmap object defined outside JAX is recorded: a stable target name, the definition's file:line,
the arguments as SPEC texts (static values as literals), the bind params, and the observed value range of each
array input (when it is concrete). `jaxdiag check` then checks those targets with those inputs (see `load`).

The file (default `.jaxdiag/calls.json`) is JSON, sorted, with no timestamps, so two runs of a deterministic
command write the same bytes. Its schema and bounds are in docs/json.md and `_record_schema`, which validates it
when it is read; a carrier (`via`) is only ever one of the project's own functions (under the folder the recording
belongs to):

    {"schema": 1, "calls": [{
        "target": "pkg.mod:attr",            # how `jaxdiag check` names it (module:attr, or module:qualname)
        "kind": "primitive|custom_vjp|custom_jvp|custom_vmap",
        "name": "my_prim",                   # the primitive's name, or the function's __name__
        "defined_at": "pkg/mod.py:12",       # the def of its function (the first user rule of a primitive)
        "reachable": true,                   # a module attribute holds it (false: made in a closure/factory)
        "replayable": true,                  # false: a static arg or param is a callable/treedef (shown as
                                             # "<function>"): checked inside `via` instead
        "args": ["f32[3]", "-0.1", "{'w': f32[3,4]}"],
        "params": {"max_size": "4"},         # bind params as Python literals (dtypes as names)
        "ranges": [{"min": -1.5, "max": 2.0}, null],   # per array leaf, in order; null when only traced
        "via": {"target": "pkg.mod:apply", "args": ["f32[3]"], "ranges": [...]},   # the module-level function
                                                                                    # that called it
        "count": 3}]}

A command is run with a `sitecustomize` shim on PYTHONPATH that installs the recorder once `jax` is imported;
every Python process of the command records, and each merges its calls into the file when it exits.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

SCHEMA = 1
DEFAULT_PATH = os.path.join(".jaxdiag", "calls.json")
ENV_OUTPUT = "JAXDIAG_RECORD_OUTPUT"
_MAX_RANGE_SAMPLES = 50  # per distinct call: enough to see the range, bounded cost on long runs

_state: dict[str, Any] = {"installed": False, "output": None, "calls": {}, "objects": {}}


# ---------------------------------------------------------------------------------------------------------------
# Running a command
# ---------------------------------------------------------------------------------------------------------------


_SHIM = '''\
import os, sys, importlib
_here = os.path.dirname(os.path.abspath(__file__))
# run the environment's own sitecustomize, if any, as if this shim were not here
_path = sys.path[:]
_me = sys.modules.pop("sitecustomize", None)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
try:
    importlib.import_module("sitecustomize")
except ImportError:
    pass
finally:
    sys.path[:] = _path
    sys.modules["sitecustomize"] = _me
try:
    from jaxdiag._jobs import _record
    _record.install_on_import(os.environ["{env}"])
except Exception as exc:  # never break the user's command
    sys.stderr.write(f"jaxdiag record: recorder not installed: {{exc}}\\n")
'''


def run_command(command: Sequence[str], output: str) -> int:
    """Run `command` with the recorder in every Python process; return its exit code. The file is rewritten."""
    from .._core._errors import UsageError

    if not command:
        raise UsageError("record needs a command after `--`, e.g. jaxdiag record -- pytest tests/")
    output = os.path.abspath(output)
    os.makedirs(os.path.dirname(output), exist_ok=True)
    if os.path.exists(output):
        os.remove(output)
    with tempfile.TemporaryDirectory(prefix="jaxdiag-record-") as shim:
        with open(os.path.join(shim, "sitecustomize.py"), "w", encoding="utf-8") as handle:
            handle.write(_SHIM.format(env=ENV_OUTPUT))
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[2])  # the folder holding the jaxdiag package
        env["PYTHONPATH"] = os.pathsep.join([shim, package_root] + (
            [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env[ENV_OUTPUT] = output
        try:
            completed = subprocess.run(list(command), env=env, check=False)
        except FileNotFoundError:
            raise UsageError(f"record: command not found: {command[0]!r}") from None
    if not os.path.exists(output):
        write(output, {})  # nothing called: an empty, valid file
    return completed.returncode


# ---------------------------------------------------------------------------------------------------------------
# Installing the recorder
# ---------------------------------------------------------------------------------------------------------------


class _AfterJaxImport(importlib.abc.MetaPathFinder):
    """Installs the recorder right after `import jax` finishes (no JAX import for commands that never use it)."""

    def __init__(self, output: str):
        self.output = output
        self.busy = False

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "jax" or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, path)
        finally:
            self.busy = False
        if spec is None or spec.loader is None:
            return None
        loader = spec.loader
        original = loader.exec_module
        finder = self

        def exec_module(module: Any) -> None:
            original(module)
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
            install(finder.output)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install_on_import(output: str) -> None:
    if "jax" in sys.modules:
        install(output)
    else:
        sys.meta_path.insert(0, _AfterJaxImport(output))


def install(output: str) -> None:
    """Patch `Primitive.bind` and the custom_* classes' `__call__` to record; merge into `output` at exit."""
    if _state["installed"]:
        return
    from .. import _compat

    _state.update(installed=True, output=output)

    def on_bind(prim: Any, args: tuple, params: dict) -> None:
        if not _state.get("busy"):
            _observe("primitive", prim, args, params)

    def on_custom_call(kind: str, obj: Any, args: tuple, kwargs: dict) -> None:
        if not _state.get("busy"):
            _observe(kind, obj, args, kwargs)

    _compat.install_call_hooks(on_bind, on_custom_call)
    atexit.register(flush)


def _observe(kind: str, obj: Any, args: tuple, extra: dict) -> None:
    """Record one call; never raises into the user's program."""
    _state["busy"] = True
    try:
        _observe_inner(kind, obj, args, extra)
    except Exception:  # recording is best effort: the user's command must behave exactly as without it
        pass
    finally:
        _state["busy"] = False


def _observe_inner(kind: str, obj: Any, args: tuple, extra: dict) -> None:
    from .. import _compat
    from .._core import _locate
    from .._loading._inputs import template_text
    from .._loading._layout import template_of

    if kind == "primitive":
        if _compat.is_builtin_primitive(obj) and not _has_user_rule(obj):
            return
        params = {k: _param_text(v) for k, v in sorted(extra.items())}
        values = list(args)
    else:
        fn = getattr(obj, "fun", None) or obj
        if not _locate.is_user_code(fn):
            return
        params = {}
        values = list(_compat.resolve_positional(fn, tuple(args), dict(extra))) if kind != "custom_vmap" else list(
            args)
    templates = [template_of(v) for v in values]
    texts = [template_text(t) for t in templates]
    # a callable, treedef or jaxpr (as a static argument or bind param) cannot be written to a file: such a call
    # is replayed through the function that made it (`via`), where JAX supplies the real values again
    replayable = all(_replayable(text) for text in texts) and all(v is not None for v in params.values())
    params = {k: (v if v is not None else f"<{type(extra[k]).__name__}>") for k, v in params.items()}
    key = (id(obj), tuple(texts), tuple(sorted(params.items())))
    entry = _state["calls"].get(key)
    if entry is None:
        name = obj.name if kind == "primitive" else getattr(_locate.unwrap(getattr(obj, "fun", None) or obj),
                                                            "__name__", kind)
        entry = {"kind": kind, "name": name, "args": texts, "params": params, "ranges": None, "count": 0,
                 "via": _carrier(obj), "replayable": replayable}
        _state["calls"][key] = entry
        _state["objects"][id(obj)] = obj
    entry["count"] += 1
    if entry["count"] <= _MAX_RANGE_SAMPLES:
        entry["ranges"] = _merge_ranges(entry["ranges"], _ranges(values))


def _replayable(text: str) -> bool:
    """Whether an argument's text gives the argument back (`<function>`, `<Module>` do not)."""
    from .._core._errors import UsageError
    from .._loading._inputs import parse_arg

    if "<" in text and ">" in text:
        try:
            parse_arg(text)
        except UsageError:
            return False
        return "'<" in text or '"<' in text  # a string literal that merely contains angle brackets
    try:
        parse_arg(text)
    except UsageError:
        return False
    return True


def _has_user_rule(prim: Any) -> bool:
    from .. import _compat
    from .._core import _locate

    return any(r is not None and _locate.is_user_code(r) for r in _compat.registered_rules(prim).values())


def _param_text(value: Any) -> str | None:
    """A bind param as a Python literal (`4`, `(0, 1)`, `'mode'`), a dtype as its name; None if not replayable."""
    import ast

    import numpy as np

    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return np.dtype(value).name
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    text = repr(value)
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return text


def _ranges(values: Sequence[Any]) -> list[Any]:
    import jax
    import numpy as np

    from .. import _compat

    out: list[Any] = []
    for leaf in jax.tree_util.tree_leaves(list(values)):
        dtype = getattr(leaf, "dtype", None)
        if dtype is None or not hasattr(leaf, "shape"):
            continue
        if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key) or _compat.is_tracer(leaf):
            out.append(None)
            continue
        arr = np.asarray(leaf)
        if arr.size == 0 or arr.dtype.kind not in "fiu" and arr.dtype.name != "bfloat16":
            out.append(None)
            continue
        arr = arr.astype(np.float64)
        finite = arr[np.isfinite(arr)]
        out.append({"min": _round(finite.min()), "max": _round(finite.max())} if finite.size else None)
    return out


def _round(x: float) -> float:
    return float(f"{float(x):.6g}")


def _merge_ranges(old: list | None, new: list | None) -> list | None:
    if not old or not new or len(old) != len(new):
        return old or new
    out = []
    for a, b in zip(old, new):
        if a is None or b is None:
            out.append(a or b)
        else:
            out.append({"min": min(a["min"], b["min"]), "max": max(a["max"], b["max"])})
    return out


def _carrier(obj: Any) -> dict | None:
    """The module-level function on the stack that can carry the rule: its arguments can be written down (arrays,
    keys, literals) while the rule's own are not (a callable, treedef or solver object JAX supplies again when the
    function runs). The outermost such function of the rule's own package, else the outermost one of another
    importable user module that passes at least one array (the user's own example or helper calling the library:
    `def solve(y0): return diffeqsolve(...)`). Only the project's own functions carry (`_record_schema`): an
    installed library's function is passed over for the user's code that called it. Test functions, `__main__` and
    JAX/NumPy/jaxdiag are never carriers."""
    from .._core import _locate
    from .._loading._inputs import ArgSpec, template_text
    from .._harness import call_user
    from .._loading._layout import template_of

    top = _top_package(obj)
    frame = sys._getframe(3)
    own: list[tuple[str, Any, Any]] = []
    others: list[tuple[str, Any, Any]] = []
    while frame is not None:
        code = frame.f_code
        fn = frame.f_globals.get(code.co_name)
        module = frame.f_globals.get("__name__", "") or ""
        if (getattr(_locate.unwrap(fn), "__code__", None) is code and not code.co_name.startswith("test")
                and module != "__main__" and _locate.is_user_code(fn)):
            (own if top and module.split(".")[0] == top else others).append((module, code, frame))
        frame = frame.f_back  # type: ignore[assignment]
    for candidates, needs_array in ((own, False), (others, True)):
        for module, code, frame in reversed(candidates):  # outermost first
            if code.co_flags & 0x04 or code.co_kwonlyargcount:  # *args / keyword-only: not replayable positionally
                continue
            if not _accepted_carrier(f"{module}:{code.co_name}"):  # an installed library's: never written
                continue
            values = [frame.f_locals[n] for n in code.co_varnames[:code.co_argcount]]
            described = call_user(lambda vs=values: [template_of(v) for v in vs])  # user objects may raise
            if described.value is None:
                continue
            templates = described.value
            if needs_array and not any(isinstance(leaf, ArgSpec) for leaf in jax_leaves(templates)):
                continue  # a `main()`: nothing to transform, and it would re-run the whole command
            if all(_replayable(template_text(t)) for t in templates):
                return {"target": f"{module}:{code.co_name}", "args": [template_text(t) for t in templates],
                        "ranges": _ranges(values)}
    return None


def _accepted_carrier(target: str) -> bool:
    """Whether the recording's schema accepts `target` as a carrier (a function of the project's own, under the
    recording's root): a library's own function is skipped for the user's example that called it."""
    output = _state.get("output")
    if not output:
        return True
    accepted = _state.setdefault("carriers", {})
    if target not in accepted:
        from ._record_schema import carrier_accepted

        accepted[target] = carrier_accepted(target, output)
    return bool(accepted[target])


def jax_leaves(tree: Any) -> list[Any]:
    import jax

    from .._loading._inputs import ArgSpec

    return jax.tree_util.tree_leaves(tree, is_leaf=lambda x: isinstance(x, ArgSpec))


def _top_package(obj: Any) -> str:
    from .. import _compat
    from .._core import _locate

    if _compat.is_primitive(obj):
        for rule in _compat.registered_rules(obj).values():
            if rule is not None and _locate.is_user_code(rule):
                return (getattr(_locate.unwrap(rule), "__module__", "") or "").split(".")[0]
        return ""
    fn = _locate.unwrap(getattr(obj, "fun", None) or obj)
    return (getattr(fn, "__module__", "") or "").split(".")[0]


# ---------------------------------------------------------------------------------------------------------------
# Naming and writing
# ---------------------------------------------------------------------------------------------------------------


def flush() -> None:
    """Name every recorded object and merge this process's calls into the output file."""
    output = _state.get("output")
    if not output or not _state["calls"]:
        return
    names: dict[int, tuple[str, str, bool]] = {}
    fresh: dict[tuple, dict] = {}
    for (obj_id, texts, params), entry in _state["calls"].items():
        obj = _state["objects"][obj_id]
        if obj_id not in names:
            names[obj_id] = _name(obj, entry["kind"])
        target, defined_at, reachable = names[obj_id]
        record = dict(entry, target=target, defined_at=defined_at, reachable=reachable)
        old = fresh.get((target, texts, params))
        if old is not None:  # the same rule made anew by a factory on every call: one target, merged
            record = dict(old, count=old["count"] + record["count"],
                          ranges=_merge_ranges(old["ranges"], record["ranges"]),
                          via=_merge_via(old["via"], record["via"]))
        fresh[(target, texts, params)] = record
    _merge_into(output, fresh)
    _state["calls"].clear()


def _name(obj: Any, kind: str) -> tuple[str, str, bool]:
    """(target name, file:line of its definition, whether a module attribute holds it)."""
    from .. import _compat
    from .._core import _locate

    fn = definition_function(obj, kind)
    defined_at = definition_site(obj, kind)
    origin = getattr(_locate.unwrap(fn), "__module__", None) if fn is not None else None
    holders = []
    for name, module in list(sys.modules.items()):
        if module is None or not origin or name.split(".")[0] != origin.split(".")[0]:
            continue
        for attr, value in list(vars(module).items()):
            if value is obj or (_compat.is_jit_wrapped(value) and getattr(value, "__wrapped__", None) is obj) or \
                    _holds(value, obj):
                holders.append((name != origin, name, attr))
    if not holders and kind != "primitive":
        # a helper library's wrapper held by another package (diffrax's `_loop_backsolve = filter_custom_vjp(f)`
        # keeps the function equinox wraps in a custom_vjp): named after that package's attribute
        for name, module in list(sys.modules.items()):
            if module is None or name.split(".")[0] in _locate._LIBRARY_ROOTS or name == "__main__":
                continue
            for attr, value in list(vars(module).items()):
                if _holds(value, obj):
                    holders.append((True, name, attr))
    if holders:
        _, module_name, attr = sorted(holders)[0]
        return f"{module_name}:{attr}", defined_at, True
    qualname = getattr(_locate.unwrap(fn), "__qualname__", None) if fn is not None else None
    label = qualname or (obj.name if kind == "primitive" else "<unknown>")
    if kind == "primitive":
        label = f"<primitive {obj.name}>"
    return f"{origin or '?'}:{label}", defined_at, False


def _holds(value: Any, obj: Any) -> bool:
    """A wrapper object holding the custom function in one of its own attributes (`_error = filter_custom_jvp(f)`
    keeps the `jax.custom_jvp` in `_error.fn`): named after the wrapper, as discovery names it."""
    import types

    if isinstance(value, (type, types.ModuleType, types.FunctionType)) or not callable(value):
        return False
    fun = getattr(obj, "fun", None)  # a custom function made afresh on each call around the wrapper's function
    try:
        return any(v is obj or (fun is not None and v is fun) for v in vars(value).values())
    except TypeError:  # no __dict__
        return False


def _merge_via(old: dict | None, new: dict | None) -> dict | None:
    if old is None or new is None or old["target"] != new["target"] or old["args"] != new["args"]:
        return old or new
    return dict(old, ranges=_merge_ranges(old.get("ranges"), new.get("ranges")))


def definition_function(obj: Any, kind: str) -> Any:
    """The function whose `def` names a rule: a custom function's `fun`, a primitive's first user rule."""
    from .. import _compat
    from .._core import _locate

    if kind == "primitive":
        rules = [r for r in _compat.registered_rules(obj).values() if r is not None and _locate.is_user_code(r)]
        return rules[0] if rules else None
    return getattr(obj, "fun", None) or obj


def definition_site(obj: Any, kind: str) -> str:
    """`path/file.py:LINE` of `definition_function` (how recorded calls and discovered targets are matched); for a
    primitive a module attribute holds (`my_p = Primitive(...)`, `my_p = Kernel(...)`), that assignment's line."""
    from .._core import _locate

    if kind == "primitive":
        held = _assignment_site(obj)
        if held:
            return held
    fn = definition_function(obj, kind)
    where = _locate.locate(fn) if fn is not None else None
    return f"{_posix(where.path)}:{where.line}" if where else ""


def _assignment_site(prim: Any) -> str:
    """`path:line` of the module-level assignment holding a primitive (or the wrapper holding it), searched in the
    package of its first user rule; '' when none holds it (made in a factory)."""
    from .._core import _locate

    fn = definition_function(prim, "primitive")
    origin = (getattr(_locate.unwrap(fn), "__module__", "") or "") if fn is not None else ""
    if not origin:
        return ""
    root = origin.split(".")[0]
    for name, module in sorted(sys.modules.items(), key=lambda item: (item[0] != origin, item[0])):
        if module is None or name.split(".")[0] != root:
            continue
        loc = _locate.locate_assignment(module, prim)
        if loc is not None:
            return f"{_posix(loc.path)}:{loc.line}"
    return ""


def real_site(where: str) -> str:
    """`path:line` with the path resolved (symlinks, relative paths), for comparing definition sites; '' if none."""
    path, _, line = where.rpartition(":")
    return f"{os.path.realpath(path)}:{line}" if path else ""


def _posix(path: str) -> str:
    return path.replace(os.sep, "/")


def _merge_into(output: str, fresh: dict[tuple, dict]) -> None:
    """Merge under an exclusive lock: several processes of one command may finish at once. Only records the
    schema accepts are written (`_record_schema.keep_valid`): a recording jaxdiag wrote is always read back."""
    from .._core._errors import UsageError
    from ._record_schema import keep_valid

    fresh = keep_valid(fresh, output)
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    lock_path = output + ".lock"
    with open(lock_path, "w") as lock:
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - Windows: processes rarely overlap
            pass
        merged: dict[tuple, dict] = {}
        if os.path.exists(output):
            try:
                for record in read(output):
                    merged[_key(record)] = record
            except (OSError, ValueError, UsageError):  # another process's file is unreadable: rewritten whole
                merged = {}
        for key, record in fresh.items():
            key = (record["target"], tuple(record["args"]), tuple(sorted(record["params"].items())))
            old = merged.get(key)
            if old is not None:
                record = dict(record, count=old["count"] + record["count"],
                              ranges=_merge_ranges(old.get("ranges"), record.get("ranges")),
                              via=_merge_via(old.get("via"), record.get("via")))
            merged[key] = record
        write(output, merged)
    try:
        os.remove(lock_path)
    except OSError:
        pass


def _key(record: dict) -> tuple:
    return record["target"], tuple(record["args"]), tuple(sorted(record["params"].items()))


_FIELDS = ("target", "kind", "name", "defined_at", "reachable", "replayable", "args", "params", "ranges", "via",
           "count")


def write(output: str, records: dict[tuple, dict]) -> None:
    calls = [{k: records[key].get(k) for k in _FIELDS} for key in sorted(records)]
    text = json.dumps({"schema": SCHEMA, "calls": calls}, indent=2, sort_keys=False) + "\n"
    tmp = output + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, output)


def read(path: str, search: Sequence[str] = ()) -> list[dict]:
    """The recorded calls, validated against the schema (`_record_schema`, docs/json.md): a RecordingError (a
    UsageError, exit 2) naming the JSON path of anything else. `search`: folders the user's modules are found in
    before sys.path (--app-dir)."""
    from . import _record_schema

    return _record_schema.load(path, search)
