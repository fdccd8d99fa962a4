"""Import only what runs: the check families a command can use are imported on first use, and so are the parts of
`_compat` and the rule catalog a run touches. The budget: `check_grad` has imported at most 30 jaxdiag modules
when its first check starts, counted in a fresh interpreter."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from jaxdiag import _compat, _rules
from jaxdiag._checks import MODULES, checks_for
from jaxdiag._checks._base import Options
from jaxdiag._core._commands import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
BUDGET = 30

# Counts jaxdiag's modules when the first check of a run starts, then ends the process (the rest of the run is
# not what is measured).
_COUNT_AT_FIRST_CHECK = """
import json, os, sys
import jaxdiag
from jaxdiag._run import _engine

def first(label, name, inputs):
    if not name:  # a candidate of input inference, not a check
        return
    mods = sorted(m for m in sys.modules if m == "jaxdiag" or m.startswith("jaxdiag."))
    print(json.dumps({"check": name, "modules": mods}), flush=True)
    os._exit(0)

_engine.on_check_start = first
jaxdiag.API("tests/data/speed/softplus.py:ATTR"ARGS)
print(json.dumps({"check": None}))
"""


def _docstring_only_package(module: str) -> bool:
    init = ROOT.joinpath(*module.split(".")) / "__init__.py"
    if not init.exists():
        return False
    body = ast.parse(init.read_text(encoding="utf-8")).body
    return len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)


def _modules_at_first_check(api: str, attr: str, args: str) -> dict:
    code = _COUNT_AT_FIRST_CHECK.replace("API", api).replace("ATTR", attr).replace("ARGS", args)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("attr, args", [("softplus", ', "f32[3]"'),  # a fresh process each (1.2 s): one is fast
                                        pytest.param("scaled", ', "f32[3]", "f32[3]"', marks=pytest.mark.slow)])
def test_check_grad_imports_within_budget_before_its_first_check(attr: str, args: str) -> None:
    seen = _modules_at_first_check("check_grad", attr, args)
    assert seen["check"] is not None, "no check ran"
    # a layer folder's `__init__` is a docstring and nothing else: importing it costs nothing, so it is not counted
    mods = [m for m in seen["modules"] if not _docstring_only_package(m)]
    assert len(mods) <= BUDGET, f"{len(mods)} jaxdiag modules before the first check: {mods}"
    # the families a grad run on a custom function never uses are not loaded
    assert not any(m.startswith(("jaxdiag._checks._batching", "jaxdiag._checks._registration",
                                 "jaxdiag._checks._abstract", "jaxdiag._parent._supervisor")) for m in mods), mods


def test_every_family_declares_what_its_checks_cover() -> None:
    for family in MODULES:
        checks = importlib.import_module(f"jaxdiag._checks.{family.module}").CHECKS
        assert checks, family.module
        for chk in checks:
            assert chk.family in family.families, (family.module, chk.name)
            assert chk.kinds <= family.kinds, (family.module, chk.name, chk.kinds - family.kinds)


def test_lazy_families_keep_the_run_order_of_every_check() -> None:
    from jaxdiag._checks import ALL_CHECKS

    kinds = {k for family in MODULES for k in family.kinds}
    for command in COMMANDS:
        options = Options(command=command)
        for kind in kinds:
            wanted = [c.name for c in ALL_CHECKS if options.runs(c.family) and kind in c.kinds]
            got = [c.name for c in checks_for(kind, options) if c.applies(_Kind(kind), options)]
            assert got == wanted, (command, kind)


class _Kind:
    def __init__(self, kind: str) -> None:
        self.kind = kind


def test_compat_names_resolve_to_their_submodule() -> None:
    for name in _compat.__all__:
        value = getattr(_compat, name)
        owner = _compat._OWNER.get(name)
        if owner is not None:
            assert getattr(importlib.import_module(f"jaxdiag._compat.{owner}"), name) is value, name
    with pytest.raises(AttributeError):
        _compat.no_such_name  # noqa: B018


def test_rule_catalog_loads_every_rule_on_first_use() -> None:
    codes = {r.code for r in _rules.iter_rules()}
    assert len(codes) == len(_rules.RULES)
    for name in _rules._RULE_MODULES:
        module = importlib.import_module(f"jaxdiag._rules.{name}")
        defined = [v for v in vars(module).values() if isinstance(v, _rules.Rule)]
        assert {r.code for r in defined} <= codes, name
    assert _rules.SAMPLES_DIR.is_dir()
