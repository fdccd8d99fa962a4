"""`lax.custom_linear_solve` and `lax.custom_root` inside a function: custom derivative rules written as solvers.

JAX derives their gradients from promises it never checks: `solve` inverts `matvec`, `transpose_solve` inverts
matvec's transpose (with `symmetric=True`, matvec is its own transpose), custom_root's `solve` returns a root of `f`
and `tangent_solve(g, y)` returns x with g(x) = y for the linearization g of f there. This check runs the function
once eagerly to see each call's own constants and right-hand side (`_compat.record_solves`), then evaluates the
traced jaxprs JAX made of the user's functions on them and on random right-hand sides:

- JXG029: matvec(solve(b)) against b, by normwise backward error ||A x - b|| / (||A|| ||x|| + ||b||), so an
  ill-conditioned matrix solved exactly passes and a solve off by a factor or left unconverged does not;
- JXG030: the true transpose of matvec (`jax.linear_transpose`) applied to transpose_solve(c), against c;
- JXG031: with symmetric=True, the dot-product test <u, A v> = <A u, v>;
- JXG032: f at the root solve returns, relative to f at the initial guess; the linearization of f at that root
  applied to tangent_solve's answer, against the right-hand side.

Where the matrix is small enough to form (`jax.jacfwd` of matvec), the exact solution in float64 says how a solve is
wrong (a uniform factor, matvec used where its transpose belongs). Only calls whose solver functions are the user's
are checked (JAX's own `jax.scipy.sparse.linalg.cg` is trusted, as its primitives are; `--include-jax` checks them),
except that a user's matvec handed to a solver that declares it symmetric (cg does) gets the symmetry test.
Each finding is located at the user's function at fault, read from the jaxpr's debug info.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import numpy as np

from .. import _compat
from .._core import _locate
from .. import _rules as rules
from .._core._report import Finding, Location
from ._base import Context, SkipCheck, check
from .._harness import call_user, jaxdiag_code
from ._gradref import state
from .._harness.tracing import trace_function

# Normwise backward error above which a solve is not an inverse. Not machine precision: an iterative solver
# stopped at a 1e-5 residual gives gradients as good as an exact one; a factor, a transposed system or an
# unconverged iteration is off by far more.
TOL = 1e-3
TOL_LOW_PRECISION = 3e-2  # float16 / bfloat16 arithmetic
SYMMETRY_TOL = 1e-4
# Largest right-hand side (total entries) whose matrix is formed to tell how a solve is wrong.
DENSE_MAX = 256


def _tol(dtype: Any) -> float:
    return TOL_LOW_PRECISION if np.dtype(dtype).itemsize <= 2 else TOL


def _norm(xs: Sequence[Any]) -> float:
    return float(np.sqrt(sum(np.sum(np.abs(np.asarray(x, np.complex128 if np.iscomplexobj(x) else np.float64)) ** 2)
                             for x in xs)))


def _sub(a: Sequence[Any], b: Sequence[Any]) -> list[np.ndarray]:
    return [np.asarray(x, np.complex128) - np.asarray(y, np.complex128) for x, y in zip(a, b)]


def _dot(a: Sequence[Any], b: Sequence[Any]) -> complex:
    return complex(sum(np.sum(np.asarray(x, np.complex128) * np.asarray(y, np.complex128)) for x, y in zip(a, b)))


def _fn(closed: Any, consts: list[Any], n_out: int) -> Callable[..., list[Any]]:
    """A traced jaxpr as a function of its non-constant inputs (flat arrays), keeping its first `n_out` outputs."""
    run = _compat.jaxpr_as_fun(closed)

    def fn(*xs: Any) -> list[Any]:
        return list(run(*consts, *xs))[:n_out]

    return fn


_ROLES = {"linear": ("solve", "transpose_solve"), "root": ("solve", "l_and_s")}


def solver_names(calls: Sequence[_compat.SolveCall], include_jax: bool = False) -> list[str]:
    """`custom_linear_solve(name)` / `custom_root(name)` for each call whose solver functions are the user's: custom
    rules, so the function's gradient is compared with finite differences (JAX's own solvers are trusted)."""
    out = []
    for call in calls:
        sites = [_site(call.jaxprs.get(role), role) for role in _ROLES[call.kind]]
        if include_jax or any(user for _, _, user in sites):
            what = "custom_linear_solve" if call.kind == "linear" else "custom_root"
            out.append(f"{what}({sites[0][0]})")
    return out


def _site(closed: Any, role: str = "solve") -> tuple[str, Location | None, bool]:
    """(function name, location of its def line, is it the user's) for the user's function behind a jaxpr; a lambda
    is named by its role (matvec, solve, ...)."""
    src = _compat.jaxpr_source(closed) if closed is not None else None
    if src is None:
        return role, None, False
    name, path, line = src
    name = role if name.startswith("<") else name
    user = _locate.is_user_file(path)
    return name, Location(_locate.relative_path(path), _locate.def_line(path, line), name), user


def _users_matvec(call: _compat.SolveCall) -> bool:
    """Whether the matvec is the user's code: its function, or any operation in it, comes from the user's files
    (JAX's own solvers wrap the user's matvec in a function of theirs)."""
    closed = call.jaxprs.get("matvec")
    if closed is None:
        return False
    if _site(closed, "matvec")[2]:
        return True
    for eqn in _compat.iter_eqns(closed):
        where = _compat.eqn_source_line(eqn)
        if where is not None and _locate.is_user_file(where[0]):
            return True
    return False


def _call_line(call: _compat.SolveCall) -> Location | None:
    """The user's line that called custom_linear_solve / custom_root (the innermost user frame)."""
    for path, line, function in reversed(call.stack):
        if _locate.is_user_file(path) and not path.startswith("<"):
            return Location(_locate.relative_path(path), line, function)
    return None


def _random_like(ctx: Context, xs: Sequence[Any]) -> list[np.ndarray]:
    out = []
    for x in xs:
        dtype = np.dtype(x.dtype)
        value = ctx.rng.standard_normal(np.shape(x))
        if dtype.kind == "c":
            value = value + 1j * ctx.rng.standard_normal(np.shape(x))
        out.append(value.astype(dtype))
    return out


def _eager_calls(ctx: Context) -> list[_compat.SolveCall]:
    """Every solve call the function makes on its example, with values (its own run, jit disabled)."""
    seen: list[_compat.SolveCall] = []
    example = [_compat.device_array(x) for x in ctx.example()]
    with _compat.record_solves(seen, jaxdiag_code), jax.disable_jit():
        call_user(ctx.subject.call, *example, quiet=True)  # its failure is the function checks' finding
    return seen


def _key(call: _compat.SolveCall) -> tuple:
    return call.kind, tuple(_compat.jaxpr_source(j) if j is not None else None for j in call.jaxprs.values())


@check("custom-solves", family="grad", kinds={"function"}, provides=("grad.blocked.custom-solves",))
def custom_solves(ctx: Context) -> Iterator[Finding]:
    """custom_linear_solve and custom_root calls inside the function: solve/transpose_solve/tangent_solve against
    matvec / f (JXG029-JXG032)."""
    traced = trace_function(ctx.subject, ctx.cache)
    if traced.value is None or not _compat.solve_calls_in(ctx.cache.jaxpr, ctx.cache.custom_calls):
        raise SkipCheck("no custom_linear_solve or custom_root inside")
    findings = list(_check_calls(ctx))
    if findings:  # grad of grad and the jit/vmap compositions inherit these defects: not reported twice
        state(ctx).blocked[rules.SOLVE_NOT_INVERSE] = "a custom_linear_solve / custom_root solver is inconsistent"
    yield from findings


def _check_calls(ctx: Context) -> Iterator[Finding]:
    done: set[tuple] = set()
    checked = 0
    for call in _eager_calls(ctx):
        if not call.concrete or _key(call) in done:
            continue
        done.add(_key(call))
        ours = [role for role in _ROLES[call.kind] if _site(call.jaxprs.get(role))[2]]
        if not (ours or ctx.options.include_jax or (call.symmetric and _users_matvec(call))):
            continue  # JAX's own solver (jax.scipy.sparse.linalg.cg): trusted like its primitives
        checked += 1
        if call.kind == "linear":
            yield from _linear(ctx, call)
        else:
            yield from _root(ctx, call)
    if not checked:
        raise SkipCheck("its custom_linear_solve / custom_root calls use JAX's own solvers, or run only on traced "
                        "values (inside a loop body)")


# ---------------------------------------------------------------------------------------------------------------
# custom_linear_solve
# ---------------------------------------------------------------------------------------------------------------


class _Linear:
    """One linear solve's functions on flat arrays: matvec, its true transpose, solve, transpose_solve."""

    def __init__(self, call: _compat.SolveCall):
        self.b = [np.asarray(x) for x in call.operand]
        n = len(self.b)
        j, c = call.jaxprs, call.consts
        self.matvec = _fn(j["matvec"], c["matvec"], n)
        self.solve = _fn(j["solve"], c["solve"], n)
        self.transpose_solve = _fn(j["transpose_solve"], c["transpose_solve"], n) \
            if j.get("transpose_solve") is not None else None
        shapes = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in self.b]
        self._transpose = jax.linear_transpose(lambda *xs: self.matvec(*xs), *shapes)

    def vecmat(self, *ys: Any) -> list[Any]:
        return list(self._transpose(list(ys)))

    def dense(self) -> np.ndarray | None:
        """The matrix of matvec over the flattened right-hand side (float64), when small enough."""
        sizes = [int(np.size(x)) for x in self.b]
        if sum(sizes) > DENSE_MAX:
            return None
        columns = []
        for k in range(sum(sizes)):
            unit = np.zeros(sum(sizes))
            unit[k] = 1.0
            parts = np.split(unit, np.cumsum(sizes)[:-1])
            out = self.matvec(*[p.reshape(x.shape).astype(x.dtype) for p, x in zip(parts, self.b)])
            columns.append(np.concatenate([np.ravel(np.asarray(o)) for o in out]))
        return np.stack(columns, axis=1).astype(np.complex128)


def _flat(xs: Sequence[Any]) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(x, np.complex128)) for x in xs])


def _backward_error(apply: Callable[..., list[Any]], x: list[Any], rhs: list[Any], norm_a: float) -> float:
    residual = _norm(_sub(apply(*x), rhs))
    return residual / max(norm_a * _norm(x) + _norm(rhs), 1e-30)


def _operator_norm(ctx: Context, apply: Callable[..., list[Any]], like: list[Any]) -> float:
    """A lower estimate of ||A|| (largest ||A u|| / ||u|| over a few random u)."""
    best = 0.0
    for _ in range(3):
        u = _random_like(ctx, like)
        best = max(best, _norm(apply(*u)) / max(_norm(u), 1e-30))
    return best


def _factor(got: np.ndarray, exact: np.ndarray) -> complex | None:
    """k when got = k * exact for every entry (to 1 %), else None."""
    scale = np.max(np.abs(exact))
    if scale == 0:
        return None
    k = complex(np.vdot(exact, got) / np.vdot(exact, exact))
    if abs(k) < 1e-6 or abs(k - 1) < 1e-2:
        return None
    return k if np.max(np.abs(got - k * exact)) <= 1e-2 * abs(k) * scale else None


def _fmt(k: complex) -> str:
    return f"{k.real:.4g}" if abs(k.imag) < 1e-9 * max(abs(k), 1e-30) else f"{k:.4g}"


def _linear(ctx: Context, call: _compat.SolveCall) -> Iterator[Finding]:
    made = call_user(_Linear, call, quiet=True)
    if made.error is not None:
        return  # matvec cannot be transposed or evaluated: jax.grad's own failure says so
    lin = made.value
    dtype = lin.b[0].dtype if lin.b else np.float32
    mv_name, _, _ = _site(call.jaxprs["matvec"], "matvec")
    sv_name, sv_loc, sv_user = _site(call.jaxprs["solve"])
    norm = call_user(_operator_norm, ctx, lin.matvec, lin.b, quiet=True)
    if norm.error is not None:
        return
    dense = call_user(lin.dense, quiet=True).value
    solve_ok = True
    if sv_user or ctx.options.include_jax:
        for what, rhs in (("the call's own right-hand side b", lin.b), ("a random right-hand side", None)):
            rhs = rhs if rhs is not None else _random_like(ctx, lin.b)
            x = call_user(lin.solve, *rhs, quiet=True)
            if x.error is not None:
                break
            err = _backward_error(lin.matvec, x.value, rhs, norm.value)
            if err > _tol(dtype) or not np.isfinite(err):
                solve_ok = False
                yield _solve_finding(sv_name, mv_name, sv_loc, what, err, x.value, rhs, dense, _tol(dtype))
                break
    if lin.transpose_solve is None:
        return
    yield from _transpose_side(ctx, call, lin, norm.value, dense, dtype, solve_ok)


def _solve_finding(name: str, mv_name: str, loc: Location | None, what: str, err: float, x: list, rhs: list,
                   dense: np.ndarray | None, tol: float) -> Finding:
    evidence = (f"for {what}, matvec(solve(matvec, b)) differs from b (normwise backward error {err:.3g}, "
                f"tolerance {tol:.0e})")
    hint = "; if it iterates, let it converge (more iterations or a tighter tolerance)"
    if dense is not None:
        exact = _exact(dense, rhs)
        k = _factor(_flat(x), exact) if exact is not None else None
        if k is not None:
            evidence += f": solve returns {_fmt(k)} times the exact solution"
            hint = f" (it returns {_fmt(k)} times the solution: remove that factor)"
        elif exact is not None and _backward_error_dense(dense.T, _flat(x), _flat(rhs)) <= tol:
            evidence += ": it solves the transposed system instead"
            hint = " (it solves with the transposed matrix: solve with the matrix matvec applies)"
    return rules.SOLVE_NOT_INVERSE.finding(solve=name, matvec=mv_name, evidence=evidence, hint=hint, location=loc)


def _exact(dense: np.ndarray, rhs: list) -> np.ndarray | None:
    try:
        return np.linalg.solve(dense, _flat(rhs))
    except np.linalg.LinAlgError:  # a singular matrix: no exact solution to compare with
        return None


def _backward_error_dense(a: np.ndarray, x: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a @ x - b) / max(np.linalg.norm(a, 2) * np.linalg.norm(x) + np.linalg.norm(b),
                                                   1e-30))


def _transpose_side(ctx: Context, call: _compat.SolveCall, lin: _Linear, norm_a: float, dense: np.ndarray | None,
                    dtype: Any, solve_ok: bool) -> Iterator[Finding]:
    mv_name, _, _ = _site(call.jaxprs["matvec"], "matvec")
    ts_name, ts_loc, ts_user = _site(call.jaxprs["transpose_solve"], "transpose_solve")
    if call.symmetric and (ts_user or ctx.options.include_jax or _users_matvec(call)):
        u, v = _random_like(ctx, lin.b), _random_like(ctx, lin.b)
        au, av = call_user(lin.matvec, *u, quiet=True), call_user(lin.matvec, *v, quiet=True)
        if au.error is None and av.error is None:
            lhs, rhs_ = _dot(u, av.value), _dot(au.value, v)
            scale = _norm(u) * _norm(av.value) + _norm(au.value) * _norm(v)
            if abs(lhs - rhs_) > SYMMETRY_TOL * max(scale, 1e-30):
                yield rules.SYMMETRIC_MATVEC_NOT_SYMMETRIC.finding(
                    matvec=mv_name, evidence=f"for random u, v, <u, matvec(v)> = {_fmt(lhs)} but <matvec(u), v> = "
                    f"{_fmt(rhs_)}", location=_call_line(call) or ts_loc)
                return
    if not (ts_user or ctx.options.include_jax):
        return
    if not solve_ok and call.jaxprs["transpose_solve"] is call.jaxprs["solve"]:
        return  # the same function, already reported as solve
    c = _random_like(ctx, lin.b)
    assert lin.transpose_solve is not None  # the caller checks only calls given a transpose_solve
    y = call_user(lin.transpose_solve, *c, quiet=True)
    if y.error is not None:
        return
    err = call_user(_backward_error, lin.vecmat, y.value, c, norm_a, quiet=True)
    if err.error is not None or (err.value <= _tol(dtype) and np.isfinite(err.value)):
        return
    evidence = (f"for a random right-hand side c, matvec^T(transpose_solve(vecmat, c)) differs from c (normwise "
                f"backward error {err.value:.3g}, tolerance {_tol(dtype):.0e})")
    fix = (f"Make {ts_name} return y with matvec^T(y) == c: solve with the transposed matrix (its first argument is "
           "the transposed matvec, vecmat)")
    if dense is not None and _backward_error_dense(dense, _flat(y.value), _flat(c)) <= _tol(dtype):
        evidence += ": it solves with matvec itself, not its transpose (the matrix is not symmetric)"
        fix += f"; {ts_name} ignores the vecmat it is given, or reuses solve on a non-symmetric matrix"
    elif dense is not None:
        exact = _exact(dense.T, c)
        k = _factor(_flat(y.value), exact) if exact is not None else None
        if k is not None:
            evidence += f": it returns {_fmt(k)} times the exact solution"
            fix += f" (remove the factor {_fmt(k)})"
    yield rules.TRANSPOSE_SOLVE_NOT_INVERSE.finding(solve=ts_name, matvec=mv_name, evidence=evidence, fix=fix + ".",
                                                    location=ts_loc)


# ---------------------------------------------------------------------------------------------------------------
# custom_root
# ---------------------------------------------------------------------------------------------------------------


def _root(ctx: Context, call: _compat.SolveCall) -> Iterator[Finding]:
    guess = [np.asarray(x) for x in call.operand]
    n = len(guess)
    j, c = call.jaxprs, call.consts
    f = _fn(j["f"], c["f"], n)
    solve = _fn(j["solve"], c["solve"], n)
    l_and_s = _fn(j["l_and_s"], c["l_and_s"], n)
    if not guess:
        return
    dtype, tol = guess[0].dtype, _tol(guess[0].dtype)
    sv_name, sv_loc, sv_user = _site(j["solve"])
    ts_name, ts_loc, ts_user = _site(j["l_and_s"], "tangent_solve")
    root = call_user(solve, *guess, quiet=True)
    f0 = call_user(f, *guess, quiet=True)
    if root.error is not None or f0.error is not None:
        return
    r = [np.asarray(x).astype(dtype) for x in root.value]

    def linearized(*t: Any) -> list[Any]:
        return list(jax.jvp(lambda *xs: f(*xs), tuple(r), tuple(t))[1])

    fr = call_user(f, *r, quiet=True)
    jr = call_user(linearized, *r, quiet=True)
    if fr.error is not None or jr.error is not None:
        return
    scale = _norm(f0.value) + _norm(jr.value)
    if (sv_user or ctx.options.include_jax) and _norm(fr.value) > tol * max(scale, 1e-30):
        yield rules.ROOT_SOLVE_INCONSISTENT.finding(
            role="solve", name=sv_name,
            evidence=f"f(solve(f, x0)) has norm {_norm(fr.value):.3g}, against {_norm(f0.value):.3g} at the initial "
                     f"guess (tolerance {tol:.0e} relative): what solve returns is not a root of f",
            fix=f"Make {sv_name} return x with f(x) == 0 (iterate until the residual is small).", location=sv_loc)
    if not (ts_user or ctx.options.include_jax):
        return
    norm_j = call_user(_operator_norm, ctx, linearized, r, quiet=True)
    if norm_j.error is not None:
        return
    y = _random_like(ctx, r)
    t = call_user(l_and_s, *r, *y, quiet=True)
    if t.error is not None:
        return
    err = call_user(_backward_error, linearized, list(t.value), y, norm_j.value, quiet=True)
    if err.error is not None or (err.value <= tol and np.isfinite(err.value)):
        return
    jt = linearized(*t.value)
    k = _factor(_flat(jt), _flat(y))
    how = (f": g(tangent_solve(g, y)) is {_fmt(k)} times y" if k is not None else "")
    yield rules.ROOT_SOLVE_INCONSISTENT.finding(
        role="tangent_solve", name=ts_name,
        evidence=f"for g, the linearization of f at the root, and a random y, g(tangent_solve(g, y)) differs from y "
                 f"(normwise backward error {err.value:.3g}, tolerance {tol:.0e}){how}",
        fix=f"Make {ts_name} return x with g(x) == y for the linear function g it is given (for a vector root, solve "
            "with the Jacobian of g, e.g. `jnp.linalg.solve(jax.jacobian(g)(y), y)`; `y / g(1.0)` holds for scalar "
            "roots only)" + (f"; remove the factor {_fmt(k)}" if k is not None else "") + ".",
        location=ts_loc)


CHECKS = [custom_solves]
