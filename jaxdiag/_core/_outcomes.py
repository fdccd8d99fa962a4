"""Results made for a target whose process never answered (parent side, no JAX): the supervisor's child and
`check`'s worker processes alike."""

from __future__ import annotations

import signal

from .. import _rules as rules
from ._report import CheckResult, Finding


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


def ended_early(label: str, check: str, where: str, exitcode: int | None = None,
                stopped: tuple[float, float] | None = None, seconds: float = 0.0) -> tuple[Finding, CheckResult]:
    """The blocking finding of a target whose run ended before its checks did, and the result of the check it was
    in (`check`, "" before the first): stopped at the time limit (`stopped`: its seconds and the limit, JXU004),
    else exited or killed (`exitcode`, after `seconds`: JXU001/JXU002)."""
    if stopped is not None:
        seconds, limit = stopped
        finding = rules.USER_CODE_TIMED_OUT.finding(target=label, seconds=seconds, limit=limit,
                                                    check=check or "the first check", where=where)
        return finding, CheckResult(check or "prepare", "skipped", seconds, f"stopped after the {limit:g} s time limit")
    finding = process_death_finding(label, exitcode, check, where)
    return finding, CheckResult(check or "prepare", "failed", seconds, finding.message)
