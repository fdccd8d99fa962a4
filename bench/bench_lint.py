"""`jaxdiag check` cost per target as the package grows: lint must scale linearly.

Generates packages of 10, 50 and 100 correct targets (half primitives with impl / abstract eval / batching / JVP /
lowering, half custom_jvp functions; 10 per module, no configuration so inputs are inferred) in a temporary
folder and runs `python -m jaxdiag check <package>` on each in a fresh process, as CI does, timing the whole run.
Prints seconds per target (best of `--repeat`) and the marginal cost of one more target between consecutive sizes
(start-up excluded: equal slopes mean linear growth). PASS when the per-target cost at the largest size is no
more than at the smallest.

    python bench/bench_lint.py [--sizes 10 50 100] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

PER_MODULE = 10

PRIMITIVE = '''
def _impl_{i}(x):
    return jnp.sin(x) * {scale}


p{i} = Primitive("bench_{tag}_{i}")
p{i}.def_impl(_impl_{i})
p{i}.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
mlir.register_lowering(p{i}, mlir.lower_fun(_impl_{i}, multiple_results=False))
ad.defjvp(p{i}, lambda g, x: g * jnp.cos(x) * {scale})


def _batch_{i}(args, dims):
    (x,), (d,) = args, dims
    return p{i}.bind(x), d


batching.primitive_batchers[p{i}] = _batch_{i}
'''

CUSTOM_JVP = '''
@jax.custom_jvp
def f{i}(x):
    return jnp.sin(x) * {scale}


@f{i}.defjvp
def _f{i}_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return f{i}(x), jnp.cos(x) * {scale} * t
'''

HEADER = '''import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir
'''


def generate(root: Path, name: str, n: int) -> Path:
    """A package `name` with `n` targets, `PER_MODULE` per module, alternating primitives and custom_jvp."""
    pkg = root / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for start in range(0, n, PER_MODULE):
        parts = [HEADER]
        for i in range(start, min(start + PER_MODULE, n)):
            template = PRIMITIVE if i % 2 == 0 else CUSTOM_JVP
            parts.append(template.format(i=i, tag=name, scale=1.0 + i / 100))
        (pkg / f"ops_{start // PER_MODULE:03d}.py").write_text(textwrap.dedent("\n".join(parts)))
    return pkg


def measure(root: Path, name: str, n: int) -> tuple[float, dict[str, int]]:
    """Wall time of `python -m jaxdiag check <name>` in a fresh process, and the report's summary."""
    generate(root, name, n)
    argv = [sys.executable, "-m", "jaxdiag", "check", name, "--format", "json", "--exit-zero"]
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"jaxdiag check {name} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    report = json.loads(done.stdout)
    checked = sum(1 for t in report["targets"] if t["kind"] != "module")
    assert checked == n, f"found {checked} targets, generated {n}"
    return seconds, report["summary"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--repeat", type=int, default=1, help="runs per size; the fastest counts")
    args = parser.parse_args()
    sizes = args.sizes
    with tempfile.TemporaryDirectory(prefix="jaxdiag-bench-") as folder:
        root = Path(folder)
        per_target, totals = {}, {}
        for n in sizes:
            runs = [measure(root, f"bench_{n}_{r}", n) for r in range(max(args.repeat, 1))]
            seconds, summary = min(runs, key=lambda run: run[0])
            per_target[n], totals[n] = seconds / n, seconds
            print(f"{n:4d} targets: {seconds:7.2f} s total, {per_target[n]:.3f} s/target "
                  f"(findings: {summary['errors']} errors, {summary['warnings']} warnings, {summary['infos']} notes)")
    ordered = sorted(sizes)
    for a, b in zip(ordered, ordered[1:]):
        print(f"marginal cost {a}->{b}: {(totals[b] - totals[a]) / (b - a):.3f} s/target")
    small, large = ordered[0], ordered[-1]
    ok = per_target[large] <= per_target[small]
    print(f"{'PASS' if ok else 'FAIL'}: {per_target[large]:.3f} s/target at {large} vs {per_target[small]:.3f} at "
          f"{small} ({per_target[large] / per_target[small]:.2f}x)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
