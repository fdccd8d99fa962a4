"""The Python API: one function per engine command of the registry (`_commands.COMMANDS`): `check_batching`,
`check_grad`, `check_all`, and any command added there. Each runs in this process through the engine, or with
`isolate=True` in a child process through the supervisor, as the CLI does (this module sits above both).

Every function has the same shape: `check_NAME(target, *args, <the command's options>, seed=0, select=(),
ignore=(), app_dir=".", params=None, isolate=False, timeout=None) -> Report`. `target` is an object or a TARGET
string; each arg a concrete array or a SPEC string (`"f32[3]"`); `params` is a dict of a primitive's bind
parameters (`params={"axis": 1}`), kept apart from jaxdiag's own options so that no parameter name can be mistaken
for one (an unknown keyword is a TypeError). `isolate=True` runs the checks in a child process as the CLI does (a
rule that calls `os._exit`, segfaults or hangs past `timeout` seconds is then a result, not the end of the caller's
process).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, Callable

from ._core import _commands
from ._run import _engine
from ._parent import _supervisor
from ._checks._base import Options
from ._core._report import Report

# The keywords every API function takes after the command's own options.
_COMMON = (("seed", 0), ("select", ()), ("ignore", ()), ("app_dir", "."), ("params", None), ("isolate", False),
           ("timeout", None))


def run_command(name: str, target: Any, args: Sequence[Any], options: dict[str, Any], *, seed: int = 0,
                select: Sequence[str] = (), ignore: Sequence[str] = (), app_dir: str = ".",
                params: dict[str, Any] | None = None, isolate: bool = False, timeout: float | None = None) -> Report:
    """Run command `name` of the registry on one target. `options` holds the command's own options (unknown names
    are a TypeError, as for any Python call)."""
    spec = _commands.command(name)
    known = {o.name: _commands.option_default(o) for o in spec.api_options}
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise TypeError(f"{spec.function_name}() got an unexpected keyword argument {unknown[0]!r}")
    wanted = {**known, **options}
    if isolate:
        return _supervisor.check_isolated(name, target, tuple(args), dict(params or {}), wanted, seed, select,
                                          ignore, app_dir, timeout)
    return _engine.run(target, tuple(args), dict(params or {}), Options.for_command(name, seed=seed, **wanted),
                       select=select, ignore=ignore, app_dir=app_dir)


def _function_for(spec: _commands.Command) -> Callable[..., Report]:
    own = [o.name for o in spec.api_options]

    def check_command(target: Any, *args: Any, **keywords: Any) -> Report:
        unknown = sorted(set(keywords) - set(own) - {name for name, _ in _COMMON})
        if unknown:  # as Python says it for any function
            raise TypeError(f"{spec.function_name}() got an unexpected keyword argument {unknown[0]!r}")
        options = {k: keywords.pop(k) for k in own if k in keywords}
        return run_command(spec.name, target, args, options, **keywords)

    check_command.__name__ = check_command.__qualname__ = spec.function_name
    check_command.__doc__ = (spec.api_doc or spec.summary) + "\n\nSee `jaxdiag._api` for the common keywords."
    keyword = inspect.Parameter.KEYWORD_ONLY
    check_command.__dict__["__signature__"] = inspect.Signature(  # what help() and IDEs show
        [inspect.Parameter("target", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Any),
         inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL, annotation=Any),
         *(inspect.Parameter(o.name, keyword, default=_commands.option_default(o)) for o in spec.api_options),
         *(inspect.Parameter(name, keyword, default=default) for name, default in _COMMON)],
        return_annotation=Report)
    return check_command


FUNCTIONS: dict[str, Callable[..., Report]] = {
    spec.function_name: _function_for(spec) for spec in _commands.COMMANDS.values() if spec.runner == "engine"}

check_batching = FUNCTIONS["check_batching"]
check_grad = FUNCTIONS["check_grad"]
check_all = FUNCTIONS["check_all"]


def __getattr__(name: str) -> Callable[..., Report]:  # a command added to the registry has its function too
    if name in FUNCTIONS:
        return FUNCTIONS[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
