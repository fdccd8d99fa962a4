"""The CLI's help and error contract: plain, version-independent help (no `<bool>`/`{target}` metavars) with the
SPEC syntax and exit codes on every command, and every usage error that click/typer detects reformatted into the
one-line `jaxdiag: error:` contract with exit 2. Parent side: imports no JAX."""

from __future__ import annotations

import sys
from typing import Any, Sequence, cast

import typer
from typer.core import TyperCommand, TyperGroup

from .._core._report import (
    EXIT_CLEAN, EXIT_FINDINGS, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_NOT_VERIFIED, EXIT_TERMINATED, EXIT_USAGE,
)

# click's exception base, found through typer's public names: typer >= 0.2x vendors click, older releases use it.
ClickException: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")

EXIT_CODES = (
    (str(EXIT_CLEAN), "every discovered target was checked and no error or warning remains"),
    (str(EXIT_FINDINGS), "at least one error or warning (0 with --exit-zero)"),
    (str(EXIT_USAGE), "bad usage, configuration or target (one `jaxdiag: error:` line, nothing checked)"),
    (str(EXIT_INTERNAL), "jaxdiag's own internal error (never a pass)"),
    (str(EXIT_NOT_VERIFIED), "a discovered target was not verified: it crashed, exited, hung, timed out, had no "
                             "inputs, or its module failed to import; or nothing was discovered"),
    (str(EXIT_INTERRUPTED), "interrupted (Ctrl-C)"),
    (str(EXIT_TERMINATED), "terminated (SIGTERM)"),
)
DOCS_POINTER = ("Reference: docs/cli.md (every option, TARGET and SPEC, exit codes), docs/json.md (report formats), "
                "docs/rules.md or `jaxdiag rules CODE` (each rule), in the jaxdiag source distribution.")
SPEC_SYNTAX = (
    ("f32[2,3]", "dtype and shape of one positional argument, per example (no batch axis); dtypes f16 bf16 f32 "
                 "f64 c64 c128 i8..i64 u8..u64 bool"),
    ("f32[3]@positive", "draw values from a domain: @normal (default), @positive, @unit (0, 1), @small, @spd "
                        "(symmetric positive-definite matrices), or @LO..HI such as @-1..1"),
)


# ---------------------------------------------------------------------------------------------------------------
# Help and errors: plain, version-independent help (no `<bool>`/`{target}` metavars); every usage error that
# click/typer detects is reformatted into the one-line `jaxdiag: error:` contract with exit 2.
# ---------------------------------------------------------------------------------------------------------------


def _option_label(param: Any) -> str:
    names = sorted(list(param.opts) + list(param.secondary_opts), key=lambda o: (o.startswith("--"), o))
    label = ", ".join(names)
    if not getattr(param, "is_flag", False) and not getattr(param, "count", False):
        label += f" {param.metavar or param.name.upper()}"
    return label


def _argument_usage(param: Any) -> str:
    name = param.metavar or param.name.upper()
    if param.nargs == -1:
        name += "..."
    return name if param.required else f"[{name}]"


def _write_common_sections(formatter: Any, with_spec: bool) -> None:
    if with_spec:
        with formatter.section("SPEC (one --arg per positional argument)"):
            formatter.write_dl(SPEC_SYNTAX)
    with formatter.section("Exit codes"):
        formatter.write_dl(EXIT_CODES)
    # The lists above are summaries; the contract is written once, in docs/, and help says where.
    formatter.write_paragraph()
    formatter.write_text(DOCS_POINTER)


class JaxdiagCommand(TyperCommand):
    """A command whose help lists its options by panel, SPEC syntax and exit codes."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        params = self.get_params(ctx)
        arguments = [p for p in params if p.param_type_name == "argument"]
        formatter.write_usage(ctx.command_path, " ".join(["[OPTIONS]"] + [_argument_usage(a) for a in arguments]))
        if self.help:
            formatter.write_paragraph()
            with formatter.indentation():
                formatter.write_text(self.help.split("\n\n")[0])
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl([(_argument_usage(a).strip("[]"), getattr(a, "help", None) or "")
                                    for a in arguments])
        panels: dict[str, list[tuple[str, str]]] = {}
        for param in params:
            if param.param_type_name != "option":
                continue
            panel = getattr(param, "rich_help_panel", None) or "Options"
            panels.setdefault(panel, []).append((_option_label(param), getattr(param, "help", None) or ""))
        for panel, rows in panels.items():
            with formatter.section(panel):
                formatter.write_dl(rows)
        _write_common_sections(formatter, with_spec=ctx.command.name in ("batching", "grad", "sharding"))


class JaxdiagGroup(TyperGroup):
    """The root command: plain help, and the one-line error contract for every usage error."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        formatter.write_usage(ctx.command_path, "[OPTIONS] COMMAND [ARGS]...")
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(self.help or "")
        panels: dict[str, list[tuple[str, str]]] = {}
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            panel = getattr(command, "rich_help_panel", None) or "Commands"
            panels.setdefault(panel, []).append((name, command.get_short_help_str(limit=90)))
        for panel, rows in panels.items():
            with formatter.section(panel):
                formatter.write_dl(rows)
        with formatter.section("Options"):
            formatter.write_dl([(_option_label(p), getattr(p, "help", None) or "") for p in self.get_params(ctx)
                                if p.param_type_name == "option"])
        formatter.write_paragraph()
        formatter.write_text("Run `jaxdiag COMMAND -h` for a command's options, `jaxdiag rules` for the rule "
                             "catalog.")
        _write_common_sections(formatter, with_spec=True)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        from ._supervisor import Interrupted

        try:
            result = super().main(args=args, prog_name=prog_name or "jaxdiag", complete_var=complete_var,
                                  standalone_mode=False, windows_expand_args=windows_expand_args, **extra)
            code = result if isinstance(result, int) else EXIT_CLEAN
        except typer.Exit as exc:  # raised outside invoke (eager --version)
            code = exc.exit_code
        except ClickException as exc:
            context = getattr(exc, "ctx", None)
            if type(exc).__name__ == "NoArgsIsHelpError" and context is not None:  # click >= 8.2: bare `jaxdiag`
                typer.echo(context.get_help())
                code = EXIT_CLEAN
            else:
                typer.echo(f"jaxdiag: error: {one_line(cast(Any, exc).format_message())}", err=True)
                code = EXIT_USAGE
        except (typer.Abort, KeyboardInterrupt):
            typer.echo("jaxdiag: error: interrupted", err=True)
            code = EXIT_INTERRUPTED
        except Interrupted as exc:  # SIGINT/SIGTERM outside a command body
            code = interrupted_exit(exc)
        if standalone_mode:
            sys.exit(code)
        return code


def one_line(message: str) -> str:
    return " ".join(message.split())


def interrupted_exit(exc: BaseException) -> int:
    """One line and the exit code for SIGINT (130) or SIGTERM (143) that reached the supervisor."""
    import signal

    term = getattr(exc, "signum", None) == signal.SIGTERM
    typer.echo(f"jaxdiag: error: {'terminated' if term else 'interrupted'}", err=True)
    return EXIT_TERMINATED if term else EXIT_INTERRUPTED
