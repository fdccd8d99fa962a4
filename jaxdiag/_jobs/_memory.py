"""A `jaxdiag check` process's memory and compilation cache: its resident size, the bound that retires a worker
grown past it (clearing JAX's caches, returning freed memory to the system), a worker that exits with its parent,
and the scratch folder of compiled programs shared by one run's workers."""

from __future__ import annotations

import os
import sys
import tempfile
import time

# Memory bound per worker. JAX keeps the executables it compiled in its caches, so a process checking target
# after target grows by 13-20 MB per target (1.2 GB after 60 of the samples). A worker whose resident memory
# passed this after a target clears JAX's caches and gives the freed memory back (`MemoryBound`; back to about
# 300 MB). A target's own transient growth comes on top (up to 240 MB for the samples' nested logdet): with two
# workers and the parent (about 180 MB) the whole run stays under 1.5 GB. A worker still above WORKER_RETIRE_MB
# after clearing (memory the user's code holds), from its second clearing on, is replaced (`retire_limit`).
WORKER_MEMORY_MB = 400
WORKER_RETIRE_MB = 600


def retire_limit(floor_mb: float | None) -> float | None:
    """The memory past which a worker is replaced after clearing JAX's caches, or None while it may not be, given
    what its first clearing left (`floor_mb`, None before that). The first clearing only sets the floor: what a
    package imports lazily on first use (a backend, a plugin) comes back in every new worker, and replacing workers
    for it re-imported a 1 GB package for every target. After it, growth of WORKER_RETIRE_MB - WORKER_MEMORY_MB
    over the floor (memory the user's code keeps taking) retires the worker, and never below WORKER_RETIRE_MB."""
    if floor_mb is None:
        return None
    return max(float(WORKER_RETIRE_MB), floor_mb + WORKER_RETIRE_MB - WORKER_MEMORY_MB)


# In a worker and in `jaxdiag check`'s own process (`-j 1 --timeout 0`): JAX's caches are cleared when it grew this
# much past what clearing them last left (about 8 targets' worth), or past WORKER_MEMORY_MB, whichever is higher.
IN_PROCESS_GROWTH_MB = 100
def scratch_folder() -> str | None:
    """In the supervised run's folder when there is one: the parent removes it however the run ends."""
    try:
        return tempfile.mkdtemp(prefix="jaxdiag-xla-", dir=os.environ.get("JAXDIAG_RUN_DIR") or None)
    except OSError:
        return None


def rss_mb() -> float:
    """This process's resident memory now (Linux), else its peak."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def exit_with_parent() -> None:
    """A parent killed without cleaning up (SIGTERM, SIGKILL) must not leave a worker spinning in a hung rule."""
    import threading

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="jaxdiag-parent-watch", daemon=True).start()


def use_compilation_cache(folder: str) -> None:
    """JAX's persistent compilation cache, in the result cache's folder: workers share what they compile (most
    targets compile the same small operations on the same shapes), also after a worker cleared its in-memory
    caches, and a re-run after an edit compiles only what changed. XLA's key covers the program, the compile
    options and the JAX/jaxlib versions, so it never serves a wrong executable. Only in worker processes."""
    import jax

    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


class MemoryBound:
    """When a process that checks target after target clears JAX's caches: past WORKER_MEMORY_MB after a target.
    Where the process stays above the bound afterwards (memory the user's code holds, or an allocator that keeps
    what was freed), the bound becomes IN_PROCESS_GROWTH_MB above what is left: cleared every few targets, never
    after every one (which would compile every program again for every target)."""

    def __init__(self) -> None:
        self.limit = max(WORKER_MEMORY_MB, rss_mb() + IN_PROCESS_GROWTH_MB)

    def after_target(self) -> tuple[float, bool]:
        """(resident memory after the target in MB, whether JAX's caches were cleared)."""
        rss = rss_mb()
        if rss <= self.limit:
            return rss, False
        release_memory()
        self.limit = max(self.limit, rss_mb() + IN_PROCESS_GROWTH_MB)
        return rss, True


def release_memory() -> None:
    """Drop JAX's compiled executables and traces: later targets compile what they need again."""
    import gc

    import jax

    jax.clear_caches()
    gc.collect()
    return_freed_memory()


def return_freed_memory() -> None:
    """Hand the memory just freed back to the system. glibc's allocator keeps it otherwise: after clearing JAX's
    caches a worker that had grown to 1.2 GB stayed at 1.2 GB; with `malloc_trim` it drops to about 300 MB. Other
    C libraries have no such call, and nothing is lost without it but the memory."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:  # the process's own symbols, libc's among them (no `ldconfig` run, as ctypes.util.find_library does)
        trim = getattr(ctypes.CDLL(None), "malloc_trim", None)  # None: not glibc (musl has no malloc_trim)
    except OSError:
        return
    if trim is not None:
        trim(0)
