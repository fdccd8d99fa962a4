"""Helpers shared by the registration and batching checks: how to run one example of a primitive or function
(one bind/jit callable per params, the reference), what its rules say about it (the example's output, the abstract
eval's output, cached in `ctx.cache`), texts for avals and errors, and the removed-internals finding (its table is
`_compat.REMOVED_IN_NEWER_JAX`).
"""

from __future__ import annotations

import inspect
import linecache
import os
import re
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from .. import _compat
from .._core import _locate
from .. import _rules as rules
from .._loading._inputs import ArgSpec
from .._core._report import Finding, Location
from ._base import Context, Options, Subject
from .._harness import call_user
from .._harness.cache import SubjectCache

# ---------------------------------------------------------------------------------------------------------------
# Shared helpers: how to run one example, and what the rules say about it
# ---------------------------------------------------------------------------------------------------------------

# One callable per (primitive, params): jax.jit caches compiled code per function object, so reusing the same
# object lets a second run (or a second check) hit that cache instead of compiling again.
_BIND_FNS: "weakref.WeakKeyDictionary[Any, dict[str, Callable]]" = weakref.WeakKeyDictionary()


def params_key(params: dict[str, Any]) -> str:
    return repr(sorted(params.items(), key=lambda kv: kv[0]))


def bind_fn(prim: Any, params: dict[str, Any]) -> Callable:
    """`lambda *args: prim.bind(*args, **params)`, the same object for equal params."""
    per_prim = _BIND_FNS.setdefault(prim, {})
    key = params_key(params)
    if key not in per_prim:
        frozen = dict(params)

        def bound(*args: Any) -> Any:
            return prim.bind(*args, **frozen)

        bound.__name__ = bound.__qualname__ = f"{prim.name}_bind"
        per_prim[key] = bound
    return per_prim[key]


def _one_per_function(table: "weakref.WeakKeyDictionary[Callable, Callable]", make: Callable[[Callable], Callable],
                      fn: Callable) -> Callable:
    """`make(fn)`, one per function object (jax.jit caches compiled code per wrapper: a second run or check reusing
    it hits that cache); made anew for a function that cannot be weakly referenced."""
    try:
        if fn not in table:
            table[fn] = make(fn)
        return table[fn]
    except TypeError:  # not weak-referenceable
        return make(fn)


_JIT_FNS: "weakref.WeakKeyDictionary[Callable, Callable]" = weakref.WeakKeyDictionary()
_OWN_JIT_FNS: "weakref.WeakKeyDictionary[Callable, Callable]" = weakref.WeakKeyDictionary()


def jitted(fn: Callable) -> Callable:
    """`jax.jit(fn)`, one wrapper per function object."""
    return _one_per_function(_JIT_FNS, jax.jit, fn)


def own_jitted(fn: Callable) -> Callable:
    """`_compat.own_jit(fn)` (jaxdiag's compile options), one wrapper per function object: for a jit jaxdiag calls
    at the top level only (never inside vmap, which refuses compile options; `jitted` is for those)."""
    return _one_per_function(_OWN_JIT_FNS, _compat.own_jit, fn)


def subject_fn(subject: Subject) -> Callable:
    """A stable callable applying the subject to its array arguments."""
    if subject.kind == "primitive":
        return bind_fn(subject.obj, subject.params)
    if not getattr(subject, "static_args", None):
        return subject.obj
    return subject.call


def is_user_primitive(subject: Subject) -> bool:
    return subject.kind == "primitive" and not _compat.is_builtin_primitive(subject.obj)


def prim_var(subject: Subject) -> str:
    """The Python name the user gave the primitive (`my_sum_p`), for fixes."""
    if subject.kind != "primitive":
        return subject.name
    module = primitive_module(subject)
    for name, value in (vars(module).items() if module is not None else ()):
        if value is subject.obj and name.isidentifier():
            return name
    return f"{subject.obj.name}_p"


def primitive_module(subject: Subject) -> Any:
    """The module that defines the primitive: the target's module, else the module of its user rules."""
    module = sys.modules.get(subject.module or "")
    if module is not None and any(v is subject.obj for v in vars(module).values()):
        return module
    for fn in _compat.registered_rules(subject.obj).values():
        if fn is not None and _locate.is_user_code(fn):
            candidate = inspect.getmodule(_locate.unwrap(fn))
            if candidate is not None and any(v is subject.obj for v in vars(candidate).values()):
                return candidate
    return None


def has_jit_path(prim: Any) -> bool:
    return _compat.has_abstract_eval(prim) and _compat.has_lowering(prim)


def runs_eagerly(subject: Subject) -> bool:
    """Whether a primitive subject's impl is the per-example reference: it has one, and the user's code calls it.
    A primitive with a jit path that their code binds only under tracing runs under jax.jit instead, as in their
    code: a nested one their function never binds eagerly, or a target whose module binds it only inside
    `jax.jit`-wrapped functions."""
    return _compat.has_impl(subject.obj) and not (traced_only(subject) and has_jit_path(subject.obj))


def traced_only(subject: Subject) -> bool:
    """Whether the user's code binds this primitive only while tracing (see `runs_eagerly`)."""
    if subject.kind != "primitive":
        return False
    if subject.traced_only or subject.parent is not None:
        return subject.traced_only
    from ._custom_jvp._reach import jit_wrappers  # that package imports this module

    return bool(jit_wrappers(subject.obj, primitive_module(subject)))


def reference_fn(subject: Subject) -> Callable | None:
    """How one example's trusted output is computed: the subject itself, eagerly. A primitive without an impl
    falls back to `jax.jit` when it has an abstract eval and a lowering; None when nothing can run it."""
    if subject.kind != "primitive" or runs_eagerly(subject):
        return subject.call
    if has_jit_path(subject.obj):
        return own_jitted(bind_fn(subject.obj, subject.params))
    return None


def flat_outputs(subject: Subject, out: Any) -> tuple[list[np.ndarray], Any]:
    """(leaves as NumPy arrays, structure). A primitive's outputs are positional: a sequence iff it returns one."""
    if subject.kind == "primitive":
        leaves = list(out) if isinstance(out, (list, tuple)) else [out]
        return [np.asarray(x) for x in leaves], ("list" if isinstance(out, (list, tuple)) else "single")
    leaves, treedef = jax.tree_util.tree_flatten(out)
    return [np.asarray(x) for x in leaves], treedef


@dataclass
class ExampleOutput:
    """The subject's output on the example (`ctx.example()`), or the exception it raised."""

    leaves: list[np.ndarray] | None
    structure: Any = None
    error: BaseException | None = None
    via_jit: bool = False

    @property
    def avals(self) -> list[tuple[tuple[int, ...], np.dtype]]:
        return [(tuple(x.shape), x.dtype) for x in self.leaves or []]


def example_output(ctx: Context) -> ExampleOutput:
    """Run the subject once on the example (cached for every check of the subject)."""
    if ctx.cache.example_output is None:
        fn = reference_fn(ctx.subject)
        if fn is None:
            result = ExampleOutput(None, error=NotImplementedError(
                f"{ctx.subject.obj.name} has no impl and no jit path (abstract eval + lowering)"))
        else:
            # flat_outputs is inside the call: an output NumPy cannot take (a ragged list) is the user's error
            ran = call_user(lambda: flat_outputs(ctx.subject, jax.block_until_ready(fn(*ctx.example()))))
            if ran.error is not None:  # the user's impl or function: reported by the impl check
                result = ExampleOutput(None, error=ran.error)
            else:
                leaves, structure = ran.value
                result = ExampleOutput(leaves, structure, via_jit=ctx.subject.kind == "primitive"
                                       and not runs_eagerly(ctx.subject))
        ctx.cache.example_output = result
    return ctx.cache.example_output


@dataclass
class AbstractOutput:
    """What the abstract eval says for the example's shapes; `problem` explains why it cannot be used."""

    avals: list[tuple[tuple[int, ...], np.dtype]] | None
    raw: Any = None
    error: BaseException | None = None
    problem: str = ""


def abstract_output(ctx: Context) -> AbstractOutput:
    """The abstract eval's output for the example's shapes, validated for form (cached)."""
    return _cached_abstract_output(ctx.subject, ctx.cache)


def _cached_abstract_output(subject: Subject, cache: SubjectCache) -> AbstractOutput:
    if cache.abstract_output is None:
        cache.abstract_output = _abstract_output(subject)
    return cache.abstract_output


def _abstract_output(subject: Subject) -> AbstractOutput:
    prim = subject.obj
    if not _compat.has_abstract_eval(prim):
        return AbstractOutput(None, problem="missing")
    avals = [_compat.shaped_array(s.shape, s.dtype) for s in subject.specs]
    ran = call_user(_compat.abstract_eval_output, prim, avals, subject.params)
    if ran.error is not None:
        return AbstractOutput(None, error=ran.error, problem="raised")
    raw = ran.value
    outs = list(raw) if isinstance(raw, (list, tuple)) else [raw]
    if isinstance(raw, (list, tuple)) != bool(prim.multiple_results):
        return AbstractOutput(None, raw=raw, problem="structure")
    if outs and all(_compat.is_foreign_abstract_value(o) for o in outs):
        return AbstractOutput(None, raw=raw, problem="foreign")  # `foreign_values`: not an array primitive
    if not all(_compat.is_abstract_value(o) and hasattr(o, "shape") for o in outs):
        return AbstractOutput(None, raw=raw, problem="type")
    return AbstractOutput([(tuple(o.shape), np.dtype(o.dtype)) for o in outs], raw=raw)


def tangent_dtype_accepted(got: Any, want: Any) -> bool:
    """Whether a rule's tangent of dtype `got` is one JAX takes for an output whose tangent dtype is `want`: `want`
    itself, or, for an integer output (float0), the output's own integer or bool dtype, which grad, linearize and vjp
    treat as the zero it is."""
    got, want = np.dtype(got), np.dtype(want)
    return got == want or (want == _compat.float0 and got.kind in "biu")


def aval_text(shape: tuple[Any, ...], dtype: Any) -> str:
    """`f32[2,3]`; a dimension that is no integer (an abstract eval's own marker for a size it cannot know, a
    symbolic dimension) is shown as it prints."""
    if all(isinstance(d, (int, np.integer)) for d in shape):
        return str(ArgSpec(np.dtype(dtype), tuple(int(d) for d in shape)))
    return str(ArgSpec(np.dtype(dtype), ())).removesuffix("[]") + f"[{','.join(str(d) for d in shape)}]"


def avals_text(avals: list[tuple[tuple[int, ...], Any]]) -> str:
    return ", ".join(aval_text(s, d) for s, d in avals) or "nothing"


def inputs_text(subject: Subject) -> str:
    text = ", ".join(str(s) for s in subject.specs) or "no inputs"
    if subject.params:
        text += " with " + ", ".join(f"{k}={v!r}" for k, v in sorted(subject.params.items()))
    return text


# The operative part of a JAX error: shape expectations and the failing operation.
_OPERATIVE = re.compile(r"Expected\b[^\n]{0,80}?\bActual\b[^\n.;]{0,40}|incompatible shapes[^\n;]{0,80}|"
                        r"expected [^\n;]{0,60}?\bgot\b[^\n;.]{0,40}|shapes? \([^\n;]{0,80}", re.IGNORECASE)
_LONG = 240


def first_line(exc: BaseException) -> str:
    """`Type: first line`, plus the operative part of a long or multi-line message (`Expected (4, 4), Actual (5,
    4)`) when the first line does not already carry it; the rest is trimmed."""
    lines = [t.strip() for t in str(exc).strip().splitlines() if t.strip()]
    if not lines:
        return type(exc).__name__
    head = lines[0].rstrip(".;: ")
    found = _OPERATIVE.search(head)
    if found is not None and not re.search(r"\d", found.group(0)):
        found = None  # "incompatible shapes" without the shapes: look for them further down
    if found is None:
        extra = next((m.group(0) for t in lines[1:] for m in [_OPERATIVE.search(t)] if m and re.search(
            r"\d", m.group(0))), None)
        if extra:
            head = f"{head[:_LONG]}{'...' if len(head) > _LONG else ''} ({extra.strip().rstrip('.;: ')})"
    elif len(head) > _LONG:
        start = max(found.start() - 60, 0)
        lead = head[:min(start, 120)]
        head = f"{lead}{' ... ' if start > len(lead) else ''}{head[start:found.end() + 40]}".rstrip()
        head += "..." if found.end() + 40 < len(lines[0]) else ""
    return f"{type(exc).__name__}: {head}"


def registration_location(subject: Subject, helper: str) -> Location | None:
    """The line of `batching.<helper>(prim)` (defvectorized, defbroadcasting, ...) in the primitive's module: where a
    finding about JAX's generic batching rule belongs, since that line chose it."""
    module = primitive_module(subject)
    if module is None:
        return None
    try:
        lines, _ = inspect.getsourcelines(module)
        path = inspect.getsourcefile(module)
    except (OSError, TypeError):
        return None
    pattern = re.compile(rf"\b{re.escape(helper)}\(\s*{re.escape(prim_var(subject))}\b")
    for number, text in enumerate(lines, start=1):
        if pattern.search(text) and not text.lstrip().startswith("#"):
            return Location(_locate.relative_path(path or ""), number, prim_var(subject))
    line = _factory_registration(module, prim_var(subject), helper)
    return Location(_locate.relative_path(path or ""), line, prim_var(subject)) if line else None


def _factory_registration(module: Any, name: str, helper: str) -> int | None:
    """The line of `<helper>(...)` inside the factory that made the primitive (`weigh_p = _build(SPEC)`, whose
    `_build` calls `batching.defvectorized(prim)` on its local name), read from the module's source."""
    import ast

    from .._harness.source import called_name, module_tree

    tree = module_tree(module)
    if tree is None:
        return None
    factories = {called_name(node.value.func) for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Call) and any(isinstance(t, ast.Name) and t.id == name
                                                              for t in node.targets)}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in factories:
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and called_name(call.func) == helper:
                    return call.lineno
    return None


def rule_location(fn: Any, fallback: Location | None) -> Location | None:
    """The user's rule, or the primitive's own line when the rule is JAX's (defvectorized, lower_fun...)."""
    if fn is not None and _locate.is_user_code(fn):
        return _locate.locate(fn) or fallback
    return fallback


def user_frame_location(exc: BaseException, fn: Any) -> Location | None:
    """The deepest traceback line that belongs to the user's `fn` itself (its body, or a lambda or comprehension
    written inside it), named after `fn`: a helper it calls is not the rule, so the call into the helper is shown."""
    target = _locate.locate(fn)
    if target is None:
        return None
    code = getattr(_locate.unwrap(fn), "__code__", None)
    if code is None:
        return target
    try:
        lines, first = inspect.getsourcelines(_locate.unwrap(fn))
        span = range(first, first + len(lines))
    except (OSError, TypeError):
        span = range(code.co_firstlineno, code.co_firstlineno + 1)
    line = None
    tb = exc.__traceback__
    while tb is not None:
        frame_code = tb.tb_frame.f_code
        if frame_code is code or (frame_code.co_filename == code.co_filename and frame_code.co_firstlineno in span
                                  and tb.tb_lineno in span):
            line = tb.tb_lineno
        tb = tb.tb_next
    return Location(target.path, line, target.function) if line else target


def raises_on_purpose(exc: BaseException, fn: Any) -> bool:
    """True when the user's rule `fn` refused the call deliberately: the deepest frame of the traceback is a
    `raise SomeError(...)` (or a bare `raise NotImplementedError`) statement of the rule's own body (not of JAX or
    NumPy called from it), or a `raise NotImplementedError` (or an error whose text refuses) of the user's own code
    below the rule: a helper, or the primitive's impl the rule's bind reaches ("this case is not supported", written
    for its users). An `assert`, a bare
    re-`raise`, `raise err` of a caught error or any other error from a call inside the rule is an accident of the
    code."""
    code = getattr(_locate.unwrap(fn), "__code__", None)
    frames = _traceback_entries(exc)
    if code is None or not frames or isinstance(exc, AssertionError) or not _raise_line(frames[-1]):
        return False
    frame_code = frames[-1].tb_frame.f_code
    if frame_code is code or (frame_code.co_filename == code.co_filename
                              and frame_code.co_firstlineno >= code.co_firstlineno
                              and frame_code.co_name in ("<lambda>", "<listcomp>", "<genexpr>")):
        return True
    # a helper's refusal: NotImplementedError, or an error whose text refuses ("Ai cannot be vectorized", "batching
    # over x is not supported"), raised by a `raise` statement of user code below the rule, JAX's frames allowed in
    # between (the primitive's own impl refusing, through the rule's bind, a rank it does not take: "Unsupported
    # input shape"); an error JAX or NumPy raise (the deepest frame theirs) is never one
    start = next((i for i, f in enumerate(frames) if f.tb_frame.f_code is code), None)
    text = str(exc)
    refuses = bool(_REFUSAL.search(text)) or (bool(_ASKS_FOR_AN_ISSUE.search(text)) and not _A_BUG.search(text))
    return ((isinstance(exc, NotImplementedError) or refuses) and start is not None
            and _locate.is_user_file(frames[-1].tb_frame.f_code.co_filename))


def stated_precondition(exc: BaseException) -> str:
    """"path:line" of a `raise ValueError(...)` statement of the user's own code that `exc` came from (the deepest
    frame of its traceback, a user file): a precondition the code states on the values it is given ("gamma must
    be in the interval [0, 1]", "order can not be less than 0"), however deep in the package; "" otherwise (an
    `assert`, an error raised by JAX or NumPy, a re-raise, any other exception type)."""
    frames = _traceback_entries(exc)
    if not isinstance(exc, ValueError) or not frames:
        return ""
    deepest = frames[-1]
    filename = deepest.tb_frame.f_code.co_filename
    if not _locate.is_user_file(filename) or not _raise_line(deepest):
        return ""
    return f"{filename}:{deepest.tb_lineno}"


def _traceback_entries(exc: BaseException) -> list[Any]:
    """The entries of `exc`'s traceback, outermost first (the last one is where it was raised)."""
    entries = []
    tb = exc.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    return entries


def _raise_line(entry: Any) -> bool:
    """Whether the traceback entry's source line is a `raise` statement (`_RAISE_STATEMENT`)."""
    return bool(_RAISE_STATEMENT.match(linecache.getline(entry.tb_frame.f_code.co_filename, entry.tb_lineno).strip()))


# `raise SomeError(...)`, or an exception class raised bare (`raise NotImplementedError`); never a re-`raise` or a
# caught exception raised again (`raise err`)
_RAISE_STATEMENT = re.compile(r"raise\s+(?:[A-Za-z_][\w.]*\s*\(|[A-Za-z_][\w.]*(?:Error|Exception)\s*(?:#.*)?$)")
# What a refusal written for users says (a validation of shapes or values says what it expected instead).
_REFUSAL = re.compile(r"\b(can ?not|can't|not (yet )?(supported|implemented|allowed)|unsupported|does(n't| not) "
                      r"support)\b", re.IGNORECASE)
# ... or asks the user to ask for the case ("has no batch axis for this input; please consider opening an issue"),
# unless it calls itself a bug ("internal error, please file an issue"): then it is an accident of the code
_ASKS_FOR_AN_ISSUE = re.compile(r"\b(open|opening|file|filing|raise|raising)\s+an?\s+(github\s+)?issue\b",
                                re.IGNORECASE)
_A_BUG = re.compile(r"\b(bug|internal|unexpected|should not happen|should never)\b", re.IGNORECASE)


# A JAX name this release does not have, in the words of the three ways code reaches it: an attribute
# (`jax.core.Primitive`), a `from jax... import name`, or a module (`from jax.config import config`)
_REMOVED = re.compile(r"(module '(jax[\w.]*)' has no attribute '(\w+)')|"
                      r"(cannot import name '(\w+)' from '(jax[\w.]*)')|"
                      r"(No module named '(jax(?:\.\w+)*)\.(\w+)')")


def removed_api(exc: BaseException | str) -> tuple[str, str] | None:
    """(module, attribute) when `exc` (an exception, or its `Kind: message` text) says a `jax` module has no such
    attribute or name to import (a removed or moved API)."""
    if isinstance(exc, BaseException) and not isinstance(exc, (AttributeError, ImportError)):
        return None
    text = str(exc)
    found = _REMOVED.match(text) if isinstance(exc, BaseException) else _REMOVED.match(
        _error_line(text).partition(": ")[2])
    if found is None:
        return None
    return (found[2], found[3]) if found[1] else (found[6], found[5]) if found[4] else (found[8], found[9])


def removed_api_finding(exc: BaseException | str, where: str, location: Location | None) -> Finding:
    """JXR008 for what `removed_api` reads in `exc`, with the table's advice and, where the name has a drop-in
    replacement, the corrected line."""
    module, attr = removed_api(exc) or ("jax", "?")
    advice = _compat.removed_api_advice(module, attr)
    error = first_line(exc) if isinstance(exc, BaseException) else (_error_line(exc) or exc.partition("\n")[0])
    return rules.REMOVED_JAX_API.finding(
        where=where,
        module=module,
        attr=attr,
        jax_version=_compat.JAX_VERSION,
        exc_error=error,
        advice=advice + _corrected_line(location, attr),
        location=location)


def _error_line(text: str) -> str:
    """`Kind: message` of the removed name in a failure's text (a traceback, `file:line: Kind: message`), to the
    end of its line; "" when the text says no such error."""
    for found in _REMOVED.finditer(text):
        kinds = ["AttributeError: "] if found.group(1) else ["ImportError: "] if found.group(4) else \
            ["ModuleNotFoundError: ", "ImportError: "]
        kind = next((k for k in kinds if text[:found.start()].endswith(k)), None)
        if kind is not None:
            return kind + text[found.start():].splitlines()[0]
    return ""


def _corrected_line(location: Location | None, attr: str) -> str:
    """`. Line N: `corrected statement``, when the removed name has a drop-in replacement and the line is a whole
    statement (the fix template ends the sentence)."""
    import ast
    import linecache

    if location is None or attr not in _compat.DROP_IN:
        return ""
    text = linecache.getline(os.path.abspath(location.path), location.line).split("#")[0].strip()
    fixed = re.sub(rf"(?:\b\w+\.)*\b{re.escape(attr)}\b", _compat.DROP_IN[attr], text)
    try:
        ast.parse(fixed)
    except SyntaxError:
        return ""
    return f". Line {location.line}: `{fixed}`" if fixed != text else ""


def signature_problem(fn: Any, args: tuple, kwargs: dict[str, Any]) -> str | None:
    """Why calling `fn(*args, **kwargs)` as JAX does would fail on the signature alone, or None."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        sig.bind(*args, **kwargs)
    except TypeError as exc:
        return str(exc)
    return None


# Here rather than in _abstract: the engine asks it of every subject, and _abstract (with the batching spy it
# imports) is needed only when the answer is yes.
def platform_blocker(subject: Subject, options: Options, cache: SubjectCache) -> str | None:
    """Why the subject cannot run on this platform (the error it raised, quoted), or None when it runs (or fails
    for a reason of its own, which the value checks report as usual). Cached per subject."""
    if cache.platform_blocker is not None:
        return cache.platform_blocker or None
    reason = ""
    if subject.kind in ("primitive", "custom_vjp", "custom_jvp") and subject.specs:
        out = example_output(Context(subject, options, "platform", cache))
        error = out.error
        elsewhere = _compat.accelerator_only_lowering(subject.obj) if subject.kind == "primitive" else frozenset()
        if error is not None and (elsewhere or _compat.is_platform_error(error)):
            where = (f"{subject.name} is lowered only for {', '.join(sorted(elsewhere))}; " if elsewhere else "")
            reason = f"{where}running it on {jax.default_backend()} raised {first_line(error)}"
    cache.platform_blocker = reason
    return reason or None


def foreign_values(ctx: Context) -> str:
    """What says a primitive's values are its library's own objects, not arrays: "its abstract eval returns
    AbstractMeasurement" (an abstract value type its library defines), or "its impl returns MeasurementValue" (every
    output an object of a class of the user's code, as a quantum library's mid-circuit measurement is). Such a
    primitive is an operation of that library's own interpreter, which JAX never lowers, batches or differentiates,
    and no array check applies; "" for every other subject. The impl is never run here: its output is read once
    the impl check has run it (`example_output`'s cache), so a user impl that hangs or exits does so in that check."""
    subject = ctx.subject
    if subject.kind == "function":
        return _returns_callables(ctx)
    if subject.kind != "primitive" or not subject.specs or not _compat.is_primitive(subject.obj):
        return ""
    out = _cached_abstract_output(subject, ctx.cache)
    if out.problem == "foreign":
        raw = out.raw if isinstance(out.raw, (list, tuple)) else [out.raw]
        return f"its abstract eval returns {'/'.join(sorted({type(o).__name__ for o in raw}))}"
    ran = ctx.cache.example_output
    if ran is None or not ran.leaves:
        return ""
    kinds: set[str] = set()
    for leaf in ran.leaves:
        items = _object_items(leaf)
        if not items or not all(_locate.is_user_code(type(item)) for item in items):
            return ""
        kinds.update(type(item).__name__ for item in items)
    return f"{IMPL_OBJECTS} {'/'.join(sorted(kinds))}"


def _object_items(leaf: Any) -> list[Any]:
    """The Python objects an output leaf of object dtype holds (the example run stores outputs as NumPy arrays);
    [] for a leaf of numbers."""
    dtype = getattr(leaf, "dtype", None)
    return list(np.asarray(leaf, dtype=object).ravel()) if dtype is not None and dtype.kind == "O" else []


IMPL_OBJECTS = "its impl returns"  # how `foreign_values` begins when the impl, not the abstract eval, says so


def _returns_callables(ctx: Context) -> str:
    """"it returns function": a function whose output, once a check ran it (`example_output`'s cache), holds
    functions, not arrays (a factory's product that builds another: `eff(host, *outs)` returning the effect body).
    Nothing about it can be batched, differentiated or compared; "" before it ran and for every other output."""
    ran = ctx.cache.example_output
    leaves = ran.leaves if ran is not None and ran.leaves is not None else []
    items = [item for leaf in leaves for item in _object_items(leaf)]
    kinds = sorted({type(item).__name__ for item in items if callable(item)})
    return f"it returns {'/'.join(kinds)}" if kinds else ""
