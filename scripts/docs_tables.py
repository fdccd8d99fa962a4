"""Generate the docs' tables and examples from the samples: the "What JAX says vs what jaxdiag says" table
(docs/jax-vs-jaxdiag.md) and the `--diff` / `--show-jaxpr` examples (docs/fixes.md).

For every catalog rule with a bad sample (`samples/<code>_bad.py`):
- what plain JAX does when a user makes the natural call on the sample's target (`scripts/jax_says.py`): the first
  line of the exception, type included, or "nothing: wrong result (...)";
- what jaxdiag says: the first sentence of that rule's finding from `jaxdiag check samples/<code>_bad.py` (or, for a
  rule `check` does not run by default, from the command that does, e.g. `jaxdiag grad --order 2`).

    python scripts/docs_tables.py            # rewrite the table and the examples
    python scripts/docs_tables.py --print    # print the table, write nothing
    python scripts/docs_tables.py --check    # exit 1 with a diff if the table or an example is stale
    python scripts/docs_tables.py --check --rows-from-tests   # CI: the slow tier compares the rows
    python scripts/docs_tables.py --examples-only   # rewrite only the `--diff` / `--show-jaxpr` examples

The slow tier runs every sample anyway (`jaxdiag check` in tests/test_samples_table.py, `jaxdiag sharding` on the
JXS ones in tests/test_sharding.py) and compares each row with that run (`row_cells`, `jaxdiag_cell`, `row_line`);
`--rows-from-tests` trusts those rows as the doc holds them and checks the rest (the header, the set and order of
rows, the examples and docs/cli.md's options table), so CI does not run every bad sample twice.

The examples (blocks `<!-- example:NAME -->` in docs/fixes.md) come from running those commands on the samples.

The table records the JAX version it was generated with. `--check` on another JAX release prints a notice and exits
0: messages legitimately differ between releases (CI checks on the newest JAX). Inputs are seeded, so two runs on
the same JAX release produce the same table.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import multiprocessing
import os
import re
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
TABLE_DOC = ROOT / "docs" / "jax-vs-jaxdiag.md"  # holds the <!-- table:jax-vs-jaxdiag --> block
EXAMPLES_DOC = ROOT / "docs" / "fixes.md"  # holds the <!-- example:NAME --> blocks
SAMPLES = ROOT / "samples"
BEGIN, END = "<!-- table:jax-vs-jaxdiag -->", "<!-- /table:jax-vs-jaxdiag -->"
JAX_WIDTH = 110  # characters of JAX's message kept
JAXDIAG_WIDTH = 220  # characters of jaxdiag's first sentence kept
VERSION_RE = re.compile(r"with jax ([0-9][0-9A-Za-z.+-]*)")

# Rules that `jaxdiag check` does not report with its defaults, and the command (and API options) that does, e.g.
# `"JXG019": ("grad --order 2", {"order": 2})` (no longer needed: `check` runs the second-order check).
# The JXS rules are reported by `jaxdiag sharding` (`check` runs it only with `sharding = true`): `sharding_rows`.
SPECIAL_COMMANDS: dict[str, tuple[str, dict[str, Any]]] = {}

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


@contextlib.contextmanager
def _in_root() -> Iterator[None]:
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(cwd)


def _clean(text: str) -> str:
    """One line, no machine-specific paths or addresses, so the table is the same on every machine."""
    text = text.replace(str(ROOT) + os.sep, "").replace(str(ROOT), ".")
    text = re.sub(r"0x[0-9a-fA-F]{6,}", "0x…", text)
    text = re.sub(r"(/[\w.+-]+)+/(site-packages|dist-packages)/", "", text)
    return " ".join(text.split())


def _trim(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def first_line(exc: BaseException) -> str:
    """`Type: first line`; array values printed in the message are elided (`Array(…)`), and a first line that
    only announces what follows (ends with `:`) gets the next line too."""
    text = re.sub(r"Array\((\[.*?\]|[^()]*?)(, dtype=\w+)?\)", "Array(…)", str(exc), flags=re.S)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    message = lines[0] if lines else ""
    if message.endswith(":") and len(lines) > 1:
        message = f"{message} {lines[1]}"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def first_sentence(text: str) -> str:
    """Up to the first `. ` followed by a capital letter or a backtick, outside backticks."""
    ticks = 0
    for i, ch in enumerate(text):
        if ch == "`":
            ticks += 1
        elif ch in ".!?" and ticks % 2 == 0 and i + 2 < len(text) and text[i + 1] == " " and (
                text[i + 2].isupper() or text[i + 2] == "`"):
            return text[: i + 1]
    return text


def _register_ffi_kernels(name: str) -> None:
    """The JXB02x samples call FFI kernels (built and registered by tests/ffi_build.py; without them the samples
    fall back to callbacks, and the rows would say so)."""
    if name.startswith("jxb02"):
        sys.path.insert(0, str(SAMPLES.parent / "tests"))
        import ffi_build

        ffi_build.register()


def load_sample(name: str) -> ModuleType:
    """Import samples/<name> under a private module name (the FFI kernels the JXB02x samples call are built and
    registered by tests/ffi_build.py first)."""
    _register_ffi_kernels(name)
    path = SAMPLES / name
    spec = importlib.util.spec_from_file_location(f"_jax_says_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def what_jax_says(code: str, name: str) -> str:
    from jax_says import JAX_SAYS

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            module = load_sample(name)
            result = JAX_SAYS[code](module) or "nothing"
        except Exception as exc:  # what JAX (or the user's rule under JAX) raised: the point of the table
            return _trim(_clean(first_line(exc)), JAX_WIDTH)
    noted = [w for w in caught if issubclass(w.category, (DeprecationWarning, FutureWarning, UserWarning))
             and "jax" in (w.filename or "") + str(w.message).lower()]
    if noted:
        w = noted[0]
        result += f"; warns {w.category.__name__}: {str(w.message).splitlines()[0]}"
    return _trim(_clean(result), JAX_WIDTH)


def _quiet() -> contextlib.AbstractContextManager:
    return contextlib.redirect_stderr(io.StringIO())


def what_jaxdiag_says(code: str, name: str) -> tuple[str, str]:
    """(first sentence of the finding for `code`, the command that produced it)."""
    import jaxdiag
    from jaxdiag._jobs._lint import check_paths

    with _in_root(), _quiet(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if code not in SPECIAL_COMMANDS:
            _register_ffi_kernels(name)
            return jaxdiag_cell(code, check_paths([f"samples/{name}"], keep_going=True).findings), \
                f"check samples/{name}"
        command, options = SPECIAL_COMMANDS[code]
        findings = []
        for attr, config in getattr(load_sample(name), "JAXDIAG", {}).items():
            api = jaxdiag.check_grad if code.startswith("JXG") else jaxdiag.check_batching
            report = api(f"samples/{name}:{attr}", *config.get("args", []), **options, **config.get("params", {}))
            findings += report.findings
    return jaxdiag_cell(code, findings), f"{command} samples/{name}:…"


def sharding_rows(codes: list[str]) -> list[tuple[str, str, str, str, str]]:
    """`_row` for the JXS rules, whose findings come from `jaxdiag sharding` on the targets each bad sample's
    `JAXDIAG` dict names: every sample in one child process on the default mesh (as `check_sharding` runs each, and
    a child per sample costs a JAX start-up each)."""
    from jaxdiag._core._filtering import Filter
    from jaxdiag._mesh._sharding import DEFAULT_MESH, run_in_child
    from jaxdiag._rules import rule

    names = {code: rule(code).bad_sample for code in codes}
    entries = [{"ref": f"samples/{name}:{attr}", "args": list(config.get("args", [])),
                "params": dict(config.get("params", {}))}
               for name in names.values() for attr, config in getattr(load_sample(name), "JAXDIAG", {}).items()]
    with _in_root(), _quiet(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = Filter((), ()).apply(run_in_child(entries, DEFAULT_MESH))
    made = []
    for code, name in names.items():
        findings = [f for t in report.targets if t.target.split(":")[0] == f"samples/{name}" for f in t.findings]
        made.append(row_cells(code, name, jaxdiag_cell(code, findings)) + (f"sharding samples/{name}:…",))
    return made


def jaxdiag_cell(code: str, findings: list[Any]) -> str:
    """The "jaxdiag says" cell: the first sentence of the finding for `code` among a run's findings, or why
    there is none."""
    hit = next((f for f in findings if f.code == code), None)
    if hit is None:
        from jaxdiag._rules import CHECK_SKIPPED

        skipped = next((f for f in findings if f.code == CHECK_SKIPPED.code and code in f.message), None)
        if skipped is not None:
            return _trim(_clean(f"({CHECK_SKIPPED.code}) {first_sentence(skipped.message)}"), JAXDIAG_WIDTH)
        return f"(not reported on this JAX release: {', '.join(sorted({f.code for f in findings})) or 'no finding'})"
    return _trim(_clean(first_sentence(hit.message)), JAXDIAG_WIDTH)


def _cell(text: str, code: bool = False) -> str:
    text = text.replace("|", "\\|")
    if code:
        fence = "``" if "`" in text else "`"
        pad = " " if text.startswith("`") or text.endswith("`") else ""
        return f"{fence}{pad}{text}{pad}{fence}"
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _row(code: str) -> tuple[str, str, str, str, str]:
    from jaxdiag._rules import rule

    r = rule(code)
    ours, command = what_jaxdiag_says(r.code, r.bad_sample)
    return row_cells(r.code, r.bad_sample, ours) + (command,)


def row_cells(code: str, name: str, ours: str) -> tuple[str, str, str, str]:
    """(code and name, the plain-JAX call, what JAX says, what jaxdiag says) for the rule `code` whose bad sample
    is `name`, given jaxdiag's cell."""
    from jax_says import JAX_SAYS

    from jaxdiag._rules import rule

    call = (JAX_SAYS[code].__doc__ or "").strip()
    return (f"`{code}` {rule(code).name}", call, what_jax_says(code, name), ours)


def row_line(rule: str, call: str, jax_text: str, ours: str, command: str) -> str:
    """One row of the table, as the doc holds it."""
    extra = "" if command.startswith("check ") else f" (`jaxdiag {command}`)"
    jax_cell = _cell(jax_text) if jax_text.startswith("nothing") else _cell(jax_text, code=True)
    return f"| {rule} | {call.replace('|', chr(92) + '|')} | {jax_cell} | {_cell(ours)}{extra} |"


def table_codes() -> list[str]:
    """The rules the table has a row for, in catalog order: those with a bad sample, variants excepted (a variant,
    the same defect in another command, shares its base rule's sample and row)."""
    from jax_says import JAX_SAYS

    from jaxdiag._rules import iter_rules

    codes = []
    for r in iter_rules():
        if not r.has_own_samples or not (SAMPLES / r.bad_sample).is_file():
            continue
        if r.code not in JAX_SAYS:
            raise SystemExit(f"scripts/jax_says.py has no repro for {r.code} ({r.bad_sample}): add one")
        codes.append(r.code)
    return codes


def checked_by_the_tests(code: str) -> bool:
    """Whether the slow tier compares `code`'s row with a run it makes anyway (`--check --rows-from-tests` trusts
    such rows): `jaxdiag check samples/<code>_bad.py` in tests/test_samples_table.py, and for the JXS rules
    `jaxdiag sharding` on every JXS sample in tests/test_sharding.py."""
    return code not in SPECIAL_COMMANDS


def doc_rows(block: str) -> dict[str, str]:
    """{code: row line} of the table block as the doc holds it."""
    rows = {}
    for line in block.splitlines():
        found = re.match(r"\| `(JX[A-Z]\d{3})`", line)
        if found:
            rows[found.group(1)] = line
    return rows


def rows(trusted: dict[str, str] | None = None) -> list[str]:
    """The table's row lines, one per bad sample (`table_codes`). With `trusted` ({code: line}), the rows that
    are `checked_by_the_tests` are taken from it as they are (a missing one is left out, so the table compares
    stale) and only the others are computed.

    The samples are shared between two processes, one per core (`spawn`ed: JAX is not fork-safe); each row depends
    only on its own sample, so the table is the same as from one process, in half the time."""
    codes = table_codes()
    todo = [c for c in codes if trusted is None or not checked_by_the_tests(c)]
    sharded = [c for c in todo if c.startswith("JXS")]
    todo = [c for c in todo if c not in sharded]
    workers = min(2, os.cpu_count() or 1, len(todo) or 1)
    if workers == 1:
        computed = [_row(code) for code in todo]
    else:
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            computed = list(pool.map(_row, todo))
    computed += sharding_rows(sharded) if sharded else []
    made = {code: row_line(*row) for code, row in zip(todo + sharded, computed)}
    if trusted is not None:
        made.update({c: trusted[c] for c in codes if c not in made and c in trusted})
    return [made[c] for c in codes if c in made]


def render(trusted: dict[str, str] | None = None) -> str:
    import jax
    import jaxlib

    lines = [
        f"Generated by `python scripts/docs_tables.py` from `samples/<code>_bad.py` with jax {jax.__version__} "
        f"(jaxlib {getattr(jaxlib, '__version__', '?')}); CI fails if it is stale (`--check`, on that release; on "
        "another release `--check` only prints a notice, since JAX's messages change between releases). "
        "\"JAX says\" is the first line of what plain JAX raises for the call shown, or what is wrong when it raises "
        "nothing; \"jaxdiag says\" is the first sentence of the finding from `jaxdiag check samples/<code>_bad.py`.",
        "",
        "| Rule | You run (plain JAX) | JAX says | jaxdiag says |",
        "|---|---|---|---|",
    ]
    return "\n".join(lines + rows(trusted))


# The examples of docs/fixes.md: (command line after `jaxdiag`, what to show: "stdout" or the JSON field of the
# first finding)
EXAMPLES: dict[str, tuple[list[str], str]] = {
    "diff": (["batching", "samples/jxb004_bad.py:quantize_p", "--arg", "f32[8]", "--diff"], "stdout"),
    "show-jaxpr": (["batching", "samples/jxb004_bad.py:quantize_p", "--arg", "f32[8]", "--show-jaxpr"], "jaxpr"),
}


def example(name: str) -> str:
    """The docs block for one example: the command and what it prints (or the finding's field)."""
    import json

    from typer.testing import CliRunner

    from jaxdiag._parent._cli import app

    command, show = EXAMPLES[name]
    with _in_root(), _quiet():
        if show == "stdout":
            result = CliRunner().invoke(app, command)
            output = result.stdout
        else:
            result = CliRunner().invoke(app, [*command, "--format", "json"])
            output = json.loads(result.stdout)["targets"][0]["findings"][0][show]
    fence = "diff" if show == "stdout" and "--diff" in command else "text"
    return f"```console\n$ jaxdiag {' '.join(command)}\n```\n```{fence}\n{output.rstrip()}\n```"


def _example_markers(name: str) -> tuple[str, str]:
    return f"<!-- example:{name} -->", f"<!-- /example:{name} -->"


def replace_examples(doc: str) -> str:
    for name in EXAMPLES:
        begin, end = _example_markers(name)
        start, stop = doc.find(begin), doc.find(end)
        if start < 0 or stop < start:
            raise SystemExit(f"{EXAMPLES_DOC.relative_to(ROOT)} has no {begin} ... {end} block")
        doc = doc[:start + len(begin)] + "\n" + example(name) + "\n" + doc[stop:]
    return doc


def _block(text: str) -> str | None:
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        return None
    return text[start + len(BEGIN):end].strip("\n")


def _options_table_current(write: bool) -> bool:
    """docs/cli.md's options table, generated from the registry of commands: rewritten, or checked."""
    from jaxdiag._parent import _docs

    path = ROOT / "docs" / "cli.md"
    text = path.read_text(encoding="utf-8")
    wanted = _docs.with_options_table(text)
    if write and wanted != text:
        path.write_text(wanted, encoding="utf-8")
        print("wrote the options table to docs/cli.md")
    elif not write and wanted != text:
        print("docs/cli.md's options table is stale: run `python scripts/docs_tables.py`", file=sys.stderr)
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 with a diff if the table or an example is stale")
    mode.add_argument("--print", action="store_true", help="print the table instead of writing it")
    mode.add_argument("--examples-only", action="store_true", help="rewrite only the --diff/--show-jaxpr examples")
    parser.add_argument("--rows-from-tests", action="store_true",
                        help="with --check: take the rows made by `jaxdiag check samples/<code>_bad.py` as the doc "
                             "holds them, since the slow tier's sample table compares each with its own run of that "
                             "sample (tests/test_samples_table.py); check the rest")
    args = parser.parse_args(argv)
    if args.rows_from_tests and not args.check:
        parser.error("--rows-from-tests goes with --check")

    if not _options_table_current(write=not (args.check or args.print)) and args.check:
        return 1
    import jax

    table_name, examples_name = TABLE_DOC.relative_to(ROOT), EXAMPLES_DOC.relative_to(ROOT)
    examples_doc = EXAMPLES_DOC.read_text(encoding="utf-8")
    if args.examples_only:
        EXAMPLES_DOC.write_text(replace_examples(examples_doc), encoding="utf-8")
        print(f"wrote the examples to {examples_name}")
        return 0
    doc = TABLE_DOC.read_text(encoding="utf-8")
    current = _block(doc)
    if current is None and not args.print:
        print(f"{table_name} has no {BEGIN} ... {END} block", file=sys.stderr)
        return 1
    if args.check:
        recorded = VERSION_RE.search(current or "")
        if recorded is None:
            print(f"the table in {table_name} records no JAX version; regenerate it: python scripts/docs_tables.py",
                  file=sys.stderr)
            return 1
        if recorded.group(1) != jax.__version__:
            print(f"notice: the table in {table_name} was generated with jax {recorded.group(1)}; this is jax "
                  f"{jax.__version__}, whose messages may differ. Not checked (run on jax {recorded.group(1)}).")
            return 0
    start = time.perf_counter()
    table = render(doc_rows(current or "") if args.rows_from_tests else None)
    seconds = time.perf_counter() - start
    if args.print:
        print(table)
        return 0
    if args.check:
        if replace_examples(examples_doc) != examples_doc:
            print(f"{examples_name}: examples are stale: run `python scripts/docs_tables.py --examples-only`",
                  file=sys.stderr)
            return 1
        from _generated import check_current  # beside this script (its folder leads sys.path when it runs)

        if table == current:
            print(f"{table_name} and {examples_name} are up to date (jax {jax.__version__}, {seconds:.0f} s)")
        return check_current(current, table, str(table_name), "generated",
                             f"the table in {table_name} is stale: run `python scripts/docs_tables.py` and commit it")
    doc = doc.replace(doc[doc.find(BEGIN):doc.find(END)], f"{BEGIN}\n{table}\n", 1)
    TABLE_DOC.write_text(doc, encoding="utf-8")
    EXAMPLES_DOC.write_text(replace_examples(examples_doc), encoding="utf-8")
    print(f"wrote the table to {table_name} and the examples to {examples_name} (jax {jax.__version__}, "
          f"{seconds:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
