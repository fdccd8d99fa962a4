"""The schema of `.jaxdiag/calls.json` (docs/json.md, "Recording schema"), and its validator.

A recording is data: `jaxdiag check` reads it before any check and refuses anything the recorder could not have
written, with one `jaxdiag: error:` line naming the JSON path of the offending field (exit 2). Beyond types and
bounds, every carrier a recording names (`via.target`, the function `jaxdiag check` imports and runs) must be one
of the user's own modules under the recording's root: a file below the root folder, outside virtual environments
and installed packages, resolved without importing anything. A carrier must also be a function the module itself
defines (`def NAME` at module level), so a recording can never name `os:system`, a library's function, or a
callable a user module merely imports. A call's own `target` may name an installed library's module: nothing
imports or resolves it by name (`jaxdiag check thatlib` matches it to the rules it discovers there), and such a
call must be defined in a file outside the project too.

The recorder writes only what this validator accepts (`keep_valid`), so a recording jaxdiag wrote is always read
back. No JAX here: this runs in the CLI process before the checks.
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any, Iterable, NoReturn

from .._core._errors import UsageError

SCHEMA = 1
KINDS = ("primitive", "custom_vjp", "custom_jvp", "custom_vmap")
MAX_FILE_BYTES = 64 * 2 ** 20  # the whole file
MAX_CALLS = 10_000  # entries in `calls`
MAX_DEPTH = 8  # JSON nesting (the schema needs 6: document, calls, entry, via, ranges, range)
MAX_TEXT = 1_000  # characters of `target`, `name`, `defined_at`, a param name
MAX_ARGS = 1_024  # entries of `args` (one per positional argument) and of `params`
MAX_RANGES = 65_536  # entries of `ranges` (one per array leaf)
MAX_COUNT = 2 ** 53  # `count` (exact in every JSON reader)
MAX_PROJECT_DIRS = 20_000  # folders of the project looked through for a module no search path holds
ENTRY_FIELDS = ("target", "kind", "name", "defined_at", "reachable", "replayable", "args", "params", "ranges", "via",
                "count")
REQUIRED = ("target", "kind", "args")
VIA_FIELDS = ("target", "args", "ranges")
# folders of a root whose modules are not the user's own: environments and installed packages
_FOREIGN_DIRS = {"site-packages", "dist-packages", "__pycache__", "node_modules"}
_MODULE_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_CARRIER_CHECKERS: dict[str, "_Checker"] = {}  # per output file: its project folders are walked once


class RecordingError(UsageError):
    """A recording that breaks the schema: exit 2, naming the file and the JSON path."""


def recording_root(path: str) -> str:
    """The project a recording belongs to: the folder holding its `.jaxdiag/` folder (or the file, when written
    elsewhere), widened to the folder of the nearest pyproject.toml above it."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.basename(folder) == ".jaxdiag":
        folder = os.path.dirname(folder)
    from .._core._config import find_pyproject

    pyproject = find_pyproject(folder)
    return os.path.realpath(os.path.dirname(pyproject) if pyproject else folder)


def load(path: str, search: Iterable[str] = ()) -> list[dict]:
    """The validated calls of the recording at `path`; RecordingError for anything else. `search` are folders
    tried before sys.path to find a module's file (where the import will look: --app-dir first)."""
    shown = _shown(path)
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise RecordingError(f"{shown}: {size} bytes, more than the bound of {MAX_FILE_BYTES} (MAX_FILE_BYTES)")
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise RecordingError(f"cannot read recorded calls {shown}: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError as exc:
        raise RecordingError(f"{shown}: not UTF-8 (byte {exc.start})") from None
    except RecursionError:
        raise RecordingError(f"{shown}: JSON nested deeper than the bound of {MAX_DEPTH} (MAX_DEPTH)") from None
    except ValueError as exc:  # json.JSONDecodeError, and NaN/Infinity refused by _no_constant
        raise RecordingError(f"{shown}: not valid JSON: {exc}") from None
    return validate(data, shown, recording_root(path), search)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def validate(data: Any, shown: str, root: str, search: Iterable[str] = ()) -> list[dict]:
    """The calls of a parsed recording, every field checked; RecordingError naming `shown` and the JSON path."""
    checker = _Checker(shown, root, list(search))
    checker.depth(data, "", 0)
    if not isinstance(data, dict):
        checker.fail("", f"expected an object with schema and calls, got {_type(data)}")
    unknown = sorted(set(data) - {"schema", "calls"})
    if unknown:
        checker.fail(unknown[0], "unknown field (the document has schema and calls)")
    if type(data.get("schema")) is not int or data["schema"] != SCHEMA:
        checker.fail("schema", f"expected {SCHEMA}, got {_value(data.get('schema'))}: not a jaxdiag calls file of "
                               f"this version (re-record with `jaxdiag record -- ...`)")
    calls = data.get("calls")
    if not isinstance(calls, list):
        checker.fail("calls", f"expected a list of calls, got {_type(calls)}")
    if len(calls) > MAX_CALLS:
        checker.fail("calls", f"{len(calls)} entries, more than the bound of {MAX_CALLS} (MAX_CALLS)")
    for i, entry in enumerate(calls):
        checker.entry(entry, f"calls[{i}]")
    return calls


def keep_valid(records: dict[Any, dict], output: str) -> dict[Any, dict]:
    """The records the validator accepts (the recorder writes only these): a record breaking a bound is dropped; a
    carrier outside the root is dropped from its record (the record stays: its rule may be reached otherwise, or
    it is reported as not checkable)."""
    checker = _Checker(_shown(output), recording_root(output), [])
    kept: dict[Any, dict] = {}
    for key, record in records.items():
        via = record.get("via")
        if via is not None:
            try:
                checker.via(via, "via")
            except RecordingError:
                record = dict(record, via=None)
        try:
            checker.entry(record, "call")
        except RecordingError:
            continue
        kept[key] = record
    return kept


def carrier_accepted(target: str, output: str) -> bool:
    """Whether a recording written to `output` may name `target` as a carrier (the recorder asks before writing)."""
    checker = _CARRIER_CHECKERS.get(output)
    if checker is None:
        checker = _CARRIER_CHECKERS[output] = _Checker(_shown(output), recording_root(output), [])
    try:
        checker.target(target, "via.target", carrier=True)
    except RecordingError:
        return False
    return True


class _Checker:
    def __init__(self, shown: str, root: str, search: list[str]):
        self.shown = shown
        self.root = root
        self.search = search
        self.folders: list[str] | None = None  # the project's folders, walked on first need

    def fail(self, where: str, problem: str) -> NoReturn:
        raise RecordingError(f"{self.shown}: {where or '(document)'}: {problem}")

    def depth(self, value: Any, where: str, level: int) -> None:
        """Nesting beyond MAX_DEPTH, walked without recursion limits mattering (the bound stops it early)."""
        if level > MAX_DEPTH:
            self.fail(where, f"nested deeper than the bound of {MAX_DEPTH} (MAX_DEPTH)")
        if isinstance(value, dict):
            for key, item in value.items():
                self.depth(item, f"{where}.{key}" if where else str(key), level + 1)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                self.depth(item, f"{where}[{i}]", level + 1)

    # -- one call -------------------------------------------------------------------------------------------------

    def entry(self, entry: Any, where: str) -> None:
        if not isinstance(entry, dict):
            self.fail(where, f"expected a call object, got {_type(entry)}")
        unknown = sorted(set(entry) - set(ENTRY_FIELDS))
        if unknown:
            self.fail(f"{where}.{unknown[0]}", f"unknown field (a call has {', '.join(ENTRY_FIELDS)})")
        for name in REQUIRED:
            if name not in entry:
                self.fail(f"{where}.{name}", "missing (required)")
        self.target(entry["target"], f"{where}.target", carrier=False)
        if entry["kind"] not in KINDS:
            self.fail(f"{where}.kind", f"expected one of {', '.join(KINDS)}, got {_value(entry['kind'])}")
        for name in ("name", "defined_at"):
            if name in entry:
                self.text(entry[name], f"{where}.{name}")
        defined_at = entry.get("defined_at", "")
        if defined_at and not re.match(r"^.+:\d+$", defined_at):
            self.fail(f"{where}.defined_at", f"expected PATH:LINE or \"\", got {_value(defined_at)}")
        self.library_site(entry["target"], defined_at, f"{where}.defined_at")
        for name in ("reachable", "replayable"):
            if name in entry and not isinstance(entry[name], bool):
                self.fail(f"{where}.{name}", f"expected true or false, got {_value(entry[name])}")
        # a call the recorder could not write down (`<function>` among its args) is only checked inside its
        # carrier: its args are shown, never parsed or drawn
        self.args(entry["args"], f"{where}.args", parse=entry.get("replayable", True) is not False)
        self.params(entry.get("params", {}), f"{where}.params")
        self.ranges(entry.get("ranges"), f"{where}.ranges")
        if entry.get("via") is not None:
            self.via(entry["via"], f"{where}.via")
        if "count" in entry:
            count = entry["count"]
            if type(count) is not int or not 1 <= count <= MAX_COUNT:
                self.fail(f"{where}.count", f"expected an integer 1..{MAX_COUNT}, got {_value(count)}")

    def via(self, via: Any, where: str) -> None:
        if not isinstance(via, dict):
            self.fail(where, f"expected null or a carrier object (target, args, ranges), got {_type(via)}")
        unknown = sorted(set(via) - set(VIA_FIELDS))
        if unknown:
            self.fail(f"{where}.{unknown[0]}", f"unknown field (a carrier has {', '.join(VIA_FIELDS)})")
        for name in ("target", "args"):
            if name not in via:
                self.fail(f"{where}.{name}", "missing (required)")
        self.target(via["target"], f"{where}.target", carrier=True)
        self.args(via["args"], f"{where}.args")
        self.ranges(via.get("ranges"), f"{where}.ranges")

    # -- fields ---------------------------------------------------------------------------------------------------

    def text(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            self.fail(where, f"expected a string, got {_type(value)}")
        if len(value) > MAX_TEXT:
            self.fail(where, f"{len(value)} characters, more than the bound of {MAX_TEXT} (MAX_TEXT)")
        if any(ord(c) < 32 for c in value):
            self.fail(where, "contains a control character")
        return value

    def target(self, value: Any, where: str, carrier: bool) -> None:
        """`module:attr`, the module one of the user's own under the root; a carrier's attr a function the module
        defines itself."""
        text = self.text(value, where)
        module, sep, attr = text.partition(":")
        if not sep or not _MODULE_RE.match(module) or not attr:
            self.fail(where, f"expected MODULE:NAME with a dotted module name, got {_value(text)}")
        if module == "__main__":  # a script's own module: no later run can import it under that name
            self.fail(where, f"{_value(text)}: a script's __main__ module cannot be imported again; move the code "
                             "into a module")
        if carrier and not attr.isidentifier():
            self.fail(where, f"a carrier is a module-level function MODULE:NAME, got {_value(text)}")
        # then the project's own folders: `jaxdiag check src/pkg` puts a package's root on sys.path itself, and
        # pytest puts a test folder's there, so a module of the project may be found by neither
        path = module_file(module, self.search) or self.in_project(module)
        if path is None:
            self.fail(where, f"{_value(text)}: module {module!r} is not a Python file found on --app-dir or sys.path "
                             "(a recording names only modules it can find without importing them)")
        # a rule's call may name an installed library's module (`jaxdiag check thatlib` uses it): nothing imports
        # or resolves a call's target by name, it is matched to rules discovery found in the modules the run
        # checks. A carrier is imported and called, so it must be the project's own.
        if carrier and not under_root(path, self.root):
            self.fail(where, f"{_value(text)}: module {module!r} ({path}) is not one of the project's own modules "
                             f"under {self.root}; a carrier may only be one of those")
        if carrier and not defines_function(path, attr):
            self.fail(where, f"{_value(text)}: {module} does not define a module-level function {attr!r} (a carrier "
                             "is a function of the project's own code, defined with def in its module)")

    def library_site(self, target: str, defined_at: str, where: str) -> None:
        """A call naming another package's module is defined in another package's file, never in the project's."""
        module = target.partition(":")[0]
        path = module_file(module, self.search) or self.in_project(module)
        site = defined_at.rpartition(":")[0]
        if not path or not site or under_root(path, self.root):
            return
        if under_root(os.path.join(self.root, site), self.root):
            self.fail(where, f"{_value(defined_at)} is a file of the project, but the call names {module!r} "
                             f"({path}), a module outside it")

    def in_project(self, module: str) -> str | None:
        """The file of `module` in a folder of the project (walked once, at most MAX_PROJECT_DIRS folders, hidden
        folders, environments and installed packages skipped), or None."""
        if self.folders is None:
            self.folders = []
            for folder, dirs, _ in os.walk(self.root):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _FOREIGN_DIRS)
                self.folders.append(folder)
                if len(self.folders) >= MAX_PROJECT_DIRS:
                    break
        parts = module.split(".")
        for folder in self.folders:
            base = Path(folder).joinpath(*parts)
            for candidate in (base / "__init__.py", base.with_suffix(".py")):
                if candidate.is_file():
                    return os.path.realpath(candidate)
        return None

    def args(self, value: Any, where: str, parse: bool = True) -> None:
        from .._loading._inputs import MAX_SPEC_CHARS, parse_arg

        if not isinstance(value, list):
            self.fail(where, f"expected a list of SPEC strings, got {_type(value)}")
        if len(value) > MAX_ARGS:
            self.fail(where, f"{len(value)} arguments, more than the bound of {MAX_ARGS} (MAX_ARGS)")
        for i, text in enumerate(value):
            if not isinstance(text, str):
                self.fail(f"{where}[{i}]", f"expected a SPEC string, got {_type(text)}")
            if not parse:
                if len(text) > MAX_SPEC_CHARS:
                    self.fail(f"{where}[{i}]", f"{len(text)} characters, more than the bound of {MAX_SPEC_CHARS} "
                                               "(MAX_SPEC_CHARS)")
                continue
            try:
                parse_arg(text)
            except UsageError as exc:
                self.fail(f"{where}[{i}]", str(exc))

    def params(self, value: Any, where: str) -> None:
        from .._loading._cli_values import parse_literal

        if not isinstance(value, dict):
            self.fail(where, f"expected an object of NAME: LITERAL strings, got {_type(value)}")
        if len(value) > MAX_ARGS:
            self.fail(where, f"{len(value)} params, more than the bound of {MAX_ARGS} (MAX_ARGS)")
        for name, text in value.items():
            if not name.isidentifier() or len(name) > MAX_TEXT:
                self.fail(f"{where}.{name[:60]}", "a bind param's name must be a Python identifier")
            if not isinstance(text, str):
                self.fail(f"{where}.{name}", f"expected a Python literal as a string, got {_type(text)}")
            if text.startswith("<") and text.endswith(">") and text[1:-1].isidentifier():
                continue  # a callable or treedef the recorder could not write (`<function>`): not replayed
            try:
                parse_literal(text, f"param {name}")
            except UsageError as exc:
                self.fail(f"{where}.{name}", str(exc))

    def ranges(self, value: Any, where: str) -> None:
        if value is None:
            return
        if not isinstance(value, list):
            self.fail(where, f"expected null or a list of {{min, max}} or null, got {_type(value)}")
        if len(value) > MAX_RANGES:
            self.fail(where, f"{len(value)} entries, more than the bound of {MAX_RANGES} (MAX_RANGES)")
        for i, item in enumerate(value):
            if item is None:
                continue
            if not isinstance(item, dict) or set(item) != {"min", "max"}:
                self.fail(f"{where}[{i}]", f"expected null or {{\"min\": number, \"max\": number}}, got "
                                           f"{_type(item)}")
            for name in ("min", "max"):
                number = item[name]
                if type(number) not in (int, float) or not math.isfinite(number):
                    self.fail(f"{where}[{i}].{name}", f"expected a finite number, got {_value(number)}")
            if item["min"] > item["max"]:
                self.fail(f"{where}[{i}]", f"min {item['min']} is above max {item['max']}")


# ---------------------------------------------------------------------------------------------------------------
# Modules, without importing them
# ---------------------------------------------------------------------------------------------------------------


def module_file(name: str, search: Iterable[str] = ()) -> str | None:
    """The real path of the file a module name imports (an imported module's own file; else the first of `search`
    and sys.path that holds it, as the import would find it), or None (builtin, frozen, namespace, not found)."""
    if not _MODULE_RE.match(name):
        return None
    loaded = sys.modules.get(name)
    if loaded is not None:
        where = getattr(loaded, "__file__", None)
        return os.path.realpath(where) if where else None
    if name.split(".")[0] in sys.builtin_module_names:
        return None
    parts = name.split(".")
    for base in [*search, *sys.path]:
        base = os.path.abspath(base or ".")
        if not os.path.isdir(base):
            continue
        folder = Path(base).joinpath(*parts)
        for candidate in (folder / "__init__.py", folder.with_suffix(".py")):
            if candidate.is_file():
                return os.path.realpath(candidate)
        top = Path(base) / parts[0]
        if top.with_suffix(".py").is_file() or (top / "__init__.py").is_file():
            return None  # the import stops at this base's package: the name is not a file there
    return None


def under_root(path: str, root: str) -> bool:
    """A file of the project's own: below `root`, not inside a hidden folder (`.venv`, `.tox`) or an installed
    package folder."""
    try:
        relative = os.path.relpath(os.path.realpath(path), root)
    except ValueError:  # another drive
        return False
    parts = Path(relative).parts
    if not parts or parts[0] == os.pardir or os.path.isabs(relative):
        return False
    return not any(p.startswith(".") or p in _FOREIGN_DIRS for p in parts[:-1])


def defines_function(path: str, name: str) -> bool:
    """Whether the module file defines `def name` at module level (also inside a module-level if/try block)."""
    try:
        tree = ast.parse(Path(path).read_bytes(), filename=path)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    frontier: list[ast.stmt] = list(tree.body)
    while frontier:
        node = frontier.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return True
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            frontier.extend(node.body)
            frontier.extend(getattr(node, "orelse", []))
            frontier.extend(getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                frontier.extend(handler.body)
    return False


def _shown(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return path


def _type(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


def _value(value: Any) -> str:
    if isinstance(value, str):
        return repr(value if len(value) <= 80 else value[:60] + "...")
    return _type(value) if value is None or isinstance(value, (list, dict)) else repr(value)
