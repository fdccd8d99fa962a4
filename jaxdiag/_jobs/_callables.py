"""Stand-in callables for the public functions that take a function: the carriers `_call_sites` and `_traced_reach`
run to reach a rule.

A public function whose parameter is a function (`apply(f: Callable, x)`, `expect(log_pdf, fun, pars, x)`) cannot
be run on drawn arrays: inference would hand an array where the function calls its argument. A decorator factory
(`wrap(fn: Callable) -> Callable`) returns the function that holds the rules, and inference never calls what it
returns. Both hide every rule they make or reach (a `custom_vjp` taking the function in `nondiff_argnums`, a
`pure_callback` on it). Here such a parameter is given a stand-in from a short ladder (`LADDER`): first an
elementwise one (the shape of its last array argument: row-wise, batch-polymorphic, smooth), then one that sums
to a scalar (a likelihood, a loss), then one returning a tuple of a pointwise polynomial of each array argument
(a helper applying `fn(*xs)` to several states of one shape and unpacking its outputs); the first on which the carrier
runs wins, as the int ladder's rung does. A
factory is applied to the stand-in (its other parameters keep their defaults) and what it returns is the carrier.

A parameter counts as a function when its annotation says so (`Callable`, `callable`) or its code calls it
(`matvec(v)`, in the body or in a function defined there); an unannotated one otherwise only by a conventional name
(`f`, `fn`, `*_fn`, `callback`...), and then an array is still tried first (`f` is also a common
name for a field of values). Everything reached this way is checked on inferred inputs (`_provenance`: at most a
warning), and the notes name each stand-in as assumed. A derivative the rule computes from the function's values
rather than by having JAX differentiate it (Danskin's theorem: a maximiser's value as the gradient of a max) is right
or wrong depending on what the function computes, which the stand-in does not: such a finding is a note, never a
verdict (`assume_stand_ins`). The stand-in is jaxdiag's, not the user's.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import textwrap
from dataclasses import dataclass
from typing import Any, Callable

from .._loading._targets import Target

# An unannotated parameter taken for a function by its name alone.
# (and JAX's own names for a linear operator handed as a function: `custom_linear_solve(matvec, b, ...)`)
CALLABLE_NAME = re.compile(r"^(f|fn|fun|func|function|callback|cb|r?matvec|vecmat)$|_(fn|fun|func|function|callback)$"
                           r"|^(fn|fun|func)_")
_CALLABLE_ANNOTATION = re.compile(r"\b(Callable|callable)\b")


@dataclass(frozen=True)
class StandIn:
    """A function jaxdiag hands a parameter that takes one: NumPy arrays in (a callback's), NumPy out; JAX arrays and
    tracers in, JAX out (only arithmetic and the arrays' own `.sum()`). The elementwise one scales each position of
    the last axis by its own factor (`_scaled`). Frozen: hashable, as a static argument
    (`nondiff_argnums`, `static_argnums`) must be."""

    behaviour: str  # "elementwise", "scalar" or "tuple"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import jax

        leaves = [leaf for leaf in jax.tree_util.tree_leaves((args, kwargs)) if hasattr(leaf, "shape")]
        if not leaves:
            return 0.5 * sum(float(a) for a in args if isinstance(a, (int, float))) + 1.0
        if self.behaviour == "scalar":
            return sum(0.5 * leaf.sum() for leaf in leaves)
        if self.behaviour == "tuple":  # one output per array argument, each of its shape (a system's vector field),
            # pointwise (no position's scale: a helper may flatten its arrays, a whole batch at once, before calling)
            return tuple(leaf * (0.5 + 0.25 * leaf) for leaf in leaves)
        # elementwise in its last array argument; the others enter through their sums, which keeps it row-wise when
        # they are unbatched parameters
        out = _scaled(leaves[-1])
        for leaf in leaves[:-1]:
            out = out + 0.25 * leaf.sum()
        return out

    def __repr__(self) -> str:
        return f"<jaxdiag's {self.behaviour} stand-in>"


LADDER = ("elementwise", "scalar", "tuple")


def _scaled(x: Any) -> Any:
    """`x` times a distinct scale per position of its last axis, from 0.5 up: a linear operator with distinct
    eigenvalues (a Krylov method, Lanczos or Arnoldi, breaks down on a multiple of the identity: its first vector is
    already an eigenvector), in `x`'s own dtype; 0.5 * x where the scales cannot be in it (integers)."""
    import numpy as np

    dtype = np.dtype(getattr(x, "dtype", np.float64))
    if not np.issubdtype(dtype, np.inexact) or not np.ndim(x):
        return 0.5 * x
    n = np.shape(x)[-1]
    return x * (0.5 + 0.5 * np.arange(n) / max(n, 1)).astype(dtype)


def unwrapped(obj: Any) -> Any:
    """A custom_jvp / custom_vjp carrier's primal function (calling it reaches the same rules the decorated one
    does, and a function's nested rules are what a carrier is run for); any other object as it is."""
    fun = getattr(obj, "fun", None)
    return fun if callable(fun) and type(obj).__name__ in ("custom_jvp", "custom_vjp") else obj


def callable_params(fn: Any) -> tuple[list[str], bool]:
    """(the required positional parameters of `fn` that take a function, whether each is annotated as one)."""
    from .._harness.source import annotation_text

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return [], True
    names: list[str] = []
    annotated = True
    called = _called_parameters(fn)
    for p in params:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) or p.default is not p.empty:
            continue
        text = annotation_text(p.annotation)
        if _CALLABLE_ANNOTATION.search(text) or (not text and p.name in called):
            names.append(p.name)
        elif not text and CALLABLE_NAME.search(p.name):
            names.append(p.name)
            annotated = False
    return names, annotated


def _called_parameters(fn: Any) -> set[str]:
    """The parameters `fn`'s code calls (`matvec(v)`, in its body or in a function it defines there, which closes
    over it) and never assigns: functions, whatever their names."""
    from .._harness.source import function_source

    found = function_source(fn)
    if found is None:
        return set()
    node = found.node
    params = {a.arg for a in node.args.posonlyargs + node.args.args}
    called = {n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assigned = {t.id for n in ast.walk(node) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
    return (params & called) - assigned


def rungs(fn: Any) -> list[dict[str, str]]:
    """The stand-ins to try, in order, as {parameter: behaviour}: [{}] for a function taking none; an array first
    ({}) when a parameter is a function by its name only, unless `fn` is a factory (what an array makes is never
    called: the run would reach nothing)."""
    names, annotated = callable_params(fn)
    if not names:
        return [{}]
    # a function whose code unpacks what the parameter returns takes several outputs: the tuple stand-in first (an
    # elementwise one's single array would be unpacked row by row, a run that works by accident on some shapes)
    ladder = sorted(LADDER, key=lambda b: b != "tuple") if _unpacked_results(fn) & set(names) else list(LADDER)
    return ([] if annotated or makes_function(fn) else [{}]) + [{n: b for n in names} for b in ladder]


def _unpacked_results(fn: Any) -> set[str]:
    """The parameters whose call results `fn`'s code (nested functions included) unpacks: `a, b = f(x)`,
    `tuple(f(x))`, `for y in f(x)`, or a name holding `f(...)` (inside other calls too: `barrier(f(x))`) that is
    then iterated or unpacked."""
    from .._harness.source import function_source

    found = function_source(fn)
    if found is None:
        return set()
    node = found.node
    params = {a.arg for a in node.args.posonlyargs + node.args.args}

    def callers(expr: ast.AST | None) -> set[str]:  # the parameters called anywhere inside `expr`
        return {n.func.id for n in ast.walk(expr) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                and n.func.id in params} if expr is not None else set()

    holders: dict[str, set[str]] = {}  # a local name -> the parameters whose results it holds
    unpacked: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and len(n.targets) == 1:
            target = n.targets[0]
            if isinstance(target, ast.Name):
                holders.setdefault(target.id, set()).update(callers(n.value))
            elif isinstance(target, (ast.Tuple, ast.List)):
                unpacked |= callers(n.value)
    for n in ast.walk(node):
        iterated: list[ast.expr] = []
        if isinstance(n, (ast.For, ast.comprehension)):
            iterated.append(n.iter)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("tuple", "list") and n.args:
            iterated.append(n.args[0])
        elif isinstance(n, ast.Starred):
            iterated.append(n.value)
        for expr in iterated:
            unpacked |= callers(expr)
            if isinstance(expr, ast.Name):
                unpacked |= holders.get(expr.id, set())
    return unpacked


def makes_function(fn: Any) -> bool:
    """Whether `fn` is a decorator factory: annotated to return a callable, or every `return` of its own body
    returns a function it defines (`def _wrapped(...)`, a lambda)."""
    from .._harness.source import annotation_text

    try:
        ret = inspect.signature(fn).return_annotation
    except (TypeError, ValueError):
        return False
    text = annotation_text(ret)
    if _CALLABLE_ANNOTATION.search(text):
        return True
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    top = tree.body[0] if tree.body else None
    if not isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    defined = {n.name for n in top.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    returns = [n for n in _own_nodes(top) if isinstance(n, ast.Return)]
    return bool(returns) and all(isinstance(r.value, ast.Lambda) or (isinstance(r.value, ast.Name)
                                                                     and r.value.id in defined) for r in returns)


def _own_nodes(top: ast.AST) -> list[ast.AST]:
    """The nodes of a function's own body, not of the functions and classes it defines."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(top))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return out


def configured(target: Target, keywords: dict[str, Any]) -> tuple[Target, dict[str, Any]]:
    """A factory configured by keywords alone (`lsmr(*, atol=1e-6, custom_vjp=True)` returning the solver `run` it
    defines): the function it returns, called with `keywords` (else its defaults), and no keywords left; any other
    target as it is. A factory that raises raises here, as an InferenceError."""
    from .._core._errors import InferenceError
    from .._harness import call_user

    fn = unwrapped(target.obj)
    if takes_positional(fn) or not makes_function(fn):
        return target, keywords
    made = call_user(functools.partial(fn, **keywords))
    if made.error is not None or not callable(made.value):
        why = f"{type(made.error).__name__}: {made.error}" if made.error is not None else "not a function"
        raise InferenceError(f"{target.ref}() returned no function ({why})", label=target.ref, tried=[],
                             last_error=why, arity=0)
    return Target(target.ref, made.value, "function", target.module), {}


def takes_positional(fn: Any) -> bool:
    """Whether `fn` takes a positional argument (or `*args`); True where its signature cannot be read."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params)


def carrier(target: Target, keywords: dict[str, Any], stand_ins: dict[str, str]) -> Target:
    """The function a carrier run calls: a custom_jvp/custom_vjp's primal, its keyword-only arguments bound to
    `keywords`, each parameter of `stand_ins` given its stand-in (a factory applied to them, what it returns being
    the carrier; a factory configured by keywords alone is called first, `configured`). A factory that raises
    raises here (through `call_user`), as an InferenceError."""
    from .._core._errors import InferenceError
    from .._harness import call_user

    target, keywords = configured(target, keywords)
    fn, keywords = _array_keywords_positional(unwrapped(target.obj), keywords)
    if fn is not target.obj:
        target = Target(target.ref, fn, "function", target.module)
    if not stand_ins:
        obj = functools.partial(fn, **keywords) if keywords else fn
        return Target(target.ref, obj, target.kind, target.module)
    given = {name: StandIn(b) for name, b in stand_ins.items()}
    if makes_function(fn):
        made = call_user(functools.partial(fn, **given, **keywords))
        if made.error is not None or not callable(made.value):
            why = f"{type(made.error).__name__}: {made.error}" if made.error is not None else "not a function"
            raise InferenceError(f"{target.ref} applied to {_shown(stand_ins)} returned no function ({why})",
                                 label=target.ref, tried=[], last_error=why, arity=0)
        return Target(target.ref, made.value, "function", target.module)
    return Target(target.ref, with_stand_ins(fn, given, keywords), "function", target.module)


@dataclass(frozen=True)
class ArrayKeyword:
    """A required keyword-only argument annotated as an array (`*, X_trg: Array`) that no call site gives: inferred
    like a positional operand, after the positional ones (`carrier` passes it by its name)."""

    def __repr__(self) -> str:
        return "<inferred array>"


def _array_keywords_positional(fn: Callable, keywords: dict[str, Any]) -> tuple[Callable, dict[str, Any]]:
    """`fn` taking its required keyword-only array arguments (`ArrayKeyword`, `*, X_trg: Array`) as
    positional ones right after its required positional parameters, so that inference draws them as it draws those;
    the other keywords are returned, for the caller to bind as before. `fn` itself when it has none, or takes `*args`
    (nothing can follow those)."""
    arrays = [k for k, v in keywords.items() if isinstance(v, ArrayKeyword)]
    if not arrays:
        return fn, keywords
    rest = {k: v for k, v in keywords.items() if k not in arrays}
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn, rest
    params = list(sig.parameters.values())
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return fn, rest
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    optional = [p for p in positional if p.default is not p.empty]

    def call(*args: Any, **kwargs: Any) -> Any:
        head, given, tail = args[:len(required)], args[len(required):len(required) + len(arrays)], args[
            len(required) + len(arrays):]
        return fn(*head, *tail, **dict(zip(arrays, given)), **kwargs)  # `rest` comes as keywords, as before

    added = [sig.parameters[k].replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) for k in arrays]
    others = [p for p in params if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in arrays]
    try:
        signature = sig.replace(parameters=[*required, *added, *optional, *others])
    except ValueError:  # an optional positional-only parameter cannot follow the added ones
        return fn, rest
    return _as_users(call, fn, signature), rest


def _as_users(call: Callable, fn: Callable, signature: inspect.Signature) -> Callable:
    """`call`, a wrapper of the user's `fn` taking `signature`: what inference reads, located and named as `fn`."""
    call.__dict__.update(__signature__=signature, __wrapped__=fn)
    call.__module__, call.__name__, call.__qualname__ = fn.__module__, fn.__name__, fn.__qualname__
    return call


def with_stand_ins(fn: Callable, given: dict[str, StandIn], keywords: dict[str, Any] | None = None) -> Callable:
    """`fn` with the parameters of `given` filled: it takes the others, positionally, in their order."""
    sig = inspect.signature(fn)
    order = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    def call(*args: Any, **kwargs: Any) -> Any:
        rest = list(args)
        merged = [given[p.name] if p.name in given else rest.pop(0) for p in order if p.name in given or rest]
        return fn(*merged, *rest, **(keywords or {}), **kwargs)

    kept = [p for p in sig.parameters.values() if p.name not in given and p.name not in (keywords or {})]
    return _as_users(call, fn, sig.replace(parameters=kept))


def _shown(stand_ins: dict[str, str]) -> str:
    return ", ".join(f"{name}={StandIn(b)!r}" for name, b in stand_ins.items())


def assumed_text(stand_ins: dict[str, str]) -> str:
    """The stand-ins as the notes name them: `f=<jaxdiag's elementwise stand-in> (assumed)`."""
    return ", ".join(f"{name}={StandIn(b)!r} (assumed)" for name, b in stand_ins.items())


def assume_stand_ins(report: Any, stand_ins: dict[str, str], obj: Any, kind: str, subject: Any) -> None:
    """Name the stand-in functions among the inputs a finding was seen on (its graded message then starts `on
    f32[3] with fn=<jaxdiag's elementwise stand-in> (assumed) inferred`). A derivative that differs from the
    reference (`_stand_in_dependent`) on a rule `obj` that never has JAX differentiate a stand-in (one it closes
    over, or one `subject` hands it as an argument) is a note instead (`JXN003`): such a rule computes its
    derivative from the function's values (`argmax_fun`'s maximiser as the gradient of a max, by Danskin's theorem),
    so whether it is right depends on what the function computes, and the stand-in computes something else. A rule
    that differentiates the function itself (`jax.jvp(fn, ...)`) is judged: its derivative is right for every
    function or for none. A rule handed a stand-in itself is graded by `_assume_handed` too."""
    from .. import _rules as rules

    handed = _handed_positions(subject)
    dependent = ({r.code for r in _stand_in_dependent(rules)}
                 if not _differentiates(_rule_functions(obj, kind, handed)) else set())
    _unjudged(report, stand_ins, dependent, "its rule's derivative depends on what the assumed function computes",
              f"the rule never differentiates {', '.join(sorted(stand_ins))} (it uses the values of the function it "
              "is given as a derivative), so whether it is right depends on what that function computes")
    if handed:
        _assume_handed(report, stand_ins)


def assume_returned_stand_ins(report: Any, stand_ins: dict[str, str]) -> None:
    """A function a factory returned, run with stand-ins for the functions its code calls (a `matvec` handed to a
    matrix-free decomposition): what it computes, and so every verdict on it and on the rules it reaches, is decided
    by the stand-in (a Krylov method on an operator with fewer distinct eigenvalues than its steps breaks down), so
    every error and warning is a note naming the stand-in; the checks still ran."""
    dependent = {f.code for f in report.findings if f.severity in ("error", "warning")}
    _unjudged(report, stand_ins, dependent, "what it computes depends on the assumed function",
              f"the function is run with jaxdiag's stand-in as {' and '.join(sorted(stand_ins))}, which decides "
              "what it computes")


def _assume_handed(report: Any, stand_ins: dict[str, str]) -> None:
    """A rule handed a stand-in itself (a solver in `nondiff_argnums` that its fwd and bwd call): what it does with
    the stand-in's results (unpack a `(x, state)` pair its protocol promises, index them) fails or succeeds by what
    the stand-in returns, which follows no library's protocol. So a rule that raises there, or returns a wrongly
    structured result, is a note; a rule not handed one is judged as before, and so are the values of a derivative
    that has JAX differentiate the stand-in."""
    from .. import _rules as rules

    # its derivative's values are judged as `assume_stand_ins` says (right for every function when JAX
    # differentiates the one it is given)
    dependent = {r.code for r in (rules.DERIVATIVE_RULE_RAISED, rules.DERIVATIVE_RULE_REFUSES,
                                  rules.VJP_BWD_STRUCTURE)}
    _unjudged(report, stand_ins, dependent, "its rule calls the assumed function and uses what it returns",
              f"the rule is handed jaxdiag's stand-in as {' and '.join(sorted(stand_ins))} and uses what it "
              "returns, so whether it works depends on what your function returns (the stand-in follows no "
              "protocol)")


def assume_solver_stand_ins(report: Any, stand_ins: dict[str, str]) -> None:
    """`assume_stand_ins` for a function making custom_linear_solve / custom_root calls run with stand-ins: whether
    its solver inverts its operator (or finds a root of its function) depends on what the functions it is given
    compute, and so does the implicit gradient built on that, so those findings are notes. A stand-in solver (or
    operator) is jaxdiag's: it solves nothing."""
    from .. import _rules as rules

    dependent = {r.code for r in (rules.SOLVE_NOT_INVERSE, rules.TRANSPOSE_SOLVE_NOT_INVERSE,
                                  rules.SYMMETRIC_MATVEC_NOT_SYMMETRIC, rules.ROOT_SOLVE_INCONSISTENT,
                                  rules.CUSTOM_DERIVATIVE_MISMATCH)}
    _unjudged(report, stand_ins, dependent, "its solvers' consistency depends on what the assumed functions compute",
              "whether a solve inverts its operator (and the implicit gradient built on it) depends on what the "
              f"functions given as {', '.join(sorted(stand_ins))} compute")


def _unjudged(report: Any, stand_ins: dict[str, str], dependent: set[str], detail: str, why: str) -> None:
    """The findings of `dependent` codes become notes saying `why` they were not judged; every other finding names
    the stand-ins among its inputs."""
    from .. import _rules as rules

    # a check failed by such findings alone (its detail lists the codes it found) did not judge the rule either
    unjudged = [c for c in report.checks if c.status == "failed" and set(c.detail.split("; ")) <= dependent]
    for c in unjudged:
        c.status, c.detail = "skipped", detail
    for i, finding in enumerate(report.findings):
        if finding.code in dependent:
            report.findings[i] = rules.CHECK_SKIPPED.finding(
                check=", ".join(c.name for c in unjudged) or finding.code,
                reason=f"{finding.code} not judged: {why}; with {assumed_text(stand_ins)} "
                       f"{finding.message[:1].lower()}{finding.message[1:]}",
                location=finding.location)
            continue
        named = f"with {assumed_text(stand_ins)}"
        if finding.inputs is not None and named not in finding.inputs.get("specs", []):
            finding.inputs = {**finding.inputs, "specs": [*finding.inputs.get("specs", []), named]}


def _handed_positions(subject: Any) -> frozenset[int]:
    """The positions of a subject's arguments that are jaxdiag's stand-ins (a function in `nondiff_argnums`)."""
    return frozenset(i for i, v in subject.static_args.items() if isinstance(v, StandIn))


def _stand_in_dependent(rules: Any) -> tuple[Any, ...]:
    """The findings that compare a derivative's values with the reference's: what a stand-in decides."""
    return (rules.CUSTOM_DERIVATIVE_WRONG, rules.CUSTOM_DERIVATIVE_MISMATCH, rules.SECOND_ORDER_MISMATCH,
            rules.FLAT_PRIMAL_SURROGATE, rules.JVP_IGNORES_ARGUMENT, rules.JVP_CONSTANT_OUTPUT)


# JAX's transformations that differentiate the function they are given
_DIFFERENTIATING = {"jvp", "vjp", "grad", "value_and_grad", "linearize", "jacfwd", "jacrev", "jacobian", "hessian"}


def _rule_functions(obj: Any, kind: str, handed: frozenset[int] = frozenset()) -> list[tuple[Callable, set[str]]]:
    """A custom_jvp's JVP rule or a custom_vjp's fwd and bwd, each with the names in its body that hold a stand-in
    (`_holders`, and the parameters receiving the primal's `handed` positions: a stand-in in `nondiff_argnums`);
    the user functions a rule JAX built wraps (`defjvps` keeps them in its closure) too."""
    from .. import _compat

    if kind == "custom_jvp":
        _, jvp, nondiff, _ = _compat.custom_jvp_parts(obj)
        rules = [(jvp, False)]
    elif kind == "custom_vjp":
        _, fwd, bwd, nondiff, _ = _compat.custom_vjp_parts(obj)
        rules = [(fwd, True), (bwd, False)]
    else:
        return []
    out: list[tuple[Callable, set[str]]] = []
    for rule, takes_primals in rules:
        fn, bound = rule, {}
        while isinstance(fn, functools.partial):  # `partial(_jvp, impl)`: `impl` is the rule's first parameter
            names = list(inspect.signature(fn.func).parameters)
            bound.update({**dict(zip(names, fn.args)), **fn.keywords})
            fn = fn.func
        if not inspect.isfunction(fn):
            continue
        params = [p for p in inspect.signature(fn).parameters if p not in bound]
        # fwd takes the primal's arguments in place; bwd and the JVP rule take the nondiff ones first, in order
        at = sorted(handed) if takes_primals else [k for k, i in enumerate(sorted(nondiff)) if i in handed]
        given = {params[k] for k in at if k < len(params)}
        out.append((fn, _holders(fn, bound) | given))
        for held in _free_values(fn).values():
            out.extend((f, _holders(f, {})) for f in (held if isinstance(held, (tuple, list)) else (held,))
                       if inspect.isfunction(f) and f is not fn)
    return out


def _free_values(fn: Callable) -> dict[str, Any]:
    """The closure variables and the globals `fn`'s code names, by name (`inspect.getclosurevars`)."""
    try:
        found = inspect.getclosurevars(fn)
    except (TypeError, ValueError):  # not a Python function; an empty closure cell
        return {}
    return {**found.globals, **found.nonlocals}


def _holders(fn: Callable, bound: dict[str, Any]) -> set[str]:
    """The names `fn` can reach a stand-in by: a free variable, global or bound argument whose value is one, or holds
    one (a `partial` of a function applied to it, a function closing over it)."""
    values = {**_free_values(fn), **bound}
    return {name for name, value in values.items() if _holds_stand_in(value)}


def _holds_stand_in(value: Any, depth: int = 3) -> bool:
    if isinstance(value, StandIn):
        return True
    if depth == 0:
        return False
    if isinstance(value, functools.partial):
        return any(_holds_stand_in(v, depth - 1) for v in (value.func, *value.args, *value.keywords.values()))
    if inspect.isfunction(value):
        return any(_holds_stand_in(v, depth - 1) for v in _free_values(value).values())
    return False


def _differentiates(functions: list[tuple[Callable, set[str]]]) -> bool:
    """Whether one of the rule `functions` hands a JAX differentiation (`jax.jvp(fn, ...)`, `grad(lambda x: fn(x))`)
    an expression naming something that holds a stand-in."""
    from .._harness.source import called_name

    for fn, names in functions:
        if not names:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            if called_name(node.func) in _DIFFERENTIATING and any(isinstance(n, ast.Name) and n.id in names
                                                  for arg in node.args[:1] for n in ast.walk(arg)):
                return True
    return False
