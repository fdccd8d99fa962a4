"""Cost of `jaxdiag sharding` per target on a 2x4 virtual CPU mesh (8 devices).

Measures, each as a median of several runs:
- the child process alone: start-up, JAX import, 8 CPU devices, one replicated-only target (`f32[3]`: no dimension
  divides the mesh, so one compilation);
- every JXS sample and false-alarm sweep target, all in one child: total seconds, and per target the seconds its
  checks took (compilations of jit on each enumerated input sharding dominate).

    python bench/bench_sharding.py [--repeat 3] [--mesh 2x4]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jaxdiag._mesh import _sharding

TARGETS = [
    ("samples/jxs001_bad.py:fft_real", ["f32[8,16]"]), ("samples/jxs001_good.py:fft_real", ["f32[8,16]"]),
    ("samples/jxs002_bad.py:scale", ["f32[8,16]"]), ("samples/jxs003_bad.py:running_total", ["f32[8,16]"]),
    ("samples/jxs004_bad.py:soft_sign_p", ["f32[4]"]), ("samples/jxs005_bad.py:cumsum_rows", ["f32[8,16]"]),
    ("samples/jxs005_good.py:cumsum_rows", ["f32[8,16]"]), ("samples/jxs006_bad.py:row_norms", ["f32[8,16]"]),
    ("tests/sharding_targets.py:fft_last", ["f32[8,16]"]), ("tests/sharding_targets.py:sort_rows", ["f32[8,16]"]),
    ("tests/sharding_targets.py:matmul", ["f32[8,16]", "f32[16,8]"]),
    ("tests/sharding_targets.py:uses_lower_fun_primitive", ["f32[8,16]"]),
]
BASELINE = ("tests/sharding_targets.py:total", ["f32[3]"])


def timed(entries: list[dict], mesh: tuple[int, ...]) -> tuple[float, object]:
    start = time.perf_counter()
    report = _sharding.run_in_child(entries, mesh)
    return time.perf_counter() - start, report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--mesh", default="2x4")
    args = parser.parse_args()
    mesh = _sharding.parse_mesh(args.mesh)
    os.chdir(ROOT)
    base = [{"ref": BASELINE[0], "args": BASELINE[1]}]
    entries = [{"ref": ref, "args": spec} for ref, spec in TARGETS]
    child, total = [], []
    per_target: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        child.append(timed(base, mesh)[0])
        seconds, report = timed(entries, mesh)
        total.append(seconds)
        sums: dict[str, float] = {}
        for target in report.targets:  # type: ignore[attr-defined]
            root = target.target.split(" > ")[0]
            sums[root] = sums.get(root, 0.0) + sum(c.seconds for c in target.checks)
        for name, value in sums.items():
            per_target.setdefault(name, []).append(value)
    print(f"mesh {args.mesh} ({len(TARGETS)} targets, median of {args.repeat} runs)")
    for name, values in per_target.items():
        print(f"  {name}: {statistics.median(values):.2f} s")
    medians = sorted(statistics.median(v) for v in per_target.values())
    print(f"child process alone (start-up + one trivial target): {statistics.median(child):.2f} s")
    print(f"all {len(TARGETS)} targets in one child: {statistics.median(total):.2f} s")
    print(f"per target: median {statistics.median(medians):.2f} s, max {medians[-1]:.2f} s")


if __name__ == "__main__":
    main()
