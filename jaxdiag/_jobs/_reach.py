"""How `jaxdiag check` reaches rules that are not plain module attributes: recorded calls (inputs, closure and
factory rules), custom functions held by wrappers, namespace packages, and rules a library attaches to JAX's own
primitives.

Input sources, first wins: pyproject `targets`, recorded calls (`.jaxdiag/calls.json`, written by `jaxdiag record`
or `pytest --jaxdiag-record`), a module's `JAXDIAG` dict, inference.
"""

from __future__ import annotations

import gc
import inspect
import os
from types import ModuleType
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from .. import _compat
from .._core import _locate
from .._harness import call_user
from .._loading._cli_values import parse_literal
from .._loading._inputs import ArgSpec, parse_arg

__all__ = ["parse_arg"]
from .._core._report import Location, TargetReport

RECORD_FILE = os.path.join(".jaxdiag", "calls.json")


# ---------------------------------------------------------------------------------------------------------------
# Recorded calls
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Recorded:
    """The calls recorded for a project; `claimed` are the targets discovery matched."""

    path: str | None = None
    calls: list[dict] = field(default_factory=list)
    claimed: set[str] = field(default_factory=set)

    @classmethod
    def load(cls, folders: Iterable[str]) -> "Recorded":
        from . import _record
        from .._core._errors import UsageError

        folders = list(dict.fromkeys(os.path.abspath(f) for f in folders))
        for folder in folders:
            path = os.path.join(folder, RECORD_FILE)
            if os.path.isfile(path):
                try:  # validated: a bad field is exit 2 naming its JSON path, before any check
                    return cls(path, _record.read(path, search=folders))
                except (OSError, ValueError) as exc:
                    raise UsageError(f"cannot read recorded calls {path}: {exc}") from None
        return cls()

    ambiguous: set[str] = field(default_factory=set)  # definition sites shared by several discovered targets

    def note_sites(self, objects: Iterable[tuple[Any, str]]) -> None:
        """Definition sites shared by several targets (one factory's closures): never matched by site."""
        from ._record import definition_site, real_site

        seen: dict[str, int] = {}
        for obj, kind in objects:
            site = real_site(definition_site(obj, kind))
            seen[site] = seen.get(site, 0) + 1
        self.ambiguous = {site for site, count in seen.items() if count > 1}

    def for_keys(self, keys: Iterable[str], obj: Any = None, kind: str = "") -> list[dict]:
        """The recorded calls of a target named by any of `keys`, or (re-exported under another name) defined at
        the same place as `obj`, most frequent first (then file order)."""
        from ._record import definition_site, real_site

        keys = set(keys)
        site = ""
        if obj is not None and self.calls:
            site = real_site(definition_site(obj, kind))
            site = "" if site in self.ambiguous else site
        calls = [c for c in self.calls if c.get("target") in keys or (
            site and c.get("kind") == kind and real_site(c.get("defined_at", "")) == site)]
        self.claimed.update(c["target"] for c in calls)
        return sorted(calls, key=lambda c: -int(c.get("count", 1)))

    def unclaimed(self) -> list[dict]:
        """Recorded targets that discovery did not name (closures, factories): one call each, most frequent."""
        best: dict[str, dict] = {}
        for call in self.calls:
            target = call.get("target", "")
            if target in self.claimed:
                continue
            if target not in best or int(call.get("count", 1)) > int(best[target].get("count", 1)):
                best[target] = call
        return [best[t] for t in sorted(best)]


def walked_of(call: dict, walked: Iterable[Any]) -> Any:
    """The walked module a recorded call's rule belongs to (its target's module, else the one whose file defines
    it), or None when it belongs to none of the modules this run checks: `jaxdiag check mypkg.softplus` after
    recording the whole test suite checks that module's rules only, never another module's of the same package."""
    modules = list(walked)
    module_name = call.get("target", "").partition(":")[0]
    named = next((w for w in modules if w.module.__name__ == module_name), None)
    if named is not None:
        return named
    path = call.get("defined_at", "").rpartition(":")[0]
    if not path:
        return None
    real = os.path.realpath(path)
    return next((w for w in modules if getattr(w.module, "__file__", None)
                 and os.path.realpath(w.module.__file__) == real), None)


def recorded_location(call: dict, label: str) -> Location | None:
    """Where a recorded rule is defined (`defined_at`), named after the last part of `label`."""
    path, _, line = call.get("defined_at", "").rpartition(":")
    if not path or not line.isdigit():
        return None
    return Location(_locate.relative_path(path).replace(os.sep, "/"), int(line), label.rpartition(":")[2])


@dataclass
class RecordedCall:
    """A recorded call no discovered target claimed (a closure or factory rule), as one work item of `jaxdiag
    check`, scheduled after the targets like one of them (`_parallel`): the same per-target time limit, workers,
    memory bound and cache. It answers what the run asks of a discovered target (`Found`): label, kind, keys,
    walked module, object."""

    call: dict
    walked: Any  # the walked module it belongs to (`walked_of`)
    # the live object of a replayable call, looked up among the objects the process holds once the modules are
    # imported and discovered, before any target runs (`pin_live`): what earlier targets left alive in one worker
    # but not another must not change the report between `-j 1` and `-j 2`
    obj: Any = None
    pinned: bool = False

    @property
    def label(self) -> str:
        return str(self.call["target"])

    @property
    def kind(self) -> str:
        return str(self.call.get("kind", "function"))

    @property
    def keys(self) -> list[str]:
        return [self.label]

    @property
    def task_key(self) -> str:
        """What a worker looks it up by: never a discovered target's label."""
        return f"recorded call {self.label}"

    @property
    def location(self) -> Location | None:
        return recorded_location(self.call, self.label)


def pin_live(items: Iterable[Any]) -> None:
    """Look up the live object of every recorded call among `items` not looked up yet (see `RecordedCall.obj`)."""
    for item in items:
        if isinstance(item, RecordedCall) and not item.pinned:
            item.obj = find_recorded_object(item.call) if item.call.get("replayable", True) else None
            item.pinned = True


def checked_sites(recorded: list[tuple[dict, list[TargetReport]]]) -> list[Location]:
    """The definitions of the recorded rules that were checked, or stopped or crashed while checked: not traced
    again. A closure recorded "not checkable" (no carrier of the project's own called it) is left for tracing to
    reach through the package's functions (`drop_reached_elsewhere` then drops that report)."""
    out = []
    for call, reports in recorded:
        path, _, line = call.get("defined_at", "").rpartition(":")
        if path and line.isdigit() and not all(_not_checkable(r) for r in reports):
            out.append(Location(path, int(line), call.get("name", "")))
    return out


def drop_reached_elsewhere(recorded: list[tuple[dict, list[TargetReport]]], traced: list[TargetReport]
                           ) -> list[TargetReport]:
    """The reports of recorded calls, less the "not checkable" ones of rules that tracing the package's functions
    checked (a closure recorded without a carrier of the project's own, e.g. inside an installed library)."""
    from ._record import real_site

    checked = {real_site(f"{a.path}:{a.line}") for report in traced if not report.unverified
               for a in report.anchors}
    kept: list[TargetReport] = []
    for call, reports in recorded:
        site = real_site(call.get("defined_at", ""))
        if site and site in checked and all(_not_checkable(r) for r in reports):
            continue
        kept.extend(reports)
    return kept


def _not_checkable(report: TargetReport) -> bool:
    from .. import _rules as rules

    return any(f.code == rules.TARGET_NOT_CHECKABLE.code for f in report.findings)


def domain_of(recorded_range: dict | None) -> str | None:
    """The domain the recorded values call for: negative-only, unit interval, positive, or none (normal)."""
    if not recorded_range:
        return None
    low, high = float(recorded_range["min"]), float(recorded_range["max"])
    if high < 0:
        return "negative"
    if low > 0 and high < 1:
        return "unit"
    if low > 0:
        return "positive"
    return None


def templates_of(call: dict) -> tuple[list[Any], dict[str, Any]]:
    """(argument templates with the recorded domains applied, bind params) of one recorded call."""
    templates = [parse_arg(text) for text in call.get("args", [])]
    ranges = iter(call.get("ranges") or [])

    def with_domain(leaf: Any) -> Any:
        if not isinstance(leaf, ArgSpec):
            return leaf
        seen = next(ranges, None)
        if seen and leaf.key is None and np.issubdtype(leaf.dtype, np.integer):
            # the integers the program passed are the contract (an index, a count): drawn inside them, never at
            # the edges an index probe tries
            return leaf.with_domain(f"{int(np.ceil(seen['min']))}..{int(np.floor(seen['max']))}")
        domain = domain_of(seen)
        return leaf.with_domain(domain) if domain and leaf.is_inexact else leaf

    import jax

    templates = [jax.tree_util.tree_map(with_domain, t, is_leaf=lambda x: isinstance(x, ArgSpec))
                 for t in templates]
    params = {name: _hashable(parse_literal(text, f"recorded param {name}"))
              for name, text in (call.get("params") or {}).items()}
    return templates, params


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def _rule_functions(obj: Any, kind: str, target: str) -> list[Any]:
    """The rule functions of `obj` when it is a `kind` object the recorded `target` may name, else []."""
    if kind == "primitive":
        if not _compat.is_primitive(obj) or f"<primitive {obj.name}>" not in target:
            return []
        return [r for r in _compat.registered_rules(obj).values() if r is not None]
    is_kind = {"custom_vjp": _compat.is_custom_vjp, "custom_jvp": _compat.is_custom_jvp,
               "custom_vmap": _compat.is_custom_vmap}[kind]
    return [obj.fun] if is_kind(obj) else []


def find_recorded_object(call: dict) -> Any:
    """The live object of a recorded closure/factory rule, found by its definition site among existing objects."""
    where = call.get("defined_at", "")
    path, _, line = where.rpartition(":")
    if not path or not line.isdigit():
        return None
    full = os.path.realpath(path)
    kind = call.get("kind")
    if kind not in ("primitive", "custom_vjp", "custom_jvp", "custom_vmap"):
        return None
    from ._record import definition_site, real_site

    for obj in gc.get_objects():
        probed = call_user(_rule_functions, obj, kind, call["target"])  # exotic heap objects may raise when probed
        fns = probed.value or []
        if fns and kind == "primitive" and real_site(definition_site(obj, kind)) == real_site(where):
            return obj  # a primitive held by a module attribute: recorded at its assignment line
        for fn in fns:
            loc = _locate.locate(fn)
            if loc and loc.line == int(line) and os.path.realpath(loc.path) == full:
                return obj
    return None


# ---------------------------------------------------------------------------------------------------------------
# Wrapped custom functions and JAX-owned primitives
# ---------------------------------------------------------------------------------------------------------------


def unwrap_custom(value: Any) -> Any:
    """The custom_vjp/custom_jvp/custom_vmap object a wrapper holds (`__wrapped__`, `.fn`, `.func`, an attribute
    of a callable object, a partial's func), or None."""
    def is_custom(x: Any) -> bool:
        return any(t(x) for t in (_compat.is_custom_vjp, _compat.is_custom_jvp, _compat.is_custom_vmap))

    seen: set[int] = set()
    frontier = [value]
    for _ in range(4):
        nxt = []
        for item in frontier:
            if id(item) in seen:
                continue
            seen.add(id(item))
            if item is not value and is_custom(item):
                return item
            for name in ("__wrapped__", "fn", "func", "fun", "_fun", "f"):
                inner = call_user(getattr, item, name, None).value  # a user descriptor may raise
                if inner is not None and callable(inner):
                    nxt.append(inner)
            if callable(item) and not isinstance(item, type) and hasattr(item, "__dict__") and \
                    not hasattr(item, "__code__"):
                try:
                    nxt.extend(v for v in vars(item).values() if callable(v) and not isinstance(v, type))
                except TypeError:
                    pass
        frontier = nxt
    return None


def held_by(value: Any, roots: set[str]) -> list[tuple[str, Any]]:
    """(attribute name, object) for what a wrapper keeps one level down, when the wrapper belongs to a checked
    package: the attributes of an instance of one of its classes (a kernel object keeping its `Primitive` in
    `self.primitive`), or a class's own attributes (a custom_jvp as a class attribute, a staticmethod's function).
    Functions, modules and JAX's or other libraries' objects are not walked."""
    if isinstance(value, ModuleType) or inspect.isroutine(value) or _compat.is_primitive(value):
        return []
    owner = value if isinstance(value, type) else type(value)
    if (getattr(owner, "__module__", "") or "").split(".")[0] not in roots:
        return []
    probed = call_user(lambda: list(vars(value).items()))  # a proxy's __dict__ may run its code
    if probed.error is not None or probed.value is None:
        return []
    out = []
    for name, held in probed.value:
        if name.startswith("__"):
            continue
        if isinstance(held, (staticmethod, classmethod)):
            held = held.__func__
        out.append((name, held))
    return out


def holder_location(found: Any) -> Location | None:
    """The line that defines the wrapper holding a target (`foo_p = Kernel(...)`)."""
    if getattr(found, "holder", None) is None:
        return None
    # `foo_p.primitive` (a wrapper's attribute), `foo_p > foo_jvp` (a primitive foo_p's rules hold)
    return _locate.locate_assignment(found.walked.module, found.holder, [found.attr.split(".")[0].split(" > ")[0]])


def move_to_holder(reports: list[TargetReport], found: Any) -> None:
    """Findings located in a method the wrapper's class shares with every object it makes (its impl, abstract
    eval, a rule forwarding to the function it was given) name the object, not the class: they move to the line
    that defines the object (`foo_p = Kernel(...)`), where an inline suppression covers that object only."""
    where = holder_location(found)
    if where is None:
        return
    shared = [span for cls in inspect.getmro(type(found.holder)) for member in vars(cls).values()
              for span in [_span(member)] if span is not None]
    for report in reports:
        for finding in report.findings:
            loc = finding.location
            if loc is not None and any(path == os.path.abspath(loc.path) and first <= loc.line <= last
                                       for path, first, last in shared):
                finding.location = where


def fold_into_rule_holder(found: list[Any], reports: list[TargetReport]) -> None:
    """A primitive reached only through another primitive's rules (a factory's JVP primitive, which the forward
    primitive's JVP rule binds) is met by users only through that primitive. A registration gap of it (no impl, no
    lowering, no batching rule) that the holder's report already states (a finding naming it, or the same gap at
    the holder, which fails first) is that finding, not a second one on a target nobody calls."""
    label_of = {id(f.obj): f.label for f in found}
    by_label = {r.target: r for r in reports}
    for child in found:
        parent = by_label.get(label_of.get(id(child.holder), "")) if " > " in child.attr else None
        report = by_label.get(child.label)
        if parent is None or report is None:
            continue
        from .. import _rules as rules

        gaps = {rule.code for rule in (rules.MISSING_IMPL, rules.MISSING_LOWERING, rules.MISSING_BATCHING_RULE)}
        quoted = f"'{getattr(child.obj, 'name', '')}'"
        stated = {f.code for f in parent.findings if f.severity != "info"}
        if any(quoted in f.message for f in parent.findings if f.severity != "info"):
            stated |= gaps
        report.findings = [f for f in report.findings if not (f.code in gaps and f.code in stated)]


def _span(member: Any) -> tuple[str, int, int] | None:
    """(absolute file, first line, last line) of a function defined in a class body."""
    fn = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
    if not inspect.isfunction(fn) or not _locate.is_user_code(fn):
        return None
    try:
        lines, first = inspect.getsourcelines(fn)
        path = inspect.getsourcefile(fn)
    except (OSError, TypeError):
        return None
    return (os.path.abspath(path), first, first + len(lines) - 1) if path else None


def jax_owned(prim: Any) -> bool:
    """A primitive JAX defines (its impl and abstract eval live in jax) that a library added a rule to. One of them
    from jax is not enough: a user's primitive often takes its impl from jax (`def_impl(jnp.max)`,
    `partial(dispatch.apply_primitive, p)`) with an abstract eval of its own."""
    rules_ = [fn for fn in (_compat.impl(prim), _compat.abstract_eval_rule(prim)) if fn is not None]
    return bool(rules_) and all(not _locate.is_user_code(fn) and (
        getattr(_locate.unwrap(fn), "__module__", "") or "").split(".")[0] in ("jax", "jaxlib") for fn in rules_)


def restrict_to_user_rules(report: TargetReport, prim: Any) -> None:
    """Keep only findings located in the library's own rules (their `def` line or a line of their body): JAX's
    rules of its own primitive are trusted."""
    spans = [span for r in _compat.registered_rules(prim).values() if r is not None
             for span in [_span(_locate.unwrap(r))] if span is not None]
    report.findings = [f for f in report.findings if f.severity == "info" or (f.location is not None and any(
        os.path.abspath(f.location.path) == path and first <= f.location.line <= last for path, first, last in spans))]


def wrapped_candidate(value: Any, roots: set[str]) -> tuple[str, Any] | None:
    """(kind, object) for a callable wrapping a custom_vjp/custom_jvp/custom_vmap (`__wrapped__`, `.fn`, an
    attribute of a callable object), when the user's function behind it belongs to a checked package.

    When the custom function itself is the user's (a decorator returning a wrapper), it is checked directly. When it
    is a helper library's (equinox's `filter_custom_vjp` builds a custom_vjp of its own flattening function), the
    wrapper is checked as a function with the user's signature, and the custom call found inside it."""
    from .._loading._targets import classify

    inner = unwrap_custom(value)
    if inner is None:
        return None
    kind, obj = classify(inner)
    inner_fn = _locate.unwrap(getattr(obj, "fun", None) or obj)
    user_fn = next((getattr(value, n) for n in _locate.HOLDING_ATTRIBUTES if callable(getattr(value, n, None))),
                   None)
    user_module = getattr(_locate.unwrap(user_fn), "__module__", "") or "" if user_fn is not None else ""
    inner_module = getattr(inner_fn, "__module__", "") or ""
    if inner_module.split(".")[0] in roots and (not user_module or user_module == inner_module
                                                 or "<locals>" not in getattr(inner_fn, "__qualname__", "")):
        return kind, obj  # the custom function is the user's own: check its rules directly
    # the custom function is a helper's closure (its calling convention is the helper's): check the wrapper
    if user_module.split(".")[0] in roots and user_module.split(".")[0] not in ("jax", "jaxlib"):
        return "function", value
    return None


def namespace_name(path: Any, app_dir: str) -> str | None:
    """The dotted name of a folder or file inside a namespace package (folders without `__init__.py`) whose code
    uses relative imports, relative to `app_dir` or the current folder; None otherwise (loose scripts are loaded
    as files, packages with `__init__.py` by their own rules)."""
    from pathlib import Path

    path = Path(path).resolve()
    folder = path if path.is_dir() else path.parent
    if (folder / "__init__.py").is_file():
        return None
    files = [path] if path.is_file() else sorted(path.rglob("*.py"))
    if not any(_relative_import(f) for f in files):
        return None
    for base in (Path(app_dir).resolve(), Path.cwd().resolve()):
        try:
            parts = list(path.relative_to(base).with_suffix("").parts) if path.is_file() else list(
                path.relative_to(base).parts)
        except ValueError:
            continue
        if parts and all(p.isidentifier() for p in parts):
            return ".".join(parts)
    return None


def _relative_import(path: Any) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "from ." in text


def namespace_children(module: Any) -> list[str]:
    """Dotted names of the namespace subpackages of a package: subfolders without `__init__.py` holding Python
    files, which `pkgutil.iter_modules` does not list."""
    from pathlib import Path

    out = []
    for folder in _locate.package_folders(module):
        base = Path(folder)
        if not base.is_dir():
            continue
        for entry in sorted(base.iterdir(), key=lambda p: p.name):
            if (entry.is_dir() and entry.name.isidentifier() and not (entry / "__init__.py").exists()
                    and entry.name != "__pycache__" and any(entry.rglob("*.py"))):
                out.append(f"{module.__name__}.{entry.name}")
    return list(dict.fromkeys(out))


def _cheapest_carried(lint: Any, found: Any, call: dict) -> dict:
    """Of a target's recorded calls that a carrier holds, the one with the fewest arguments (then the most
    frequent, then file order): every one is a real call of the rule, and the batching checks' cost grows with the
    number of arguments (quadax's Leibniz tangent is bound with 21 or with 44 arrays)."""
    keys = found.keys + [f"{found.walked.module.__name__}:{found.attr}"]
    carried = [c for c in lint.recorded.for_keys(keys, found.obj, found.kind) if c.get("via")]
    return min(carried, key=lambda c: len(c.get("args") or ())) if carried else call


def check_recorded(lint: Any, call: dict, found: Any = None, live: Any = None) -> list[TargetReport]:
    """Check a recorded target discovery could not name (a closure or factory rule; `live`, its live object if
    one exists, `RecordedCall.obj`) or whose calls cannot be replayed from the file (a callable or treedef argument):
    the live object if one exists, else the module-level function that called it, else a note saying why it was not
    checked. `lint` is the running `jaxdiag check`."""
    import sys

    from .._run import _engine
    from . import _record_carrier
    from .. import _rules as rules
    from .._checks._base import Options
    from .._core._errors import InferenceError, TargetLoadError
    from .._core._report import CheckResult, Report
    from .._loading._targets import Target, classify

    label = found.label if found is not None else call["target"]
    if found is not None and call.get("via"):
        call = _cheapest_carried(lint, found, call)
    where = call.get("defined_at", "")
    location = recorded_location(call, label)
    obj = live if found is None else None
    options = Options(command="check", seed=lint.seed, provenance="recorded", **lint.run_options)
    try:
        if obj is not None:
            kind, obj = classify(obj)
            templates, params = templates_of(call)
            target = Target(ref=label, obj=obj, kind=kind, module=sys.modules.get(label.partition(":")[0]))
            report = _engine.run_unfiltered(target, templates, params, options, app_dir=lint.app_dir)
            note = f"found through the recording (defined at {where}, made in a closure or factory)"
        elif call.get("via"):
            via = call["via"]
            inside = _record_carrier.check_inside(_record_carrier.runs_of(lint), via, templates_of(via)[0], call,
                                                  options, lint.app_dir)
            if not inside:
                raise InferenceError(f"{label} (defined at {where}) was recorded inside {via['target']}, but "
                                     f"re-running {via['target']} on {' '.join(via.get('args') or [])} does not "
                                     "reach it (neither traced nor differentiated)")
            for tr in inside:
                tr.target = f"{label} (inside {via['target']})"
            report = Report(inside)
            why = "is made at run time" if found is None else "takes a callable or treedef in the recording"
            note = (f"{label} (defined at {where}) {why}; checked inside {via['target']}, the function that "
                    "called it in the recording")
        elif found is not None:
            raise InferenceError(f"{label} was recorded only with a callable or treedef argument or bind param "
                                 f"({', '.join(call.get('args', []))}; {call.get('params')}), which cannot be "
                                 "replayed from a file, and no module-level function of its package that called "
                                 "it takes replayable arguments")
        elif call.get("reachable"):  # a module attribute holds it: never "made at run time"
            raise InferenceError(f"{label} (defined at {where}) is held by a module attribute, but it is not a target "
                                 "of this run (its rules are not the checked package's own, or its module is not "
                                 "checked)")
        else:
            raise InferenceError(f"{label} (defined at {where}) is made at run time by a factory and no "
                                 "module-level function of its package called it in the recording, so "
                                 "jaxdiag cannot re-create it outside your command")
    except InferenceError as exc:
        return [TargetReport(label, call.get("kind", "function"), checks=[CheckResult(
            "recorded", "skipped", 0.0, str(exc))], findings=[rules.TARGET_NOT_CHECKABLE.finding(
                reason=str(exc), fix="Hold it in a module-level name (e.g. `my_op = make_op(...)`) so discovery "
                "and the recording can reach it.", location=location)])]
    except TargetLoadError as exc:
        return [TargetReport(label, call.get("kind", "function"), checks=[CheckResult(
            "recorded", "skipped", 0.0, str(exc))], findings=[rules.TARGET_NOT_CHECKABLE.finding(
                reason=f"recorded target {label} could not be loaded: {exc}",
                fix="Re-record with `jaxdiag record -- ...` after moving or renaming code.",
                location=location)])]
    if report.targets:
        report.targets[0].findings.insert(0, rules.INPUTS_RECORDED.finding(
            how=note, inputs=" ".join(report.targets[0].inputs), params="", location=location))
    keys = found.keys if found is not None else [label]
    for tr in report.targets:  # filtered with everything else at the end of the run, under these names
        tr.module = found.walked.label if found is not None else tr.module
        tr.config_keys = list(keys)
        tr.anchors = [location] if location else []
    return report.targets
