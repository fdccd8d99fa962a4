"""The command line: parse arguments, validate them, call the engine, render the report, choose the exit code.
No check logic.

Exit codes (docs/cli.md): 0 every target verified and clean, 1 an error or warning remains, 2
usage/configuration/target-loading error (always one `jaxdiag: error: ...` line on stderr, before any check runs),
3 jaxdiag's own internal error, 5 a discovered target was not verified, 130 interrupted (Ctrl-C), 143 terminated
(SIGTERM). `--exit-zero` turns 1 into 0, nothing else.

This process is the supervisor's parent: it never imports JAX or the user's code. Each command's checks run in a
child process (`_supervisor.run`), whose report comes back as data and is rendered here.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, List, Optional

import typer

from .. import __version__
from .._core._commands import COMMANDS, FORMAT_NAMES, TARGET, TARGET_COMMANDS, Command, Opt
from .._core._errors import UsageError
from ._help import JaxdiagCommand, JaxdiagGroup, interrupted_exit, one_line
from .._core._report import EXIT_CLEAN, EXIT_FINDINGS, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_USAGE

RULES_FORMATS = ("text", "markdown")
app = typer.Typer(
    name="jaxdiag",
    cls=JaxdiagGroup,
    help="Diagnose JAX extension code: custom primitives and their rules, custom_vjp, custom_jvp, custom_vmap. "
         "Each finding has a rule code, a severity, what was observed, your file:line and a fix.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# Every diagnose command's parameters come from the registry (`_commands`): one declaration per option gives the
# CLI parameter, the API keyword, the `Options` field and the docs/cli.md row. Every option has an explicit metavar:
# the help shows `SPEC`, `FILE`, never a type name.
_ANNOTATIONS: dict[Any, Any] = {bool: bool, int: Optional[int], float: Optional[float], str: Optional[str],
                                list: Optional[List[str]]}


def _typer_default(opt: Opt) -> Any:
    """The typer.Option (or typer.Argument, for TARGET) that declares `opt`."""
    if not opt.flags:
        return typer.Argument(..., metavar=opt.metavar, help=opt.help)
    extra: dict[str, Any] = {"help": opt.help, "rich_help_panel": opt.panel or None}
    if opt.metavar:
        extra["metavar"] = opt.metavar
    if opt.bounds is not None:
        extra["min"], extra["max"] = opt.bounds
    return typer.Option(opt.default, *opt.flags, **extra)


def _parameter(opt: Opt) -> inspect.Parameter:
    annotation = str if not opt.flags else _ANNOTATIONS[opt.kind]
    if opt.kind in (int, float, str) and opt.default is not None:
        annotation = opt.kind
    return inspect.Parameter(opt.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=_typer_default(opt),
                             annotation=annotation)


def _registry_command(spec: Command, body: Callable[..., None]) -> Callable[..., None]:
    """`body(**values)` with the signature typer reads: TARGET (unless the command takes paths) and every option."""

    def command(**values: Any) -> None:
        body(**values)

    command.__name__ = spec.name
    command.__doc__ = spec.summary
    head = () if spec.paths else (TARGET,)
    command.__dict__["__signature__"] = inspect.Signature([_parameter(o) for o in (*head, *spec.cli_options)])
    return command


def _version_callback(value: bool) -> None:
    if value:
        from .. import _compat

        typer.echo(f"jaxdiag {__version__} (jax {_compat.JAX_VERSION}, jaxlib {_compat.JAXLIB_VERSION})")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                 help="Show jaxdiag, jax and jaxlib versions and exit."),
) -> None:
    """jaxdiag: find the defect in your JAX rule, prove it, point at the line, give the fix."""


def _fail(message: str, code: int = EXIT_USAGE) -> "typer.Exit":
    typer.echo(f"jaxdiag: error: {one_line(message)}", err=True)
    return typer.Exit(code)


@contextlib.contextmanager
def _guard() -> Iterator[None]:
    """Bad input -> one line, exit 2; Ctrl-C -> one line, exit 130 (SIGTERM: 143); jaxdiag's own bug -> one line,
    exit 3."""
    from ._supervisor import Interrupted

    try:
        yield
    except typer.Exit:
        raise
    except UsageError as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        raise _fail("interrupted", EXIT_INTERRUPTED) from None
    except Interrupted as exc:
        raise typer.Exit(interrupted_exit(exc)) from None
    except Exception as exc:
        if os.environ.get("JAXDIAG_DEBUG"):
            raise
        raise _fail(f"internal error: {type(exc).__name__}: {exc} (set JAXDIAG_DEBUG=1 for the traceback)",
                    EXIT_INTERNAL) from None


def _split_codes(values: Optional[List[str]]) -> list[str]:
    return [c.strip().upper() for v in values or [] for c in v.split(",") if c.strip()]


def _validate_common(fmt: str, output: Optional[str], app_dir: str, verbose: bool, quiet: bool,
                     select: list[str], ignore: list[str]) -> None:
    """Everything that can be checked before loading the configuration or the user's code."""
    from .._core import _validate

    if fmt not in FORMAT_NAMES:
        raise UsageError(f"unknown --format {fmt!r}; choose one of {', '.join(FORMAT_NAMES)}")
    if verbose and quiet:
        raise UsageError("--verbose and --quiet exclude each other")
    _validate.check_output(output)
    _validate.check_app_dir(app_dir)
    _validate.check_selectors(select, "--select")
    _validate.check_selectors(ignore, "--ignore")


def _views(diff: bool, fix: bool, show_jaxpr: bool, repro: Optional[str], platforms: Optional[str],
           config_platforms: Any = None) -> dict[str, Any]:
    """The evidence-and-fix options as `Options` fields; a bad --platforms is a usage error (exit 2)."""
    from .._core._config import parse_platforms

    chosen = parse_platforms(platforms, "--platforms") if platforms is not None else config_platforms
    views: dict[str, Any] = {"fixes": diff or fix, "show_jaxpr": show_jaxpr}
    if chosen:
        views["platforms"] = tuple(chosen)
    return views


def _emit(answer: Any, fmt: str, output: Optional[str], exit_zero: bool, verbosity: int = 0) -> None:
    """Render, write, and exit with the contract's code. `answer` is the supervisor's: the report, and what
    `--diff`/`--fix`/`--repro` printed in the child."""
    from .._render import render
    from .._render.text import draw, make_console

    report = answer.report
    if answer.views_stderr:
        sys.stderr.write(answer.views_stderr)
    if answer.views_stdout:
        sys.stdout.write(answer.views_stdout)
        sys.stdout.flush()
    if answer.views_done:  # stdout carried the --diff patch: the text report goes to stderr (as ruff's --diff)
        draw(report, make_console(sys.stderr), verbosity=verbosity, show_diffs=False)
        code = report.exit_code
        raise typer.Exit(EXIT_CLEAN if code == EXIT_FINDINGS and exit_zero else code)
    try:
        if fmt == "text" and output is None:
            draw(report, make_console(), verbosity=verbosity)
        else:
            text = render(report, fmt)
            if output:
                with open(output, "w", encoding="utf-8") as handle:
                    handle.write(text)
            else:
                sys.stdout.write(text)
                sys.stdout.flush()
    except OSError as exc:  # a report file that vanished or filled the disk, a closed pipe: the user's environment
        raise UsageError(f"cannot write the report: {exc}") from None
    except Exception as exc:  # a renderer crashed: jaxdiag's own bug, never a pass
        if os.environ.get("JAXDIAG_DEBUG"):
            raise
        raise _fail(f"internal error while rendering the report: {type(exc).__name__}: {exc} (set JAXDIAG_DEBUG=1 "
                    "for the traceback)", EXIT_INTERNAL) from None
    # Report.exit_code: 3 internal error (wins), 2 import failure (--keep-going), 1 error/warning, 0 clean.
    code = report.exit_code
    raise typer.Exit(EXIT_CLEAN if code == EXIT_FINDINGS and exit_zero else code)


@dataclass
class Request:
    """One diagnose command's input, validated and parsed by `_diagnose` the same way for every command: the
    runner only runs it."""

    command: str
    target: str
    args: list[Any]  # parsed --arg templates: ArgSpec, Static, or pytrees of them
    params: dict[str, Any]
    seed: int
    select: list[str]  # the codes of --select, else of the configuration
    ignore: list[str]  # --ignore plus the configuration's
    app_dir: str
    config: Any  # _config.Config
    options: dict[str, Any] = field(default_factory=dict)  # the command's own options (`Options` fields)
    views: dict[str, Any] = field(default_factory=dict)  # --diff/--fix/--repro, --format and --output
    timeout: float | None = None  # seconds the target may run; None or 0: no limit
    verbosity: int = 0

    @property
    def per_target(self) -> list[str]:
        return self.config.ignores_for(self.target)

    @property
    def allow_unchecked(self) -> dict[str, str]:
        return self.config.allow_unchecked


def _run_engine(request: Request) -> Any:
    """`batching` and `grad`: the checks in a child process (`_supervisor`), the report rendered here."""
    from . import _progress, _supervisor

    job = _supervisor.Job("diagnose", request, label=request.target, views=request.views)
    with _progress.display(request.verbosity >= 0) as progress:
        return _supervisor.run(job, timeout=request.timeout, progress=progress)


def _timeout_for(option: Optional[float], config: Any) -> float:
    """--timeout, else `timeout` under [tool.jaxdiag], else the default; 0 means no limit."""
    from .._jobs._parallel import DEFAULT_TIMEOUT

    chosen = _check_timeout(option)
    if chosen is None:
        chosen = config.timeout
    return DEFAULT_TIMEOUT if chosen is None else chosen


def _diagnose(spec: Command, target: str, arg: Optional[List[str]] = None, param: Optional[List[str]] = None,
              fmt: str = "text", output: Optional[str] = None, select: Optional[List[str]] = None,
              ignore: Optional[List[str]] = None, seed: Optional[int] = None, exit_zero: bool = False,
              app_dir: str = ".", verbose: bool = False, quiet: bool = False, diff: bool = False, fix: bool = False,
              show_jaxpr: bool = False, repro: Optional[str] = None, platforms: Optional[str] = None,
              timeout: Optional[float] = None, **options: Any) -> None:
    """The path every single-target command shares: validate the common options, load the configuration, parse
    --arg (SPECs, static literals, key[], pytrees, @domain) and --param, check inline suppressions, then hand the
    request to the command's runner (the engine or the sharding child, each in a child process) and render.
    `options` are the command's own (`spec.options`, and --include-jax)."""
    with _guard():
        selected, ignored = _split_codes(select), _split_codes(ignore)
        _validate_common(fmt, output, app_dir, verbose, quiet, selected, ignored)
        from .._core import _config, _validate
        from .._loading._cli_values import parse_axes, parse_param
        from .._loading._inputs import parse_arg

        config = _config.load(app_dir)  # validates the codes it names
        specs = [parse_arg(a) for a in arg or []]  # SPECs, literals (static values) and pytrees
        bind_params = dict(_parse_param(parse_param, p) for p in param or [])
        for opt in spec.options:
            if opt.parse == "axes":
                options[opt.name] = parse_axes(options[opt.name], opt.flags[0])
        _validate.check_target(target, app_dir)
        sources = _validate.source_files([target.rpartition(":")[0]], app_dir)
        _validate.check_inline_suppressions(sources)
        _validate.check_repro(repro)
        if fix:
            _validate.check_fixable(sources)
        if spec.evidence:
            options.update(_views(diff, fix, show_jaxpr, repro, platforms, config.platforms))
        request = Request(spec.name, target, specs, bind_params, seed if seed is not None else config.seed,
                          selected or config.select, ignored + config.ignore, app_dir, config, options,
                          views={"diff": diff, "fix": fix, "repro": repro, "format": fmt, "output": output},
                          timeout=_timeout_for(timeout, config), verbosity=_verbosity(verbose, quiet))
        answer = RUNNERS[spec.runner](request)
        _emit(answer, fmt, output, exit_zero, request.verbosity)


def _parse_param(parse: Any, text: str) -> tuple[str, Any]:
    try:
        return parse(text)
    except UsageError:
        raise
    except (SyntaxError, TypeError, ValueError) as exc:  # numpy's dtype parser raises SyntaxError on `(0,`
        name = text.partition("=")[0].strip()
        raise UsageError(f"bad --param {name} value {text.partition('=')[2]!r}: {type(exc).__name__}: {exc}; "
                         "expected a Python literal (1, 2.5, (0, 1), 'name', True) or a dtype name") from None


def _verbosity(verbose: bool, quiet: bool) -> int:
    return 1 if verbose else -1 if quiet else 0


def _run_sharding(request: Request) -> Any:
    """`sharding`: the checks in a child process on virtual devices, its report filtered here."""
    from .._mesh import _sharding
    from .._core._filtering import Filter

    from ._supervisor import Answer

    options = request.options
    shape = _sharding.parse_mesh(options["mesh"])
    settings = Filter(request.select, request.ignore, request.config.per_target_ignores,
                      request.config.allow_unchecked)
    entry = {"ref": request.target, "args": request.args, "params": request.params}
    return Answer(settings.apply(_sharding.run_in_child(
        [entry], shape, seed=request.seed, include_jax=options["include_jax"], app_dir=request.app_dir,
        timeout=request.timeout)))


def _check_timeout(timeout: Optional[float]) -> Optional[float]:
    import math

    if timeout is not None and (not math.isfinite(timeout) or timeout < 0):  # nan compares false to everything
        raise UsageError(f"--timeout must be a number of seconds >= 0 and finite (0: no limit), got {timeout:g}")
    return timeout


RUNNERS: dict[str, Callable[[Request], Any]] = {"engine": _run_engine, "sharding": _run_sharding}

for _name in TARGET_COMMANDS:
    app.command(cls=JaxdiagCommand, rich_help_panel="Diagnose")(
        _registry_command(COMMANDS[_name], functools.partial(_diagnose, COMMANDS[_name])))


def _check(
    paths: Optional[List[str]] = None, fmt: str = "text", output: Optional[str] = None, verbose: bool = False,
    quiet: bool = False, select: Optional[List[str]] = None, ignore: Optional[List[str]] = None,
    exit_zero: bool = False, seed: Optional[int] = None, app_dir: str = ".", keep_going: bool = False,
    include_tests: bool = False, jobs: Optional[int] = None, timeout: Optional[float] = None, no_cache: bool = False,
    diff: bool = False, fix: bool = False, show_jaxpr: bool = False, repro: Optional[str] = None,
    platforms: Optional[str] = None,
) -> None:
    """CI lint: discover every primitive and custom_* function in modules or paths, run every check."""
    with _guard():
        selected, ignored = _split_codes(select), _split_codes(ignore)
        _validate_common(fmt, output, app_dir, verbose, quiet, selected, ignored)
        from .._core import _config, _validate

        config = _config.load(app_dir)  # validates the codes it names
        items = list(paths or [])
        if not items and config.source:
            base = os.path.dirname(config.source)
            items = [os.path.join(base, p) if os.path.exists(os.path.join(base, p)) else p for p in config.paths]
        sources = _validate.source_files(items, app_dir)
        _validate.check_inline_suppressions(sources)
        _validate.check_repro(repro)
        if fix:
            _validate.check_fixable(sources)

        if jobs is not None and jobs < 1:
            raise UsageError(f"--jobs must be at least 1, got {jobs}")
        limit = _timeout_for(timeout, config)
        from . import _progress, _supervisor
        from .._jobs._parallel import default_jobs

        views = _views(diff, fix, show_jaxpr, repro, platforms, config.platforms)
        # fixes, jaxprs and repro subjects live on the in-process findings: the child checks every target itself,
        # with no cache, when they are asked for (a crash there ends the run: reported, never a pass)
        in_process = bool(diff or fix or show_jaxpr or repro)
        use_cache = not (no_cache or in_process or platforms)
        if use_cache:
            from .._jobs import _cache

            # here, not in the child: its warning must reach the user's stderr, not the captured output
            use_cache = _cache.usable(config.source)
        request = dict(paths=list(paths or []), app_dir=app_dir, seed=seed, select=selected, ignore=ignored,
                       keep_going=keep_going, include_tests=include_tests,
                       jobs=1 if in_process else jobs or default_jobs(), timeout=0 if in_process else limit,
                       cache=use_cache, bound_memory=True, isolate=not in_process,
                       **views)
        job = _supervisor.Job("check", request, label=" ".join(items) or "check", kind="module",
                              views={"diff": diff, "fix": fix, "repro": repro, "format": fmt, "output": output})
        verbosity = _verbosity(verbose, quiet)
        with _progress.display(verbosity >= 0) as progress:
            answer = _supervisor.run(job, progress=progress)
        _emit(answer, fmt, output, exit_zero, verbosity)


PATHS = Opt("paths", (), None, "Modules, packages, files or folders (default: `paths` under [tool.jaxdiag] in "
            "pyproject.toml).", kind=list, metavar="MODULE_OR_PATH")


def _paths_command(spec: Command) -> Callable[..., None]:
    """`jaxdiag check`: the registry's options, and MODULE_OR_PATH... instead of TARGET."""
    command = _registry_command(spec, _check)
    argument = inspect.Parameter("paths", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Optional[List[str]],
                                 default=typer.Argument(None, metavar=PATHS.metavar, help=PATHS.help))
    signature = command.__dict__["__signature__"]
    command.__dict__["__signature__"] = signature.replace(parameters=[argument, *signature.parameters.values()])
    return command


app.command(cls=JaxdiagCommand, rich_help_panel="Diagnose")(_paths_command(COMMANDS["check"]))


@app.command(cls=JaxdiagCommand, rich_help_panel="Diagnose")
def record(
    command: Optional[List[str]] = typer.Argument(None, help="The command to run, after `--`.", metavar="COMMAND..."),
    output: str = typer.Option(".jaxdiag/calls.json", "--output", help="Where to write the recorded calls.",
                               metavar="FILE"),
) -> None:
    """Run your examples or tests (`jaxdiag record -- pytest tests/`) and record every call of a user primitive or
    custom_* rule: avals, static args, bind params, value ranges. `jaxdiag check` then uses them as inputs."""
    with _guard():
        from .._jobs import _record

        code = _record.run_command(command or [], output)
        try:
            count = len(_record.read(output))
        except (OSError, ValueError, UsageError):  # the command wrote nothing readable: nothing was recorded
            count = 0
        typer.echo(f"jaxdiag: recorded {count} distinct call(s) in {output}", err=True)
    raise typer.Exit(code)


@app.command(cls=JaxdiagCommand, rich_help_panel="Reference")
def rules(
    code: Optional[str] = typer.Argument(None, metavar="CODE_OR_PREFIX",
                                         help="A rule code (JXB004) to explain, or a prefix (JXB) to list."),
    fmt: str = typer.Option("text", "--format", metavar="FORMAT",
                            help=f"Output format: {', '.join(RULES_FORMATS)} (default text)."),
) -> None:
    """List the rule catalog, or explain one rule with its bad and good example."""
    with _guard():
        from . import _docs

        if fmt not in RULES_FORMATS:
            raise UsageError(f"unknown --format {fmt!r}; choose one of {', '.join(RULES_FORMATS)}")
        chosen = _docs.select_rules(code)
        if fmt == "markdown":
            sys.stdout.write(_docs.rules_markdown(chosen))
        elif code is not None and len(chosen) == 1 and chosen[0].code == code.strip().upper():
            _docs.explain(chosen[0])
        else:
            _docs.table(chosen)


def main() -> None:
    """Console-script entry point. The user's code runs as under `python -c`, seeing the program name alone in
    `sys.argv`: a library that parses the command line on first use (absl's flags, an argparse of its own) raised on
    jaxdiag's options (`Unknown command line flag 'keep-going'`), failing every call into it. Workers and children
    started later inherit the same `sys.argv`."""
    arguments = sys.argv[1:]
    del sys.argv[1:]
    try:
        app(args=arguments)
    finally:
        sys.argv[1:] = arguments
