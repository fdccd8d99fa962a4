"""The Python API: `check_batching`, `check_grad`, `check_all`. Each runs in this process through the engine, or
with `isolate=True` in a child process through the supervisor, as the CLI does (this module sits above both)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _engine
from ._checks._base import Options
from ._report import Report


def check_batching(
    target: Any,
    *args: Any,
    in_axes: Any = None,
    out_axes: Any = None,
    seed: int = 0,
    include_jax: bool = False,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    app_dir: str = ".",
    params: dict[str, Any] | None = None,
    isolate: bool = False,
    timeout: float | None = None,
) -> Report:
    """Check a primitive's batching rule (or a function's batching behaviour) against a per-example loop.

    `target` is an object or a TARGET string; each arg a concrete array or a SPEC string (`"f32[3]"`); `params`
    is a dict of a primitive's bind parameters (`params={"axis": 1}`), kept apart from jaxdiag's own options so
    that no parameter name can be mistaken for one (an unknown keyword is a TypeError). The run is in this
    process; `isolate=True` runs it in a child process as the CLI does (a rule that calls `os._exit`, segfaults
    or hangs past `timeout` seconds is then a result, not the end of the caller's process).
    """
    if isolate:
        from . import _supervisor  # the child process's machinery, only for an isolated run

        wanted = dict(in_axes=in_axes, out_axes=out_axes, include_jax=include_jax)
        return _supervisor.check_isolated("batching", target, args, dict(params or {}), wanted, seed, select,
                                          ignore, app_dir, timeout)
    options = Options(command="batching", seed=seed, in_axes=in_axes, out_axes=out_axes, include_jax=include_jax)
    return _engine.run(target, args, dict(params or {}), options, select=select, ignore=ignore, app_dir=app_dir)


def check_grad(
    target: Any,
    *args: Any,
    order: int = 1,
    seed: int = 0,
    include_jax: bool = False,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    app_dir: str = ".",
    params: dict[str, Any] | None = None,
    isolate: bool = False,
    timeout: float | None = None,
) -> Report:
    """Check custom_vjp / custom_jvp rules, or a primitive's JVP and transpose rules, against references."""
    if isolate:
        from . import _supervisor  # the child process's machinery, only for an isolated run

        wanted = dict(order=order, include_jax=include_jax)
        return _supervisor.check_isolated("grad", target, args, dict(params or {}), wanted, seed, select,
                                          ignore, app_dir, timeout)
    options = Options(command="grad", seed=seed, order=order, include_jax=include_jax)
    return _engine.run(target, args, dict(params or {}), options, select=select, ignore=ignore, app_dir=app_dir)


def check_all(
    target: Any,
    *args: Any,
    seed: int = 0,
    include_jax: bool = False,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    app_dir: str = ".",
    params: dict[str, Any] | None = None,
    isolate: bool = False,
    timeout: float | None = None,
) -> Report:
    """Run every check family (batching and grad) on one target, as `jaxdiag check` does."""
    if isolate:
        from . import _supervisor  # the child process's machinery, only for an isolated run

        wanted = dict(include_jax=include_jax)
        return _supervisor.check_isolated("check", target, args, dict(params or {}), wanted, seed, select,
                                          ignore, app_dir, timeout)
    options = Options(command="check", seed=seed, include_jax=include_jax)
    return _engine.run(target, args, dict(params or {}), options, select=select, ignore=ignore, app_dir=app_dir)


