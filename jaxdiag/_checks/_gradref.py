"""Shared machinery of the grad checks (custom_vjp, custom_jvp, primitive JVP/transpose, functions).

`GradState` is built once per subject and kept in `ctx.cache`: the positional arguments split into differentiable
and fixed ones, the primal output with readable output names, seeded cotangents and directions, float64 finite
differences along those directions, and JAX's autodiff of the undecorated primal. Checks read from it so that a
subject's function is evaluated as few times as possible (the benchmark compares with `jax.test_util`).

Conventions (as `jax.test_util.check_vjp`): `<a, b>` is `Re(sum(conj(a) * b))`; the VJP of a cotangent `w` is
`conj(vjp(conj(w)))`, so `<w, J v> == <VJP(w), v>` holds for real and complex inputs alike.
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import os
import textwrap
import traceback
import warnings
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compat, _locate
from .._inputs import SHORT_NAMES
from .._numerics import FD_EPS, GRAD_TOL, Comparison, compare, tolerance
from .._report import Location
from ._base import Context, SkipCheck

# Directions per differentiable argument ("several random directions"); each costs two evaluations of the primal.
N_DIRECTIONS = 2
# Finite-difference step when the primal can be evaluated in float64 (relative to max(1, |x|) per element).
EPS_F64 = 1e-6
# Tolerance of the primal comparisons (rule primal vs f, relative to 1 + |f|): a rule may compute the same value
# with another formula, so a few ulps more than _numerics.VALUE_TOL for float32/float64, about 6 ulps for the
# half-precision types.
PRIMAL_TOL = {np.dtype(np.float64): 1e-10, np.dtype(np.float32): 2e-4, np.dtype(np.float16): 5e-3,
              np.dtype(jnp.bfloat16): 4e-2, np.dtype(np.complex128): 1e-10, np.dtype(np.complex64): 2e-4}


# ---------------------------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------------------------


_BF16 = np.dtype(jnp.bfloat16)


def is_inexact(dtype: Any) -> bool:
    dtype = np.dtype(dtype)
    return dtype.kind in "fc" or dtype == _BF16


def is_float0(x: Any) -> bool:
    """float0 (the tangent type of integer inputs). Not `dtype.kind == "V"`: bfloat16 has kind "V" too."""
    dtype = getattr(x, "dtype", None)
    return dtype is not None and np.dtype(dtype) == _compat.float0


def short_dtype(dtype: Any) -> str:
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        return str(dtype)
    if dtype == _compat.float0:
        return "float0"
    return SHORT_NAMES.get(dtype, dtype.name)


def aval_text(x: Any) -> str:
    """`f32[3]`, `None`, `(f32[3], None)`, `[f32[], f32[]]`: what a rule returned, in jaxpr notation."""
    if x is None:
        return "None"
    if _compat.is_symbolic_zero(x):
        return f"symbolic zero {short_dtype(x.aval.dtype)}{list(x.aval.shape)}".replace(" ", "")
    if isinstance(x, tuple):
        return f"({', '.join(aval_text(e) for e in x)}{',' if len(x) == 1 else ''})"
    if isinstance(x, list):
        return f"[{', '.join(aval_text(e) for e in x)}]"
    shape = getattr(x, "shape", None)
    dtype = getattr(x, "dtype", None)
    if shape is None or dtype is None:
        return type(x).__name__
    return f"{short_dtype(dtype)}[{','.join(map(str, shape))}]"


def fmt_values(x: Any, limit: int = 4) -> str:
    """A short rendering of an array's values: `[0.5403, -0.4161, 1]` (first `limit` elements)."""
    if is_float0(x):
        return "float0 zeros"
    arr = np.asarray(x)
    if arr.dtype == _BF16:
        arr = arr.astype(np.float32)
    flat = arr.reshape(-1)
    # + 0.0 turns -0.0 into 0.0: "[0, -0, 0]" reads like a sign error
    items = [f"{complex(v) + 0.0:.4g}" if arr.dtype.kind == "c" else f"{float(v) + 0.0:.4g}" for v in flat[:limit]]
    more = ", ..." if flat.size > limit else ""
    return f"{items[0]}" if arr.ndim == 0 else f"[{', '.join(items)}{more}]"


def close(actual: Any, expected: Any, tol: float) -> bool:
    """`|a - e| <= tol * (1 + |e|)` elementwise, as `_numerics.compare` but without building the report (the
    hot path); positions where either side is NaN/inf never count as a difference."""
    a, e = to_f64(actual), to_f64(expected)
    if a.shape != e.shape:
        return False
    with np.errstate(invalid="ignore", over="ignore"):
        ok = np.abs(a - e) <= tol * (1.0 + np.abs(e))
        return bool(np.all(ok | ~np.isfinite(a) | ~np.isfinite(e)))


def grad_tol(dtype: Any) -> float:
    return tolerance(dtype, GRAD_TOL)


def primal_tol(dtype: Any) -> float:
    return tolerance(dtype, PRIMAL_TOL)


def to_f64(x: Any) -> np.ndarray:
    """float64 (complex128) copy; float0 becomes zeros."""
    if is_float0(x):
        return np.zeros(np.shape(x))
    arr = np.asarray(x)
    if arr.dtype.kind == "c":
        return arr.astype(np.complex128)
    return arr.astype(np.float64)


def dot(a: Any, b: Any) -> float:
    """`Re(sum(conj(a) * b))` in float64; None and float0 count as zero."""
    if a is None or b is None:
        return 0.0
    a64, b64 = to_f64(a), to_f64(b)
    if a64.shape != b64.shape:  # a shape defect is reported by the structure checks; never a crash here
        return float("nan")
    return float(np.real(np.sum(np.conj(a64) * b64)))


def absdot(a: Any, b: Any) -> float:
    """`sum(|a| |b|)`: the scale an inner product's rounding error is relative to."""
    if a is None or b is None:
        return 0.0
    a64, b64 = np.abs(to_f64(a)), np.abs(to_f64(b))
    if a64.shape != b64.shape:
        return float("nan")
    return float(np.sum(a64 * b64))


def close_scalar(actual: float, expected: float, scale: float, tol: float) -> bool:
    """Scalar closeness for inner products: relative to the magnitude of the terms summed, not of the result
    (which may cancel), with a tiny absolute floor so that exact zeros on both sides agree."""
    return abs(actual - expected) <= tol * (scale + 1e-30) + 1e-12 * tol


def is_zero(x: Any) -> bool:
    """None, a symbolic zero, float0, or an array of exact zeros."""
    if x is None or _compat.is_symbolic_zero(x):
        return True
    return is_float0(x) or not np.any(np.asarray(x))


def all_finite(leaves: Iterable[Any]) -> bool:
    for leaf in leaves:
        if is_float0(leaf) or not is_inexact(np.asarray(leaf).dtype):
            continue
        if not np.all(np.isfinite(to_f64(leaf))):
            return False
    return True


def quiet_call(fn: Callable, *args: Any, **kwargs: Any) -> tuple[Any, BaseException | None]:
    """(result, None) or (None, the exception): user rules are called through this so a rule that raises becomes
    a finding and never a jaxdiag crash. Warnings from the user's code are not jaxdiag's output."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs), None
    except Exception as exc:  # the user's rule failed: reported as a finding by the caller
        return None, exc


def leaf_difference(got: Any, want: Any) -> str | None:
    """How a rule's primal output leaf differs from the function's (shape, dtype, value), or None."""
    got_shape, want_shape = tuple(np.shape(got)), tuple(np.shape(want))
    got_dtype, want_dtype = np.asarray(got).dtype, np.asarray(want).dtype
    if got_shape != want_shape:
        return f"shape {aval_text(got)} instead of {aval_text(want)}"
    if got_dtype != want_dtype:
        return f"dtype {short_dtype(got_dtype)} instead of {short_dtype(want_dtype)}"
    if not is_inexact(want_dtype) and not is_float0(got):
        equal = np.array_equal(np.asarray(got), np.asarray(want))
        return None if equal else f"values {fmt_values(got)} instead of {fmt_values(want)}"
    if close(got, want, primal_tol(want_dtype)):
        return None
    cmp = compare(to_f64(got), to_f64(want), tol=primal_tol(want_dtype))
    return None if cmp.ok or cmp.nonfinite and cmp.max_abs == 0 else f"value {cmp.describe()}"


# ---------------------------------------------------------------------------------------------------------------
# Errors and source text
# ---------------------------------------------------------------------------------------------------------------

_LIBRARY_MARKERS = (f"{os.sep}jax{os.sep}", f"{os.sep}jaxlib{os.sep}", f"{os.sep}numpy{os.sep}",
                    f"{os.sep}jaxdiag{os.sep}", f"{os.sep}ml_dtypes{os.sep}", "<frozen", f"{os.sep}contextlib.py",
                    f"{os.sep}functools.py")


def _is_library(filename: str) -> bool:
    return any(m in filename for m in _LIBRARY_MARKERS)


def user_frame(exc: BaseException, prefer: Any = None) -> traceback.FrameSummary | None:
    """The deepest traceback frame in the user's code (in `prefer`'s file when it is there)."""
    frames: list[traceback.FrameSummary] = []
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:  # JAX moves its filtered frames to the __cause__
        seen.add(id(exc))
        frames = list(traceback.extract_tb(exc.__traceback__)) + frames
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    loc = _locate.locate(prefer) if prefer is not None else None
    if loc is not None:
        target = os.path.abspath(loc.path)
        for fr in reversed(frames):
            if os.path.abspath(fr.filename) == target:
                return fr
    for fr in reversed(frames):
        if not _is_library(fr.filename):
            return fr
    return None


def error_text(exc: BaseException, prefer: Any = None, limit: int = 220) -> str:
    """`TypeError: unsupported operand ... (raised at samples/x.py:12: `dx = g * fn`)`."""
    first = short_message(exc, limit)
    text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    fr = user_frame(exc, prefer)
    if fr is not None:
        code = (fr.line or linecache.getline(fr.filename, fr.lineno or 0)).strip()
        where = f"{_locate.relative_path(fr.filename)}:{fr.lineno}"
        text += f" (raised at {where}" + (f": `{code}`)" if code else ")")
    return text


def short_message(exc: BaseException, limit: int = 300) -> str:
    """The first line of an exception's message, cut at a sentence end when it is long (JAX's are)."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if len(first) <= limit:
        return first
    cut = first.rfind(". ", 0, limit)
    return first[: cut + 1] if cut > 40 else first[: limit - 3] + "..."


def locate(fn: Any) -> Location | None:
    return _locate.locate(fn) if fn is not None else None


def rule_name(fn: Any, default: str) -> str:
    fn = _locate.unwrap(fn) if fn is not None else None
    name = getattr(fn, "__name__", None)
    return name if name and name != "<lambda>" else default


def function_ast(fn: Any) -> ast.FunctionDef | ast.Lambda | None:
    """The parsed source of a user function, or None (builtins, lambdas in odd places, no source)."""
    fn = _locate.unwrap(fn)
    code = getattr(fn, "__code__", None)
    return _parse_function(fn, code) if code is not None else None


@functools.lru_cache(maxsize=512)
def _parse_function(fn: Any, code: Any) -> ast.FunctionDef | ast.Lambda | None:
    """Cached by (function, code object): repeated checks of a target do not re-read and re-parse its source."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node  # type: ignore[return-value]
    return None


def return_values(fn: Any) -> list[ast.expr]:
    """The expressions of the `return` statements of `fn` itself (nested functions excluded)."""
    node = function_ast(fn)
    if node is None:
        return []
    out: list[ast.expr] = []

    def visit(n: ast.AST) -> None:
        for child in ast.iter_child_nodes(n):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(child, ast.Return) and child.value is not None:
                out.append(child.value)
            visit(child)

    visit(node)
    return out


def source_of(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover - ast.unparse handles every expression
        return "..."


def _star_args_names(fn: Any, star: str, count: int) -> list[str] | None:
    """`x, y = args` at the top of a `def f(*args)` body names the elements of `*args`."""
    node = function_ast(fn)
    if node is None:
        return None
    for stmt in node.body[:5]:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.Name)
                and stmt.value.id == star and isinstance(stmt.targets[0], (ast.Tuple, ast.List))):
            names = [e.id for e in stmt.targets[0].elts if isinstance(e, ast.Name)]
            if len(names) == len(stmt.targets[0].elts) == count:
                return names
    return None


def argument_names(fn: Any, count: int) -> list[str]:
    """Readable names of the first `count` positional parameters of `fn` (`args[0]` for `*args` ones)."""
    fn = _locate.unwrap(fn)
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return [f"argument {i}" for i in range(count)]
    names: list[str] = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            rest = count - len(names)
            names.extend(_star_args_names(fn, p.name, rest) or [f"{p.name}[{i}]" for i in range(rest)])
            break
    names.extend(f"argument {i}" for i in range(len(names), count))
    return names[:count]


def output_names(fn: Any, out: Any) -> list[str]:
    """One readable name per output leaf: the names in `return a, b` when the function returns a tuple of names,
    else `out_1`, `out_2`, ... (1-based, as users number outputs), `out` for a single array."""
    paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(out)[0]]
    if len(paths) == 1 and not paths[0]:
        return ["output"]
    names_by_index: dict[int, str] = {}
    if isinstance(out, (tuple, list)) and fn is not None:
        for value in return_values(fn)[-1:]:
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(out):
                names_by_index = {i: e.id for i, e in enumerate(value.elts) if isinstance(e, ast.Name)}
    names = []
    for path in paths:
        first, rest = (path[0], path[1:]) if path else (None, ())
        index = getattr(first, "idx", None)
        if isinstance(index, int):
            base = names_by_index.get(index, f"out_{index + 1}")
        else:
            base = "out" + jax.tree_util.keystr((first,)) if first is not None else "out"
        names.append(base + (jax.tree_util.keystr(tuple(rest)) if rest else ""))
    return names


# ---------------------------------------------------------------------------------------------------------------
# The subject's arguments and outputs
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Arg:
    pos: int
    name: str
    value: Any  # a jax Array for array arguments, the fixed Python value otherwise
    static: bool  # not an array (an int axis, a callable): never perturbed
    nondiff: bool  # listed in nondiff_argnums

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(np.shape(self.value))

    @property
    def dtype(self) -> np.dtype:
        return np.asarray(self.value).dtype if self.static else np.dtype(self.value.dtype)

    @property
    def diff(self) -> bool:
        """Perturbed by the checks: a floating (or complex) array outside nondiff_argnums."""
        return not self.static and not self.nondiff and is_inexact(self.dtype)

    @property
    def text(self) -> str:
        return f"{self.name} ({aval_text(self.value)})" if not self.static else f"{self.name} (= {self.value!r})"


class GradState:
    """Everything the grad checks share about one subject; built lazily, cached in `ctx.cache["grad"]`."""

    def __init__(self, ctx: Context):
        subject = ctx.subject
        self.subject = subject
        self.kind = subject.kind
        self.options = ctx.options
        self.rng = np.random.default_rng(zlib.crc32(f"{ctx.options.seed}:{subject.seed_key}:grad".encode()))
        self.blocked: dict[str, str] = {}  # code -> why later checks cannot trust the rules' output
        self.memo: dict[str, Any] = {}
        obj = subject.obj
        if self.kind == "custom_vjp":
            self.fun, self.fwd, self.bwd, self.nondiff, self.symbolic_zeros = _compat.custom_vjp_parts(obj)
            self.jvp_rule = None
        elif self.kind == "custom_jvp":
            self.fun, self.jvp_rule, self.nondiff, self.symbolic_zeros = _compat.custom_jvp_parts(obj)
            self.fwd = self.bwd = None
        else:
            self.fun, self.fwd, self.bwd, self.jvp_rule = None, None, None, None
            self.nondiff, self.symbolic_zeros = (), False
        arrays = [jnp.asarray(x) for x in ctx.example()]
        full = subject.full_args(arrays) if subject.static_args else tuple(arrays)
        if self.fun is not None:
            full = _compat.resolve_positional(self.fun, full)  # defaults of nondiff parameters (log_ndtr)
        static_pos = set(subject.static_args) | set(range(len(arrays) + len(subject.static_args), len(full)))
        names = argument_names(self.fun if self.fun is not None else _name_source(subject), len(full))
        self.args = [Arg(i, names[i], v, i in static_pos or not hasattr(v, "dtype"), i in self.nondiff)
                     for i, v in enumerate(full)]
        self.diff = [a for a in self.args if a.diff]
        self.dyn = [a for a in self.args if not a.nondiff]  # one bwd cotangent each (static or not)
        self._out: Any = None

    # ---- calling ------------------------------------------------------------------------------------------

    def values(self, replace: dict[int, Any] | None = None) -> list[Any]:
        replace = replace or {}
        return [replace.get(a.pos, a.value) for a in self.args]

    def call_target(self, values: Sequence[Any]) -> Any:
        """The subject itself (the custom_* object, `prim.bind`, the function) on full positional values."""
        if self.kind == "primitive":
            return self.subject.obj.bind(*values, **self.subject.params)
        return self.subject.obj(*values)

    def call_primal(self, values: Sequence[Any]) -> Any:
        """The undecorated primal where there is one (custom_*.fun), the subject otherwise."""
        return self.fun(*values) if self.fun is not None else self.call_target(values)

    def diff_fn(self, call: Callable[[Sequence[Any]], Any]) -> Callable[..., Any]:
        """`call` as a function of the differentiable arguments only (others fixed), for jax.vjp/jvp/grad."""
        positions = [a.pos for a in self.diff]

        def fn(*diffs: Any) -> Any:
            return call(self.values(dict(zip(positions, diffs))))

        return fn

    @property
    def diff_values(self) -> list[Any]:
        return [a.value for a in self.diff]

    # ---- primal output --------------------------------------------------------------------------------------

    @property
    def out(self) -> Any:
        """The subject's output at the example (the custom_* function's primal; the primitive's bind)."""
        if self._out is None:
            # custom_*: the undecorated primal is exactly what an eager call of the object computes, minus the
            # custom-call machinery
            out, exc = quiet_call(self.call_primal, self.values())
            if exc is not None:
                raise SkipCheck(f"{self.subject.label} fails on the example inputs: {error_text(exc)}")
            self._out = out
        return self._out

    @property
    def out_leaves(self) -> list[Any]:
        if "out_leaves" not in self.memo:  # Python scalars in the output become arrays (they have no dtype)
            self.memo["out_leaves"] = [x if hasattr(x, "dtype") else jnp.asarray(x)
                                       for x in jax.tree_util.tree_leaves(self.out)]
        return self.memo["out_leaves"]

    @property
    def out_names(self) -> list[str]:
        if "out_names" not in self.memo:
            self.memo["out_names"] = output_names(self.fun if self.fun is not None else _name_source(self.subject),
                                                  self.out)
        return self.memo["out_names"]

    def out_diff(self, k: int) -> bool:
        return is_inexact(np.dtype(self.out_leaves[k].dtype))

    # ---- seeded cotangents and directions -------------------------------------------------------------------

    def cotangents(self, which: int = 0) -> list[Any]:
        """Random cotangent leaves for the outputs (float0 zeros for integer outputs); `which` picks a set."""
        key = f"w{which}"
        if key not in self.memo:
            # jax Arrays, as JAX passes them: NumPy arrays promote differently (2.0 * a bf16 ndarray is float64)
            self.memo[key] = [jnp.asarray(self._random_like(leaf)) if self.out_diff(k)
                              else _compat.float0_zeros(leaf.shape) for k, leaf in enumerate(self.out_leaves)]
        return self.memo[key]

    def direction(self, arg: Arg, d: int) -> np.ndarray:
        """Direction `d` for `arg` in float64: normal entries scaled by max(1, |x|), so a step stays relative."""
        key = f"v{arg.pos}:{d}"
        if key not in self.memo:
            v = to_f64(self._random_like(arg.value)) * np.maximum(1.0, np.abs(to_f64(arg.value)))
            # rounded to the argument's dtype: the tangent a rule receives is exactly this direction
            self.memo[key] = to_f64(v.astype(arg.dtype))
        return self.memo[key]

    def _random_like(self, x: Any) -> np.ndarray:
        shape, dtype = tuple(np.shape(x)), np.dtype(x.dtype)
        value = self.rng.standard_normal(shape)
        if dtype.kind == "c":
            value = value + 1j * self.rng.standard_normal(shape)
        return np.asarray(value).astype(dtype)

    def tangent(self, arg: Arg, d: int) -> Any:
        """Direction `d` of `arg` in the argument's own dtype (what a JVP rule receives)."""
        key = f"t{arg.pos}:{d}"
        if key not in self.memo:
            self.memo[key] = jnp.asarray(self.direction(arg, d).astype(arg.dtype))
        return self.memo[key]

    def zero_tangent(self, arg: Arg) -> Any:
        if arg.diff:
            return jnp.zeros(arg.shape, arg.dtype)
        return _compat.float0_zeros(arg.shape)

    # ---- finite differences -----------------------------------------------------------------------------------

    @property
    def fd(self) -> "FiniteDifferences":
        if "fd" not in self.memo:
            self.memo["fd"] = FiniteDifferences(self)
        return self.memo["fd"]

    # ---- autodiff of the undecorated primal ------------------------------------------------------------------

    def reference_vjp(self) -> Callable | None:
        """JAX's VJP of the undecorated primal (custom_*.fun) at the example, or None where it does not run."""
        if "ref_vjp" not in self.memo:
            self.memo["ref_vjp"] = None
            if self.fun is not None and self.diff:
                res, exc = quiet_call(jax.vjp, self.diff_fn(self.call_primal), *self.diff_values)
                if exc is None:
                    self.memo["ref_vjp"] = res[1]
        return self.memo["ref_vjp"]

    def reference_cotangent(self, ws: Sequence[Any]) -> list[Any] | None:
        """`conj(vjp(conj(w)))` of the undecorated primal, one entry per differentiable argument."""
        vjp_fn = self.reference_vjp()
        if vjp_fn is None:
            return None
        cts = [jnp.conj(w) if np.asarray(w).dtype.kind == "c" else w for w in ws]
        res, exc = quiet_call(vjp_fn, jax.tree_util.tree_unflatten(self.out_treedef, cts))
        if exc is not None or not all_finite(jax.tree_util.tree_leaves(res)):
            return None
        return [np.conj(np.asarray(r)) if np.asarray(r).dtype.kind == "c" else np.asarray(r) for r in res]

    def reference_jvp(self, tangents: Sequence[Any]) -> list[np.ndarray] | None:
        """JAX's JVP of the undecorated primal for tangents of the differentiable args, as output leaves."""
        if self.fun is None:
            return None
        key = "ref_jvp_fail"
        if key in self.memo:
            return None
        res, exc = quiet_call(jax.jvp, self.diff_fn(self.call_primal), tuple(self.diff_values), tuple(tangents))
        if exc is not None:
            self.memo[key] = exc
            return None
        leaves = [np.asarray(t) for t in jax.tree_util.tree_leaves(res[1])]
        return leaves if all_finite(leaves) else None

    @property
    def out_treedef(self) -> Any:
        return jax.tree_util.tree_structure(self.out)


def _name_source(subject: Any) -> Any:
    """The function whose signature names a subject's arguments (impl for a primitive)."""
    if subject.kind == "primitive":
        return _compat.impl(subject.obj) or _compat.abstract_eval_rule(subject.obj)
    return subject.obj


def state(ctx: Context) -> GradState:
    if "grad" not in ctx.cache:
        ctx.cache["grad"] = GradState(ctx)
    return ctx.cache["grad"]


def require(st: GradState, codes: Sequence[str] = ()) -> None:
    """SkipCheck when an earlier finding makes the rules' output unusable for this check."""
    for code, why in st.blocked.items():
        if not codes or code in codes:
            raise SkipCheck(f"blocked by {code}: {why}")


# ---------------------------------------------------------------------------------------------------------------
# Finite differences
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class FDResult:
    """`J v` for one direction, as float64 output leaves, and the step that gave it."""

    jv: list[np.ndarray]
    eps: float
    noise: float  # rough rounding-error bound of the entries (absolute)


_INCONSISTENT = object()


def _below_64(x: Any) -> bool:
    dtype = np.dtype(getattr(x, "dtype", np.asarray(x).dtype))
    return is_inexact(dtype) and (dtype.kind == "c" and dtype.itemsize < 16 or dtype.kind != "c" and dtype.itemsize < 8)


class FiniteDifferences:
    """Central differences of the primal along seeded directions, evaluated in float64 where the primal runs in
    float64 (x64 scoped to the evaluation), in its own dtype otherwise. Non-finite points are dropped, never
    compared."""

    def __init__(self, st: GradState):
        self.st = st
        self.cache: dict[tuple, FDResult | None] = {}
        self.low_precision = False
        self.mode = "f64" if self._float64_outputs() else "native"

    @staticmethod
    def x64() -> Any:
        """x64 only around float64 evaluations (user code sees float64 defaults only there); restored on exit."""
        return _compat.jax_config(jax_enable_x64=True)

    def _float64_outputs(self) -> bool:
        """Try float64 first wherever something is differentiable; `_consistent` falls back to the inputs' own
        precision when the float64 evaluation does not give float64 outputs of the same value."""
        return bool(self.st.diff)

    def _consistent(self, plus: list[np.ndarray], minus: list[np.ndarray]) -> bool:
        """(f(x+h) + f(x-h)) / 2 is f(x) up to O(h^2): the float64 evaluation computes the same function as the
        native one (not a different branch for float64)."""
        if len(plus) != len(self.st.out_leaves):
            return False
        for p, m, native in zip(plus, minus, self.st.out_leaves):
            if p.shape != tuple(np.shape(native)):
                return False
            if is_inexact(np.dtype(native.dtype)) and not close((p + m) / 2, native, primal_tol(native.dtype) * 10):
                return False
        return True

    def _evaluate64(self, shifted: dict[int, np.ndarray]) -> list[np.ndarray] | None:
        with self.x64():
            values = []
            for a in self.st.args:
                if a.pos in shifted:
                    values.append(jnp.asarray(shifted[a.pos]))
                elif a.diff:
                    values.append(jnp.asarray(to_f64(a.value)))
                elif a.static:
                    values.append(a.value)
                else:
                    values.append(jnp.asarray(np.asarray(a.value)))
            out, exc = quiet_call(self.st.call_primal, values)
            if exc is not None:
                return None
            leaves = jax.tree_util.tree_leaves(out)
            if any(_below_64(x) for x in leaves):
                self.low_precision = True  # float64 inputs, lower-precision outputs: the primal casts down
            return [to_f64(x) if not is_float0(x) else np.zeros(np.shape(x)) for x in leaves]

    def _evaluate_native(self, shifted: dict[int, np.ndarray]) -> list[np.ndarray] | None:
        values = self.st.values({p: jnp.asarray(v.astype(self.st.args[p].dtype)) for p, v in shifted.items()})
        out, exc = quiet_call(self.st.call_primal, values)
        if exc is not None:
            return None
        return [to_f64(x) for x in jax.tree_util.tree_leaves(out)]

    def eps_for(self, args: Sequence[Arg]) -> float:
        if self.mode == "f64":
            return EPS_F64
        # the primal only runs in its own precision: the step per dtype of _numerics.FD_EPS (bf16 1e-1 ... f64 1e-5)
        return max(FD_EPS.get(np.dtype(a.dtype), 1e-1) for a in args)

    def _at(self, steps: dict[int, np.ndarray]) -> list[np.ndarray] | None:
        base = {p: to_f64(self.st.args[p].value) + s for p, s in steps.items()}
        return (self._evaluate64 if self.mode == "f64" else self._evaluate_native)(base)

    def jv(self, arg: Arg, d: int, scale: float = 1.0) -> FDResult | None:
        """Central difference along direction `d` of `arg` alone (others fixed); None where non-finite."""
        return self.along((arg,), d, scale)

    def joint(self, d: int, scale: float = 1.0) -> FDResult | None:
        """Central difference along direction `d` of every differentiable argument at once."""
        return self.along(tuple(self.st.diff), d, scale)

    def along(self, args: tuple[Arg, ...], d: int, scale: float = 1.0) -> FDResult | None:
        key = (tuple(a.pos for a in args), d, scale)
        if key not in self.cache:
            result = self._difference({a.pos: self.st.direction(a, d) for a in args}, args, scale)
            if result is _INCONSISTENT:  # float64 computes something else: use the inputs' own precision
                self.mode, self.cache = "native", {}
                result = self._difference({a.pos: self.st.direction(a, d) for a in args}, args, scale)
            self.cache[key] = result  # type: ignore[assignment]
        return self.cache[key]

    def _difference(self, dirs: dict[int, np.ndarray], args: Sequence[Arg], scale: float) -> FDResult | None:
        eps = self.eps_for(args) * scale
        for attempt in range(2):  # a step that leaves the domain (log, sqrt near 0) is retried 16x smaller once
            plus = self._at({p: eps * v for p, v in dirs.items()})
            minus = self._at({p: -eps * v for p, v in dirs.items()})
            if plus is not None and minus is not None and all_finite(plus) and all_finite(minus):
                if self.mode == "f64" and (self.low_precision or not self._consistent(plus, minus)):
                    return _INCONSISTENT  # type: ignore[return-value]
                jv = [(p - m) / (2 * eps) for p, m in zip(plus, minus)]
                unit = 2.2e-16 if self.mode == "f64" else max(
                    float(jnp.finfo(a.dtype).eps) if is_inexact(a.dtype) else 1e-2 for a in args)
                noise = unit * max((float(np.max(np.abs(p))) if p.size else 0.0) for p in plus) / eps
                return FDResult(jv, eps, noise)
            eps /= 16
        return None

    def stable(self, arg: Arg | None, d: int) -> bool:
        """True when the difference along direction d (of `arg`, or joint for None) does not depend on the step:
        no kink or branch next to the example."""
        args = (arg,) if arg is not None else tuple(self.st.diff)
        a, b = self.along(args, d), self.along(args, d, scale=8.0)
        if a is None or b is None:
            return False
        tol = 1e-3 if self.mode == "f64" else max(grad_tol(x.dtype) for x in args)
        return all(close(x, y, tol) for x, y in zip(a.jv, b.jv))


# ---------------------------------------------------------------------------------------------------------------
# Comparing a derivative with the references
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class DotCheck:
    """`<got, v>` against `<w, J v>` from finite differences, for one direction of one argument (or of all of
    them at once when `arg` is None)."""

    arg: Arg | None
    d: int
    got: float
    expected: float
    scale: float
    tol: float
    ok: bool

    def covers(self, arg: Arg) -> bool:
        return self.arg is None or self.arg is arg


def _dot_check(st: GradState, ws: Sequence[Any], got: dict[int, Any], args: Sequence[Arg], d: int,
               label: Arg | None) -> DotCheck | None:
    fd = st.fd.along(tuple(args), d)
    if fd is None:
        return None
    live = [(w, jv) for w, jv in zip(ws, fd.jv) if not is_float0(w)]
    expected = sum(dot(w, jv) for w, jv in live)
    actual = sum(dot(got.get(a.pos), st.direction(a, d)) for a in args if not is_zero(got.get(a.pos)))
    scale = max(sum(absdot(got.get(a.pos), st.direction(a, d)) for a in args if not is_zero(got.get(a.pos))),
                sum(absdot(w, jv) for w, jv in live))
    scale += fd.noise * sum(float(np.sum(np.abs(to_f64(w)))) for w, _ in live)
    tol = max(grad_tol(a.dtype) for a in args)
    return DotCheck(label, d, actual, expected, scale, tol, close_scalar(actual, expected, scale, tol))


def vjp_against_fd(st: GradState, ws: Sequence[Any], got: dict[int, Any], args: Sequence[Arg] | None = None
                   ) -> list[DotCheck]:
    """Dot-product test of a VJP result `got` (arg position -> cotangent) against finite differences:
    `sum_i <got_i, v_i> == <w, J v>` along joint directions; where that fails (or for `args`), per argument
    `<got_i, v_i> == <w, J_i v_i>` to say which one is wrong. Non-finite points are skipped."""
    if args is None and len(st.diff) > 1:
        joint = [c for d in range(N_DIRECTIONS) if (c := _dot_check(st, ws, got, st.diff, d, None)) is not None]
        if joint and all(c.ok for c in joint):
            return joint
    return [c for arg in (args if args is not None else st.diff) for d in range(N_DIRECTIONS)
            if (c := _dot_check(st, ws, got, [arg], d, arg)) is not None]


def compare_grad(actual: Any, expected: Any, dtype: Any) -> Comparison:
    return compare(to_f64(actual) if actual is not None else np.zeros(np.shape(expected)), to_f64(expected),
                   tol=grad_tol(dtype))


def fd_reference_nonzero(st: GradState, ws: Sequence[Any], args: Sequence[Arg] | None = None) -> bool:
    """True when `<w, J v>` from finite differences is clearly nonzero for some argument and direction."""
    groups = [tuple(args)] if args is not None else [tuple(st.diff)]
    for group in groups:
        for d in range(N_DIRECTIONS):
            fd = st.fd.along(group, d)
            if fd is None:
                continue
            value = sum(dot(w, jv) for w, jv in zip(ws, fd.jv) if not is_float0(w))
            scale = sum(absdot(w, jv) for w, jv in zip(ws, fd.jv) if not is_float0(w))
            noise = fd.noise * sum(float(np.sum(np.abs(to_f64(w)))) for w in ws if not is_float0(w))
            if abs(value) > 10 * max(grad_tol(a.dtype) for a in group) * (noise + 1e-30) and scale > noise * 100:
                return True
    return False
