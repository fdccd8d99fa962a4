"""Compile-count regression tests: XLA compilations dominate a cold check (each small program costs tens of
milliseconds to compile, far more than running it), so the number of programs one check compiles is what keeps
`check_grad` and `check_batching` close to the hand-written tests they replace (docs/speed.md).

Counted with JAX's public monitoring events, after `jax.clear_caches()` so that programs compiled by earlier
tests count again. The bounds are what the shared programs achieve on jax 0.10.2; each test's comment says what the
code before compiled: NumPy arrays handed to `jnp.asarray` (an identity program per shape from jax 0.10 on) or to
`vmap` (a conversion per shape and variant), `jnp.zeros` (two programs per shape), a jit of a rule over tangent
sets whose operations had already run eagerly, operations compiled again inside JAX's backward pass, and
vmap(jit) compiling the program jit(vmap) had just compiled.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.extend.core  # used as `jax.extend.core.Primitive`: jaxdiag itself no longer imports it
import jax.numpy as jnp
import numpy as np
import pytest
from jax import monitoring

import jaxdiag

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

_counting: list[int] = []


def _listen(event: str, seconds: float, **_: object) -> None:
    if event == COMPILE_EVENT and _counting:
        _counting[-1] += 1


monitoring.register_event_duration_secs_listener(_listen)  # once per process; counts only inside `compiles`


@pytest.fixture
def compiles() -> Iterator[Callable[[Callable[[], object]], int]]:
    def count(run: Callable[[], object]) -> int:
        jax.clear_caches()
        _counting.append(0)
        try:
            run()
        finally:
            n = _counting.pop()
        return n

    yield count


def _sample(name: str, attr: str) -> object:
    spec = importlib.util.spec_from_file_location(f"speed_{name}", SAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, attr)


def _inputs(*shapes: tuple[int, ...]) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@pytest.mark.slow
def test_check_grad_of_a_small_primitive_compiles_at_most_11_programs(compiles) -> None:
    # my_cos: the impl and the JVP rule eagerly (4 operations; jvp-linearity's tangent sets reuse them), the float64
    # finite differences, the eager transpose (5, as jax.test_util.check_grads compiles them), and one program for
    # jit(grad), vmap(grad) and vjp(vmap) together (the per-example loop reuses the eager operations).
    # Before: 15 (jnp.asarray), then 12 (a jit of the JVP rule over the linearity tangent sets)
    prim = _sample("jxg001_good", "my_cos_p")
    report: list[jaxdiag.Report] = []
    n = compiles(lambda: report.append(jaxdiag.check_grad(prim, *_inputs((8,)))))
    assert report[0].ok
    assert n <= 11, f"check_grad compiled {n} programs"


@pytest.mark.slow
def test_check_grad_of_a_custom_vjp_compiles_at_most_5_programs(compiles) -> None:
    # x + y and x * y (the primal, fwd's and bwd's operations, all on f32[3]), the same two in float64 (finite
    # differences), and the jit(grad)/vmap(grad)/vjp(vmap) program; check_grads compiles 6.
    # Before: 9 (two for each jnp.zeros cotangent, and bwd's two operations again inside jax.vjp's backward pass
    # for the per-example loop)
    fn = _sample("seed_vjp_fixed", "test_func")
    report: list[jaxdiag.Report] = []
    n = compiles(lambda: report.append(jaxdiag.check_grad(fn, *_inputs((3,), (3,)))))
    assert report[0].ok
    assert n <= 5, f"check_grad compiled {n} programs"


def test_check_batching_of_a_small_primitive_compiles_at_most_5_programs(compiles) -> None:
    # my_sum: the impl's 3 operations on the example, the jit of the primitive for the lowering check, and one
    # program for every vmap variant (fused); batching-out-axes-none's out_axes=None run is only traced. Before: 17,
    # the rule's operations compiled again for each variant's shapes (and for the out_axes=None run), and vmap(jit)
    # compiled on its own (the rule returns out_axes (0, None), so it broadcasts outside the jit)
    prim = _sample("seed_batching_fixed", "my_sum_p")
    report: list[jaxdiag.Report] = []
    n = compiles(lambda: report.append(jaxdiag.check_batching(prim, *_inputs((3,)))))
    assert report[0].ok
    assert n <= 5, f"check_batching compiled {n} programs"


def test_check_batching_compiles_every_variant_in_one_program(compiles, monkeypatch) -> None:
    # matvec (two arguments): the impl's matmul on the example, the jit of the primitive for the lowering check, and
    # one program for all the vmap variants. The eager runs compile the rule's operations for each variant's shapes
    # and jit(vmap) (13 programs)
    from jaxdiag._checks._batching import _fused

    prim = _sample("jxb006_good", "matvec_p")
    reports: list[jaxdiag.Report] = []
    fused = compiles(lambda: reports.append(jaxdiag.check_batching(prim, *_inputs((4, 3), (3,)))))
    monkeypatch.setattr(_fused, "ENABLED", False)
    eager = compiles(lambda: reports.append(jaxdiag.check_batching(prim, *_inputs((4, 3), (3,)))))
    assert all(r.ok for r in reports)
    assert fused <= 3 < eager, f"check_batching compiled {fused} programs fused, {eager} eagerly"


@jax.custom_vjp
def _looped_softplus(x):  # ten steps of a tenth: softplus, through a loop whose body is a new closure per call
    def step(total, _):
        return total + 0.1 * jnp.log1p(jnp.exp(x)), None

    return jax.lax.scan(step, jnp.zeros_like(x), None, length=10)[0]


_looped_softplus.defvjp(lambda x: (_looped_softplus(x), x), lambda x, g: (g * jax.nn.sigmoid(x),))


@pytest.mark.slow
def test_finite_differences_of_a_looping_primal_compile_it_once_per_precision(compiles, monkeypatch) -> None:
    # Eagerly, the scan's body is traced and compiled again at every finite-difference point (6 per direction in
    # float32, 2 in float64); one program per precision instead, with the same report
    from jaxdiag._checks._gradref import _compiled

    reports: list[jaxdiag.Report] = []
    once = compiles(lambda: reports.append(jaxdiag.check_grad(_looped_softplus, *_inputs((3,)))))
    monkeypatch.setattr(_compiled, "ENABLED", False)
    eager = compiles(lambda: reports.append(jaxdiag.check_grad(_looped_softplus, *_inputs((3,)))))
    assert reports[0].ok and reports[0].to_dict()["targets"][0]["findings"] == reports[1].to_dict()["targets"][0][
        "findings"]
    assert once * 4 < eager * 3, f"check_grad compiled {once} programs with the primal compiled once, {eager} eagerly"


def test_device_array_compiles_nothing(compiles) -> None:
    from jaxdiag import _compat

    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    out: list[object] = []
    assert compiles(lambda: out.append(_compat.device_array(host))) == 0
    value = out[0]
    assert isinstance(value, jax.Array) and value.dtype == np.float32 and not value.weak_type
    np.testing.assert_array_equal(np.asarray(value), host)


def test_run_compilation_cache_is_scoped_to_the_run(tmp_path: Path) -> None:
    """`jaxdiag check --no-cache` in this process: a temporary compilation cache that programs compiled during
    the run go to, removed afterwards, JAX's flags as they were."""
    import os

    from jaxdiag._jobs import _parallel

    flags = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
             "jax_persistent_cache_min_entry_size_bytes")
    before = {name: getattr(jax.config, name) for name in flags}
    settings = _parallel.RunSettings(jobs=1, timeout=0, cache=False, bound_memory=True)
    with _parallel._run_compilation_cache(object(), settings):  # type: ignore[arg-type]  # no result cache: unused
        folder = settings.scratch_xla
        assert folder is not None and jax.config.jax_compilation_cache_dir == folder
        jax.jit(lambda x: x * 3.0 + 1.0)(np.ones(5, np.float32)).block_until_ready()
        assert os.listdir(folder)  # the program was stored
    assert not os.path.exists(folder)
    assert settings.scratch_xla is None
    assert {name: getattr(jax.config, name) for name in flags} == before
    # the Python API (bound_memory False) touches nothing
    api = _parallel.RunSettings()
    with _parallel._run_compilation_cache(object(), api):  # type: ignore[arg-type]
        assert api.scratch_xla is None and getattr(jax.config, flags[0]) == before[flags[0]]


def test_in_process_run_clears_jax_caches_past_the_bound_not_after_every_target(monkeypatch) -> None:
    """`jaxdiag check -j 1 --timeout 0`: memory bounded as in a worker; when clearing leaves the process above the
    bound, the next clear waits for IN_PROCESS_GROWTH_MB more (no recompiling everything after every target)."""
    from jaxdiag._jobs import _memory, _parallel

    rss = iter([300.0,                      # at the start: the bound is WORKER_MEMORY_MB (400)
                350.0, 420.0, 380.0,        # target 0 below; target 1 above -> cleared, 380 left -> bound 480
                450.0, 500.0, 390.0])       # target 2 below the new bound; target 3 above -> cleared
    clears: list[int] = []
    monkeypatch.setattr(_memory, "WORKER_MEMORY_MB", 400)
    monkeypatch.setattr(_memory, "rss_mb", lambda: next(rss))
    monkeypatch.setattr(_memory, "release_memory", lambda: clears.append(1))
    monkeypatch.setattr(_parallel, "run_in_process", lambda lint, found: found)
    done = list(_parallel._in_process(object(), ["a", "b", "c", "d"], [0, 1, 2, 3], release=True))  # type: ignore[arg-type]
    assert [i for i, _ in done] == [0, 1, 2, 3] and len(clears) == 2
    # the Python API's caller keeps its caches
    monkeypatch.setattr(_memory, "rss_mb", lambda: 10_000.0)
    list(_parallel._in_process(object(), ["a"], [0], release=False))  # type: ignore[arg-type]
    assert len(clears) == 2


@pytest.mark.slow
def test_vmap_jit_reuses_the_jit_vmap_result_with_the_same_rule_calls_and_report(monkeypatch) -> None:
    """vmap(jit) still traces, so the rule runs under it (the spy sees that call) and the report is the same as
    when vmap(jit) compiles and runs its own program; only that program is saved."""
    from jax.interpreters import batching

    from jaxdiag import _compat

    from jaxdiag._checks._batching import _fused

    monkeypatch.setattr(_fused, "ENABLED", False)  # the eager runs, where vmap(jit) follows jit(vmap)
    prim = _sample("jxb006_good", "matvec_p")
    rule = _compat.batching_rule(prim)
    assert rule is not None
    calls: list[tuple] = []

    def counting(args: Sequence[Any], dims: tuple, **params: Any) -> Any:
        calls.append((tuple(np.shape(a) for a in args), dims))
        return rule(args, dims, **params)

    real = _compat.same_program_as_jit
    verdicts: list[bool] = []

    def recording(*a: object) -> bool:
        verdicts.append(real(*a))  # type: ignore[arg-type]
        return verdicts[-1]

    def run(same: Callable[..., bool]) -> tuple[list[tuple], str]:
        calls.clear()
        monkeypatch.setattr(_compat, "same_program_as_jit", same)
        jax.clear_caches()
        report = jaxdiag.check_batching(prim, *_inputs((4, 3), (3,)))
        assert report.ok
        return list(calls), str(report)

    batching.primitive_batchers[prim] = counting
    try:
        reused = run(recording)
        compiled = run(lambda *a: False)
    finally:
        batching.primitive_batchers[prim] = rule
    assert verdicts == [True]
    assert reused == compiled


def test_same_program_as_jit_only_for_the_very_same_program() -> None:
    from jaxdiag import _compat

    x = _compat.device_array(np.arange(12, dtype=np.float32).reshape(4, 3))

    def f(v: jax.Array) -> jax.Array:
        return jax.numpy.sin(v) * 2.0

    def g(v: jax.Array) -> jax.Array:
        return jax.numpy.sin(v) * 3.0  # another constant: the same text but for the literal

    ran = jax.jit(jax.vmap(f))
    ran(x).block_until_ready()
    assert _compat.same_program_as_jit(ran, jax.vmap(jax.jit(f)), [x])
    assert not _compat.same_program_as_jit(ran, jax.vmap(jax.jit(g)), [x])
    assert not _compat.same_program_as_jit(ran, jax.vmap(jax.jit(f), out_axes=1), [x])  # a transpose after the jit
    assert not _compat.same_program_as_jit(ran, lambda v: jax.jit(f)(v) + 1.0, [x])


def test_fused_program_is_reused_only_for_the_very_same_program(monkeypatch: pytest.MonkeyPatch) -> None:
    """A re-check of the same subject reuses the jitted fused program (no compilation: eager operations are cached
    per shape too); two primitives printed alike (same name) but with other impls never share one."""
    from jax.extend.core import Primitive

    from jaxdiag._checks._batching import _fused

    # an empty table: the programs of the tests before could fill it up to its bound, which empties it
    monkeypatch.setattr(_fused, "_PROGRAMS", {})

    def twin(scale: float) -> Any:
        prim = Primitive("twin")
        prim.def_impl(lambda x: x * scale)
        prim.def_abstract_eval(lambda x: x)
        return prim

    a, b = twin(2.0), twin(3.0)
    x = np.ones(3, np.float32)
    traced_a = jax.make_jaxpr(lambda v: a.bind(v) + 1.0)(x)
    traced_b = jax.make_jaxpr(lambda v: b.bind(v) + 1.0)(x)
    assert str(traced_a.jaxpr) == str(traced_b.jaxpr)
    run_a, run_b = _fused._compiled(traced_a), _fused._compiled(traced_b)
    assert run_a is not None and run_b is not None and run_a is not run_b
    np.testing.assert_allclose(np.asarray(run_b(x)[0]), 4.0)  # the impl, bound at the top level as eagerly
    np.testing.assert_allclose(np.asarray(run_a(x)[0]), 3.0)
    assert _fused._compiled(jax.make_jaxpr(lambda v: a.bind(v) + 1.0)(x)) is run_a  # JAX's jit cache then hits


@jax.custom_jvp
def _looped_square_sum(x):  # a loop in the primal, also called by the JVP rule
    def step(total, _):
        return total + 0.1 * x * x, None

    return jax.lax.scan(step, jnp.zeros_like(x), None, length=10)[0]


@_looped_square_sum.defjvp
def _looped_square_sum_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _looped_square_sum(x), 2.0 * x * t


def _compiles_inside(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """The programs compiled inside each call of `module.name` (inside a `compiles` count), one entry per call."""
    counts: list[int] = []
    original = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        before = _counting[-1]
        try:
            return original(*args, **kwargs)
        finally:
            counts.append(_counting[-1] - before)

    monkeypatch.setattr(module, name, counted)
    return counts


@pytest.mark.slow
def test_per_example_gradients_of_a_looping_rule_compile_one_program(compiles, monkeypatch) -> None:
    # grad-composition's per-example reference: 2 x batch-size eager gradients, each of which traced and compiled
    # the scan again (a new body per call); one program for all of them instead, with the same report
    from jaxdiag._checks import _grad
    from jaxdiag._checks._gradref import _compiled

    in_loop = _compiles_inside(monkeypatch, _grad, "_per_example_loop")
    reports: list[jaxdiag.Report] = []
    compiles(lambda: reports.append(jaxdiag.check_grad(_looped_square_sum, *_inputs((3,)))))
    monkeypatch.setattr(_compiled, "ENABLED", False)
    compiles(lambda: reports.append(jaxdiag.check_grad(_looped_square_sum, *_inputs((3,)))))
    assert reports[0].ok and _findings(reports[0]) == _findings(reports[1])
    assert in_loop[0] <= 1 < in_loop[1], f"the per-example loop compiled {in_loop[0]} programs, eagerly {in_loop[1]}"


def _findings(report: jaxdiag.Report) -> list:
    return [t["findings"] for t in report.to_dict()["targets"]]


def test_eager_semantics_inlines_a_custom_jvp_body_only_when_asked() -> None:
    # equinox's error checks bind their primitive inside a custom_jvp: eagerly JAX calls that body op by op, so the
    # primitive runs its impl; a compiled program evaluating the call as traced would run its lowering instead
    from jaxdiag import _compat

    marked = jax.extend.core.Primitive("jaxdiag_test_marked")
    marked.def_impl(lambda x: x + 1.0)  # the impl and the lowering differ, so the result shows which one ran
    marked.def_abstract_eval(lambda x: x)
    jax.interpreters.mlir.register_lowering(marked, jax.interpreters.mlir.lower_fun(lambda x: x + 2.0, False))

    @jax.custom_jvp
    def wrapped(x):
        return marked.bind(x) * 2.0

    wrapped.defjvp(lambda p, t: (wrapped(p[0]), t[0]))
    closed = jax.make_jaxpr(lambda x: wrapped(x) - 1.0)(jnp.float32(0.5))
    assert _compat.eager_semantics(closed, _compat.user_impl) is None
    run = _compat.eager_semantics(closed, _compat.user_impl, inline_custom=True)
    assert run is not None
    eager = float(wrapped(jnp.float32(0.5)) - 1.0)
    assert float(_compat.own_jit(run)(jnp.float32(0.5))[0]) == eager == 2.0


@jax.custom_jvp
def _bell(x):  # cos(x) exp(-x^2): straight-line operations, flat at x = 0
    return jnp.cos(x) * jnp.exp(-x * x)


@_bell.defjvp
def _bell_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _bell(x), (-jnp.sin(x) - 2 * x * jnp.cos(x)) * jnp.exp(-x * x) * t


@pytest.mark.slow
def test_float64_differences_of_a_straight_line_primal_are_one_program(compiles, monkeypatch) -> None:
    # Where the derivative is zero (x = 0) the float32 differences are inconclusive, so they escalate to float64,
    # where none of the primal's eager operations is compiled yet (about 20 ms each at XLA's default level): one
    # program of jaxdiag's own instead, with the same report
    from jaxdiag._checks._gradref import _compiled

    x = np.array([0.0, 0.7, 0.0, -1.3, 0.0, 0.4], np.float32)
    reports: list[jaxdiag.Report] = []
    once = compiles(lambda: reports.append(jaxdiag.check_grad(_bell, x)))
    monkeypatch.setattr(_compiled, "ENABLED", False)
    eager = compiles(lambda: reports.append(jaxdiag.check_grad(_bell, x)))
    assert reports[0].ok and reports[0].to_dict()["targets"][0]["findings"] == reports[1].to_dict()["targets"][0][
        "findings"]
    assert once + 2 <= eager, f"check_grad compiled {once} programs with the primal compiled once, {eager} eagerly"


@jax.custom_jvp
def _looped_cube(x):
    return x * x * x


@_looped_cube.defjvp
def _looped_cube_jvp(primals, tangents):  # the rule loops: eagerly, every call compiles its scan again
    (x,), (t,) = primals, tangents

    def step(total, _):
        return total + 0.3 * x * x * t, None

    return _looped_cube(x), jax.lax.scan(step, jnp.zeros_like(x), None, length=10)[0]


@pytest.mark.slow
def test_tangent_sets_of_a_looping_jvp_rule_share_one_program(compiles, monkeypatch) -> None:
    # the linearity and reference checks call the rule on a dozen tangent sets of the same types: one compiled
    # program per set of tangent positions instead of the rule's loops compiled again on every eager call
    from jaxdiag._checks._custom_jvp import _call
    from jaxdiag._checks._gradref import _compiled

    in_calls = _compiles_inside(monkeypatch, _call, "_dense_call")
    reports: list[jaxdiag.Report] = []
    compiles(lambda: reports.append(jaxdiag.check_grad(_looped_cube, *_inputs((3,)))))
    compiled, in_calls[:] = sum(in_calls), []
    monkeypatch.setattr(_compiled, "ENABLED", False)
    compiles(lambda: reports.append(jaxdiag.check_grad(_looped_cube, *_inputs((3,)))))
    assert reports[0].ok and _findings(reports[0]) == _findings(reports[1])
    assert compiled <= 2 < sum(in_calls), f"the rule's tangent sets compiled {compiled} programs, eagerly {in_calls}"


@pytest.mark.slow
def test_the_vjp_and_second_derivatives_of_a_looping_rule_are_compiled_programs(compiles, monkeypatch) -> None:
    # jvp-reverse's VJP of the subject, and grad-second-order's two modes of its gradient: eagerly, each call
    # compiles the rule's scan again; one program each instead, with the same report
    from jaxdiag._checks import _grad_second_order
    from jaxdiag._checks._custom_jvp import _linearity
    from jaxdiag._checks._gradref import _compiled

    in_vjp = _compiles_inside(monkeypatch, _linearity, "eager_vjp")
    in_modes = _compiles_inside(monkeypatch, _grad_second_order, "_both_modes_compiled")
    reports: list[jaxdiag.Report] = []
    compiled = compiles(lambda: reports.append(jaxdiag.check_grad(_looped_cube, *_inputs((3,)), order=2)))
    vjp_compiled, modes_compiled, in_vjp[:] = sum(in_vjp), sum(in_modes), []
    monkeypatch.setattr(_compiled, "ENABLED", False)
    eager = compiles(lambda: reports.append(jaxdiag.check_grad(_looped_cube, *_inputs((3,)), order=2)))
    assert reports[0].ok and _findings(reports[0]) == _findings(reports[1])
    checks = {c.name: c.status for t in reports[0].targets for c in t.checks}
    assert checks["jvp-reverse"] == checks["grad-second-order"] == "passed"
    assert vjp_compiled <= 1 < sum(in_vjp), f"the VJP compiled {vjp_compiled} programs, eagerly {sum(in_vjp)}"
    assert modes_compiled <= 1 and compiled < eager, (modes_compiled, compiled, eager)


@jax.custom_jvp
def _looped_gated_cube(x):
    return x * x * x


@_looped_gated_cube.defjvp
def _looped_gated_cube_jvp(primals, tangents):  # loops, and gates on the tangent: jax.grad cannot transpose it
    (x,), (t,) = primals, tangents

    def step(total, _):
        return total + 0.3 * x * x * t, None

    return _looped_gated_cube(x), jnp.where(t > 0, jax.lax.scan(step, jnp.zeros_like(x), None, length=10)[0], 0.0)


@pytest.mark.slow
def test_a_vjp_the_compiled_program_cannot_run_is_reported_from_the_eager_call(monkeypatch) -> None:
    from jaxdiag._checks._gradref import _compiled

    reports = [jaxdiag.check_grad(_looped_gated_cube, *_inputs((3,)))]
    monkeypatch.setattr(_compiled, "ENABLED", False)
    reports.append(jaxdiag.check_grad(_looped_gated_cube, *_inputs((3,))))
    messages = [[f.message for t in r.targets for f in t.findings] for r in reports]
    assert messages[0] == messages[1] and "jax.grad must transpose the tangent computation and fails" in messages[0][0]


@jax.custom_vjp
def _looped_growth(x):
    return jax.lax.fori_loop(0, 3, lambda i, c: c * 1.1, x)


def _looped_growth_fwd(x):
    return _looped_growth(x), x


def _looped_growth_bwd(x, g):
    return (jax.lax.fori_loop(0, 3, lambda i, c: c * 1.1, g) * jnp.cos(x),)


_looped_growth.defvjp(_looped_growth_fwd, _looped_growth_bwd)


@pytest.mark.slow
def test_second_derivatives_jax_refuses_eagerly_are_not_taken_from_a_compiled_program(monkeypatch) -> None:
    # JAX refuses forward mode of a custom_vjp eagerly ("can't apply forward-mode autodiff") but traces it under
    # jit: the compiled two-mode program would pass where the user's eager jax.hessian fails
    from jaxdiag._checks._gradref import _compiled

    reports = [jaxdiag.check_grad(_looped_growth, *_inputs((3,)), order=2)]
    monkeypatch.setattr(_compiled, "ENABLED", False)
    reports.append(jaxdiag.check_grad(_looped_growth, *_inputs((3,)), order=2))
    messages = [[f.message for t in r.targets for f in t.findings] for r in reports]
    assert messages[0] == messages[1] and any("forward-mode autodiff" in m for m in messages[0]), messages


def test_a_primitive_lowered_by_its_impl_may_sit_inside_a_compiled_program() -> None:
    # eagerly JAX interprets a custom_jvp's body op by op, so a primitive there runs its impl; compiled, its lowering.
    # The two compute the same when the lowering is `mlir.lower_fun` of the very impl (not when it is another function)
    from jax.interpreters import mlir

    from jaxdiag import _compat

    def impl(x):
        return jnp.sin(x)

    same, other = jax.extend.core.Primitive("lowered_by_impl"), jax.extend.core.Primitive("lowered_otherwise")
    for prim, lowering in ((same, impl), (other, lambda x: jnp.cos(x))):
        prim.def_impl(impl)
        prim.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
        mlir.register_lowering(prim, mlir.lower_fun(lowering, multiple_results=False))

    def inside_custom_jvp(prim: Any) -> Any:
        f = jax.custom_jvp(lambda x: prim.bind(x) + 1.0)
        f.defjvp(lambda primals, tangents: (f(*primals), tangents[0]))
        return jax.make_jaxpr(lambda x: f(x) * 2.0)(np.ones(3, np.float32))

    assert _compat.eager_semantics(inside_custom_jvp(same), _compat.user_impl) is not None
    assert _compat.eager_semantics(inside_custom_jvp(other), _compat.user_impl) is None


@jax.custom_jvp
def _looped_slope_sin(x):
    return jnp.sin(x)


@_looped_slope_sin.defjvp
def _looped_slope_sin_jvp(primals, tangents):  # the slope from a while loop: reverse mode cannot go through it twice
    (x,), (t,) = primals, tangents
    slope = jax.lax.while_loop(lambda c: c[0] < 1, lambda c: (c[0] + 1, jnp.cos(x)), (0, jnp.zeros_like(x)))[1]
    return jnp.sin(x), slope * t


@pytest.mark.slow
def test_second_order_that_cannot_be_traced_in_reverse_runs_no_forward_mode(compiles, monkeypatch) -> None:
    # forward over reverse runs and compiles op by op, reverse over reverse cannot even be traced: the finding is
    # the reverse mode's whichever way it is found, and the eager forward mode it never needed is not run
    from jaxdiag._checks import _grad_second_order

    in_check = _compiles_inside(monkeypatch, _grad_second_order, "quiet_call")  # every call the check makes
    reports: list[jaxdiag.Report] = []
    compiles(lambda: reports.append(jaxdiag.check_grad(_looped_slope_sin, *_inputs((3,)), order=2)))
    shortcut = sum(in_check)
    in_check[:] = []
    monkeypatch.setattr(_grad_second_order, "_trace_error", lambda *args: None)  # forward first, as before
    compiles(lambda: reports.append(jaxdiag.check_grad(_looped_slope_sin, *_inputs((3,)), order=2)))
    assert _findings(reports[0]) == _findings(reports[1])
    messages = [f.message for t in reports[0].targets for f in t.findings]
    assert any("reverse over reverse" in m and "while_loop" in m for m in messages), messages
    assert shortcut < sum(in_check), (shortcut, in_check)
