"""`jaxdiag check -j N`, `--timeout S` and the result cache: the same report as a serial run, a hanging rule
stopped and reported while the rest completes, and a cache that never returns a stale verdict.

Speed figures live in `bench/run_all.py`; these tests assert behaviour only.
"""

from __future__ import annotations

import json
import platform
import shutil
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

import pytest
from clirun import Runner as CliRunner  # stdout/stderr apart on every click

from jaxdiag._run import _engine
from jaxdiag._jobs import _keys, _memory, _parallel, _schedule
from jaxdiag._loading import _targets
from jaxdiag import _rules as rules
from jaxdiag._checks import ALL_CHECKS
from jaxdiag._checks._base import Check
from jaxdiag._parent._cli import app
from jaxdiag._jobs._lint import check_paths
from jaxdiag._core import _report
from jaxdiag._core._report import CheckResult, Location, Problem, TargetReport

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
HANGING = Path(__file__).resolve().parent / "data" / "hanging_rule.py"
runner = CliRunner()


def without_seconds(report) -> dict:
    """The JSON report with check timings zeroed: the only part allowed to differ between two runs."""
    data = report.to_dict()
    for target in data["targets"]:
        for check in target["checks"]:
            check["seconds"] = 0
    data["modules"] = [t.module for t in report.targets]
    return data


# ---------------------------------------------------------------------------------------------------------------
# Reports cross process boundaries and the cache as dicts
# ---------------------------------------------------------------------------------------------------------------


def test_target_reports_round_trip_through_plain_dicts():
    where = Location("m.py", 3, "f")
    report = TargetReport("m.py:f", "custom_jvp", inputs=["f32[3]"], module="m.py",
                          checks=[CheckResult("jvp", "error", 0.5, "internal error")],
                          findings=[rules.INPUTS_INFERRED.finding(location=where, count=1, specs="f32[3]")],
                          problems=[Problem("internal-error", "boom", where)], config_keys=["m.py:f", "m:f"],
                          anchors=[where])
    data = _report.target_report_to_dict(report)
    assert json.loads(json.dumps(data)) == data  # JSON-safe: the cache stores it as is
    back = _report.target_report_from_dict(json.loads(json.dumps(data)))
    assert back == report and back.anchors == report.anchors and back.config_keys == report.config_keys
    outcome = _parallel.Outcome(reports=[data], unchecked_lines=[("/a.py", 3)])
    assert _parallel.Outcome.from_dict(json.loads(json.dumps(outcome.to_dict()))) == outcome


# ---------------------------------------------------------------------------------------------------------------
# -j N: same report as serial
# ---------------------------------------------------------------------------------------------------------------

# Bad and good samples of each family, a function with nested subjects, and an inline suppression.
MIXED = ["jxb001_bad.py", "jxb004_good.py", "jxg001_bad.py", "jxg010_good.py", "jxr003_bad.py", "jxv001_bad.py",
         "jxb013_bad.py", "jxg014_bad.py", "jxg016_good.py"]


@pytest.mark.slow
def test_jobs_give_the_same_report_as_serial(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in MIXED:
        shutil.copy(SAMPLES / name, tmp_path / name)
    files = list(MIXED)
    serial = check_paths(files)
    parallel = check_paths(files, jobs=2)  # (one worker against two: test_record_carrier, the recorded-call test)
    assert [t.target for t in serial.targets] == [t.target for t in parallel.targets]
    assert without_seconds(parallel) == without_seconds(serial)
    assert {"JXB001", "JXG001", "JXR003"} <= serial.codes()  # a real run, with findings to compare


def _tasks(costs: list[float], groups: str) -> list[_schedule.Task]:
    return [_schedule.Task(i, g, c) for i, (c, g) in enumerate(zip(costs, groups))]


def test_workers_take_the_longest_chunk_first_each_in_order_and_split_the_last_one(monkeypatch):
    """Longest first, so the run does not end on a long task; a chunk (neighbours, which compile the same programs)
    runs in order in one worker; with nothing left to start, a free worker takes the end of the longest chunk."""
    monkeypatch.setattr(_schedule, "CHUNKS_PER_SLOT", 2)
    # modules a (2 s), b (9 s), c (4 s), d (2 s): the cap is 17/4 s, so b is cut inside, a, c and d are not
    tasks = _tasks([1, 1, 3, 3, 3, 1, 3, 1, 1], "aabbbccdd")
    assert [[t.index for t in c] for c in _schedule.chunks(tasks, 2)] == [[0, 1], [2], [3], [4], [5, 6], [7, 8]]
    plan = _schedule.Schedule(tasks, 2)
    # by cost: [5, 6], the three 3 s chunks of b (ties in discovery order), then [0, 1] and [7, 8]
    assert [plan.take(0), plan.take(1), plan.take(1), plan.take(0)] == [5, 2, 3, 6]
    assert [plan.take(0), plan.take(1), plan.take(0), plan.take(0)] == [4, 0, 7, 8]
    assert plan.take(1) == 1 and not plan
    monkeypatch.setattr(_schedule, "CHUNKS_PER_SLOT", 1)
    tail = _schedule.Schedule(_tasks([1, 1, 1, 1], "aaaa"), 1)  # one chunk
    assert tail.take(0) == 0 and tail.take(1) == 3  # the other slot helps from the end of the chunk
    assert [tail.take(0), tail.take(0)] == [1, 2] and not tail


def test_costs_come_from_the_last_run_else_from_the_kind():
    assert _schedule.estimate("m:f", "function", {"m:f": 7.5}) == 7.5
    assert _schedule.estimate("m:g", "custom_vmap", {"m:f": 7.5}) == _schedule.STATIC_SECONDS["custom_vmap"]
    assert _schedule.estimate("m:g", "a kind of its own", {}) == _schedule.DEFAULT_SECONDS
    # with its last time known, the long target goes first although its kind looks cheap
    plan = _schedule.Schedule([_schedule.Task(0, "a", 1.0), _schedule.Task(1, "b", 30.0)], 2)
    assert plan.take(0) == 1


def test_a_worker_clears_jax_caches_past_the_bound_not_after_every_target(monkeypatch):
    """Clearing rarely returns memory to the system: a process left above the bound must not clear (and compile
    everything again) after every target, which made one worker 1.2x slower than the serial run."""
    rss = iter([300.0,                      # at the start: the bound is WORKER_MEMORY_MB (400)
                420.0, 380.0,               # above -> cleared, 380 left -> the bound is 480
                450.0,                      # below the new bound: kept
                500.0, 390.0])              # above -> cleared
    clears: list[int] = []
    monkeypatch.setattr(_memory, "WORKER_MEMORY_MB", 400)
    monkeypatch.setattr(_memory, "rss_mb", lambda: next(rss))
    monkeypatch.setattr(_memory, "release_memory", lambda: clears.append(1))
    bound = _memory.MemoryBound()
    assert [bound.after_target()[1] for _ in range(3)] == [True, False, True]
    assert len(clears) == 2 and bound.limit == 490.0


def test_a_worker_is_replaced_only_when_clearing_left_it_above_the_retire_bound(monkeypatch):
    """A fresh worker costs an import of JAX and the user's modules: replace one only when clearing was tried, never
    at its first clearing (what a package imports lazily comes back in every new worker: a 1 GB package was
    re-imported for every target), and only for growth over what that first clearing left."""

    pool = _parallel._Pool(None, _parallel.RunSettings(jobs=2))  # type: ignore[arg-type]
    replaced: list[bool] = []
    monkeypatch.setattr(pool, "_replace", lambda w, workers, queue, killed: replaced.append(killed))
    monkeypatch.setitem(_parallel.LAST_RUN, "cache_clears", 0)
    high = _memory.WORKER_RETIRE_MB + 50.0
    growth = _memory.WORKER_RETIRE_MB - _memory.WORKER_MEMORY_MB
    big = 1000.0  # what a large package's worker keeps after clearing
    for cleared, after, floor, expected in ((False, high, 300.0, []), (True, high, 300.0, [False]),
                                            (True, 300.0, 300.0, []), (True, high, None, []),
                                            (True, big + 50.0, big, []), (True, big + growth + 50.0, big, [False])):
        replaced.clear()
        message = ("done", 0, _parallel.Outcome().to_dict(), high, after, cleared, 0.5)
        worker = SimpleNamespace(conn=SimpleNamespace(recv=lambda message=message: message), task=0, slot=0,
                                 task_started=0.0, floor_mb=floor)
        queue = _schedule.Schedule([_schedule.Task(1, "m", 1.0)], 2)
        [(index, _)] = list(pool._receive(worker, [worker], None, [SimpleNamespace(label="m:f")], queue))  # type: ignore[arg-type]
        assert index == 0 and worker.task is None and replaced == expected, (after, floor)


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="malloc_trim is glibc's")
def test_clearing_gives_freed_memory_back_to_the_system():
    """glibc keeps freed heap memory: without malloc_trim a worker stays as large after clearing JAX's caches."""
    import ctypes

    buffers = [ctypes.create_string_buffer(8192) for _ in range(25_000)]  # about 200 MB of small heap blocks
    kept = buffers[::50]  # a few stay alive, so the heap cannot simply shrink from its top
    before = _memory.rss_mb()
    del buffers
    _memory.return_freed_memory()
    assert _memory.rss_mb() < before - 100 and len(kept) == 500


# ---------------------------------------------------------------------------------------------------------------
# --timeout: a hanging rule is stopped and reported, the others are checked
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_hanging_rule_is_stopped_and_reported_and_the_run_completes(tmp_path, monkeypatch, jobs):
    monkeypatch.chdir(tmp_path)
    shutil.copy(HANGING, tmp_path / "hanging_rule.py")
    shutil.copy(SAMPLES / "jxg001_bad.py", tmp_path / "jxg001_bad.py")
    # generous: the other targets must finish within it on a loaded machine
    report = check_paths(["hanging_rule.py", "jxg001_bad.py"], jobs=jobs, timeout=12)
    by_target = {t.target: t for t in report.targets}
    spins = by_target["hanging_rule.py:spins"]
    [note] = [f for f in spins.findings if f.code == rules.USER_CODE_TIMED_OUT.code]
    assert note.severity == rules.USER_CODE_TIMED_OUT.severity == "error"
    assert spins.unverified == "timed-out" and report.exit_code == 5
    [stopped] = spins.checks
    assert stopped.status == "skipped" and stopped.seconds >= 12
    assert stopped.name in {c.name for c in ALL_CHECKS}  # the check that was running, reported by the worker
    assert f"check `{stopped.name}` on hanging_rule.py:spins" in note.message
    line = HANGING.read_text().splitlines().index("def spins(x):") + 1
    assert note.location == Location("hanging_rule.py", line, "spins")
    # the target after it in the same module, and the next module, were checked normally
    assert all(c.status in ("passed", "failed", "skipped") for c in by_target["hanging_rule.py:fine"].checks)
    assert not problems(report, "hanging_rule.py:fine") and by_target["hanging_rule.py:fine"].checks
    assert any(f.code == "JXG001" for t in report.targets if t.target.startswith("jxg001_bad.py:") for f in t.findings)
    assert not report.internal_errors


def test_bad_jobs_and_timeout_values_are_usage_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for argv, expected in ((["-j", "0"], "--jobs must be at least 1"), (["--timeout", "-1"], "--timeout must be")):
        result = runner.invoke(app, ["check", "nothing.py", *argv])
        assert result.exit_code == 2 and f"jaxdiag: error: {expected}" in result.output, result.output
    (tmp_path / "pyproject.toml").write_text("[tool.jaxdiag]\ntimeout = 'long'\n")
    result = runner.invoke(app, ["check", "nothing.py"])
    assert result.exit_code == 2 and "timeout must be a number of seconds" in result.output


# Two rules made in factories, reached only through recorded calls that no discovered target claims: `looping`'s JVP
# rule never returns. Written as `jaxdiag record` writes it for `looping_sum(x)` and `smooth_sum(x)` on f32[3].
SLOWREC = Path(__file__).resolve().parent / "data" / "slowrec"


def _recorded_call(name: str, line: int) -> dict:
    return {"target": f"slowrec.ops:make_{name}.<locals>.{name}", "kind": "custom_jvp", "name": name,
            "defined_at": f"src/slowrec/ops.py:{line}", "reachable": False, "replayable": True, "args": ["f32[3]"],
            "params": {}, "ranges": [{"min": 0.1, "max": 1.0}],
            "via": {"target": f"slowrec.ops:{name}_sum", "args": ["f32[3]"], "ranges": [{"min": 0.1, "max": 1.0}]},
            "count": 1}


@pytest.fixture
def slow_recording(tmp_path, monkeypatch) -> Iterator[Path]:
    shutil.copytree(SLOWREC, tmp_path / "src" / "slowrec", ignore=shutil.ignore_patterns("__pycache__"))
    lines = (SLOWREC / "ops.py").read_text().splitlines()
    calls = [_recorded_call(name, lines.index(f"    def {name}(x):") + 1) for name in ("looping", "smooth")]
    (tmp_path / ".jaxdiag").mkdir()
    (tmp_path / ".jaxdiag" / "calls.json").write_text(json.dumps({"schema": 1, "calls": calls}, indent=2))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    yield tmp_path
    forget_modules(tmp_path)


def without_elapsed(report) -> dict:
    """`without_seconds`, and the seconds a stopped target ran (the time limit's own figure stays)."""
    import re

    data = without_seconds(report)
    for target in data["targets"]:
        for finding in target["findings"]:
            finding["message"] = re.sub(r"stopped after [0-9.]+ s", "stopped after N s", finding["message"])
    return data


@pytest.mark.slow
def test_a_recorded_call_past_the_time_limit_is_stopped_and_reported_and_the_next_one_checked(slow_recording):
    """Recorded calls no target claims are work items like targets: the per-target limit stops one whose check
    never returns, the run reports it (JXU004, exit 5) and checks the next recorded call, and `-j 1` and `-j 2`
    give the same report, in the same order."""
    reports = {jobs: check_paths(["slowrec"], app_dir=str(slow_recording), jobs=jobs, timeout=15) for jobs in (1, 2)}
    report = reports[1]
    by_target = {t.target: t for t in report.targets}
    looping = by_target["slowrec.ops:make_looping.<locals>.looping"]
    [note] = [f for f in looping.findings if f.code == rules.USER_CODE_TIMED_OUT.code]
    assert note.severity == "error" and looping.unverified == "timed-out" and report.exit_code == 5
    assert "past the per-target limit of 15 s" in note.message
    line = (SLOWREC / "ops.py").read_text().splitlines().index("    def looping(x):") + 1
    assert note.location == Location("src/slowrec/ops.py", line, "make_looping.<locals>.looping")  # `defined_at`
    assert [t.target for t in report.targets] == [  # the smooth one is checked after it, in its carrier
        "slowrec.ops:make_looping.<locals>.looping", "slowrec.ops:make_smooth.<locals>.smooth (inside "
        "slowrec.ops:smooth_sum)"]
    [stopped] = looping.checks
    assert stopped.status == "skipped" and stopped.seconds >= 15
    smooth = by_target["slowrec.ops:make_smooth.<locals>.smooth (inside slowrec.ops:smooth_sum)"]
    assert any(c.status == "passed" for c in smooth.checks) and not smooth.unverified
    assert not [f for f in smooth.findings if f.severity != "info"] and not report.internal_errors
    assert without_elapsed(reports[2]) == without_elapsed(report)


# ---------------------------------------------------------------------------------------------------------------
# The cache: hits when nothing changed, re-checks exactly what a change can affect
# ---------------------------------------------------------------------------------------------------------------

HELPERS = '''
import jax.numpy as jnp


def cosine(x):
    return jnp.cos(x)
'''

USES_HELPER = '''
import jax
import jax.numpy as jnp

from helpers import cosine


@jax.custom_jvp
def wave(x):
    return jnp.sin(x)


@wave.defjvp
def wave_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return wave(x), cosine(x) * t
'''

STANDALONE = '''
import jax
import jax.numpy as jnp


@jax.custom_jvp
def cube(x):
    return x ** 3


@cube.defjvp
def cube_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return cube(x), 3 * x ** 2 * t
'''


@pytest.fixture()
def project(tmp_path, monkeypatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.jaxdiag]\n")
    (tmp_path / "helpers.py").write_text(textwrap.dedent(HELPERS))
    (tmp_path / "uses_helper.py").write_text(textwrap.dedent(USES_HELPER))
    (tmp_path / "standalone.py").write_text(textwrap.dedent(STANDALONE))
    for name in ("helpers", "uses_helper", "standalone"):  # another test's project of the same module names
        sys.modules.pop(name, None)
    yield tmp_path
    forget_modules(tmp_path)


@pytest.fixture()
def engine_calls(monkeypatch) -> list[str]:
    """The targets the engine actually checked (a cache hit never reaches the engine)."""
    calls: list[str] = []
    real = _engine.run_unfiltered

    def counting(target, *args, **kwargs):
        calls.append(target.ref)
        return real(target, *args, **kwargs)

    monkeypatch.setattr(_engine, "run_unfiltered", counting)
    return calls


FILES = ["uses_helper.py", "standalone.py"]


def problems(report, target: str) -> list[str]:
    """Codes of the errors and warnings reported for one target (a wrong JVP is one of them)."""
    return [f.code for t in report.targets if t.target == target for f in t.findings if f.severity != "info"]


def forget_modules(folder: Path) -> None:
    """What a new `jaxdiag check` process starts with: none of the project's modules imported yet."""
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None) or ""
        if where and Path(where).resolve().is_relative_to(folder.resolve()):
            del sys.modules[name]
    for path in [p for p in _targets._FILE_MODULES if Path(p).is_relative_to(folder.resolve())]:
        del _targets._FILE_MODULES[path]


@pytest.mark.slow
def test_cache_hit_gives_the_same_report_without_checking_again(project, engine_calls):
    cold = check_paths(FILES, cache=True)
    assert engine_calls == ["uses_helper.py:wave", "standalone.py:cube"]
    assert (project / ".jaxdiag_cache" / ".gitignore").read_text().splitlines()[-1] == "*"
    engine_calls.clear()
    warm = check_paths(FILES, cache=True)
    assert engine_calls == []
    assert without_seconds(warm) == without_seconds(cold)
    assert [c.seconds for t in warm.targets for c in t.checks] == [c.seconds for t in cold.targets for c in t.checks]
    check_paths(FILES, cache=False)
    assert engine_calls == ["uses_helper.py:wave", "standalone.py:cube"]  # --no-cache checks everything


@pytest.mark.slow  # > 1 s; the fast tier keeps a cheaper test of the same feature
def test_editing_a_file_rechecks_only_the_targets_that_depend_on_it(project, engine_calls):
    check_paths(FILES, cache=True)
    engine_calls.clear()
    standalone = project / "standalone.py"
    standalone.write_text(standalone.read_text().replace("3 * x ** 2 * t", "2 * x ** 2 * t"))  # now wrong
    forget_modules(project)
    edited = check_paths(FILES, cache=True)
    assert engine_calls == ["standalone.py:cube"]
    assert problems(edited, "standalone.py:cube")  # the new verdict, not the cached one
    engine_calls.clear()
    # a helper imported by one module: only that module's target depends on it
    helpers = project / "helpers.py"
    helpers.write_text(helpers.read_text().replace("jnp.cos(x)", "-jnp.cos(x)"))
    forget_modules(project)
    changed = check_paths(FILES, cache=True)
    assert engine_calls == ["uses_helper.py:wave"]
    assert problems(changed, "uses_helper.py:wave")
    assert problems(changed, "standalone.py:cube") == problems(edited, "standalone.py:cube")  # from the cache


@pytest.mark.slow
def test_a_module_edited_after_this_process_imported_it_is_never_cached(project, engine_calls):
    check_paths(FILES, cache=True)
    standalone = project / "standalone.py"
    standalone.write_text(standalone.read_text().replace("3 * x ** 2 * t", "2 * x ** 2 * t"))
    engine_calls.clear()
    # a file loaded by path is loaded again once its content changed: the new code is checked, never the cached
    # verdict of the old one
    edited = check_paths(FILES, cache=True)
    assert engine_calls == ["standalone.py:cube"] and problems(edited, "standalone.py:cube")
    forget_modules(project)
    fresh = check_paths(FILES, cache=True)
    assert problems(fresh, "standalone.py:cube")


@pytest.mark.slow  # > 1 s; the fast tier keeps a cheaper test of the same feature
def test_changing_the_seed_or_configuration_rechecks_and_filters_apply_to_cached_results(project, engine_calls):
    check_paths(FILES, cache=True)
    both = ["uses_helper.py:wave", "standalone.py:cube"]
    engine_calls.clear()
    check_paths(FILES, cache=True, seed=1)
    assert engine_calls == both
    # results are cached unfiltered and the report is filtered afterwards: no re-check, the same filtered report
    for change in ({"select": ["JXG"]}, {"ignore": ["JXN"]}):
        engine_calls.clear()
        cached = check_paths(FILES, cache=True, **change)
        assert engine_calls == [], change
        assert without_seconds(cached) == without_seconds(check_paths(FILES, **change)), change
    engine_calls.clear()
    (project / "pyproject.toml").write_text('[tool.jaxdiag.targets."standalone.py:cube"]\nargs = ["f32[5]"]\n')
    report = check_paths(FILES, cache=True)
    assert engine_calls == both  # inputs and ignores live in the configuration
    assert next(t for t in report.targets if t.target == "standalone.py:cube").inputs == ["f32[5]"]


def test_incomplete_runs_are_not_cached(project, engine_calls, monkeypatch):
    def broken(ctx):
        raise RuntimeError("jaxdiag's own bug")
        yield

    monkeypatch.setattr(_engine, "ALL_CHECKS", [Check("broken", "grad", frozenset({"custom_jvp"}), broken)])
    first = check_paths(["standalone.py"], cache=True)
    assert first.internal_errors
    engine_calls.clear()
    check_paths(["standalone.py"], cache=True)
    assert engine_calls == ["standalone.py:cube"]


# A rule made in a factory: only the traced-reach phase finds and checks it (through `apply_cube`).
FACTORY = '''
import jax


def make_cube():
    @jax.custom_jvp
    def cube(x):
        return x ** 3

    @cube.defjvp
    def cube_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return cube(x), 2 * x ** 2 * t

    return cube


def apply_cube(x):
    return make_cube()(x)
'''


@pytest.mark.slow  # worker processes
def test_a_worker_runs_the_traced_reach_phase_alongside_the_targets_with_the_same_report(tmp_path, monkeypatch):
    """With no recorded call left to check, the traced-reach phase needs no target's result: a worker starts with
    it instead of this process running it after the pool stopped, and the report is the serial one."""
    from jaxdiag._jobs import _traced_reach

    monkeypatch.chdir(tmp_path)
    (tmp_path / "factory.py").write_text(FACTORY)
    shutil.copy(SAMPLES / "jxg001_bad.py", tmp_path / "jxg001_bad.py")
    files = ["factory.py", "jxg001_bad.py"]
    serial = check_paths(files)
    calls = []
    real = _traced_reach.check_by_tracing
    monkeypatch.setattr(_traced_reach, "check_by_tracing", lambda *a, **k: calls.append(1) or real(*a, **k))
    parallel = check_paths(files, jobs=2)
    assert not calls  # run in a worker (forked from the fork server, which this patch does not reach)
    assert any("made in a function" in t.target for t in serial.targets)
    assert without_seconds(parallel) == without_seconds(serial)


def test_the_traced_reach_phase_is_scheduled_by_its_cost():
    """It is among the longest tasks of a run (no locality: its own chunk), so it starts early."""
    founds = [SimpleNamespace(label=f"m{i}:f", kind="custom_vmap", walked=SimpleNamespace(label=f"m{i}"))
              for i in range(4)]
    phase = _keys.TracedPhase(founds)  # type: ignore[arg-type]
    plan = _parallel.schedule([*founds, phase], [0, 1, 2, 3, 4], 2, {})  # type: ignore[list-item]
    assert plan.take(0) == 4 and plan.take(1) == 0
    known = {_keys.TRACED_LABEL: 0.01, "m3:f": 5.0}  # last time: the phase was quick, m3 was not
    plan = _parallel.schedule([*founds, phase], [0, 1, 2, 3, 4], 2, known)  # type: ignore[list-item]
    assert plan.take(0) == 3


WORKER_SERVER_SCRIPT = """
import json, os, sys
import multiprocessing as mp
from jaxdiag._jobs import _worker_server

def report(conn):
    conn.send([os.getppid(), "jaxdiag._jobs._preload" in sys.modules])

if __name__ == "__main__":
    before = set(sys.modules)
    assert _worker_server.start(["jaxdiag._jobs._preload"])
    ctx = mp.get_context("forkserver")
    receive, send = ctx.Pipe(duplex=False)
    worker = ctx.Process(target=report, args=(send,))
    worker.start()
    print(json.dumps([os.getpid(), _worker_server.started_pid, receive.recv()]), flush=True)
    worker.join()
    os._exit(0)  # as the supervised child ends
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_are_forked_from_a_fork_of_the_child_not_a_new_interpreter_and_it_ends_with_it(tmp_path):
    """The workers' fork server is this process forked before any user code (no second import of JAX): a worker's
    parent is that fork, a child of this process, and it arrives with jaxdiag imported. The server exits when its
    owner does."""
    import os
    import subprocess
    import time

    script = tmp_path / "server.py"
    script.write_text(WORKER_SERVER_SCRIPT)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])})
    assert out.returncode == 0, out.stderr
    owner, server, (worker_parent, preloaded) = json.loads(out.stdout)
    assert server is not None and worker_parent == server and preloaded
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{server}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            break
        if state in ("Z", "X"):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the workers' fork server {server} outlived its owner {owner}")


# ---------------------------------------------------------------------------------------------------------------
# The run's workers: started before the walk on a cold run, handed from one batch of work to the next
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_cold_run_starts_a_worker_before_the_walk_and_no_more_than_jobs(tmp_path, monkeypatch):
    """The first worker's import of the user's package overlaps the parent's walk, the second starts after it; the
    traced-reach phase and the targets share them. The report is the serial one."""
    from jaxdiag._jobs import _discovery, _workers

    monkeypatch.chdir(tmp_path)
    # a name of its own: a module `factory` another test imported into this process is loaded under another name
    (tmp_path / "cold_factory.py").write_text(FACTORY)
    shutil.copy(SAMPLES / "jxg001_bad.py", tmp_path / "jxg001_bad.py")
    files = ["cold_factory.py", "jxg001_bad.py"]
    serial = check_paths(files)
    started: list[float] = []
    walks: list[int] = []
    real_init, real_walk = _workers.Worker.__init__, _discovery.Discovery.walk
    monkeypatch.setattr(_workers.Worker, "__init__", lambda self, *a: started.append(1) or real_init(self, *a))
    monkeypatch.setattr(_discovery.Discovery, "walk", lambda self, *a, **k: walks.append(len(started))
                        or real_walk(self, *a, **k))
    parallel = check_paths(files, jobs=2)
    assert walks == [1] and len(started) == 2  # one before the walk, one after, none for the traced-reach phase
    assert without_seconds(parallel) == without_seconds(serial)


def test_a_run_the_result_cache_may_answer_starts_workers_only_for_work_left(tmp_path):
    from jaxdiag._jobs import _cache

    assert not _cache.holds_results(True, str(tmp_path / "pyproject.toml"))  # nothing stored yet: cold
    (tmp_path / _cache.CACHE_DIR_NAME / f"v{_cache.CACHE_FORMAT}").mkdir(parents=True)
    assert _cache.holds_results(True, str(tmp_path / "pyproject.toml"))
    assert not _cache.holds_results(False, str(tmp_path / "pyproject.toml"))  # --no-cache: cold


class _FakeWorker:
    def __init__(self, alive: bool = True, task: int | None = None, ready: bool = True) -> None:
        self.proc = SimpleNamespace(is_alive=lambda: alive)
        self.task, self.ready, self.slot, self.ended = task, ready, 0, ""

    def stop(self) -> None:
        self.ended = "stopped"

    def kill(self) -> None:
        self.ended = "killed"


def test_standby_hands_an_idle_worker_to_the_next_batch_and_ends_the_others():
    from jaxdiag._jobs._workers import Standby

    standby = Standby()
    idle, busy, dead, starting = _FakeWorker(), _FakeWorker(task=3), _FakeWorker(alive=False), _FakeWorker(ready=False)
    for worker in (idle, busy, dead):
        standby.give_back(worker)  # type: ignore[arg-type]
    assert standby.idle == [idle] and busy.ended == "killed" and dead.ended == "stopped"
    assert standby.take(None, slot=1) is idle and idle.slot == 1  # type: ignore[arg-type]
    standby.idle = [idle, starting]  # type: ignore[list-item]
    standby.close()
    assert idle.ended == "stopped" and starting.ended == "killed" and not standby.idle
