"""Typed emission sites: every rule is declared `X: Rule[_fields.CODE]`, `_fields.py` (generated from the templates
by scripts/rule_fields.py) is current, and mypy rejects a `finding(...)` with a missing or unexpected field."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from importlib import import_module
from pathlib import Path
from types import ModuleType

import pytest

from jaxdiag import _rules

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "jaxdiag" / "_rules"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rule_fields", ROOT / "scripts" / "rule_fields.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_fields_module_is_current():
    script = _script()
    assert script.TARGET.read_text(encoding="utf-8") == script.render(), \
        "jaxdiag/_rules/_fields.py is stale: python scripts/rule_fields.py"


def _declarations() -> list[tuple[str, int, str, ast.expr | None, str]]:
    """(module, line, code, annotation, constructor) for each `X = Rule(...)` / `X = variant(...)` in the catalog."""
    found = []
    for path in sorted(CATALOG.glob("_*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                    and value.func.id in ("Rule", "variant")):
                continue
            code = value.args[0 if value.func.id == "Rule" else 1]
            assert isinstance(code, ast.Constant), f"{path.name}:{node.lineno}: the code is not a literal"
            annotation = node.annotation if isinstance(node, ast.AnnAssign) else None
            found.append((path.name, node.lineno, code.value, annotation, value.func.id))
    return found


def test_every_rule_is_declared_with_its_own_fields():
    declarations = _declarations()
    assert {code for _, _, code, _, _ in declarations} == set(_rules.RULES)
    wrong = [f"{module}:{line} {code}: annotated {ast.unparse(a) if a else 'nothing'}"
             for module, line, code, a, _ in declarations
             if a is None or ast.unparse(a) != f"Rule[_fields.{code}]"]
    assert not wrong, "declare each rule `NAME: Rule[_fields.CODE] = ...`:\n" + "\n".join(wrong)


def _rule_names() -> dict[str, str]:
    """code -> the constant naming it in its catalog module."""
    names = {}
    for path in CATALOG.glob("_*.py"):
        for name, value in vars(import_module(f"jaxdiag._rules.{path.stem}")).items():
            if isinstance(value, _rules.Rule) and name.isupper():
                names[value.code] = name
    return names


def _snippet() -> tuple[str, set[int]]:
    """A module emitting findings right and wrong; the lines marked `# wrong` are those mypy must reject."""
    names = _rule_names()
    pair = next(r for r in _rules.iter_rules() if r.fields == {"evidence", "fix"})
    other = next(r for r in _rules.iter_rules() if len(r.fields) > 2 and "evidence" not in r.fields)
    a, b = f"rules.{names[pair.code]}", f"rules.{names[other.code]}"
    b_fields = ", ".join(f"{f}=1" for f in sorted(other.fields))
    lines = [
        "from jaxdiag import _rules as rules",
        "def emit(c: bool) -> None:",
        f"    {a}.finding(evidence='e', fix='f', location=None)",
        f"    {b}.finding({b_fields})",
        f"    {a}.finding(evidence='e')  # wrong: missing",
        f"    {a}.finding(evidence='e', fix='f', evidenc='typo')  # wrong: unexpected",
        f"    {b}.finding(evidence='e', fix='f')  # wrong: another rule's fields",
        f"    ({a} if c else {b}).finding(evidence='e', fix='f')  # wrong: one of the two rules",
        # a rule looked up at run time is a Rule[Any]: mypy still requires the fields of some rule
        f"    rules.rule('{pair.code}').finding(evidence='e', fix='f')",
        f"    rules.rule('{pair.code}').finding(anything=1)  # wrong: no rule takes these fields",
    ]
    return "\n".join(lines) + "\n", {n for n, line in enumerate(lines, 1) if "# wrong" in line}


# mypy reads the package from cold in 30 s to a minute; CI's lint step has just filled the repository's own
# `.mypy_cache`, which this test reuses (incremental: only the snippet is new)
@pytest.mark.slow
def test_mypy_rejects_a_wrong_field_at_an_emission_site(tmp_path):
    pytest.importorskip("mypy")
    source, wrong = _snippet()
    # a module name of this run only: mypy's cache replays a module's errors, with the path they were first
    # reported at, when a module of the same name and source was checked before (an earlier run's tmp_path)
    snippet = tmp_path / f"emit_{tmp_path.name.replace('-', '_')}_{os.getpid()}.py"
    snippet.write_text(source, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", str(ROOT / ".mypy_cache"), "--no-error-summary", str(snippet)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert all(line.startswith(str(snippet)) for line in errors), done.stdout
    lines = {int(line.split(":")[1]) for line in errors}
    assert lines == wrong, f"{source}\n{done.stdout}"
    assert all(line.endswith(("[call-arg]", "[call-overload]")) for line in errors), done.stdout
