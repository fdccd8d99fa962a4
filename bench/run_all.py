"""Reproduce every speed figure docs/speed.md quotes, in one command:

    python bench/run_all.py            # the scripts' default repeats (half an hour on 2 cores)
    python bench/run_all.py --quick    # fewer repeats, for a smoke run

Runs, each in a fresh process with this interpreter (so one benchmark's JAX caches never warm another's):

- `bench/bench_cold.py`           cold, per target, fresh processes (median of 5, jaxdiag's import paid):
                                  `check_grad` vs `jax.test_util.check_grads` and `check_batching` vs a
                                  hand-written vmap-vs-loop test, with jaxdiag's time broken down (import, trace,
                                  lower, compile, the rest, per check)
- `bench/bench_check_samples.py`  `jaxdiag check samples`: `-j 2` vs serial, a cached re-run vs the cold run,
                                  peak memory of all processes
- `bench/bench_batching.py`       warm: full `jaxdiag batching` check vs a hand-written vmap-vs-loop test
- `bench/bench_grad.py`           warm: `jaxdiag.check_grad` vs `jax.test_util.check_grads`, per target
- `bench/bench_lint.py`           `jaxdiag check` on packages of 10, 50, 100 targets (seconds per target: linear?)
- `bench/bench_startup.py`        `jaxdiag --version` vs `python -c "import jax"` (median ratio)
- `bench/bench_sharding.py`        `jaxdiag sharding`: the child process alone, and seconds per target on a 2x4 mesh

Not run here (two steps, by hand): `bench/bench_schedule.py`, the `-j N` schedule's makespan model from one serial
run's per-item seconds (`--record`, then `--model`).

Every figure is a median of several runs, and every ratio compares two things measured side by side in the same run
(each script alternates or interleaves its two sides). jaxdiag's modules are byte-compiled first (as `pip install`
does), so no side pays for compiling Python source. The scripts' own output is printed as it comes, then a summary
block with every ratio side by side. A script that is missing is skipped with a message; one that fails makes the
exit code 1.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass
class Bench:
    script: str
    what: str
    args: list[str]
    quick_args: list[str]
    # (label, regex with one group per value, format of the summary value, target)
    figures: list[tuple[str, str, str, str]] = field(default_factory=list)


BENCHES = [
    Bench("bench_cold.py", "cold per target: check_grad vs check_grads, check_batching vs hand loop",
          ["--runs", "5"], ["--runs", "3"], [
              ("grad vs check_grads (median target)", r"grad cold ratio: median ([\d.]+)x", "{}x", "<= 1.0x"),
              ("grad vs check_grads (worst target)", r"grad cold ratio: median [\d.]+x, worst ([\d.]+)x", "{}x",
               "<= 1.0x"),
              ("batching vs hand loop (median target)", r"batching cold ratio: median ([\d.]+)x", "{}x", "<= 1.0x"),
              ("batching vs hand loop (worst target)", r"batching cold ratio: median [\d.]+x, worst ([\d.]+)x",
               "{}x", "<= 1.0x"),
              ("grad vs check_grads, CPU time (median / worst target)",
               r"grad cold ratio: .*CPU time: median ([\d.]+)x, worst ([\d.]+)x", "{0}x / {1}x", "<= 1.0x"),
              ("batching vs hand loop, CPU time (median / worst target)",
               r"batching cold ratio: .*CPU time: median ([\d.]+)x, worst ([\d.]+)x", "{0}x / {1}x", "<= 1.0x"),
          ]),
    Bench("bench_check_samples.py", "jaxdiag check samples: -j 2, cache, memory", ["--jobs", "2"], ["--jobs", "2"], [
        ("check -j 2 vs serial (wall)", r"parallel ratio: ([\d.]+)x", "{}x", "<= 0.65x"),
        ("cached re-run vs cold (wall)", r"cache ratio: ([\d.]+)x", "{}x", "<= 0.10x"),
        ("peak memory of check (all processes)", r"peak memory: (\d+) MB .* vs serial (\d+) MB",
         "{0} MB (serial: {1} MB)", "< 1.5 GB"),
        ("same report serial / -j 2 / cached", r"same report in every run: (\w+)", "{}", "True"),
    ]),
    Bench("bench_batching.py", "batching check vs hand-written vmap-vs-loop test", ["--repeat", "15"],
          ["--repeat", "5"], [
              ("hand-written vmap-vs-loop (median)", r"hand-written[^:]*:\s*([\d.]+) ms", "{} ms", ""),
              ("jaxdiag batching (median)", r"jaxdiag batching[^:]*:\s*([\d.]+) ms", "{} ms", ""),
              ("batching ratio", r"ratio: ([\d.]+)x", "{}x", "<= 2x"),
          ]),
    Bench("bench_grad.py", "check_grad vs jax.test_util.check_grads", ["--repeat", "15"], ["--repeat", "5"], [
        ("grad ratio (median over targets)", r"median ratio ([\d.]+)", "{}x", ""),
        ("grad ratio (worst target)", r"max ratio ([\d.]+)", "{}x", ""),
    ]),
    Bench("bench_lint.py", "jaxdiag check on 10/50/100 targets", ["--sizes", "10", "50", "100", "--repeat", "1"],
          ["--sizes", "10", "50", "--repeat", "1"], [
              ("lint, smallest package", r"^\s*(\d+) targets:\s*([\d.]+) s total, ([\d.]+) s/target",
               "{0} targets: {1} s ({2} s/target)", ""),
              ("lint, largest package", r"(?s).*^\s*(\d+) targets:\s*([\d.]+) s total, ([\d.]+) s/target",
               "{0} targets: {1} s ({2} s/target)", ""),
              ("lint scaling", r"^(PASS|FAIL): .*\(([\d.]+)x\)", "{0} ({1}x per target, large vs small)",
               "per-target cost not growing"),
          ]),
    Bench("bench_startup.py", "CLI start-up vs import jax", ["--runs", "7"], ["--runs", "3"], [
        ("python -c 'import jax' (median)", r"import jax ([\d.]+)s", "{} s", ""),
        ("jaxdiag --version (median)", r"jaxdiag --version ([\d.]+)s", "{} s", ""),
        ("start-up ratio", r"ratio ([\d.]+)x", "{}x", "close to 1x"),
    ]),
    Bench("bench_sharding.py", "jaxdiag sharding per target (2x4 virtual mesh)", ["--repeat", "3"],
          ["--repeat", "1"], [
              ("sharding child process alone", r"child process alone[^:]*:\s*([\d.]+) s", "{} s", ""),
              ("sharding per target", r"per target: median ([\d.]+) s, max ([\d.]+) s", "median {0} s, max {1} s",
               ""),
          ]),
]


def run(bench: Bench, quick: bool, env: dict[str, str]) -> tuple[str, int | None, float]:
    """(stdout, exit code or None when skipped, seconds). Output is echoed line by line as it arrives."""
    path = HERE / bench.script
    if not path.is_file():
        print(f"SKIPPED: bench/{bench.script} is missing ({bench.what} not measured)\n", flush=True)
        return "", None, 0.0
    argv = [sys.executable, str(path), *(bench.quick_args if quick else bench.args)]
    print(f"$ python bench/{bench.script} {' '.join(argv[2:])}", flush=True)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        print(f"  {line}", end="", flush=True)
    code = proc.wait()
    seconds = time.perf_counter() - start
    print(f"  ({seconds:.0f} s, exit {code})\n", flush=True)
    return "".join(lines), code, seconds


def figures(bench: Bench, output: str) -> list[tuple[str, str, str]]:
    rows = []
    for label, pattern, fmt, target in bench.figures:
        match = re.search(pattern, output, flags=re.M)
        value = fmt.format(*match.groups()) if match else "not found in the output (see above)"
        rows.append((label, value, target))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats and sizes (a smoke run, noisier)")
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="run only these (cold, check_samples, batching, grad, lint, startup, sharding)")
    args = parser.parse_args(argv)

    import jax
    import jaxlib

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(
        os.pathsep))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # An installed jaxdiag is byte-compiled by pip; a checkout may not be (PYTHONDONTWRITEBYTECODE).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "jaxdiag"), str(ROOT / "samples")],
                   env=env, check=False, stdout=subprocess.DEVNULL)
    header = (f"jax {jax.__version__}, jaxlib {jaxlib.__version__}, Python {platform.python_version()}, "
              f"{os.cpu_count()} CPU(s), load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
              + (", --quick" if args.quick else ""))
    print(header + "\n", flush=True)
    chosen = [b for b in BENCHES if not args.only or b.script[len("bench_"):-len(".py")] in args.only]
    results = []
    total_start = time.perf_counter()
    for bench in chosen:
        output, code, seconds = run(bench, args.quick, env)
        results.append((bench, output, code, seconds))
    total = time.perf_counter() - total_start

    print("=" * 100)
    print(f"SUMMARY ({header}; {total:.0f} s in all)")
    failed = False
    for bench, output, code, seconds in results:
        status = "skipped (script missing)" if code is None else "ok" if code == 0 else f"exit {code}"
        failed |= code not in (0, None)
        print(f"- {bench.script}: {bench.what} [{status}, {seconds:.0f} s]")
        if code is None:
            continue
        for label, value, target in figures(bench, output):
            print(f"    {label:38s} {value}" + (f"   (target: {target})" if target else ""))
    print("=" * 100)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
