"""`JXU`: the user's code stopped jaxdiag from checking a target: it ended the process, crashed it, raised a
`BaseException`, ran past the time limit, left threads running, or changed JAX's global state.

Each target runs in a child process (`_supervisor`), so none of this can end or hang the run, and none of it is a
pass: a target that did not finish its checks is not verified (exit 5, `summary.not_verified`). The first five are
blocking: `--ignore`, per-target ignores and inline suppressions cannot hide them; the only way to accept such a
target is an `allow-unchecked` entry with a reason in `[tool.jaxdiag]`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._catalog import Rule

if TYPE_CHECKING:
    from . import _fields

_RUN_APART = ("Each target is checked in a child process; the run goes on with the next target, and the target is "
              "counted as not verified.")

USER_CODE_EXITED: Rule[_fields.JXU001] = Rule(
    "JXU001", "user-code-exited", "error",
    "User code ended the process (`sys.exit`, `raise SystemExit`, `os._exit`) while a target was checked.",
    "Reports a rule, impl or module that ends the process when called. " + _RUN_APART,
    "A library that exits when transformed ends its users' programs, and in a test or CI step an exit with code 0 "
    "looks like success: before the supervisor, a rule calling `os._exit(0)` turned the whole run green.",
    message="{target}: {how} while running {where}; its checks did not finish.",
    fix="Raise an exception instead of ending the process in the code that `{check}` calls{at}.",
    blocking=True, leaves_unverified="exited", depends_on_values=False, evidence_from_inputs=False,
)
USER_CODE_CRASHED: Rule[_fields.JXU002] = Rule(
    "JXU002", "user-code-crashed", "error",
    "The process checking a target was killed by a signal (a segfault or abort in native code, out of memory).",
    "Reports a child process that died without a result while checking the target. " + _RUN_APART,
    "A segfault in a custom call or a kernel kills the user's whole program under the same transformation.",
    message="{target}: the process checking it died ({how}) while running {where}; its checks did not finish.",
    fix="Run the transformation named above on the target under `python -X faulthandler` to see the native frame; "
        "check the kernel's buffer sizes and dtypes against the avals it is given.",
    # a crash follows the inputs (a kernel reading out of bounds on indices outside its contract): one on inferred
    # inputs is at most a warning, as every finding on them is (the target stays unverified all the same)
    blocking=True, leaves_unverified="crashed", depends_on_values=False, evidence_from_inputs=True,
)
USER_CODE_RAISED_BASE_EXCEPTION: Rule[_fields.JXU003] = Rule(
    "JXU003", "user-code-raised-base-exception", "error",
    "User code raised a `BaseException` that is not an `Exception` (`KeyboardInterrupt`, `GeneratorExit`, a custom "
    "subclass) while a target was checked.",
    "Reports what the rule raised and where. `except Exception` in JAX and in the user's callers does not catch it, "
    "so it escapes every handler. " + _RUN_APART,
    "A `BaseException` from a rule unwinds through JAX's tracing and the caller's error handling alike; a "
    "`KeyboardInterrupt` that nobody pressed looks like the user stopped the program.",
    message="{target}: {how} while running {where}; it escaped every `except Exception`, and the target's checks "
            "stopped there.",
    fix="Raise an `Exception` subclass (ValueError, TypeError, a custom `class MyError(Exception)`) in the code "
        "that `{check}` calls{at}.",
    blocking=True, leaves_unverified="raised", depends_on_values=False, evidence_from_inputs=False,
)
USER_CODE_TIMED_OUT: Rule[_fields.JXU004] = Rule(
    "JXU004", "target-timed-out", "error",
    "A target ran past the per-target time limit; it was stopped and not verified.",
    "Runs each target in a child process and stops it after `--timeout` seconds (config key `timeout`), naming the "
    "check that was running; the other targets are still checked. " + _RUN_APART,
    "A rule that never returns (an endless loop, a wait on something that never comes) hangs every program that "
    "transforms it, and would hang the CI job.",
    message="{target} was stopped after {seconds:.1f} s, past the per-target limit of {limit:g} s, while running "
            "{where}; its other checks did not run.",
    fix="Find what does not return in the rule that `{check}` calls (an endless loop, a wait on something that "
        "never comes), or raise the limit with --timeout SECONDS or `timeout = ...` under [tool.jaxdiag] in "
        "pyproject.toml if the target is just slow.",
    blocking=True, leaves_unverified="timed-out", depends_on_values=False, evidence_from_inputs=False,
)
USER_CODE_LEFT_THREADS: Rule[_fields.JXU005] = Rule(
    "JXU005", "user-code-left-threads", "error",
    "Checking a target left non-daemon threads running that user code started.",
    "Lists the threads that were alive after the target's checks and not before. Such a thread keeps the Python "
    "process from exiting: before the supervisor, the single commands printed their report and never exited.",
    "A rule or impl that starts a thread and never joins it makes every program that calls it hang at exit.",
    message="{target}: {count} non-daemon thread(s) started by user code still running after its checks: {threads}.",
    fix="Join the thread before the rule returns, or start it with `daemon=True`.",
    blocking=True, depends_on_values=False, evidence_from_inputs=False,
)
USER_CODE_CHANGED_STATE: Rule[_fields.JXU006] = Rule(
    "JXU006", "user-code-changed-global-state", "warning",
    "Checking a target changed JAX's global state: a config flag, an environment variable JAX reads, or the rule "
    "registered for one of JAX's own primitives.",
    "Compares JAX's whole config, the `JAX_*`/`XLA_*` environment and the rule registries of JAX's own primitives "
    "before and after each target; jaxdiag restores them, so the next target is checked as if nothing happened.",
    "A rule that flips `jax_enable_x64` or redefines the JVP of `sin` when it is called changes every later "
    "computation of the user's program, far from the cause.",
    message="{target}: its checks changed {changes}; jaxdiag restored them for the targets after it.",
    fix="Change JAX's configuration once, at import time of your package (or in `with jax.enable_x64(...)` scopes), "
        "never inside a rule; register rules only for your own primitives.",
    depends_on_values=False, evidence_from_inputs=False,
)
