"""The progress display of a long run (parent side): targets done of discovered, the target and check running and
for how long, findings so far. On stderr, only when it is a terminal and `-q` is not given: machine formats on
stdout and reports written to files are never touched."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable

# A check running longer than this says so, so that slow can be told from stuck.
SLOW_SECONDS = 20.0


class _Display:
    def __init__(self, progress: Any, task: Any) -> None:
        self.progress = progress
        self.task = task
        self.done = 0
        self.total: int | None = None
        self.findings = 0
        self.running = ""
        self.since = time.monotonic()

    def update(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "discovered":
            self.total = int(event.get("total", 0))
            self.done = int(event.get("cached", 0))
        elif kind == "check":
            self.running = f"{event.get('target', '')}: {event.get('check', '')}"
            self.since = time.monotonic()
        elif kind == "done":
            self.done += 1
            self.findings += int(event.get("findings", 0))
        self.refresh()

    def refresh(self) -> None:
        elapsed = time.monotonic() - self.since
        slow = f" (running {elapsed:.0f} s)" if self.running and elapsed > SLOW_SECONDS else ""
        text = f"{self.running}{slow}  [{self.findings} finding{'s' * (self.findings != 1)}]"
        self.progress.update(self.task, completed=self.done, total=self.total, description=text)


@contextmanager
def display(enabled: bool) -> Iterator[Callable[[dict[str, Any]], None] | None]:
    """A callback for `_supervisor.run`'s progress events, or None when nothing is to be shown."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    with Progress(TextColumn("jaxdiag"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=console, transient=True) as progress:
        view = _Display(progress, progress.add_task("starting", total=None))
        yield view.update
