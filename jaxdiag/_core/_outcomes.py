"""Results made for a target whose process never answered (parent side, no JAX): the supervisor's child and
`check`'s worker processes alike."""

from __future__ import annotations

import signal

from .. import _rules as rules
from ._report import Finding


def process_death_finding(label: str, exitcode: int | None, check: str, where: str) -> Finding:
    """JXU001 for a process that exited (any exit code, 0 included), JXU002 for one a signal killed."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return rules.USER_CODE_CRASHED.finding(target=label, how=f"killed by {name}", where=where)
    how = (f"the process exited with code {exitcode} (os._exit, sys.exit outside a check, or an exit in native "
           "code)")
    return rules.USER_CODE_EXITED.finding(target=label, how=how, where=where, check=check or "loading the target",
                                          at="")
