"""The registry of commands: which check families each command runs, which options it takes, which rule prefixes
its findings carry. The CLI's diagnose commands (`_cli`), the Python API (`_api`), the pytest fixture's methods
(`pytest_plugin`), `Options.runs` and the options table of docs/cli.md are all generated from `COMMANDS` and
`FAMILIES`; adding a check family is one `Family` entry (plus its package under `_checks/`) and, for a command of
its own, one `Command` entry (CONTRIBUTING.md has the recipe).

Parent side: this module imports neither JAX nor any check, so the CLI can build its commands from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

# ---------------------------------------------------------------------------------------------------------------
# Options. `name` is the Python name everywhere: the CLI function's parameter, the API keyword and the `Options`
# field the checks read (an option of a family without a typed `Options` field arrives in `Options.extra`).
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Opt:
    """One option: its spellings, default, help text, and how the CLI parses its text."""

    name: str
    flags: tuple[str, ...]
    default: Any
    help: str
    kind: Any = bool  # the CLI's parameter type: bool (a flag), int, float, str, or list (repeatable str)
    metavar: str = ""
    panel: str = ""  # the --help section; "" for the command's own options
    parse: str = ""  # "axes": the text is parsed with `_cli_values.parse_axes` (the API takes Python values)
    api: bool = True  # also a keyword of the API function (False for CLI-only output/selection options)
    api_default: Any = None  # the API's default where it differs from the CLI's (None: the same)
    bounds: tuple[int, int] | None = None  # an int's inclusive range, checked by the CLI's parser
    doc: str = ""  # the contract's text: docs/cli.md's options table is generated from it (`_docs.options_table`)


FORMAT_NAMES = ("text", "json", "sarif", "github", "junit", "issue")

TARGET = Opt("target", (), None, "pkg.module:attr or path/to/file.py:attr", kind=str, metavar="TARGET")

OUTPUT_OPTIONS = (
    Opt("fmt", ("--format",), "text", f"Output format: {', '.join(FORMAT_NAMES)} (default text).", kind=str,
        metavar="FORMAT", panel="Output", api=False,
        doc="`text` (default; colour only on a terminal, `NO_COLOR` honoured), `json`, `sarif`, `github`,"
            " `junit` ([json.md](json.md)) or `issue` (a Markdown issue per finding located in a library "
            "outside the project, [ci.md](ci.md#reporting-a-librarys-bug-upstream))"),
    Opt("output", ("--output",), None, "Write the report to FILE instead of stdout.", kind=str, metavar="FILE",
        panel="Output", api=False,
        doc="write the report to FILE; its folder must exist (checked before anything runs)"),
    Opt("verbose", ("--verbose", "-v"), False, "Show every note in full (inferred inputs, skipped checks).",
        panel="Output", api=False,
        doc="show every note in full (by default a note is one line and inferred inputs are shown in the "
            "target's header)"),
    Opt("quiet", ("--quiet", "-q"), False, "Only errors, warnings and the summary line.", panel="Output", api=False,
        doc="only targets with errors or warnings, and the summary line"),
)
FILTER_OPTIONS = (
    Opt("select", ("--select",), None, help="Only report these rule codes or prefixes, comma-separated "
        "(e.g. JXB,JXG011).", kind=list, metavar="CODES", panel="Filtering", api=False,
        doc="only report these codes or prefixes, comma-separated (`--select JXB,JXG011`)"),
    Opt("ignore", ("--ignore",), None, "Do not report these rule codes or prefixes, comma-separated.", kind=list,
        metavar="CODES", panel="Filtering", api=False,
        doc="do not report these codes or prefixes"),
    Opt("exit_zero", ("--exit-zero",), False, "Exit 0 even when errors or warnings are found.", panel="Filtering",
        api=False,
        doc="exit 0 even when errors or warnings remain"),
)
RUN_OPTIONS = (
    Opt("seed", ("--seed",), None, "Seed for the random example inputs (default 0, or `seed` in pyproject.toml).",
        kind=int, metavar="N", api=False,
        doc="seed of the random example inputs (default 0, or `seed` under `[tool.jaxdiag]`)"),
    Opt("app_dir", ("--app-dir",), ".", "Directory put on sys.path before importing the target (default: .).",
        kind=str, metavar="DIR", api=False,
        doc="put DIR on `sys.path` before importing (default `.`; must be a directory)"),
)
TIMEOUT = Opt("timeout", ("--timeout",), None, "Seconds the target may run before it is stopped and reported as "
              "not verified (default: pyproject's timeout, else 300; 0: no limit).", kind=float, metavar="S",
              api=False,
              doc="seconds a target may run (default 300, or `timeout` under `[tool.jaxdiag]`; 0: no "
                  "limit); a target past it is stopped and reported as JXU004 (an error, not verified: "
                  "exit 5), the run goes on")
TARGET_OPTIONS = (
    Opt("arg", ("--arg",), None, "Example input per positional argument, e.g. f32[2,3] or f32[3]@positive "
        "(repeat, in order; see SPEC below). Default: inferred.", kind=list, metavar="SPEC", api=False,
        doc="one per positional argument, per example, in order"),
    Opt("param", ("--param",), None, "Primitive bind parameter, VALUE a Python literal or dtype name (repeat).",
        kind=list, metavar="NAME=VALUE", api=False,
        doc="a primitive's bind parameter; VALUE is a Python literal or a dtype name"),
)
INCLUDE_JAX = Opt("include_jax", ("--include-jax",), False, "Also check JAX's own primitives found in a function.",
                  doc="also check JAX's own primitives and custom rules found inside a function")
EVIDENCE_OPTIONS = (
    Opt("diff", ("--diff",), False, "Print the verified fixes as a unified diff (git apply / patch -p1).",
        panel="Evidence and fixes", api=False,
        doc="print the verified fixes as one unified diff (`a/` `b/` paths, for `git apply` or `patch "
            "-p1`) on stdout, or to `--output FILE`; the text report (without the diffs) and a `N "
            "verified fix(es)` line go to stderr, so stdout is always exactly the patch (empty when "
            "nothing is verified): `jaxdiag check --diff > fix.patch` (ruff's split: the diff on stdout, "
            "the rest on stderr). The exit code is the report's. With another `--format`, each finding "
            "carries its verified diff in its `diff` field instead"),
    Opt("fix", ("--fix",), False, "Apply the verified fixes to the files.", panel="Evidence and fixes", api=False,
        doc="apply the verified fixes to the files"),
    Opt("show_jaxpr", ("--show-jaxpr",), False, "Show the jaxpr of the transformation that exposed each defect.",
        panel="Evidence and fixes", api=False,
        doc="show the jaxpr of the transformation that exposed each defect, the user's equations marked "
            "`<-- path:line (fn)`; a transformation that raised is named with the first whole sentence(s)"
            " of its error"),
    Opt("repro", ("--repro",), None, "Write one plain-JAX script per finding to DIR.", kind=str, metavar="DIR",
        panel="Evidence and fixes", api=False,
        doc="write one plain-JAX script per finding to DIR; each fails as the defect does"),
    Opt("platforms", ("--platforms",), None, "Platforms that need a lowering: cpu,cuda,rocm,tpu (default cpu).",
        kind=str, metavar="LIST", panel="Evidence and fixes", api=False,
        doc="platforms that need a lowering, e.g. `cpu,cuda` (default `cpu`; `platforms` under "
            "`[tool.jaxdiag]`)"),
)


# ---------------------------------------------------------------------------------------------------------------
# Families and commands
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    """A check family: the check modules (under `jaxdiag._checks`, in run order) whose `CHECKS` carry
    `family=name`, and the rule prefixes their findings use."""

    name: str
    modules: tuple[str, ...]
    prefixes: tuple[str, ...]
    needs_arrays: bool = False  # a subject with no array argument is skipped ("nothing to batch")


@dataclass(frozen=True)
class Command:
    """A diagnose command: `jaxdiag NAME TARGET`, the API's `check_NAME` (`api_name`), the fixture's method of the
    same name. `runner` says where its checks run: "engine" (this package's engine, in the supervisor's child) or
    "sharding" (a child with its own virtual devices)."""

    name: str
    summary: str
    families: tuple[str, ...]
    options: tuple[Opt, ...] = ()
    runner: str = "engine"
    evidence: bool = True  # takes --diff/--fix/--show-jaxpr/--repro/--platforms
    api_name: str = ""  # default: check_<name>
    paths: bool = False  # the CLI takes modules and paths (the lint), not one TARGET with --arg/--param
    api_doc: str = ""  # the API function's first line, where it differs from `summary`

    @property
    def function_name(self) -> str:
        return self.api_name or f"check_{self.name}"

    @property
    def prefixes(self) -> tuple[str, ...]:
        return tuple(p for f in self.families for p in FAMILIES[f].prefixes)

    @property
    def cli_options(self) -> tuple[Opt, ...]:
        """Every option of the CLI command, in --help order."""
        evidence = EVIDENCE_OPTIONS if self.evidence else ()
        targeted = () if self.paths else TARGET_OPTIONS
        include_jax = () if self.paths else (INCLUDE_JAX,)
        return (*targeted, *self.options, *OUTPUT_OPTIONS, *FILTER_OPTIONS, *RUN_OPTIONS, *include_jax, *evidence,
                TIMEOUT)

    @property
    def api_options(self) -> tuple[Opt, ...]:
        """The keywords of the API function beyond the common ones (`seed`, `select`, ... in `_api`)."""
        return tuple(o for o in (*self.options, INCLUDE_JAX) if o.api)


# Every family whose checks run in the engine, in run order (registration before batching, batching before grad).
FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("batching", ("_registration", "_platforms", "_portability", "_batching", "_custom_vmap", "_ffi"),
           ("JXB", "JXR", "JXV"), needs_arrays=True),
    Family("grad", ("_portability", "_custom_vmap", "_custom_vjp", "_custom_jvp", "_primitive_ad", "_solves", "_grad",
                     "_grad_second_order"),
           ("JXG",)),
    Family("sharding", ("_sharding", "_sharding_rules", "_sharding_map", "_sharding_gather"), ("JXS",)),
)}
# Findings of every command may also carry these: notes about the run (JXN) and user code that ended it (JXU).
COMMON_PREFIXES = ("JXN", "JXU")

COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command("batching", "Check batching: registration, the batching rule's returns, and vmap against a per-example "
            "loop.", ("batching",), options=(
                Opt("in_axes", ("--in-axes",), None, "Reproduce vmap with these in_axes, e.g. 1,None.", kind=str,
                    metavar="AXES", parse="axes",
                    doc="reproduce `vmap` with these `in_axes`, e.g. `1,None`"),
                Opt("out_axes", ("--out-axes",), None, "Reproduce vmap with these out_axes, e.g. [0,None].",
                    kind=str, metavar="AXES", parse="axes",
                    doc="reproduce `vmap` with these `out_axes`, e.g. `[0,None]`"),
            )),
    Command("grad", "Check differentiation: custom_vjp/custom_jvp rules, JVP and transpose rules, against "
            "references.", ("grad",), options=(
                Opt("order", ("--order",), 1, "1: first-order checks (default); 2: also grad-of-grad.", kind=int,
                    metavar="1|2", bounds=(1, 2),
                    doc="`2` adds grad-of-grad and jvp-of-vjp checks"),
            )),
    Command("sharding", "Check sharding on a virtual CPU mesh: jit on sharded inputs, custom_partitioning, Shardy "
            "rules, shard_map, gathering cost. Runs in a child process with its own XLA_FLAGS.", ("sharding",),
            options=(
                Opt("mesh", ("--mesh",), "2x4", "Virtual CPU mesh shape, e.g. 2x4 (8 devices) or 8; at most 64.",
                    kind=str, metavar="SHAPE", api_default=(2, 4),
                    doc="virtual CPU mesh, axis sizes joined by `x` (default `2x4`: 8 devices, axes `a`, "
                        "`b`; at most 64 devices); the checks run in a child process whose `XLA_FLAGS` "
                        "asks for that many host devices"),
            ), runner="sharding", evidence=False),
    # `jaxdiag check` is the lint over modules and paths (discovery, workers, cache: `_lint`); on one target, the
    # API's `check_all` runs every engine family as it does.
    Command("check", "CI lint: discover every primitive and custom_* function in modules or paths, run every check.",
            ("batching", "grad"), api_name="check_all", paths=True,
            api_doc="Run every check family (batching and grad) on one target, as `jaxdiag check` does.", options=(
                Opt("keep_going", ("--keep-going",), False, "Report modules that fail to import; check the rest.",
                    api=False,
                    doc="report modules that fail to import and check the rest (the run still exits 2)"),
                Opt("include_tests", ("--include-tests",), False, "Also walk test modules in packages.", api=False,
                    doc="also walk the `tests`/`test_*` modules of packages and their test helpers (`testing`/"
                        "`_testing` modules)"),
                Opt("jobs", ("-j", "--jobs"), None, "Worker processes (default: the number of cores; 1 with "
                    "--timeout 0: all in this process).", kind=int, metavar="N", api=False,
                    doc="worker processes (default: the number of cores); the report is the same as with "
                        "`-j 1`"),
                Opt("no_cache", ("--no-cache",), False, "Check every target again: do not read or write the result "
                    "cache.", api=False,
                    doc="check every target again: the result cache is neither read nor written, and "
                        "compiled programs are shared through a temporary folder removed when the run "
                        "ends (see [Cache](#cache)); the cache is also off with `--diff`, `--fix`, "
                        "`--show-jaxpr`, `--repro` and `--platforms`"),
            )),
)}

# The commands whose CLI function `_cli` generates whole (`check`'s body is the lint's: it takes paths).
TARGET_COMMANDS = tuple(name for name, c in COMMANDS.items() if not c.paths)


def command(name: str) -> Command:
    try:
        return COMMANDS[name]
    except KeyError:
        raise ValueError(f"unknown command {name!r}; choose one of {', '.join(COMMANDS)}") from None


def runs(command_name: str, family: str) -> bool:
    """Whether `command_name`'s checks include `family`'s."""
    spec = COMMANDS.get(command_name)
    return spec is not None and family in spec.families


def engine_families() -> tuple[Family, ...]:
    """The families whose checks run in the engine, in run order."""
    return tuple(f for f in FAMILIES.values() if any(f.name in c.families for c in COMMANDS.values()
                                                     if c.runner == "engine"))


def option_default(opt: Opt) -> Optional[Any]:
    """The API default of an option."""
    return opt.default if opt.api_default is None else opt.api_default


def documented_options() -> list[tuple[Opt, tuple[str, ...]]]:
    """Every option of the diagnose commands once, in docs/cli.md's order, with the commands that take it."""
    order = (*OUTPUT_OPTIONS, *FILTER_OPTIONS, *RUN_OPTIONS, INCLUDE_JAX, *TARGET_OPTIONS,
             *(o for c in COMMANDS.values() for o in c.options), TIMEOUT, *EVIDENCE_OPTIONS)
    seen: dict[str, tuple[Opt, tuple[str, ...]]] = {}
    for opt in order:
        if opt.name not in seen:
            having = tuple(c.name for c in COMMANDS.values() if any(o is opt for o in c.cli_options))
            seen[opt.name] = (opt, having)
    return list(seen.values())
