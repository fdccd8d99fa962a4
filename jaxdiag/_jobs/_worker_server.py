"""The fork server of `check`'s workers, forked from the supervised child before it runs any user code.

Workers are forked from a fork server that has imported JAX and all of jaxdiag (`_workers.worker_context`), never
from the child itself once it has imported the user's modules (JAX is not fork-safe: user code may have started
XLA's threads). Left to itself, multiprocessing starts that server as a new interpreter that imports JAX and
jaxdiag again: about 2.2 s of CPU, on the run's critical path (the first worker waits for it, after discovery).

The child at the start of `_child.main` already is what that server would be: it was forked from the supervisor's
preloaded fork server, so it holds JAX and all of jaxdiag, has run no user code, initialised no XLA backend and
started no thread. A fork of it at that moment is as safe to fork from as the supervisor's server, and costs a
fork instead of an import: `start` forks it there and runs multiprocessing's own fork-server loop in the fork
(`multiprocessing.forkserver.main`, as the interpreter multiprocessing would start runs it), then points this
process's multiprocessing at it. Everything else stays as it was: the server and the workers it forks are in the
child's process group (the supervisor kills them with the child), the server exits when the child and every
worker have closed the "alive" pipe, and the workers get their process object, folder and `sys.path` from the
child over the same protocol. Where any of that is missing (no `forkserver` start method, a Python whose server
loop takes other arguments, a socket path too long), nothing is changed and multiprocessing starts its own server
as before.

This touches multiprocessing's private state (`forkserver._forkserver`, whose fields `ensure_running` reads): a
Python whose `ForkServer` lacks those fields is left alone.
"""

from __future__ import annotations

import inspect
import os
import socket
from typing import Any

# The parameters of `multiprocessing.forkserver.main` this module knows how to call (3.10-3.13). Python 3.14 adds
# an authentication key: with it, multiprocessing starts its own server.
_MAIN_PARAMETERS = ["listener_fd", "alive_r", "preload", "main_path", "sys_path"]
_SERVER_FIELDS = ("_forkserver_address", "_forkserver_alive_fd", "_forkserver_pid")

# The server's pid, once started (for tests: it is a child of this process, not a new interpreter).
started_pid: int | None = None


def start(preload: list[str], close: tuple[int, ...] = ()) -> bool:
    """Fork this process into the workers' fork server (see the module's docstring), with `preload` imported
    first (already there in a child forked from the supervisor's server; a spawned child imports it now). `close`:
    descriptors the server must not hold (the child's pipe to the supervisor, which the supervisor reads until
    every holder has closed it). False, with nothing changed, where it cannot."""
    global started_pid
    import importlib
    import multiprocessing
    from multiprocessing import connection, forkserver

    server: Any = getattr(forkserver, "_forkserver", None)
    private_connection: Any = connection  # `arbitrary_address` (where multiprocessing puts its sockets) has no stub
    if ("forkserver" not in multiprocessing.get_all_start_methods() or server is None
            or not all(hasattr(server, f) for f in _SERVER_FIELDS)
            or list(inspect.signature(forkserver.main).parameters) != _MAIN_PARAMETERS):
        return False
    for name in preload:
        importlib.import_module(name)
    listener = socket.socket(socket.AF_UNIX)
    try:
        address = private_connection.arbitrary_address("AF_UNIX")
        listener.bind(address)
        os.chmod(address, 0o600)
        listener.listen()
    except OSError:  # a socket path too long (a deep TMPDIR): multiprocessing tries, then `_parallel` spawns
        listener.close()
        return False
    alive_r, alive_w = os.pipe()
    # what this process inherited from the supervisor's fork server: its "alive" pipe is the supervisor's to close
    inherited = server._forkserver_alive_fd
    pid = os.fork()
    if pid == 0:  # the server: multiprocessing's loop, until the child and its workers are gone
        code = 1  # anything but the loop's normal end: the server failed (it must never return into the child's code)
        try:
            os.close(alive_w)
            for fd in (*close, *([inherited] if isinstance(inherited, int) else [])):
                try:
                    os.close(fd)
                except OSError:
                    pass
            forkserver.main(listener.fileno(), alive_r, [])  # preload: nothing, it is all imported
        except SystemExit:  # how the loop ends when the "alive" pipe closes
            code = 0
        finally:
            os._exit(code)
    listener.close()
    os.close(alive_r)
    server._forkserver_address = address
    server._forkserver_alive_fd = alive_w
    server._forkserver_pid = pid
    started_pid = pid
    return True
