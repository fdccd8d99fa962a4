"""The command line: parse arguments, call the engine, render the report, choose the exit code. No check logic.

Exit codes (DESIGN.md): 0 clean, 1 an error or warning remains, 2 usage/configuration/target-loading error,
3 jaxdiag's own internal error. `--exit-zero` turns 1 into 0.
"""

from __future__ import annotations

import os
import sys
from typing import Any, List, Optional

import typer

from . import __version__

app = typer.Typer(
    name="jaxdiag",
    help="Diagnose JAX extension code: custom primitives and their rules, custom_vjp, custom_jvp, custom_vmap.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

FORMAT_NAMES = ("text", "json", "sarif", "github", "junit")
EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

# Options shared by the diagnose commands.
ArgOpt = typer.Option(None, "--arg", help="Example input per positional argument, e.g. f32[2,3] (repeat).",
                      metavar="SPEC")
ParamOpt = typer.Option(None, "--param", help="Primitive bind parameter NAME=VALUE (Python literal or dtype name).",
                        metavar="NAME=VALUE")
FormatOpt = typer.Option("text", "--format", help="Output format: text, json, sarif, github, junit.")
OutputOpt = typer.Option(None, "--output", help="Write the report to FILE instead of stdout.", metavar="FILE")
SelectOpt = typer.Option(None, "--select", help="Only report these codes or prefixes (comma-separated).",
                         metavar="CODES", rich_help_panel="Filtering")
IgnoreOpt = typer.Option(None, "--ignore", help="Do not report these codes or prefixes (comma-separated).",
                         metavar="CODES", rich_help_panel="Filtering")
SeedOpt = typer.Option(None, "--seed", help="Seed for the random example inputs (default 0, or pyproject's seed).")
ExitZeroOpt = typer.Option(False, "--exit-zero", help="Exit 0 even when errors or warnings are found.")
AppDirOpt = typer.Option(".", "--app-dir", help="Directory put on sys.path before importing the target.",
                         metavar="DIR")
IncludeJaxOpt = typer.Option(False, "--include-jax", help="Also check JAX's own primitives found in a function.")


def _version_callback(value: bool) -> None:
    if value:
        from . import _compat

        typer.echo(f"jaxdiag {__version__} (jax {_compat.JAX_VERSION}, jaxlib {_compat.JAXLIB_VERSION})")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                 help="Show jaxdiag, jax and jaxlib versions and exit."),
) -> None:
    """jaxdiag: find the defect in your JAX rule, prove it, point at the line, give the fix."""


def _fail(message: str, code: int = EXIT_USAGE) -> "typer.Exit":
    typer.echo(f"jaxdiag: error: {message}", err=True)
    return typer.Exit(code)


def _split_codes(values: Optional[List[str]]) -> list[str]:
    return [c.strip().upper() for v in values or [] for c in v.split(",") if c.strip()]


def _check_format(fmt: str) -> None:
    if fmt not in FORMAT_NAMES:
        raise _fail(f"unknown --format {fmt!r}; choose one of {', '.join(FORMAT_NAMES)}")


def _emit(report: Any, fmt: str, output: Optional[str], exit_zero: bool) -> None:
    """Render, write, and exit with the contract's code."""
    from ._render import render
    from ._render.text import draw, make_console

    try:
        if fmt == "text" and output is None:
            draw(report, make_console())
        else:
            text = render(report, fmt)
            if output:
                with open(output, "w", encoding="utf-8") as handle:
                    handle.write(text)
            else:
                sys.stdout.write(text)
                sys.stdout.flush()
    except OSError as exc:  # --output in a missing folder, a closed pipe: the user's environment
        raise _fail(f"cannot write the report: {exc}") from None
    except Exception as exc:  # a renderer crashed: jaxdiag's own bug, never a pass
        if os.environ.get("JAXDIAG_DEBUG"):
            raise
        raise _fail(f"internal error while rendering the report: {type(exc).__name__}: {exc} (set JAXDIAG_DEBUG=1 "
                    "for the traceback)", EXIT_INTERNAL) from None
    # Report.exit_code: 3 internal error (wins), 2 import failure (--keep-going), 1 error/warning, 0 clean.
    code = report.exit_code
    raise typer.Exit(EXIT_CLEAN if code == EXIT_FINDINGS and exit_zero else code)


def _diagnose(command: str, target: str, args: Optional[List[str]], params: Optional[List[str]], fmt: str,
              output: Optional[str], select: Optional[List[str]], ignore: Optional[List[str]], seed: Optional[int],
              exit_zero: bool, app_dir: str, **options: Any) -> None:
    _check_format(fmt)
    from ._errors import UsageError

    try:
        from . import _config, _engine
        from ._checks._base import Options
        from ._inputs import parse_arg, parse_axes, parse_param

        config = _config.load(app_dir)
        specs = [parse_arg(a) for a in args or []]
        bind_params = dict(parse_param(p) for p in params or [])
        if "in_axes" in options:
            options["in_axes"] = parse_axes(options["in_axes"], "--in-axes")
            options["out_axes"] = parse_axes(options["out_axes"], "--out-axes")
        opts = Options(command=command, seed=seed if seed is not None else config.seed, **options)
        report = _engine.run(target, specs, bind_params, opts,
                             select=_split_codes(select) or config.select,
                             ignore=_split_codes(ignore) + config.ignore, app_dir=app_dir,
                             per_target_ignore=config.ignores_for(target))
    except UsageError as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        raise _fail("interrupted", EXIT_USAGE) from None
    except Exception as exc:  # jaxdiag's own bug: say so, with exit 3
        if os.environ.get("JAXDIAG_DEBUG"):
            raise
        raise _fail(f"internal error: {type(exc).__name__}: {exc} (set JAXDIAG_DEBUG=1 for the traceback)",
                    EXIT_INTERNAL) from None
    _emit(report, fmt, output, exit_zero)


@app.command(rich_help_panel="Diagnose")
def batching(
    target: str = typer.Argument(..., help="pkg.module:attr or path/to/file.py:attr"),
    arg: Optional[List[str]] = ArgOpt,
    param: Optional[List[str]] = ParamOpt,
    in_axes: Optional[str] = typer.Option(None, "--in-axes", help="Reproduce vmap with these in_axes, e.g. 1,None."),
    out_axes: Optional[str] = typer.Option(None, "--out-axes",
                                           help="Reproduce vmap with these out_axes, e.g. [0,None]."),
    fmt: str = FormatOpt,
    output: Optional[str] = OutputOpt,
    select: Optional[List[str]] = SelectOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    seed: Optional[int] = SeedOpt,
    exit_zero: bool = ExitZeroOpt,
    app_dir: str = AppDirOpt,
    include_jax: bool = IncludeJaxOpt,
) -> None:
    """Check batching: registration, the batching rule's returns, and vmap against a per-example loop."""
    _diagnose("batching", target, arg, param, fmt, output, select, ignore, seed, exit_zero, app_dir,
              in_axes=in_axes, out_axes=out_axes, include_jax=include_jax)


@app.command(rich_help_panel="Diagnose")
def grad(
    target: str = typer.Argument(..., help="pkg.module:attr or path/to/file.py:attr"),
    arg: Optional[List[str]] = ArgOpt,
    param: Optional[List[str]] = ParamOpt,
    order: int = typer.Option(1, "--order", min=1, max=2, help="1: first-order checks; 2: also grad-of-grad."),
    fmt: str = FormatOpt,
    output: Optional[str] = OutputOpt,
    select: Optional[List[str]] = SelectOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    seed: Optional[int] = SeedOpt,
    exit_zero: bool = ExitZeroOpt,
    app_dir: str = AppDirOpt,
    include_jax: bool = IncludeJaxOpt,
) -> None:
    """Check differentiation: custom_vjp/custom_jvp rules, JVP and transpose rules, against references."""
    _diagnose("grad", target, arg, param, fmt, output, select, ignore, seed, exit_zero, app_dir,
              order=order, include_jax=include_jax)


@app.command(rich_help_panel="Diagnose")
def check(
    paths: Optional[List[str]] = typer.Argument(None, help="Modules, packages or files (default: pyproject paths)."),
    fmt: str = FormatOpt,
    output: Optional[str] = OutputOpt,
    select: Optional[List[str]] = SelectOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    seed: Optional[int] = SeedOpt,
    exit_zero: bool = ExitZeroOpt,
    app_dir: str = AppDirOpt,
    keep_going: bool = typer.Option(False, "--keep-going", help="Report modules that fail to import; check the rest."),
    include_tests: bool = typer.Option(False, "--include-tests", help="Also walk test modules in packages."),
    jobs: Optional[int] = typer.Option(None, "-j", "--jobs", help="Worker processes (default: the number of cores; "
                                       "1 with --timeout 0: all in this process).", metavar="N"),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Seconds per target before it is stopped and "
                                            "reported (default: pyproject's timeout, else 300; 0: no limit).",
                                            metavar="S"),
    no_cache: bool = typer.Option(False, "--no-cache", help="Check every target again, ignoring .jaxdiag_cache/."),
) -> None:
    """CI lint: discover every primitive and custom_* function, run every check."""
    _check_format(fmt)
    from ._errors import UsageError

    if jobs is not None and jobs < 1:
        raise _fail(f"--jobs must be at least 1, got {jobs}")
    if timeout is not None and timeout < 0:
        raise _fail(f"--timeout must be a number of seconds >= 0 (0: no limit), got {timeout:g}")
    try:
        from . import _config, _lint, _parallel

        if timeout is None:
            timeout = _config.load(app_dir).timeout
        report = _lint.check_paths(paths or [], app_dir=app_dir, seed=seed, select=_split_codes(select),
                                   ignore=_split_codes(ignore), keep_going=keep_going, include_tests=include_tests,
                                   jobs=jobs or _parallel.default_jobs(),
                                   timeout=_parallel.DEFAULT_TIMEOUT if timeout is None else timeout,
                                   cache=not no_cache)
    except UsageError as exc:
        raise _fail(str(exc)) from None
    except Exception as exc:
        if os.environ.get("JAXDIAG_DEBUG"):
            raise
        raise _fail(f"internal error: {type(exc).__name__}: {exc} (set JAXDIAG_DEBUG=1 for the traceback)",
                    EXIT_INTERNAL) from None
    _emit(report, fmt, output, exit_zero)


@app.command(rich_help_panel="Diagnose")
def record(
    command: Optional[List[str]] = typer.Argument(None, help="The command to run, after `--`.", metavar="COMMAND..."),
    output: str = typer.Option(".jaxdiag/calls.json", "--output", help="Where to write the recorded calls.",
                               metavar="FILE"),
) -> None:
    """Run your examples or tests (`jaxdiag record -- pytest tests/`) and record every call of a user primitive or
    custom_* rule: avals, static args, bind params, value ranges. `jaxdiag check` then uses them as inputs."""
    from ._errors import UsageError

    try:
        from . import _record

        code = _record.run_command(command or [], output)
    except UsageError as exc:
        raise _fail(str(exc)) from None
    try:
        count = len(_record.read(output))
    except (OSError, ValueError):
        count = 0
    typer.echo(f"jaxdiag: recorded {count} distinct call(s) in {output}", err=True)
    raise typer.Exit(code)


@app.command(rich_help_panel="Reference")
def rules(code: Optional[str] = typer.Argument(None, help="A rule code such as JXB004; omit to list all.")) -> None:
    """List the rule catalog, or explain one rule with its bad and good example."""
    from rich.console import Console
    from rich.markdown import Markdown
    from rich.syntax import Syntax
    from rich.table import Table

    from . import _rules

    console = Console(highlight=False)
    if code is None:
        table = Table("code", "name", "severity", "summary", box=None, show_edge=False)
        for r in _rules.iter_rules():
            table.add_row(r.code, r.name, r.severity, r.summary)
        console.print(table)
        return
    try:
        r = _rules.rule(code)
    except KeyError:
        known = ", ".join(sorted(_rules.RULES))
        raise _fail(f"unknown rule code {code!r}; known codes: {known}") from None
    console.print(f"[bold]{r.code} {r.name}[/bold] ({r.severity}, {r.category})")
    console.print(r.summary)
    console.print(Markdown(r.explanation))
    for which, heading in (("bad", "Example"), ("good", "Use instead:")):
        text, path = r.sample_text(which), r.sample_path(which)
        if text and path is not None:
            console.print(f"\n[bold]{heading}[/bold] (samples/{path.name})")
            console.print(Syntax(text, "python", line_numbers=True, theme="ansi_dark", background_color="default"))


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except SystemExit:
        raise
