"""What plain JAX does with each rule's bad sample: the natural thing a user would try (`jax.vmap`, `jax.grad`,
`jax.jit`, an eager call) on the sample's target, without jaxdiag.

`JAX_SAYS[code](module)` runs that call on the imported `samples/<code>_bad.py`. When JAX raises, the exception is
what JAX says (the caller records its type and first line). When JAX returns, the function compares the result with
a reference computed without the user's rule (a per-example loop, the analytic derivative, the function itself)
and returns `"nothing: wrong result (...)"` saying what is wrong, or `"nothing: no error, correct result"` when the
defect does not show on this JAX release. The function's docstring is the call shown in docs/jax-vs-jaxdiag.md.

Inputs are drawn from a generator seeded by the rule code, so every run sees the same numbers.
"""

from __future__ import annotations

import zlib
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

JAX_SAYS: dict[str, Callable[[Any], str | None]] = {}
B = 5  # batch size used for every vmap


def says(code: str) -> Callable[[Callable[[Any], str | None]], Callable[[Any], str | None]]:
    def register(fn: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
        assert code not in JAX_SAYS, code
        JAX_SAYS[code] = fn
        return fn

    return register


# --- helpers ---------------------------------------------------------------------------------------------------------

def draw(code: str, *shape: int, positive: bool = False, salt: int = 0) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(f"{code}:{salt}".encode()))
    x = rng.standard_normal(shape).astype(np.float32)
    return (np.abs(x) + 0.5).astype(np.float32) if positive else x


def per_example(f: Callable, *xs: np.ndarray, in_axes: tuple[int | None, ...] | None = None) -> Any:
    """Stack `f` applied to each example (the reference for vmap)."""
    in_axes = in_axes or (0,) * len(xs)
    size = next(x.shape[a] for x, a in zip(xs, in_axes) if a is not None)
    outs = [f(*[x if a is None else np.take(x, i, axis=a) for x, a in zip(xs, in_axes)]) for i in range(size)]
    return jax.tree_util.tree_map(lambda *leaves: np.stack([np.asarray(v) for v in leaves]), *outs)


def ok() -> str:
    return "nothing: no error, correct result"


def wrong(what: str) -> str:
    return f"nothing: wrong result ({what})"


def compare(got: Any, want: Any, what: str = "result") -> str:
    """'nothing: wrong result (...)' describing the first difference between two arrays, or ok()."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return wrong(f"{what} has shape {got.shape} instead of {want.shape}")
    if got.dtype != want.dtype:
        return wrong(f"{what} is {got.dtype} instead of {want.dtype}")
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if got.size else 0.0
    if err <= 1e-4 * max(1.0, float(np.max(np.abs(want)))):
        return ok()
    return wrong(f"{what} off by up to {err:.3g}")


def bind(prim: Any, **params: Any) -> Callable:
    return lambda *args: prim.bind(*args, **params)


# --- JXR: registration -----------------------------------------------------------------------------------------------

@says("JXR001")
def _jxr001(m: Any) -> str | None:
    """`scale_p.bind(x, factor=2.0)` (eager)"""
    m.scale_p.bind(draw("JXR001", 4, 3), factor=2.0)
    return ok()


@says("JXR002")
def _jxr002(m: Any) -> str | None:
    """`jax.jit(softplus)(x)`"""
    jax.jit(bind(m.softplus_p))(draw("JXR002", 4, 3))
    return ok()


@says("JXR003")
def _jxr003(m: Any) -> str | None:
    """`jax.jit(row_sum)(x)`"""
    x = draw("JXR003", 4, 3)
    return compare(jax.jit(bind(m.row_sum_p))(x), np.sum(x, axis=-1))


@says("JXR004")
def _jxr004(m: Any) -> str | None:
    """`jax.jit(hard_tanh)(x)`"""
    jax.jit(bind(m.hard_tanh_p))(draw("JXR004", 4, 3))
    return ok()


@says("JXR015")
def _jxr015(m: Any) -> str | None:
    """`jax.jit(softclip).trace(x).lower(lowering_platforms=("cuda",))` (or run on a GPU)"""
    jax.jit(bind(m.softclip_p)).trace(draw("JXR015", 4)).lower(lowering_platforms=("cuda",))
    return ok()


@says("JXR005")
def _jxr005(m: Any) -> str | None:
    """`jax.vmap(gelu_tanh)(x)`"""
    jax.vmap(bind(m.gelu_tanh_p))(draw("JXR005", B, 4, 3))
    return ok()


@says("JXR006")
def _jxr006(m: Any) -> str | None:
    """`jax.grad(lambda x: softsign(x).sum())(x)`"""
    jax.grad(lambda x: m.softsign_p.bind(x).sum())(draw("JXR006", 3))
    return ok()


@says("JXR007")
def _jxr007(m: Any) -> str | None:
    """`jax.grad(lambda x: scale3(x).sum())(x)`"""
    x = draw("JXR007", 3)
    return compare(jax.grad(lambda x: m.scale3_p.bind(x).sum())(x), np.full(3, 3.0, np.float32), "gradient")


@says("JXR008")
def _jxr008(m: Any) -> str | None:
    """`jax.vmap(weighted, in_axes=(0, None))(x, w)`"""
    x, w = draw("JXR008", B, 4, 3), draw("JXR008", 3, salt=1)
    f = bind(m.weighted_p)
    return compare(jax.vmap(f, in_axes=(0, None))(x, w), x * w)


@says("JXR009")
def _jxr009(m: Any) -> str | None:
    """`jax.vmap(lambda x: cummax_p.bind(x, axis=0))(x)`"""
    x = draw("JXR009", B, 4, 3)
    return compare(jax.vmap(bind(m.cummax_p, axis=0))(x), np.maximum.accumulate(x, axis=1))


@says("JXR010")
def _jxr010(m: Any) -> str | None:
    """`jax.jit(silu)(x)` vs `silu(x)`"""
    x = draw("JXR010", 4, 3)
    return compare(jax.jit(bind(m.silu_p))(x), m.silu_p.bind(x), "jit result vs eager")


# --- JXB: batching ---------------------------------------------------------------------------------------------------

@says("JXB001")
def _jxb001(m: Any) -> str | None:
    """`jax.vmap(norm, in_axes=1)(x)`"""
    x = draw("JXB001", 3, B)
    return compare(jax.vmap(bind(m.norm_p), in_axes=1)(x), np.sqrt(np.sum(x * x, axis=0)))


@says("JXB002")
def _jxb002(m: Any) -> str | None:
    """`jax.vmap(softsign)(x)`"""
    x = draw("JXB002", B, 4, 3)
    return compare(jax.vmap(bind(m.softsign_p))(x), x / (1 + np.abs(x)))


@says("JXB003")
def _jxb003(m: Any) -> str | None:
    """`jax.vmap(l2_normalize, out_axes=[0, None])(x)`"""
    jax.vmap(bind(m.l2_normalize_p), out_axes=[0, None])(draw("JXB003", B, 3))
    return ok()


@says("JXN013")
def _jxn013(m: Any) -> str | None:
    """`jax.eval_shape(jax.vmap(scale_rows), x, w)` (on CPU, `jax.vmap(scale_rows)(x, w)` raises: no cpu lowering)"""
    x, w = draw("JXN013", B, 7, 3), draw("JXN013", B, 3, salt=1)
    out = jax.eval_shape(jax.vmap(bind(m.scale_rows_p)), x, w)
    want = (B, 7, 3)
    return ok() if out.shape == want else wrong(f"shape {out.shape}, expected {want}")


@says("JXN018")
def _jxn018(m: Any) -> str | None:
    """`jax.grad(soft_max, argnums=1)(x, 2.0)`"""
    jax.grad(m.soft_max, argnums=1)(draw("JXN018", 3), 2.0)
    return ok()


@says("JXN020")
def _jxn020(m: Any) -> str | None:
    """`jax.vmap(segment_total_p.bind, in_axes=(None, 0))(data, ids)`"""
    data = draw("JXN020", 6)
    ids = np.tile(np.array([0, 1, 2, 0, 1, 2], dtype=np.int32), (B, 1))
    jax.vmap(m.segment_total_p.bind, in_axes=(None, 0))(data, ids)
    return ok()


@says("JXN021")
def _jxn021(m: Any) -> str | None:
    """`shift(x, "devices")` outside a shard_map (what jaxdiag runs under `jax.vmap(..., axis_name=...)`)"""
    m.shift(draw("JXN021", 3), "devices")
    return ok()


@says("JXN019")
def _jxn019(m: Any) -> str | None:
    """`jax.jvp(cumsum_p.bind, (x,), (t,))` (jax.grad of it works)"""
    x = draw("JXN019", 3)
    jax.jvp(m.cumsum_p.bind, (x,), (x,))
    return ok()


@says("JXB004")
def _jxb004(m: Any) -> str | None:
    """`codes, codebook = jax.vmap(quantize)(x)`"""
    x = draw("JXB004", B, 8)
    _, codebook = jax.vmap(bind(m.quantize_p))(x)
    return compare(codebook, per_example(bind(m.quantize_p), x)[1], "codebook")


@says("JXB005")
def _jxb005(m: Any) -> str | None:
    """`jax.vmap(lambda x: cumsum_p.bind(x, axis=0))(x)`"""
    x = draw("JXB005", B, 4, 3)
    return compare(jax.vmap(bind(m.cumsum_p, axis=0))(x), np.cumsum(x, axis=1))


@says("JXB006")
def _jxb006(m: Any) -> str | None:
    """`jax.vmap(matvec, in_axes=(0, None))(a, v)`"""
    a, v = draw("JXB006", B, 4, 3), draw("JXB006", 3, salt=1)
    return compare(jax.vmap(bind(m.matvec_p), in_axes=(0, None))(a, v), a @ v)


@says("JXB007")
def _jxb007(m: Any) -> str | None:
    """`jax.vmap(min_max)(x)`"""
    jax.vmap(bind(m.min_max_p))(draw("JXB007", B, 4, 3))
    return ok()


@says("JXB008")
def _jxb008(m: Any) -> str | None:
    """`jax.vmap(log_softmax)(x)`"""
    jax.vmap(bind(m.log_softmax_p))(draw("JXB008", B, 4, 3))
    return ok()


@says("JXB009")
def _jxb009(m: Any) -> str | None:
    """`jax.vmap(sum_sq)(x)`"""
    x = draw("JXB009", B, 3)
    return compare(jax.vmap(bind(m.sum_sq_p))(x), np.sum(x * x, axis=1))


@says("JXB010")
def _jxb010(m: Any) -> str | None:
    """`unit, norm = jax.vmap(normalize)(x)`"""
    x = draw("JXB010", B, 3)
    _, norm = jax.vmap(bind(m.normalize_p))(x)
    return compare(norm, per_example(bind(m.normalize_p), x)[1], "norm")


@says("JXB024")
def _jxb024(m: Any) -> str | None:
    """`clipped, loss = jax.vmap(huber)(r)`"""
    r = draw("JXB024", B, 3) * 2
    _, loss = jax.vmap(bind(m.huber_p))(r)
    return compare(loss, per_example(bind(m.huber_p), r)[1], "loss")


@says("JXB011")
def _jxb011(m: Any) -> str | None:
    """`jax.vmap(standardize, out_axes=(0, None))(x)`"""
    jax.vmap(m.standardize, out_axes=(0, None))(draw("JXB011", B, 3))
    return ok()


@says("JXB013")
def _jxb013(m: Any) -> str | None:
    """`jax.vmap(safe_log)(x)`"""
    x = draw("JXB013", B, 3, positive=True)
    return compare(jax.vmap(m.safe_log)(x), np.log(x))


@says("JXB020")
def _jxb020(m: Any) -> str | None:
    """`jax.vmap(cumsum_rows)(x)`"""
    x = draw("JXB020", B, 2, 3)
    return compare(jax.vmap(m.cumsum_rows)(x), np.cumsum(x, axis=-1))


@says("JXB021")
def _jxb021(m: Any) -> str | None:
    """`jax.vmap(cumsum_rows)(x)`"""
    x = draw("JXB021", B, 3)
    return compare(jax.vmap(m.cumsum_rows)(x), np.cumsum(x, axis=-1))


@says("JXB022")
def _jxb022(m: Any) -> str | None:
    """`jax.vmap(cumsum_rows)(x)`"""
    x = draw("JXB022", B, 2, 3)
    return compare(jax.vmap(m.cumsum_rows)(x), np.cumsum(x, axis=-1))


# --- JXG: differentiation ------------------------------------------------------------------------------------------

@says("JXG001")
def _jxg001(m: Any) -> str | None:
    """`jax.grad(lambda x: my_cos(x).sum())(x)`"""
    x = draw("JXG001", 3)
    return compare(jax.grad(lambda x: m.my_cos_p.bind(x).sum())(x), -np.sin(x), "gradient")


@says("JXG002")
def _jxg002(m: Any) -> str | None:
    """`jax.jacrev(cumsum)(x)` vs `jax.jacfwd(cumsum)(x)`"""
    x = draw("JXG002", 4)
    f = bind(m.cumsum_p)
    return compare(jax.jacrev(f)(x), jax.jacfwd(f)(x), "jacrev vs jacfwd")


@says("JXG003")
def _jxg003(m: Any) -> str | None:
    """`jax.grad(lambda x: double(x).sum())(x)`"""
    x = draw("JXG003", 3)
    return compare(jax.grad(lambda x: m.double_p.bind(x).sum())(x), np.full(3, 2.0, np.float32), "gradient")


@says("JXG004")
def _jxg004(m: Any) -> str | None:
    """`jax.grad(lambda x: fast_tanh(x).sum())(x)`"""
    x = draw("JXG004", 3)
    return compare(jax.grad(lambda x: m.fast_tanh(x).sum())(x), 1 - np.tanh(x) ** 2, "gradient")


@says("JXG005")
def _jxg005(m: Any) -> str | None:
    """`jax.grad(lambda a, b: mymul(a, b).sum(), argnums=1)(a, b)`"""
    a, b = draw("JXG005", 3), draw("JXG005", 3, salt=1)
    return compare(jax.grad(lambda a, b: m.mymul_p.bind(a, b).sum(), argnums=1)(a, b), a, "gradient")


@says("JXG006")
def _jxg006(m: Any) -> str | None:
    """`jax.grad(lambda x, y: hypot(x, y).sum())(x, y)`"""
    x, y = draw("JXG006", 3), draw("JXG006", 3, salt=1)
    return compare(jax.grad(lambda x, y: m.hypot_p.bind(x, y).sum())(x, y), x / np.hypot(x, y), "gradient")


@says("JXG007")
def _jxg007(m: Any) -> str | None:
    """`jax.grad(lambda x: my_exp(x).sum())(x)`"""
    x = draw("JXG007", 3)
    return compare(jax.grad(lambda x: m.my_exp_p.bind(x).sum())(x), np.exp(x), "gradient")


@says("JXG010")
def _jxg010(m: Any) -> str | None:
    """`jax.grad(lambda x: smooth_abs(x).sum())(x)`"""
    x = draw("JXG010", 3)
    return compare(jax.grad(lambda x: m.smooth_abs(x).sum())(x), x / np.sqrt(x * x + 1e-3), "gradient")


@says("JXG011")
def _jxg011(m: Any) -> str | None:
    """`jax.grad(lambda x: sum(map(jnp.sum, sincos(x))))(x)`"""
    x = draw("JXG011", 3)
    got = jax.grad(lambda x: sum(jnp.sum(o) for o in m.sincos(x)))(x)
    return compare(got, np.cos(x) - np.sin(x), "gradient")


@says("JXG012")
def _jxg012(m: Any) -> str | None:
    """`jax.value_and_grad(lambda x: my_sin(x).sum())(x)`"""
    x = draw("JXG012", 3)
    value, _ = jax.value_and_grad(lambda x: m.my_sin(x).sum())(x)
    return compare(value, np.sin(x).sum(), "value")


@says("JXG013")
def _jxg013(m: Any) -> str | None:
    """`jax.grad(lambda x, w: weighted_sq(x, w).sum())(x, w)`"""
    x, w = draw("JXG013", 3), draw("JXG013", 3, salt=1)
    return compare(jax.grad(lambda x, w: m.weighted_sq(x, w).sum())(x, w), 2 * w * x, "gradient")


@says("JXG014")
def _jxg014(m: Any) -> str | None:
    """`jax.grad(lambda x: clipped_sin(x).sum())(x)`"""
    x = draw("JXG014", 6)
    return compare(jax.grad(lambda x: m.clipped_sin(x).sum())(x), np.cos(x), "gradient")


@says("JXG024")
def _jxg024(m: Any) -> str | None:
    """`jax.grad(lambda x: softplus(x).sum())(x)`"""
    x = draw("JXG024", 3)
    return compare(jax.grad(lambda x: m.softplus(x).sum())(x), 1 / (1 + np.exp(-x)), "gradient")


@says("JXG015")
def _jxg015(m: Any) -> str | None:
    """`jax.jit(jax.grad(lambda x, mask: masked_scale(x, mask).sum()))(x, mask)`"""
    x, mask = draw("JXG015", 4), (draw("JXG015", 4, salt=1) > 0).astype(np.float32)
    return compare(jax.jit(jax.grad(lambda x, mask: m.masked_scale(x, mask).sum()))(x, mask), 3 * mask, "gradient")


@says("JXG016")
def _jxg016(m: Any) -> str | None:
    """`jax.jit(jax.grad(lambda x: clipped_identity(x).sum()))(x)`"""
    jax.jit(jax.grad(lambda x: m.clipped_identity(x).sum()))(draw("JXG016", 3))
    return ok()


@says("JXG017")
def _jxg017(m: Any) -> str | None:
    """`jax.grad(lambda x: scaled_tanh(x).sum())(x)`"""
    jax.grad(lambda x: m.scaled_tanh(x).sum())(draw("JXG017", 3))
    return ok()


@says("JXG018")
def _jxg018(m: Any) -> str | None:
    """`jax.grad(lambda w, v: matvec(w, v).sum(), argnums=1)(w, v)`"""
    w, v = draw("JXG018", 2, 3), draw("JXG018", 3, salt=1)
    return compare(jax.grad(lambda w, v: m.matvec(w, v).sum(), argnums=1)(w, v), w.sum(axis=0), "gradient")


@says("JXG019")
def _jxg019(m: Any) -> str | None:
    """`jax.hessian(lambda x: cube(x).sum())(x)`"""
    x = draw("JXG019", 3)
    return compare(jax.hessian(lambda x: m.cube(x).sum())(x), np.diag(2 * x), "hessian")


@says("JXG020")
def _jxg020(m: Any) -> str | None:
    """`jax.grad(lambda x: safe_abs(x).sum())(x)`"""
    x = draw("JXG020", 3)
    return compare(jax.grad(lambda x: m.safe_abs(x).sum())(x), np.sign(x), "gradient")


@says("JXG021")
def _jxg021(m: Any) -> str | None:
    """`jax.jvp(soft_clip, (x,), (t,))`"""
    x, t = draw("JXG021", 3) * 3, np.ones(3, np.float32)
    primal, _ = jax.jvp(m.soft_clip, (x,), (t,))
    return compare(primal, m.soft_clip(x), "primal vs soft_clip(x)")


@says("JXG022")
def _jxg022(m: Any) -> str | None:
    """`jax.grad(lambda x, n: int_pow(x, n).sum())(x, n)`"""
    x, n = draw("JXG022", 3, positive=True), np.array([1, 2, 3], np.int32)
    return compare(jax.grad(lambda x, n: m.int_pow(x, n).sum())(x, n), n * x ** (n - 1), "gradient")


# --- JXV: custom_vmap ----------------------------------------------------------------------------------------------

@says("JXV001")
def _jxv001(m: Any) -> str | None:
    """`jax.vmap(row_norm)(x)`"""
    x = draw("JXV001", B, 3)
    return compare(jax.vmap(m.row_norm)(x), np.linalg.norm(x, axis=1))


@says("JXV002")
def _jxv002(m: Any) -> str | None:
    """`jax.vmap(total)(x)`"""
    x = draw("JXV002", B, 3)
    return compare(jax.vmap(m.total)(x), np.sum(x, axis=1))


@says("JXV003")
def _jxv003(m: Any) -> str | None:
    """`jax.vmap(outer)(x, y)`"""
    x, y = draw("JXV003", B, 3), draw("JXV003", B, 4, salt=1)
    return compare(jax.vmap(m.outer)(x, y), np.einsum("bi,bj->bij", x, y))


@says("JXV004")
def _jxv004(m: Any) -> str | None:
    """`jax.vmap(apply, in_axes=(None, 0))(m, x)`"""
    a, x = draw("JXV004", 3, 3), draw("JXV004", B, 3, salt=1)
    return compare(jax.vmap(m.apply, in_axes=(None, 0))(a, x), x @ a.T)


@says("JXV005")
def _jxv005(m: Any) -> str | None:
    """`jax.vmap(dot, in_axes=(0, None))(x, y)`"""
    x, y = draw("JXV005", B, 3), draw("JXV005", 3, salt=1)
    return compare(jax.vmap(m.dot, in_axes=(0, None))(x, y), x @ y)


# --- deliberate refusals and x64-only defects -----------------------------------------------------------------------

@says("JXB014")
def _jxb014(m: Any) -> str | None:
    """`jax.vmap(checksum_p.bind)(x)`"""
    x = draw("JXB014", B, 4)
    return compare(jax.vmap(m.checksum_p.bind)(x), x @ np.arange(1, 5, dtype=np.float32))


@says("JXG025")
def _jxg025(m: Any) -> str | None:
    """`jax.grad(lambda x: frozen(x).sum())(x)`"""
    x = draw("JXG025", 3)
    return compare(jax.grad(lambda x: m.frozen(x).sum())(x), np.ones(3, np.float32), "gradient")


@says("JXG033")
def _jxg033(m: Any) -> str | None:
    """`jax.grad(lambda l: bernoulli_mean(l, key).sum())(logits)`"""
    logits, key = draw("JXG033", 4), jax.random.key(0)
    got = jax.grad(lambda v: m.bernoulli_mean(v, key).sum())(logits)
    return compare(got, jax.grad(lambda v: m.bernoulli_mean.fun(v, key).sum())(logits), "gradient")


@says("JXG034")
def _jxg034(m: Any) -> str | None:
    """`jax.grad(lambda lam: jnp.abs(soft_threshold(x, lam)).sum())(lam)`"""
    x, lam = draw("JXG034", 4), np.float32(0.3)
    got = jax.grad(lambda v: jnp.abs(m.soft_threshold(x, v)).sum())(lam)
    return compare(got, jax.grad(lambda v: jnp.abs(m.soft_threshold.fun(x, v)).sum())(lam), "gradient")


@says("JXG036")
def _jxg036(m: Any) -> str | None:
    """`jax.grad(lambda x: (w * shifted_square(x)).sum())(x)`: a weighted loss"""
    x, w = draw("JXG036", 4), np.float32(5.0)
    got = jax.grad(lambda v: (w * m.shifted_square(v)).sum())(x)
    return compare(got, jax.grad(lambda v: (w * m.shifted_square.fun(v)).sum())(x), "gradient")


@says("JXG037")
def _jxg037(m: Any) -> str | None:
    """`jax.grad(lambda x: softmax_lse(x)[1])(x)`: the log-normaliser's gradient"""
    x = draw("JXG037", 4)
    got = jax.grad(lambda v: m.softmax_lse(v)[1])(x)
    return compare(got, jax.grad(lambda v: m.softmax_lse.fun(v)[1])(x), "gradient")


@says("JXB015")
def _jxb015(m: Any) -> str | None:
    """`jax.vmap(rowsum_p.bind)(x)` on float64 under `jax.enable_x64(True)`"""
    with jax.enable_x64(True):
        x = draw("JXB015", B, 3).astype(np.float64)
        return compare(jax.vmap(m.rowsum_p.bind)(x), x.sum(axis=1))


@says("JXB016")
def _jxb016(m: Any) -> str | None:
    """`jax.vmap(pick_p.bind)(x, i)` with an index past the end of `x` (in range, vmap agrees with the loop)"""
    x = draw("JXB016", B, 8)
    i = np.full((B,), 8, np.int32)
    return compare(jax.vmap(m.pick_p.bind)(x, i), x[:, -1])


@says("JXG026")
def _jxg026(m: Any) -> str | None:
    """`jax.grad(lambda x: softplus(x).sum())(x)` on float64 under `jax.enable_x64(True)`"""
    with jax.enable_x64(True):
        x = draw("JXG026", 3).astype(np.float64)
        return compare(jax.grad(lambda x: m.softplus(x).sum())(x), 1 / (1 + np.exp(-x)), "gradient")


@says("JXG027")
def _jxg027(m: Any) -> str | None:
    """`jax.grad(lambda x: scale(x).sum())(x)`"""
    x = draw("JXG027", 6)
    return compare(jax.grad(lambda x: m.scale(x).sum())(x), np.full(6, 2.0, np.float32), "gradient")


@says("JXG028")
def _jxg028(m: Any) -> str | None:
    """`jax.grad(lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.0).sum())(x)`: autodiff of relu_sqrt's primal"""
    x = draw("JXG028", 8)
    want = np.where(x > 0, 0.5 / np.sqrt(np.abs(x) + (x <= 0)), 0.0).astype(np.float32)
    return compare(jax.grad(lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.0).sum())(x), want, "gradient")


@says("JXB017")
def _jxb017(m: Any) -> str | None:
    """`jax.vjp(jax.vmap(row_mean_p.bind), x, w)` pulled back `ct`, against the per-example VJPs"""
    x, w, ct = draw("JXB017", B, 4, 3), draw("JXB017", B, 4, 3, salt=1), draw("JXB017", B, 3, salt=2)
    f = m.row_mean_p.bind
    got = jax.vjp(jax.vmap(f), x, w)[1](ct)[0]
    want = np.stack([jax.vjp(f, x[j], w[j])[1](ct[j])[0] for j in range(B)])
    return compare(got, want, "cotangent of x")


@says("JXB018")
def _jxb018(m: Any) -> str | None:
    """`jax.vjp(jax.vmap(scale_p.bind, in_axes=(None, 0)), x, w)` pulled back `ct`, against the per-example VJPs"""
    x, w, ct = draw("JXB018", 3), draw("JXB018", B, 3, salt=1), draw("JXB018", B, 3, salt=2)
    f = m.scale_p.bind
    got = jax.vjp(jax.vmap(f, in_axes=(None, 0)), x, w)[1](ct)[0]
    want = sum(jax.vjp(f, x, w[j])[1](ct[j])[0] for j in range(B))
    return compare(got, want, "cotangent of x")


def _exact_solve_grad(a: np.ndarray, b: np.ndarray, argnums: int) -> Any:
    return jax.grad(lambda a, b: jnp.linalg.solve(a + 4.0 * jnp.eye(3), b).sum(), argnums=argnums)(a, b)


@says("JXG029")
def _jxg029(m: Any) -> str | None:
    """`jax.grad(lambda a: scaled_solve(a, b).sum())(a)` against the gradient of `jnp.linalg.solve`"""
    a, b = draw("JXG029", 3, 3), draw("JXG029", 3, salt=1)
    return compare(jax.grad(lambda a: m.scaled_solve(a, b).sum())(a), _exact_solve_grad(a, b, 0), "gradient")


@says("JXG030")
def _jxg030(m: Any) -> str | None:
    """`jax.grad(reused_solve, argnums=1)(a, b)` against the gradient of `jnp.linalg.solve`"""
    a, b = draw("JXG030", 3, 3), draw("JXG030", 3, salt=1)
    return compare(jax.grad(m.reused_solve, argnums=1)(a, b), _exact_solve_grad(a, b, 1), "gradient")


@says("JXG031")
def _jxg031(m: Any) -> str | None:
    """`jax.grad(assumed_symmetric, argnums=1)(a, b)` against the gradient of `jnp.linalg.solve`"""
    a, b = draw("JXG031", 3, 3), draw("JXG031", 3, salt=1)
    return compare(jax.grad(m.assumed_symmetric, argnums=1)(a, b), _exact_solve_grad(a, b, 1), "gradient")


@says("JXG032")
def _jxg032(m: Any) -> str | None:
    """`jax.grad(cube_root)(c)` against the cube root's slope `c ** (-2/3) / 3`"""
    c = np.float32(np.abs(draw("JXG032", 1)[0]) + 0.5)
    return compare(jax.grad(m.cube_root)(c), np.float32(c ** (-2 / 3) / 3), "gradient")


# --- JXS: sharding (each repro runs in a child process with 8 virtual CPU devices) -----------------------------------

import jax_says_sharding  # noqa: E402,F401  registers JXS001-JXS009 in JAX_SAYS
