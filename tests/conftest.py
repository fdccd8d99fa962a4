"""Settings for every test: a pinned terminal, the two tiers, and the compiled FFI sample kernels.

Tiers: `python -m pytest` runs the fast tier (tests marked `slow` are deselected); `python -m pytest -m slow` runs
only the slow tier, and `JAXDIAG_SLOW=1 python -m pytest` (or any `-m` expression, or a test named by its node id)
runs everything selected. `.ci/run` runs both tiers.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import shutil
import sys
import tempfile
from pathlib import Path
from collections.abc import Iterator
from typing import Any

import pytest

# Pin the terminal before rich or typer look at it: reports wrap at one known width and carry no colour, whatever
# the developer's terminal or the CI runner sets (COLUMNS=100, FORCE_COLOR, ...).
os.environ["COLUMNS"] = "80"
os.environ["NO_COLOR"] = "1"
for _name in ("FORCE_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JAXDIAG_DEBUG"):
    os.environ.pop(_name, None)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # helpers (ffi_build, markers, clirun) import by name

# The test processes collect cyclic garbage less often: collecting the test modules (pytest rewrites their asserts)
# and tracing JAX programs allocate millions of short-lived objects, and at Python's default threshold (700) the
# collector took 2.5 of each process's 7.7 s of collection and 8-9 s of each worker's tests (2.6 s at 10,000; a
# loaded machine). No test depends on when garbage is collected (jaxdiag's memory bound calls gc.collect() itself).
# Restored at the end of the session.
_gc_thresholds = gc.get_threshold()
gc.set_threshold(10_000, 10, 10)


# The slow tier is the tests marked `@pytest.mark.slow` (a single parametrized case: `pytest.param(...,
# marks=pytest.mark.slow)`): the one way a test is put in a tier. Mark a test slow when it takes more than about 2 s
# on an idle machine and a cheaper fast test covers its feature; `python -m pytest -q --durations=30` shows the next
# candidates. The fast tier runs every JXB/JXG/JXR/JXV rule's bad sample and the JXB rules' good samples; the JXG good
# samples (checked to second order) and most JXS pairs run in the slow tier only, which CI runs too.
# Within the slow tier, a test repeated over every sample where a few representatives cover each of its code paths
# (the per-sample repro and diff sweeps) also carries `@pytest.mark.sweep`: CI runs `-m "slow and not sweep"` to stay
# under 20 minutes, `-m slow` runs everything (before a release, and after changing what a sweep covers), and
# scripts/fix_coverage.py measures the same sweep over every bad sample.


# The test session's own JAX compilation cache: the tests check many small targets that compile the same small
# programs (the same operations on the same shapes) again and again, in both xdist workers; with a cache each is
# compiled once per session. A private folder made by the controlling process (the workers inherit its path through
# the environment), removed at the end of the session; JAX's flags are restored in every process. Loading a program
# gives the same executable as compiling it, so no verdict depends on it; tests that count compilations
# (test_speed_compiles.py) run without it. The folder is in memory where the system has a RAM file system: its 1,600
# small files, written during the run, took up to 2.6 s to remove after the last test on this machine's disk.
_XLA_CACHE_ENV = "JAXDIAG_TEST_XLA_CACHE"
_IN_MEMORY = "/dev/shm"
_session_cache = contextlib.ExitStack()
_made_cache_dir: str | None = None


# The test session's programs compile at XLA's backend optimisation level 0 with the CPU's older elemental emitter,
# the options jaxdiag gives its own programs (docs/speed.md): compilation is most of the session's CPU time (about
# 45 of 70 s per worker, 1,100 programs each), the fixtures' programs are tiny, and the options change how fast the
# code is, not what it computes. Set in the environment by the controlling process (or the only one) before any
# backend starts, after a child process has checked that this XLA knows them (an unknown flag aborts the process);
# a developer's own XLA_FLAGS keep their values. Measured: fast tier 82-87 s -> 70 s wall on 2 cores.
_FAST_COMPILE_FLAGS = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")
_FAST_COMPILE_ENV = "JAXDIAG_TEST_FAST_COMPILE"
_flags_before: list[str | None] = []  # the XLA_FLAGS this process set, as they were before (restored at the end)
# The probe starts a CPU client from jaxlib alone (XLA parses XLA_FLAGS then, and aborts on an unknown flag): 0.2 s
# against 1.4 s for importing JAX, and the xdist workers start only once it is done. A jaxlib without that entry
# point (older releases named the module xla_extension) imports JAX and runs a first program instead.
_PROBE = ("try:\n    from jaxlib._jax import get_tfrt_cpu_client\n    get_tfrt_cpu_client()\nexcept Exception:\n"
          "    import jax.numpy as jnp\n    jnp.sin(1.0).block_until_ready()\n")


def _compile_fast() -> None:
    if os.environ.get(_FAST_COMPILE_ENV) is not None:
        return  # decided by the controlling process
    import subprocess

    given = os.environ.get("XLA_FLAGS", "")
    _flags_before.append(os.environ.get("XLA_FLAGS"))
    flags = " ".join([given, *(f for f in _FAST_COMPILE_FLAGS if f.partition("=")[0] not in given)]).strip()
    probe = subprocess.run([sys.executable, "-c", _PROBE],
                           env={**os.environ, "XLA_FLAGS": flags}, capture_output=True, timeout=120)
    os.environ[_FAST_COMPILE_ENV] = "1" if probe.returncode == 0 else "0"
    if probe.returncode == 0:
        os.environ["XLA_FLAGS"] = flags


def _end_without_teardown() -> None:
    """An xdist worker's last act, at exit, before JAX's own exit handlers: the process ends without freeing each of
    its thousand-odd compiled programs one by one (JAX's `clean_up`, then the interpreter's teardown: 1-3 s per
    worker, every run, after the last test; the controller waits for it). The worker's report reached the controller
    long before (pytest_sessionfinish), the handlers registered later (multiprocessing's) have run, and the system
    frees the memory at once."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed or gone: nothing left to write
            pass
    os._exit(0)


def pytest_configure(config: pytest.Config) -> None:
    global _made_cache_dir
    _compile_fast()
    folder = os.environ.get(_XLA_CACHE_ENV)
    if folder is None:
        memory = _IN_MEMORY if os.path.isdir(_IN_MEMORY) and os.access(_IN_MEMORY, os.W_OK) else None
        folder = _made_cache_dir = tempfile.mkdtemp(prefix="jaxdiag-test-xla-", dir=memory)
        os.environ[_XLA_CACHE_ENV] = folder
    # `jaxdiag check` outside a project caches in the per-user folder: the tests' runs use one inside the session's
    # folder, never the developer's own ~/.cache/jaxdiag
    os.environ["XDG_CACHE_HOME"] = os.path.join(folder, "xdg")  # (a name JAX's `*-cache` files never match)
    if os.environ.get("PYTEST_XDIST_WORKER") is None and getattr(config.option, "numprocesses", None) not in (None, 0):
        return  # the xdist controller runs no test: it only owns the folder
    from jaxdiag import _compat

    _session_cache.enter_context(_compat.compilation_cache(folder))
    if hasattr(config, "workerinput"):  # an xdist worker; registered after JAX's exit handlers, so it runs first
        atexit.register(_end_without_teardown)


def pytest_unconfigure(config: pytest.Config) -> None:
    _session_cache.close()
    gc.set_threshold(*_gc_thresholds)
    for before in _flags_before:
        os.environ.pop(_FAST_COMPILE_ENV, None)
        if before is None:
            os.environ.pop("XLA_FLAGS", None)
        else:
            os.environ["XLA_FLAGS"] = before
    if _made_cache_dir is not None:
        os.environ.pop(_XLA_CACHE_ENV, None)
        shutil.rmtree(_made_cache_dir, ignore_errors=True)


@pytest.fixture(autouse=True)
def _no_compilation_cache_when_counting_compiles(request: pytest.FixtureRequest) -> Any:
    if request.node.path.name != "test_speed_compiles.py":
        yield
        return
    from jax.experimental.compilation_cache import compilation_cache as cache_api

    import jax

    saved = jax.config.jax_compilation_cache_dir
    cache_api.reset_cache()
    jax.config.update("jax_compilation_cache_dir", None)
    try:
        yield
    finally:
        jax.config.update("jax_compilation_cache_dir", saved)
        cache_api.reset_cache()


def _runs_slow(config: pytest.Config) -> bool:
    return (os.environ.get("JAXDIAG_SLOW") == "1" or bool(config.getoption("markexpr"))
            or any("::" in arg for arg in config.args))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _runs_slow(config):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


@pytest.fixture(autouse=True)
def _check_runs_in_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """`jaxdiag check` invoked by a test runs its targets in the test's process (one job, no time limit) unless the
    test passes `-j`/`--timeout` itself: a worker process re-imports JAX and the user's modules, seconds per test,
    and these tests are about discovery, configuration and output, not about processes. test_parallel.py tests the
    workers and keeps the real defaults."""
    if request.node.path.name == "test_parallel.py":
        return
    from jaxdiag._jobs import _parallel

    monkeypatch.setattr(_parallel, "default_jobs", lambda: 1)
    monkeypatch.setattr(_parallel, "DEFAULT_TIMEOUT", 0.0)


@pytest.fixture(scope="session")
def ffi_kernels() -> None:
    """Compile samples/ffi_kernels.cc into a private build folder and register its targets (skip without a
    compiler): the JXB020-JXB022 samples call them by name."""
    import ffi_build

    try:
        ffi_build.register()
    except ffi_build.CompilerNotFound as exc:
        pytest.skip(str(exc))


# ---------------------------------------------------------------------------------------------------------------
# The supervisor in tests. The CLI runs every command's checks in a child process
# (`jaxdiag/_parent/_supervisor.py`). Most
# CLI tests are about parsing, rendering and exit codes, and many patch jaxdiag's internals (a probe check, a
# failing renderer) in this process: for them the child's command runs here (the same `_child.COMMANDS` function,
# without the process boundary). Tests of the boundary itself are marked `supervised` and get real children.
# ---------------------------------------------------------------------------------------------------------------


def run_here(job: Any, timeout: float | None = None, progress: Any = None) -> Any:
    """`_supervisor.run` without the child: the same command function, in this process, every target in it."""
    from jaxdiag._jobs import _child
    from jaxdiag._parent import _supervisor

    if isinstance(job.request, dict) and "isolate" in job.request:
        job.request = {**job.request, "isolate": False}
    try:
        payload = _child.COMMANDS[job.command](job, lambda message: None)
    except _supervisor.UsageError as exc:
        payload = {"usage_error": str(exc)}
    return _supervisor.answer_of(job, payload)


@pytest.fixture(autouse=True)
def _supervisor_in_this_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("supervised") is None:
        from jaxdiag._parent import _supervisor

        monkeypatch.setattr(_supervisor, "run", run_here)


@pytest.fixture(scope="module")
def module_monkeypatch() -> Iterator[pytest.MonkeyPatch]:
    """A monkeypatch for a module-scoped fixture that runs `jaxdiag check` once for several tests: module fixtures
    are set up before the autouse ones above, so it applies their two in-process patches itself."""
    from jaxdiag._jobs import _parallel
    from jaxdiag._parent import _supervisor

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(_parallel, "default_jobs", lambda: 1)
        monkeypatch.setattr(_parallel, "DEFAULT_TIMEOUT", 0.0)
        monkeypatch.setattr(_supervisor, "run", run_here)
        yield monkeypatch


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """pytest-xdist ends a worker by interrupting its main thread (execnet's `interrupt_main`). When that lands
    inside the garbage-collector callback JAX installs (`_xla_gc_callback`), the KeyboardInterrupt cannot propagate
    and pytest prints a PytestUnraisableExceptionWarning at the very end of the run. Once the session is over the
    callback has nothing left to free: it is removed, so the run ends without that warning.

    An xdist worker's objects are then frozen: pytest's unconfigure collects garbage once more (to report exceptions
    raised by finalizers, which a worker has no report left to carry them in), 0.5-0.9 s over a worker's million
    objects while the controller waits; the worker ends right after (`_end_without_teardown`)."""
    gc.callbacks[:] = [cb for cb in gc.callbacks if getattr(cb, "__name__", "") != "_xla_gc_callback"]
    if hasattr(session.config, "workerinput"):
        gc.freeze()
