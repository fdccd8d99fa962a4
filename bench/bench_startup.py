"""CLI start-up versus `python -c "import jax"`: jaxdiag's floor is JAX's own import.

Runs both side by side, alternating, several times, and prints medians and the ratio.
    python bench/bench_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> dict[str, float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    jax_import, cli = [], []
    for _ in range(runs):
        jax_import.append(timed([sys.executable, "-c", "import jax"]))
        cli.append(timed([sys.executable, "-m", "jaxdiag", "--version"]))
    result = {"import_jax_s": statistics.median(jax_import), "jaxdiag_version_s": statistics.median(cli)}
    result["ratio"] = result["jaxdiag_version_s"] / result["import_jax_s"]
    print(f"startup: import jax {result['import_jax_s']:.3f}s, jaxdiag --version {result['jaxdiag_version_s']:.3f}s "
          f"(median of {runs}), ratio {result['ratio']:.2f}x")
    return result


if __name__ == "__main__":
    main()
