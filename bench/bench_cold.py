"""Cold cost per target: `jaxdiag.check_grad` vs `jax.test_util.check_grads`, `jaxdiag.check_batching` vs a
hand-written vmap-vs-loop test, each in a fresh process, as a user's test file pays for it.

For every target, the two sides run alternately in fresh Python processes (`--runs` each, default 5); the figure
is the ratio of the medians (of wall time, and of the process's CPU time, which the machine's load moves less;
`programs` is the number of XLA programs each side compiled). In each process the target's module, JAX and the
inputs are ready before the clock starts (both sides need them); the timed region starts before `import jaxdiag`
(or the import of `jax.test_util`) and ends when the check returns, so jaxdiag's own import is paid. Nothing is
warm: every op JAX compiles on either side is compiled in the timed region. jaxdiag's modules are byte-compiled
before the first run, as an installed package's are (`child_env`).

jaxdiag's side also reports where its time goes: import, tracing, lowering to MLIR and XLA compilation (JAX's
monitoring events), the rest (running the compiled code, eager dispatch and jaxdiag's own Python), and each
check's share.

- grad: order 1, modes fwd+rev (rev only for custom_vjp, which JAX cannot differentiate forward), same inputs.
- batching: the hand-written test vmaps the target over 2 to 4 in_axes variants (every argument batched on axis 0;
  for two arguments, each one batched alone; the last axis) with 5 examples, loops over the examples eagerly and
  compares with np.allclose: the test a careful user writes. Beside it, alternating too, the same-coverage hand
  loop: the same comparison over every vmap variant `check_batching` runs on that target (its in_axes variants,
  batch size 1, nested vmap, `jit(vmap f)`, `vmap(jit f)`; recorded from an untimed run in the driver, so that
  process never imports jaxdiag): what a hand-written test that checks what jaxdiag checks costs.

`--cases five` runs the five kinds of `bench/five_kinds.py` instead; `--before DIR` also measures the jaxdiag of
another checkout (a copy of an older commit: `git archive COMMIT | tar -x -C DIR`), alternately with this one and
the reference, for a before/after table. Each jaxdiag process also reports how many of jaxdiag's modules were loaded
when its first check started and at its end.

    python bench/bench_cold.py [--runs 5] [--only grad|batching] [--cases default|five] [--before DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (name, TARGET, arg specs, check_grads modes)
GRAD_TARGETS = [
    ("seed custom_vjp (fixed)", "samples/seed_vjp_fixed.py:test_func", ["f32[3]", "f32[3]"], ["rev"]),
    ("seed custom_jvp", "samples/seed_jvp.py:test_func", ["f32[3]", "f32[3]"], ["fwd", "rev"]),
    ("custom_vjp clipped_sin", "samples/jxg014_good.py:clipped_sin", ["f32[8]"], ["rev"]),
    ("custom_vjp matvec", "samples/jxg018_good.py:matvec", ["f32[4,8]", "f32[8]"], ["rev"]),
    ("primitive my_cos", "samples/jxg001_good.py:my_cos_p", ["f32[8]"], ["fwd", "rev"]),
    ("primitive mymul (bilinear)", "samples/jxg005_good.py:mymul_p", ["f32[8]", "f32[8]"], ["fwd", "rev"]),
]
# (name, TARGET, arg specs)
BATCHING_TARGETS = [
    ("primitive my_sum (seed)", "samples/seed_batching_fixed.py:my_sum_p", ["f32[3]"]),
    ("primitive l2_normalize", "samples/jxb003_good.py:l2_normalize_p", ["f32[3]"]),
    ("primitive matvec (2 args)", "samples/jxb006_good.py:matvec_p", ["f32[4,3]", "f32[3]"]),
    ("primitive mymul (bilinear)", "samples/jxg005_good.py:mymul_p", ["f32[8]", "f32[8]"]),
]
# `--cases five`: the five kinds of bench/five_kinds.py (the grad side for the three differentiable ones, the
# batching side for the two primitives).
FIVE_GRAD = [
    ("custom_jvp softplus", "bench/five_kinds.py:softplus", ["f32[8]"], ["fwd", "rev"]),
    ("custom_vjp two outputs", "bench/five_kinds.py:two_outputs", ["f32[8]", "f32[8]"], ["rev"]),
    ("xlogy (positive inputs)", "bench/five_kinds.py:xlogy", ["f32[8]@positive", "f32[8]@positive"],
     ["fwd", "rev"]),
]
FIVE_BATCHING = [
    ("primitive my_sum (seed)", "samples/seed_batching_fixed.py:my_sum_p", ["f32[3]"]),
    ("primitive matvec (2 args)", "samples/jxb006_good.py:matvec_p", ["f32[4,3]", "f32[3]"]),
]
CASES = {"default": (GRAD_TARGETS, BATCHING_TARGETS), "five": (FIVE_GRAD, FIVE_BATCHING)}
EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}


# ---------------------------------------------------------------------------------------------------------------
# One measurement, in a fresh process
# ---------------------------------------------------------------------------------------------------------------


def child(family: str, side: str, index: int, cases: str, jaxdiag_root: str) -> None:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, jaxdiag_root)  # whose jaxdiag: this checkout's, or another's (--before)
    import jax.numpy as jnp
    import numpy as np
    from jax import monitoring
    from jax.extend.core import Primitive  # what the user's primitive module imports anyway

    grad_targets, batching_targets = CASES[cases]
    name, ref, specs, *rest = (grad_targets if family == "grad" else batching_targets)[index]
    obj = load(ref)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(shape(s)).astype(np.float32) for s in specs]
    args = [np.abs(a) + 0.5 if s.endswith("@positive") else a for a, s in zip(args, specs)]
    times = dict.fromkeys(EVENTS.values(), 0.0)

    programs = [0]

    def listen(event: str, seconds: float, **_: object) -> None:
        if event in EVENTS:
            times[EVENTS[event]] += seconds
        if event == "/jax/core/compile/backend_compile_duration":
            programs[0] += 1

    monitoring.register_event_duration_secs_listener(listen)
    is_prim = isinstance(obj, Primitive)
    f = (lambda *a: obj.bind(*a)) if is_prim else obj
    assert not any(k == "jaxdiag" or k.startswith("jaxdiag.") for k in sys.modules)  # its import is timed
    checks: dict[str, float] = {}
    start, cpu_start = time.perf_counter(), time.process_time()
    modules = {"at_first_check": 0, "at_end": 0}
    if side == "ours":
        import jaxdiag

        entry = jaxdiag.check_grad if family == "grad" else jaxdiag.check_batching
        imported = time.perf_counter()
        from jaxdiag._run import _engine

        def first(label: str, check: str, inputs: dict) -> None:
            if check and not modules["at_first_check"]:  # "": a candidate of input inference, not a check
                modules["at_first_check"] = sum(1 for k in sys.modules if k == "jaxdiag" or k.startswith("jaxdiag."))

        _engine.on_check_start = first
        report = entry(obj, *args)
        modules["at_end"] = sum(1 for k in sys.modules if k == "jaxdiag" or k.startswith("jaxdiag."))
        assert report.ok, [x.message for x in report.findings if x.severity != "info"]
        for target in report.targets:
            for c in target.checks:
                checks[c.name] = checks.get(c.name, 0.0) + c.seconds
    elif side == "same":
        imported = time.perf_counter()
        hand_loop_same_coverage(f, args, json.loads(os.environ["JAXDIAG_BENCH_VARIANTS"]))
    elif family == "grad":
        from jax.test_util import check_grads

        imported = time.perf_counter()
        check_grads(f, tuple(jnp.asarray(a) for a in args), order=1, modes=tuple(rest[0]))
    else:
        imported = time.perf_counter()
        hand_loop(f, args)
    total, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    print(json.dumps({"total": total, "cpu": cpu, "import": imported - start, **times, "checks": checks,
                      "programs": programs[0], "modules": modules}))


def shape(spec: str) -> tuple[int, ...]:
    """`f32[4,8]` -> (4, 8) (the bench's inputs are all float32)."""
    inside = spec[spec.index("[") + 1:spec.index("]")]
    return tuple(int(d) for d in inside.split(",") if d)


def load(ref: str):  # type: ignore[no-untyped-def]
    """The object named by `samples/file.py:attr`, imported without jaxdiag (whose import is timed)."""
    import importlib.util

    path, attr = ref.split(":")
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return getattr(module, attr)


def hand_loop(f, args) -> None:  # type: ignore[no-untyped-def]
    """What a careful user writes: vmap over 2 to 4 in_axes variants vs a loop of eager calls, np.allclose."""
    import jax
    import numpy as np

    size = 5
    rng = np.random.default_rng(1)
    batch = [np.stack([a + 0.1 * rng.standard_normal(a.shape).astype(a.dtype) for _ in range(size)]) for a in args]
    variants: list[tuple] = [tuple(0 for _ in args)]
    if len(args) == 2:
        variants += [(0, None), (None, 0)]
    if all(a.ndim >= 1 for a in args):
        variants.append(tuple(-1 for _ in args))
    for axes in variants[:4]:
        inputs = [b if ax is not None else a for b, a, ax in zip(batch, args, axes)]
        inputs = [np.moveaxis(x, 0, -1) if ax == -1 else x for x, ax in zip(inputs, axes)]
        got = jax.vmap(f, in_axes=axes)(*inputs)
        per = [f(*[np.take(x, i, axis=ax) if ax is not None else x for x, ax in zip(inputs, axes)])
               for i in range(size)]
        got_leaves = jax.tree_util.tree_leaves(got)
        want_leaves = [np.stack(leaves) for leaves in zip(*[jax.tree_util.tree_leaves(p) for p in per])]
        for g, w in zip(got_leaves, want_leaves):
            assert np.allclose(np.asarray(g), w, rtol=1e-5, atol=1e-5)


def hand_loop_same_coverage(f, args, variants: list[dict]) -> None:  # type: ignore[no-untyped-def]
    """The hand-written test that checks what `check_batching` checks: every vmap variant jaxdiag runs on this
    target (its in_axes, batch sizes, nested vmap, `jit(vmap f)`, `vmap(jit f)`; the list comes from the driver,
    so this process never imports jaxdiag), each against a loop of eager calls, compared with np.allclose."""
    import jax
    import numpy as np

    rng = np.random.default_rng(1)
    for v in variants:
        axes, size, inner, mode = v["axes"], v["size"], v["inner"] or 1, v["mode"]
        count = size * inner
        examples = [[a + 0.1 * rng.standard_normal(a.shape).astype(a.dtype) for a in args] for _ in range(count)]
        per_arg = [np.stack([ex[i] for ex in examples]) for i in range(len(args))]
        if mode == "nested":
            inputs = [args[i] if ax is None else
                      np.moveaxis(per_arg[i].reshape((size, inner) + args[i].shape), 1, 1 + ax)
                      for i, ax in enumerate(axes)]
            outer = tuple(None if ax is None else 0 for ax in axes)
            got = jax.vmap(jax.vmap(f, in_axes=tuple(axes)), in_axes=outer)(*inputs)
        else:
            inputs = [args[i] if ax is None else np.moveaxis(per_arg[i], 0, ax) for i, ax in enumerate(axes)]
            batched = jax.vmap(jax.jit(f) if mode == "vmap(jit)" else f, in_axes=tuple(axes))
            got = (jax.jit(batched) if mode == "jit(vmap)" else batched)(*inputs)
        per = [f(*[args[i] if ax is None else examples[b][i] for i, ax in enumerate(axes)]) for b in range(count)]
        want = [np.stack(leaves) for leaves in zip(*[jax.tree_util.tree_leaves(p) for p in per])]
        for g_, w in zip(jax.tree_util.tree_leaves(got), want):
            got_flat = np.asarray(g_).reshape((count,) + w.shape[1:])
            assert np.allclose(got_flat, w, rtol=1e-5, atol=1e-5)


def jaxdiag_variants(index: int, cases: str) -> list[dict]:
    """The vmap variants `check_batching` runs on a batching target (recorded from one untimed run here, in the
    driver), for the same-coverage hand loop."""
    import numpy as np

    import jaxdiag
    from jaxdiag._checks._batching import _evidence

    name, ref, specs = CASES[cases][1][index]
    obj = load(ref)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(shape(s)).astype(np.float32) for s in specs]
    seen: list[dict] = []
    original = _evidence._variants

    def spy(*a, **k):  # type: ignore[no-untyped-def]
        out = original(*a, **k)
        seen[:] = [{"axes": list(v.axes), "size": v.size, "inner": v.inner, "mode": v.mode} for v in out
                   if v.mode in ("eager", "nested", "jit(vmap)", "vmap(jit)") and not v.under_jit]
        return out

    _evidence._variants = spy
    try:
        jaxdiag.check_batching(obj, *args)
    finally:
        _evidence._variants = original
    return seen


# ---------------------------------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------------------------------


def child_env(roots: tuple[str, ...] = (str(ROOT),)) -> dict[str, str]:
    """The children's environment: jaxdiag's modules byte-compiled once beforehand, as `pip install` leaves them and
    as JAX's already are. With PYTHONDONTWRITEBYTECODE set (this project's machine sets it) an editable install
    would otherwise compile jaxdiag's source in every child, 0.5-1 s of the timed import that no installed
    jaxdiag pays. The bytecode goes to a folder of its own (PYTHONPYCACHEPREFIX), never into the repo."""
    if not _ENV:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "jaxdiag-bench-pycache")
        for root in roots:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(root) / "jaxdiag")], env=env,
                           check=True, capture_output=True)
        _ENV.update(env)
    return _ENV


_ENV: dict[str, str] = {}


def measure(family: str, side: str, index: int, cases: str = "default", root: str = str(ROOT),
            variants: list[dict] | None = None) -> dict:
    argv = [sys.executable, __file__, "--child", family, side, str(index), cases, root]
    env = {**child_env(), "JAXDIAG_BENCH_VARIANTS": json.dumps(variants or [])}
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False, env=env)
    if out.returncode != 0:
        raise SystemExit(f"{family} {side} target {index} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench(family: str, runs: int, cases: str = "default", before: str | None = None
          ) -> tuple[list[float], list[float]]:
    """Each target: jaxdiag (and, with `before`, the jaxdiag of another checkout) and the reference, alternating in
    fresh processes, `runs` times each; medians."""
    targets = CASES[cases][0 if family == "grad" else 1]
    theirs_name = "check_grads" if family == "grad" else "hand loop"
    print(f"\n{family}: jaxdiag.check_{family} vs {theirs_name}, cold, median of {runs} fresh processes each "
          "(ms; breakdown of jaxdiag's median run; programs jaxdiag/reference; jaxdiag modules at the first check "
          "/ at the end)")
    print(f"{'target':28s} {'jaxdiag':>8s} {theirs_name:>11s} {'ratio':>6s} {'cpu':>5s} {'programs':>8s} "
          f"{'modules':>7s}   {'import':>6s} {'trace':>6s} {'lower':>6s} {'compile':>7s} {'rest':>6s}   checks")
    ratios, cpu_ratios, same_ratios = [], [], []
    for index, (name, *_) in enumerate(targets):
        ours, theirs, old, same = [], [], [], []
        variants = jaxdiag_variants(index, cases) if family == "batching" else None
        for _ in range(runs):  # alternating, so every side sees the same machine load
            if before is not None:
                old.append(measure(family, "ours", index, cases, before))
            ours.append(measure(family, "ours", index, cases))
            theirs.append(measure(family, "theirs", index, cases))
            if variants:
                same.append(measure(family, "same", index, cases, variants=variants))
        m_ours = statistics.median(r["total"] for r in ours)
        m_theirs = statistics.median(r["total"] for r in theirs)
        ratios.append(m_ours / m_theirs)
        cpu_theirs = statistics.median(r["cpu"] for r in theirs)
        cpu_ratio = statistics.median(r["cpu"] for r in ours) / cpu_theirs
        cpu_ratios.append(cpu_ratio)
        typical = sorted(ours, key=lambda r: r["total"])[len(ours) // 2]
        rest = typical["total"] - typical["import"] - typical["trace"] - typical["lower"] - typical["compile"]
        checks = ", ".join(f"{k} {v * 1e3:.0f}" for k, v in sorted(typical["checks"].items(), key=lambda kv: -kv[1]))
        theirs_typical = sorted(theirs, key=lambda r: r["total"])[len(theirs) // 2]
        programs = f"{typical['programs']}/{theirs_typical['programs']}"
        modules = f"{typical['modules']['at_first_check']}/{typical['modules']['at_end']}"
        print(f"{name:28s} {m_ours * 1e3:8.0f} {m_theirs * 1e3:11.0f} {m_ours / m_theirs:6.2f} {cpu_ratio:5.2f} "
              f"{programs:>8s} {modules:>7s}   {typical['import'] * 1e3:6.0f} {typical['trace'] * 1e3:6.0f} "
              f"{typical['lower'] * 1e3:6.0f} "
              f"{typical['compile'] * 1e3:7.0f} {rest * 1e3:6.0f}   {checks}", flush=True)
        print(f"{'':28s} {theirs_name} breakdown: import {theirs_typical['import'] * 1e3:.0f}, trace "
              f"{theirs_typical['trace'] * 1e3:.0f}, lower {theirs_typical['lower'] * 1e3:.0f}, compile "
              f"{theirs_typical['compile'] * 1e3:.0f}", flush=True)
        if same:
            m_same = statistics.median(r["total"] for r in same)
            same_typical = sorted(same, key=lambda r: r["total"])[len(same) // 2]
            cpu_same = statistics.median(r["cpu"] for r in ours) / statistics.median(r["cpu"] for r in same)
            print(f"{'':28s} same-coverage hand loop ({len(variants or [])} variants, as jaxdiag's): "
                  f"{m_same * 1e3:.0f} ms ({m_same / m_theirs:.2f}x the hand loop), jaxdiag "
                  f"{m_ours / m_same:.2f}x of it (cpu {cpu_same:.2f}), programs {same_typical['programs']}",
                  flush=True)
            same_ratios.append(m_ours / m_same)
        if old:
            m_old = statistics.median(r["total"] for r in old)
            cpu_old = statistics.median(r["cpu"] for r in old) / cpu_theirs
            old_typical = sorted(old, key=lambda r: r["total"])[len(old) // 2]
            print(f"{'':28s} before ({before}): {m_old * 1e3:.0f} ms, ratio {m_old / m_theirs:.2f} (cpu "
                  f"{cpu_old:.2f}), programs {old_typical['programs']}, import {old_typical['import'] * 1e3:.0f} ms",
                  flush=True)
    print(f"{family} cold ratio: median {statistics.median(ratios):.2f}x, worst {max(ratios):.2f}x "
          f"(target <= 1.0x on every target); CPU time: median {statistics.median(cpu_ratios):.2f}x, "
          f"worst {max(cpu_ratios):.2f}x; load average now {os.getloadavg()[0]:.1f}")
    if same_ratios:
        print(f"{family} against the same-coverage hand loop: median {statistics.median(same_ratios):.2f}x, worst "
              f"{max(same_ratios):.2f}x")
    return ratios, cpu_ratios


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", choices=["grad", "batching"])
    parser.add_argument("--cases", choices=sorted(CASES), default="default")
    parser.add_argument("--before", help="another checkout of jaxdiag, measured alternately as 'before'")
    opts = parser.parse_args()
    import jax

    child_env((str(ROOT), opts.before) if opts.before else (str(ROOT),))
    load = os.getloadavg()
    print(f"jax {jax.__version__}, {os.cpu_count()} CPU(s), load average {' '.join(f'{x:.1f}' for x in load)}"
          + (" (a loaded machine: read ratios of sides measured alternately, not absolute times)"
             if load[0] > (os.cpu_count() or 1) else ""))
    for family in ("grad", "batching"):
        if opts.only in (None, family):
            bench(family, opts.runs, opts.cases, opts.before)


if __name__ == "__main__":
    main()
