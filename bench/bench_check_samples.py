"""`jaxdiag check samples`: serial vs `-j N` workers, a cached re-run vs the cold run, and peak memory.

Runs the CLI in fresh processes from the repository root, as CI would, with `--format json` to a file:

1. serial, in one process: `-j 1 --timeout 0 --no-cache` (today's behaviour before workers existed)
2. `-j N --no-cache` (N = `--jobs`, default 2: this machine's cores)
3. cold with the cache: `-j N` on an empty `.jaxdiag_cache/` (a temporary copy of the cache folder is used, so
   the repository's own cache is untouched)
4. warm: the same command again, nothing changed (every target from the cache)

Each run's wall time, CPU time (user + system of the whole process tree) and peak memory (the largest sum of the
resident memory of the process and its workers, sampled every 50 ms; plus the largest single process) are printed.
The CPU time counts every process the run started: this script is made their subreaper (Linux), so the fork
servers and workers that outlive the CLI's own process are reaped here and their time is counted too.

`check samples` exits 5 (targets not verified) or 1 (findings) when its bad samples do what they are there for; the
run is kept with its exit code, which is compared like the report. A run that exits 2 (bad usage), 3 (jaxdiag's
internal error) or anything else (a signal, 130/143) is a failure of the bench. Runs 2, 3 and 4 must give the same
report and exit code as run 1 (check timings aside); the script exits 1 if not.

    python bench/bench_check_samples.py [--jobs 2] [--repeat 1] [--samples DIR]

`--samples DIR` benches a copy of another folder of samples instead (a dozen files, to iterate quickly).
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


# `jaxdiag check`'s exit codes that are a run's result (docs/cli.md, "Severities and exit codes"): 0 clean,
# 1 findings, 5 a target not verified. 2 (usage), 3 (internal error), 130/143 and signals fail the bench.
RESULT_CODES = (0, 1, 5)


def _become_subreaper() -> bool:
    """Orphaned descendants (the fork servers, whose children are the workers) are re-parented to this process,
    so their CPU time reaches RUSAGE_CHILDREN once `_reap_orphans` waits for them."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _reap_orphans(seconds: float = 30.0) -> None:
    """Wait for the run's leftover processes (they exit once the CLI's process is gone) and reap them."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.02)


def child_env() -> dict[str, str]:
    """The CLI's environment: this checkout's jaxdiag first on the path, byte-compiled once beforehand as `pip
    install` leaves it (with PYTHONDONTWRITEBYTECODE, which this project's machine sets, every process of every run
    would compile jaxdiag's source again: about a second per process, which no installed jaxdiag pays). The
    bytecode goes to a folder of its own (PYTHONPYCACHEPREFIX), never into the repository; the copied samples are
    byte-compiled by the first run, as a user's project is."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "jaxdiag-bench-pycache")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "jaxdiag")], env=env, check=True,
                   capture_output=True)
    return env


def run_check(extra: list[str], out: Path, cwd: Path, env: dict[str, str]) -> dict[str, float]:
    argv = [sys.executable, "-m", "jaxdiag", "check", "samples", "--format", "json", "--output", str(out), *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env)
    memory = TreeMemory(proc.pid)
    memory.start()
    code = proc.wait()
    wall = time.perf_counter() - start
    memory.stopped.set()
    memory.join()
    _reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code not in RESULT_CODES:
        raise SystemExit(f"jaxdiag check {' '.join(extra)} exited {code} (not a result: 0, 1 or 5)")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "peak_total": memory.peak_total, "peak_single": memory.peak_single,
            "processes": memory.most_processes, "code": code}


def without_seconds(path: Path) -> dict:
    """The JSON report with every `seconds` field zeroed (check timings, wherever they are): the only part allowed
    to differ between two runs."""

    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: 0 if k == "seconds" else strip(v) for k, v in value.items()}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    data = strip(json.loads(path.read_text()))
    assert isinstance(data, dict)
    return data


def differences(report: dict, reference: dict) -> list[str]:
    """The targets whose entries differ (by position), for the failure message."""
    out = [f"{key} differs" for key in sorted((set(report) | set(reference)) - {"targets"})
           if report.get(key) != reference.get(key)]
    mine, theirs = report.get("targets", []), reference.get("targets", [])
    if len(mine) != len(theirs):
        out.append(f"{len(mine)} targets vs {len(theirs)}")
    out += [f"target {i}: {a.get('target')} vs {b.get('target')}" for i, (a, b) in enumerate(zip(mine, theirs))
            if a != b]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each kind (medians are reported)")
    parser.add_argument("--samples", type=Path, default=ROOT / "samples", help="the folder checked (copied)")
    opts = parser.parse_args()
    reaper = _become_subreaper()
    env = child_env()
    print(f"jaxdiag check samples: {os.cpu_count()} CPU(s), -j {opts.jobs}, repeat {opts.repeat}, "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
          f"{'' if reaper else ' (CPU time: the CLI process and the children it reaped only)'}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "repo"  # a copy of samples/ + pyproject: the cache goes there, not in the checkout
        work.mkdir()
        shutil.copytree(opts.samples, work / "samples", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(ROOT / "pyproject.toml", work / "pyproject.toml")
        kinds = {
            "serial": ["-j", "1", "--timeout", "0", "--no-cache"],
            "parallel": ["-j", str(opts.jobs), "--no-cache"],
            "cold cache": ["-j", str(opts.jobs)],
            "warm cache": ["-j", str(opts.jobs)],
        }
        runs: dict[str, list[dict[str, float]]] = {k: [] for k in kinds}
        reports: dict[str, dict] = {}
        codes: dict[str, int] = {}
        for _ in range(opts.repeat):
            for kind, extra in kinds.items():  # interleaved: every kind sees the same machine load
                if kind == "cold cache":
                    shutil.rmtree(work / ".jaxdiag_cache", ignore_errors=True)
                out = Path(tmp) / f"{kind.replace(' ', '_')}.json"
                stats = run_check(extra, out, work, env)
                runs[kind].append(stats)
                reports[kind] = without_seconds(out)
                codes[kind] = int(stats["code"])
                print(f"  {kind:10s}: {stats['wall']:6.1f} s wall, {stats['cpu']:6.1f} s CPU, peak memory "
                      f"{stats['peak_total']:6.0f} MB in all ({stats['processes']} processes at most), "
                      f"{stats['peak_single']:5.0f} MB in one process, exit {stats['code']:.0f}", flush=True)
    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in runs.items()}
    diffs = {k: differences(reports[k], reports["serial"]) for k in kinds if k != "serial"}
    diffs = {k: d + ([f"exit {codes[k]} vs {codes['serial']}"] if codes[k] != codes["serial"] else [])
             for k, d in diffs.items()}
    same = not any(diffs.values())
    print(f"targets: {reports['serial']['summary']['targets']}, exit code {codes['serial']}, "
          f"same report in every run: {same}")
    for kind, found in diffs.items():
        for line in found[:10]:
            print(f"  {kind} vs serial: {line}")
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
