"""`jaxdiag check samples`: serial vs `-j N` workers, a cached re-run vs the cold run, and peak memory.

Runs the CLI in fresh processes from the repository root, as CI would, with `--format json` to a file:

1. serial, in one process: `-j 1 --timeout 0 --no-cache` (today's behaviour before workers existed)
2. `-j N --no-cache` (N = `--jobs`, default 2: this machine's cores)
3. cold with the cache: `-j N` on an empty `.jaxdiag_cache/` (a temporary copy of the cache folder is used, so
   the repository's own cache is untouched)
4. warm: the same command again, nothing changed (every target from the cache)

Each run's wall time, CPU time (user + system of the whole process tree) and peak memory (the largest sum of the
resident memory of the process and its workers, sampled every 50 ms; plus the largest single process) are printed.
Runs 1, 2 and 4 must give the same report as run 1 (check timings aside); the script exits 1 if not.

    python bench/bench_check_samples.py [--jobs 2] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                out.extend(int(c) for c in handle.read().split())
    except OSError:
        pass
    return out


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class TreeMemory(threading.Thread):
    """Samples the resident memory of a process and all its descendants until stopped."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_total = 0.0
        self.peak_single = 0.0
        self.most_processes = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            pids, todo = [], [self.pid]
            while todo:
                pid = todo.pop()
                pids.append(pid)
                todo.extend(_children(pid))
            sizes = [_rss_mb(p) for p in pids]
            self.peak_total = max(self.peak_total, sum(sizes))
            self.peak_single = max(self.peak_single, max(sizes, default=0.0))
            self.most_processes = max(self.most_processes, sum(1 for s in sizes if s > 0))
            self.stopped.wait(0.05)


def run_check(extra: list[str], out: Path, cwd: Path) -> dict[str, float]:
    argv = [sys.executable, "-m", "jaxdiag", "check", "samples", "--format", "json", "--output", str(out),
            "--exit-zero", *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd)
    memory = TreeMemory(proc.pid)
    memory.start()
    code = proc.wait()
    wall = time.perf_counter() - start
    memory.stopped.set()
    memory.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        raise SystemExit(f"jaxdiag check {' '.join(extra)} exited {code}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "peak_total": memory.peak_total, "peak_single": memory.peak_single,
            "processes": memory.most_processes}


def without_seconds(path: Path) -> dict:
    data = json.loads(path.read_text())
    for target in data["targets"]:
        for check in target["checks"]:
            check["seconds"] = 0
    return data


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each kind (medians are reported)")
    opts = parser.parse_args()
    print(f"jaxdiag check samples: {os.cpu_count()} CPU(s), -j {opts.jobs}, repeat {opts.repeat}, "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "repo"  # a copy of samples/ + pyproject: the cache goes there, not in the checkout
        work.mkdir()
        shutil.copytree(ROOT / "samples", work / "samples", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(ROOT / "pyproject.toml", work / "pyproject.toml")
        kinds = {
            "serial": ["-j", "1", "--timeout", "0", "--no-cache"],
            "parallel": ["-j", str(opts.jobs), "--no-cache"],
            "cold cache": ["-j", str(opts.jobs)],
            "warm cache": ["-j", str(opts.jobs)],
        }
        runs: dict[str, list[dict[str, float]]] = {k: [] for k in kinds}
        reports: dict[str, dict] = {}
        for _ in range(opts.repeat):
            for kind, extra in kinds.items():  # interleaved: every kind sees the same machine load
                if kind == "cold cache":
                    shutil.rmtree(work / ".jaxdiag_cache", ignore_errors=True)
                out = Path(tmp) / f"{kind.replace(' ', '_')}.json"
                stats = run_check(extra, out, work)
                runs[kind].append(stats)
                reports[kind] = without_seconds(out)
                print(f"  {kind:10s}: {stats['wall']:6.1f} s wall, {stats['cpu']:6.1f} s CPU, peak memory "
                      f"{stats['peak_total']:6.0f} MB in all ({stats['processes']} processes at most), "
                      f"{stats['peak_single']:5.0f} MB in one process", flush=True)
    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in runs.items()}
    same = all(reports[k] == reports["serial"] for k in kinds)
    print(f"targets: {reports['serial']['summary']['targets']}, same report in every run: {same}")
    print(f"parallel ratio: {med['parallel']['wall'] / med['serial']['wall']:.2f}x "
          f"(-j {opts.jobs} {med['parallel']['wall']:.1f} s vs serial {med['serial']['wall']:.1f} s wall; "
          f"CPU {med['parallel']['cpu'] / med['serial']['cpu']:.2f}x)")
    print(f"cache ratio: {med['warm cache']['wall'] / med['cold cache']['wall']:.2f}x "
          f"(re-run {med['warm cache']['wall']:.1f} s vs cold {med['cold cache']['wall']:.1f} s wall)")
    print(f"peak memory: {med['parallel']['peak_total']:.0f} MB (-j {opts.jobs}, all processes; largest process "
          f"{med['parallel']['peak_single']:.0f} MB) vs serial {med['serial']['peak_total']:.0f} MB")
    if not same:
        raise SystemExit("FAIL: the runs gave different reports")


if __name__ == "__main__":
    main()
