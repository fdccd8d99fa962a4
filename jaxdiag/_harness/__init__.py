"""The harness: everything between the checks and the user's code.

`boundary` is the only place that catches what user code raises (and turns jaxdiag's own failures inside user
calls into internal errors); `tracing` traces a function once, `source` reads the user's source by AST once,
`cache` is the typed per-subject cache, `vmap` the vmap variants and per-example reference of the batching,
custom_vmap and ffi checks.
See CONTRIBUTING.md for the layers.
"""

from .boundary import (
    Caught, JaxdiagBug, Signal, UserAbort, UserResult, abort_of, call_user, catch_abort, find_in_chain, jaxdiag_code,
    user_interrupts,
)

__all__ = ["Caught", "JaxdiagBug", "Signal", "UserAbort", "UserResult", "abort_of", "call_user", "catch_abort",
           "find_in_chain", "jaxdiag_code", "user_interrupts"]
