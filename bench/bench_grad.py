"""Benchmark: full first-order `jaxdiag.check_grad` vs `jax.test_util.check_grads(f, args, order=1, modes=...)`.

Both run in this one process on the same targets and the same concrete inputs; modes are ("fwd", "rev") except
for custom_vjp targets, which JAX cannot differentiate in forward mode (("rev",)). Each target is run once cold
(first call: JAX compiles every op, jaxdiag also compiles its jit/vmap composition check once per target) and
then REPEAT times, interleaved; the table shows cold times and warm medians, and the ratio of the medians.

    python bench/bench_grad.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import jax.scipy.special as sp
import numpy as np
from jax.test_util import check_grads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import jaxdiag  # noqa: E402
from jaxdiag._loading._inputs import draw, parse_spec  # noqa: E402
from jaxdiag._loading._targets import load_target  # noqa: E402


def _target(ref: str) -> Any:
    return load_target(ref, ROOT).obj


def targets() -> list[tuple[str, Any, list[str], tuple[str, ...]]]:
    """(name, object, specs, check_grads modes)."""
    return [
        ("seed custom_vjp (fixed)", _target("samples/seed_vjp_fixed.py:test_func"), ["f32[3]", "f32[3]"], ("rev",)),
        ("seed custom_jvp", _target("samples/seed_jvp.py:test_func"), ["f32[3]", "f32[3]"], ("fwd", "rev")),
        ("custom_vjp clipped_sin", _target("samples/jxg014_good.py:clipped_sin"), ["f32[8]"], ("rev",)),
        ("custom_vjp matvec", _target("samples/jxg018_good.py:matvec"), ["f32[4,8]", "f32[8]"], ("rev",)),
        ("primitive my_cos", _target("samples/jxg001_good.py:my_cos_p"), ["f32[8]"], ("fwd", "rev")),
        ("primitive mymul", _target("samples/jxg005_good.py:mymul_p"), ["f32[8]", "f32[8]"], ("fwd", "rev")),
        ("jax.nn.relu", jax.nn.relu, ["f32[8]"], ("fwd", "rev")),
        ("jax.scipy.special.xlogy", sp.xlogy, ["f32[8]@positive", "f32[8]@positive"], ("fwd", "rev")),
        ("jax.nn.softmax", jax.nn.softmax, ["f32[4,8]"], ("fwd", "rev")),
        ("jax.nn.softplus", jax.nn.softplus, ["f32[8]"], ("fwd", "rev")),
        ("jnp.linalg.norm", jnp.linalg.norm, ["f32[8]"], ("fwd", "rev")),
    ]


def _callable(obj: Any) -> Callable:
    if isinstance(obj, jax.extend.core.Primitive):
        return lambda *a: obj.bind(*a)
    return obj


def _time(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    opts = parser.parse_args()
    print(f"jax {jax.__version__}, jaxdiag {jaxdiag.__version__}, {os.cpu_count()} CPU(s), repeat {opts.repeat}")
    header = f"{'target':26s} {'cold jaxdiag':>12s} {'cold check_grads':>16s} {'jaxdiag ms':>10s} " \
             f"{'check_grads ms':>14s} {'ratio':>6s}"
    print(header)
    ratios = []
    for name, obj, specs, modes in targets():
        rng = np.random.default_rng(0)
        parsed = [parse_spec(s) for s in specs]
        args = [draw(s, rng, s.domain or "normal") for s in parsed]
        f = _callable(obj)

        def ours() -> None:
            report = jaxdiag.check_grad(obj, *args)
            assert report.ok, [x.message for x in report.findings if x.severity != "info"]

        def theirs() -> None:
            check_grads(f, tuple(jnp.asarray(a) for a in args), order=1, modes=modes)

        cold_ours, cold_theirs = _time(ours), _time(theirs)
        t_ours, t_theirs = [], []
        for _ in range(opts.repeat):  # interleaved, so that both see the same machine load
            t_ours.append(_time(ours))
            t_theirs.append(_time(theirs))
        m_ours, m_theirs = statistics.median(t_ours), statistics.median(t_theirs)
        ratios.append(m_ours / m_theirs)
        print(f"{name:26s} {cold_ours * 1e3:10.0f}ms {cold_theirs * 1e3:14.0f}ms {m_ours * 1e3:10.2f} "
              f"{m_theirs * 1e3:14.2f} {m_ours / m_theirs:6.2f}")
    print(f"median ratio {statistics.median(ratios):.2f}, max ratio {max(ratios):.2f}")


if __name__ == "__main__":
    main()
