"""The registry of commands (`jaxdiag/_core/_commands.py`) is the one place a command is declared: the CLI, the Python
API, the pytest fixture and docs/cli.md are generated from it. The proof: a toy check family with a command of its
own, added to a temporary copy of the package as one registry entry plus its check module, is seen by all three."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import jaxdiag
from jaxdiag._core import _commands
from jaxdiag.pytest_plugin import JaxdiagFixture

ROOT = Path(__file__).resolve().parent.parent

TOY_FAMILY = '    Family("toy", ("_toy",), ("JXN",)),\n'
TOY_COMMAND = ('    Command("toy", "Toy: look at a function as hard as --level says.", ("toy",), options=(\n'
               '        Opt("level", ("--level",), 1, "How hard to look.", kind=int, metavar="N"),)),\n')
TOY_CHECKS = '''
"""A toy check family: passes at level 1, says what level it was given otherwise."""
from ._base import Context, SkipCheck, check


@check("toy-probe", family="toy", kinds={"function"})
def toy_probe(ctx: Context):
    level = ctx.options.extra["level"]
    if level != 1:
        raise SkipCheck(f"asked for level {level}")
    return iter(())


CHECKS = [toy_probe]
'''


def test_every_engine_command_has_an_api_function_and_a_fixture_method():
    fixture = JaxdiagFixture()
    for spec in _commands.COMMANDS.values():
        assert callable(getattr(fixture, spec.function_name))
        if spec.runner == "engine":
            function = getattr(jaxdiag, spec.function_name)
            keywords = set(inspect.signature(function).parameters)
            assert {o.name for o in spec.api_options} <= keywords, spec.name


def test_an_unknown_keyword_is_a_type_error_naming_the_function():
    with pytest.raises(TypeError, match=r"check_grad\(\) got an unexpected keyword argument 'in_axes'"):
        jaxdiag.check_grad(lambda x: x, "f32[3]", in_axes=0)


def test_options_runs_follows_the_registry():
    from jaxdiag._checks._base import Options

    assert Options(command="batching").runs("batching") and not Options(command="batching").runs("grad")
    assert Options(command="check").runs("grad") and Options(command="check").runs("batching")
    assert Options.for_command("grad", order=2, level=3).extra == {"level": 3}


def _toy_copy(tmp_path: Path) -> Path:
    """jaxdiag copied to tmp_path with the toy family: one FAMILIES and one COMMANDS entry, and its module."""
    package = tmp_path / "jaxdiag"
    shutil.copytree(ROOT / "jaxdiag", package, ignore=shutil.ignore_patterns("__pycache__"))
    registry = package / "_core" / "_commands.py"
    text = registry.read_text(encoding="utf-8")
    for anchor, entry in (("FAMILIES: dict[str, Family] = {f.name: f for f in (\n", TOY_FAMILY),
                          ("COMMANDS: dict[str, Command] = {c.name: c for c in (\n", TOY_COMMAND)):
        assert anchor in text, f"the registry lost its anchor {anchor!r}"
        text = text.replace(anchor, anchor + entry, 1)
    registry.write_text(text, encoding="utf-8")
    (package / "_checks" / "_toy.py").write_text(TOY_CHECKS, encoding="utf-8")
    (tmp_path / "toy_target.py").write_text("def double(x):\n    return x * 2\n", encoding="utf-8")
    return tmp_path


def _run(copy: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run([sys.executable, *argv], cwd=copy, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_toy_family_is_one_registry_entry_plus_its_module(tmp_path):
    copy = _toy_copy(tmp_path)
    cli = _run(copy, "-m", "jaxdiag", "toy", "toy_target.py:double", "--arg", "f32[3]", "--level", "3",
               "--format", "json")
    assert cli.returncode in (0, 5), cli.stderr  # no finding; a skipped-only target is not verified (5)
    checks = {c["name"]: c for t in json.loads(cli.stdout)["targets"] for c in t["checks"]}
    assert checks["toy-probe"]["status"] == "skipped" and "level 3" in checks["toy-probe"]["detail"]
    assert "--level N" in _run(copy, "-m", "jaxdiag", "toy", "-h").stdout

    script = textwrap.dedent("""
        import inspect, jaxdiag
        from jaxdiag.pytest_plugin import JaxdiagFixture
        assert jaxdiag.__file__.startswith(%r), jaxdiag.__file__
        from jaxdiag._api import check_toy
        print(sorted(inspect.signature(check_toy).parameters))
        report = check_toy("toy_target.py:double", "f32[3]", level=1)
        print({c.name: c.status for t in report.targets for c in t.checks})
        report = JaxdiagFixture().check_toy("toy_target.py:double", "f32[3]", level=2)
        print({c.name: c.detail for t in report.targets for c in t.checks})
        from jaxdiag._parent._docs import options_table
        print([row for row in options_table().splitlines() if "--level" in row])
    """ % str(copy))
    api = _run(copy, "-c", script)
    assert api.returncode == 0, api.stderr
    parameters, passed, skipped, rows = api.stdout.strip().splitlines()[-4:]
    assert "'level'" in parameters
    assert "'toy-probe': 'passed'" in passed
    assert "asked for level 2" in skipped
    assert "(`toy`)" in rows
