"""Benchmark: the full `jaxdiag batching` check of a one-argument primitive vs one hand-written vmap-versus-loop
comparison over the same in_axes variants, in the same process.

The hand-written comparison is what a careful user would write in a test: for in_axes 0 and 1, batch size 1,
nested vmap, `jit(vmap f)` and `vmap(jit f)`, build the batched input, run vmap, loop over the examples eagerly
and compare with `np.allclose`. Both sides run warm (one untimed run first), then the median of `--repeat` runs
is reported, of wall time and of the process's CPU time (which the machine's load moves less). Target: ratio <= 2.

    python bench/bench_batching.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import jax
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "samples"))
sys.path.insert(0, os.path.join(HERE, ".."))

import jaxdiag  # noqa: E402
from seed_batching_fixed import my_sum_p  # noqa: E402

SPEC = (3,)
SIZE, OUTER, INNER = 5, 2, 4  # the sizes jaxdiag picks for f32[3] (no input or output dimension equals them)


def f(x):
    return my_sum_p.bind(x)


def loop(xs: np.ndarray) -> list[np.ndarray]:
    per = [[np.asarray(o) for o in f(x)] for x in xs]
    return [np.stack([p[k] for p in per]) for k in range(len(per[0]))]


def compare(got, want) -> None:
    for g, w in zip(got, want):
        assert np.allclose(np.asarray(g), w, rtol=2e-5, atol=2e-5)


def hand_written(rng: np.random.Generator) -> None:
    """vmap vs loop for in_axes 0, 1 (last), batch size 1, nested (2x4), jit(vmap), vmap(jit)."""
    xs = rng.standard_normal((max(SIZE, OUTER * INNER),) + SPEC).astype(np.float32)
    batch = xs[:SIZE]
    want = loop(batch)
    compare(jax.vmap(f, in_axes=0)(batch), want)
    compare(jax.vmap(f, in_axes=1)(batch.T), want)
    compare(jax.vmap(f, in_axes=0)(batch[:1]), [w[:1] for w in want])
    nested_in = xs[:OUTER * INNER].reshape(OUTER, INNER, 3).transpose(0, 2, 1)
    got = jax.vmap(jax.vmap(f, in_axes=-1), in_axes=0)(nested_in)
    compare(got, [w.reshape((OUTER, INNER) + w.shape[1:]) for w in loop(xs[:OUTER * INNER])])
    compare(jax.jit(jax.vmap(f, in_axes=0))(batch), want)
    compare(jax.vmap(jax.jit(f), in_axes=0)(batch), want)


def full_check() -> None:
    report = jaxdiag.check_batching(my_sum_p, "f32[3]")
    assert report.ok, report.findings


def median_seconds(fn, repeat: int) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds of this process)."""
    fn()  # warm: imports, first compiles of the eager ops
    times, cpu = [], []
    for _ in range(repeat):
        start, cpu_start = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - cpu_start)
    return statistics.median(times), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    baseline = median_seconds(lambda: hand_written(rng), args.repeat)
    jaxdiag_time = median_seconds(full_check, args.repeat)
    print(f"jax {jax.__version__}, {args.repeat} runs each, medians:")
    print(f"  hand-written vmap-vs-loop (6 variants): {baseline[0] * 1e3:8.1f} ms wall {baseline[1] * 1e3:8.1f} ms CPU")
    print(f"  jaxdiag batching (full check):          {jaxdiag_time[0] * 1e3:8.1f} ms wall "
          f"{jaxdiag_time[1] * 1e3:8.1f} ms CPU")
    print(f"  ratio: {jaxdiag_time[0] / baseline[0]:.2f}x wall, {jaxdiag_time[1] / baseline[1]:.2f}x CPU "
          "(target <= 2x)")


if __name__ == "__main__":
    main()
