"""Each CLI option is documented once: in the options table of docs/cli.md, checked here against the typer app
itself (which commands take the option, its default). Every other document links there instead of repeating the
option (a second table row for an option is how two documents came to word the same option differently)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main

from jaxdiag._parent._cli import app

ROOT = Path(__file__).resolve().parent.parent
CLI_MD = ROOT / "docs" / "cli.md"
DIAGNOSE = ("batching", "grad", "sharding", "check")
OPTION_RE = re.compile(r"(?<![\w-])(--?[a-z][a-z0-9-]*)")


def _commands() -> dict[str, dict[str, object]]:
    """command -> {every spelling of each option: its default} (typer's own parameters, not its source)."""
    group = typer.main.get_command(app)
    out: dict[str, dict[str, object]] = {}
    for name in group.list_commands(None):  # type: ignore[arg-type]
        command = group.get_command(None, name)  # type: ignore[arg-type]
        out[name] = {opt: p.default for p in command.params if p.param_type_name == "option"
                     for opt in (*p.opts, *p.secondary_opts) if opt != "--help"}
    return out


def _option_rows(text: str) -> list[tuple[list[str], str, str]]:
    """(options named in the first cell, the meaning cell, the row) of every table row whose first cell names an
    option."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) >= 2 and cells[0].startswith("`-"):
            rows.append((OPTION_RE.findall(cells[0].split("`")[1] + " " + " ".join(cells[0].split("`")[3::2])),
                         cells[-1], line))
    return rows


def _documented() -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for options, meaning, line in _option_rows(CLI_MD.read_text(encoding="utf-8")):
        for opt in options:
            assert opt not in out, f"docs/cli.md documents {opt} twice:\n{out[opt][1]}\n{line}"
            out[opt] = (meaning, line)
    return out


def test_every_option_of_the_diagnose_commands_has_one_row_in_cli_md():
    documented = _documented()
    options = {opt for name in DIAGNOSE for opt in _commands()[name]}
    missing = sorted(options - set(documented))
    extra = sorted(set(documented) - options)
    assert not missing, f"options with no row in docs/cli.md's options table: {missing}"
    assert not extra, f"docs/cli.md documents options no diagnose command has: {extra}"


@pytest.mark.parametrize("option", sorted(_documented()))
def test_a_rows_commands_and_default_are_the_apps(option):
    meaning, line = _documented()[option]
    commands = _commands()
    having = {name for name in DIAGNOSE if option in commands[name]}
    listed = re.match(r"\(((?:`\w+`(?:, | and )?)+)\)", meaning)
    claimed = set(re.findall(r"`(\w+)`", listed.group(1))) if listed else set(DIAGNOSE)
    assert claimed == having, f"{option}: docs/cli.md says {sorted(claimed)}, the app has it on {sorted(having)}"
    default = next(commands[name][option] for name in sorted(having))
    stated = re.search(r"default `?([^`,;)\s]+)`?", meaning)
    if stated and default not in (None, False):
        assert stated.group(1) == str(default), \
            f"{option}: docs/cli.md says default {stated.group(1)}, the app {default}"


def test_other_documents_link_to_cli_md_instead_of_repeating_an_option():
    documents = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    repeated = [f"{path.relative_to(ROOT)}: {line.strip()[:100]}" for path in documents if path != CLI_MD
                for _, _, line in _option_rows(path.read_text(encoding="utf-8"))]
    assert not repeated, "document options in docs/cli.md's table only, and link to it:\n" + "\n".join(repeated)


def test_the_rules_and_record_options_appear_in_cli_md():
    text = CLI_MD.read_text(encoding="utf-8")
    for name in ("rules", "record"):
        for option in _commands()[name]:
            assert f"jaxdiag {name}" in text and option in text, f"jaxdiag {name} {option} is not in docs/cli.md"


def test_the_check_fails_on_a_row_that_disagrees_with_the_app(monkeypatch, tmp_path):
    """The row check can fail: a row claiming the wrong commands or default is caught."""
    wrong = tmp_path / "cli.md"
    wrong.write_text(CLI_MD.read_text(encoding="utf-8").replace("default `2x4`", "default `4x4`"), encoding="utf-8")
    monkeypatch.setattr(__import__(__name__), "CLI_MD", wrong)
    with pytest.raises(AssertionError, match="default"):
        test_a_rows_commands_and_default_are_the_apps("--mesh")


def test_help_points_to_the_docs_it_summarises():
    from clirun import Runner

    for args in (["-h"], ["grad", "-h"], ["check", "-h"]):
        output = Runner().invoke(app, args).output
        named = set(re.findall(r"docs/[\w-]+\.md", " ".join(output.split())))
        assert "docs/cli.md" in named, args
        assert all((ROOT / path).is_file() for path in named), named


# Written by the change that adds the GitHub Action (action.yml); remove from here once it is in the tree.
PENDING = {"docs/ci.md"}


def test_every_relative_link_in_the_documents_resolves():
    broken = []
    for path in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            resolved = (path.parent / target).resolve()
            if not resolved.exists() and str(resolved.relative_to(ROOT)) not in PENDING:
                broken.append(f"{path.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_contributing_maps_every_module_and_names_no_missing_one():
    """CONTRIBUTING's layout is the map of the code: every module of the package is in it (a file by name, or a
    package whose files it describes), and every private module it names exists."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    layout = text[text.index("## Layout"):text.index("## Writing a check")]
    package = ROOT / "jaxdiag"
    modules = [p.relative_to(package) for p in package.rglob("*.py")]
    named = set(re.findall(r"(?<![\w/])(_{0,2}[a-z][a-z0-9_]*\.py|_[a-z][a-z0-9_]*/)", layout))
    unmapped = [str(m) for m in modules if m.name not in named and m.name != "__init__.py"
                and not any(f"{part}/" in named for part in m.parts[:-1])]
    assert not unmapped, f"modules CONTRIBUTING.md's layout does not name: {unmapped}"
    existing = {m.name for m in modules} | {f"{part}/" for m in modules for part in m.parts[:-1]}
    missing = sorted(n for n in named if n.startswith("_") and n not in existing)
    assert not missing, f"CONTRIBUTING.md's layout names modules that do not exist: {missing}"
    assert not re.search(r"(?<!\w)_rules\.py", text), "the catalog is the _rules/ package"


def test_the_options_table_is_generated_from_the_registry():
    """docs/cli.md's table is `_docs.options_table()` of `_commands`: the one declaration of each option."""
    from jaxdiag._parent import _docs

    text = CLI_MD.read_text(encoding="utf-8")
    assert _docs.with_options_table(text) == text, "stale options table: run `python scripts/docs_tables.py`"
