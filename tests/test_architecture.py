"""The layering rules of CONTRIBUTING.md, checked on the source (with `ast`, nothing is imported from the files):

- only the `jaxdiag/_compat/` package imports `jax._src` or branches on the JAX version, so a JAX release that
  moves an internal breaks one package;
- renderers (`jaxdiag/_render/`) format a Report and never import JAX (directly or through another jaxdiag
  module);
- the rule catalog and `samples/` agree: every declared bad/good sample exists, every `jx*_bad.py` /
  `jx*_good.py` is declared by the rule its name carries.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "jaxdiag"
SAMPLES = ROOT / "samples"
COMPAT = PACKAGE / "_compat"
RENDER = PACKAGE / "_render"

# Names whose comparison is a JAX version branch: `jax.__version__`, `jaxlib.__version__`, `jax.__version_info__`,
# `jax.version.__version__`, and the copies `_compat` exports for display (`JAX_VERSION`, `JAXLIB_VERSION`).
VERSION_NAMES = {"__version__", "__version_info__", "_version", "JAX_VERSION", "JAXLIB_VERSION"}
VERSION_OWNERS = {"jax", "jaxlib", "version", "_compat", "compat"}


def modules(folder: Path = PACKAGE) -> list[Path]:
    return sorted(folder.rglob("*.py"))


def in_compat(path: Path) -> bool:
    return COMPAT in path.parents


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _dotted(node: ast.AST) -> str:
    """`a.b.c` for Name/Attribute chains, '' otherwise."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _is_private_jax(name: str) -> bool:
    return name == "jax._src" or name.startswith("jax._src.")


def private_jax_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, what) for every import of `jax._src` in any form, including `importlib.import_module("jax._src..")`
    and `__import__`."""
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            hits += [(node.lineno, f"import {a.name}") for a in node.names if _is_private_jax(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _is_private_jax(node.module):
                hits.append((node.lineno, f"from {node.module} import ..."))
            elif node.module == "jax" and any(a.name == "_src" for a in node.names):
                hits.append((node.lineno, "from jax import _src"))
        elif isinstance(node, ast.Call) and _dotted(node.func).split(".")[-1] in ("import_module", "__import__"):
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and _is_private_jax(first.value):
                hits.append((node.lineno, f"{_dotted(node.func)}({first.value!r})"))
        elif isinstance(node, ast.Attribute) and node.attr == "_src" and _dotted(node.value) == "jax":
            hits.append((node.lineno, "jax._src attribute access"))
    return hits


def _mentions_version(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr in VERSION_NAMES:
            owner = _dotted(sub.value).split(".")[-1] if _dotted(sub.value) else ""
            if owner in VERSION_OWNERS:
                return True
        if isinstance(sub, ast.Name) and sub.id in ("JAX_VERSION", "JAXLIB_VERSION"):
            return True
    return False


def version_branches(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, source) for comparisons of a JAX/jaxlib version, and for `.startswith`/`.split`/`parse`/
    `Version(...)` on one (the usual first step of a version comparison). Printing the version is fine."""
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(_mentions_version(x) for x in [node.left, *node.comparators]):
            hits.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else _dotted(func).split(".")[-1]
            target = [func.value] if isinstance(func, ast.Attribute) else []
            if name in ("startswith", "split", "partition") and any(_mentions_version(t) for t in target):
                hits.append((node.lineno, ast.unparse(node)))
            elif name in ("parse", "Version", "LooseVersion", "parse_version") and any(
                    _mentions_version(a) for a in node.args):
                hits.append((node.lineno, ast.unparse(node)))
    return hits


def jax_imports(tree: ast.Module) -> list[tuple[int, str]]:
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            hits += [(node.lineno, f"import {a.name}") for a in node.names if a.name.split(".")[0] in ("jax", "jaxlib")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in ("jax", "jaxlib"):
                hits.append((node.lineno, f"from {node.module} import ..."))
    return hits


# --- the analysis itself must catch what it is meant to catch ---------------------------------------------------

@pytest.mark.parametrize("source", [
    "from jax._src import core",
    "import jax._src.interpreters.batching as b",
    "from jax import _src",
    "import importlib\nimportlib.import_module('jax._src.core')",
    "import jax\nx = jax._src.core",
])
def test_private_import_detector_catches(source):
    assert private_jax_imports(ast.parse(source))


@pytest.mark.parametrize("source", [
    "import jax\nif jax.__version__ >= '0.7': pass",
    "import jax\nok = jax.__version_info__ < (0, 6)",
    "from jaxdiag import _compat\nif _compat.JAX_VERSION.startswith('0.5'): pass",
    "import jax\nmajor = jax.__version__.split('.')[1]",
    "from packaging.version import Version\nimport jax\nnew = Version(jax.__version__)",
    "from ._compat import JAX_VERSION\nold = JAX_VERSION == '0.5.3'",
])
def test_version_branch_detector_catches(source):
    assert version_branches(ast.parse(source))


@pytest.mark.parametrize("source", [
    "from jaxdiag import _compat\nmsg = f'on JAX {_compat.JAX_VERSION}'",
    "import jaxdiag\nprint(jaxdiag.__version__)",
    "x = sys.version_info >= (3, 11)",
])
def test_version_branch_detector_allows(source):
    assert not version_branches(ast.parse(source))


# --- the rules ----------------------------------------------------------------------------------------------------

def test_the_modules_are_found():
    found = {rel(p) for p in modules()}
    assert rel(COMPAT / "__init__.py") in found and any(p.startswith("jaxdiag/_checks/") for p in found), found


@pytest.mark.parametrize("path", [p for p in modules() if not in_compat(p)], ids=rel)
def test_only_compat_imports_jax_src(path):
    hits = private_jax_imports(parse(path))
    assert not hits, f"{rel(path)} imports JAX internals (move this into jaxdiag/_compat/): " + "; ".join(
        f"line {line}: {what}" for line, what in hits)


@pytest.mark.parametrize("path", [p for p in modules() if not in_compat(p)], ids=rel)
def test_only_compat_branches_on_the_jax_version(path):
    hits = version_branches(parse(path))
    assert not hits, f"{rel(path)} branches on the JAX version (feature-detect in jaxdiag/_compat/ instead): " \
                     + "; ".join(f"line {line}: {src}" for line, src in hits)


@pytest.mark.parametrize("path", modules(RENDER), ids=rel)
def test_renderers_do_not_import_jax(path):
    hits = jax_imports(parse(path))
    assert not hits, f"{rel(path)} imports JAX; renderers format a Report only: " + "; ".join(
        f"line {line}: {what}" for line, what in hits)


def test_renderers_do_not_import_jax_through_other_modules():
    """Transitively: importing every renderer (and the report model) leaves JAX unimported."""
    code = ("import sys, jaxdiag._render, jaxdiag._render.text, jaxdiag._render.json, jaxdiag._render.sarif, "
            "jaxdiag._render.github, jaxdiag._render.junit, jaxdiag._report\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib'))\n"
            "print(' '.join(bad[:5]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not done.stdout.strip(), f"importing the renderers imported {done.stdout.strip()}"


def _catalog():
    from jaxdiag._rules import RULES

    return RULES


def test_declared_samples_exist():
    missing = []
    for code, r in sorted(_catalog().items()):
        declared = {"bad": r.bad_sample, "good": r.good_sample}
        if any(declared.values()) and not all(declared.values()):
            missing.append(f"{code} declares only {[k for k, v in declared.items() if v]} sample")
        for which, name in declared.items():
            if name and not (SAMPLES / name).is_file():
                missing.append(f"{code} {which} sample samples/{name} does not exist")
    assert not missing, "\n".join(missing)


def test_declared_samples_are_named_after_their_rule():
    wrong = [f"{code}: {name}" for code, r in sorted(_catalog().items())
             for which, name in (("bad", r.bad_sample), ("good", r.good_sample))
             if name and name != f"{code.lower()}_{which}.py"]
    assert not wrong, "samples must be named <code>_bad.py / <code>_good.py: " + ", ".join(wrong)


@pytest.mark.parametrize("which", ["bad", "good"])
def test_every_rule_sample_belongs_to_a_catalog_rule(which):
    catalog = _catalog()
    files = sorted(p.name for p in SAMPLES.glob(f"jx*_{which}.py"))
    assert files, f"no samples/jx*_{which}.py found"
    orphans = []
    for name in files:
        code = name.split("_")[0].upper()
        r = catalog.get(code)
        declared = None if r is None else (r.bad_sample if which == "bad" else r.good_sample)
        if declared != name:
            orphans.append(f"samples/{name}: " + ("no rule " + code if r is None else f"{code} declares {declared}"))
    assert not orphans, "\n".join(orphans)


def test_sample_file_names_are_well_formed():
    odd = [p.name for p in SAMPLES.glob("jx*.py") if not re.fullmatch(r"jx[a-z]\d{3}_(bad|good)\.py", p.name)]
    assert not odd, f"unexpected sample names: {odd}"
