"""The layering rules of CONTRIBUTING.md, checked on the source (with `ast`, nothing is imported from the files):

- only the `jaxdiag/_compat/` package imports `jax._src` or branches on the JAX version, so a JAX release that
  moves an internal breaks one package;
- renderers (`jaxdiag/_render/`) format a Report and never import JAX (directly or through another jaxdiag
  module);
- the rule catalog and `samples/` agree: every declared bad/good sample exists, every `jx*_bad.py` /
  `jx*_good.py` is declared by the rule its name carries (or by a variant of that rule);
- the catalog owns every rule's severity and text: no `severity=` at an emission site, no `Finding(...)` built
  outside the catalog, no rule-code string literal outside `jaxdiag/_rules/` (control flow holds `Rule` objects);
- the import graph: no check imports the engine, the report model imports no other jaxdiag module (renderers
  register the text view instead), and jaxdiag's modules import each other without cycles;
- every module imports (the one test here that imports): mypy runs with `ignore_missing_imports`, so a relative
  import of a deleted or renamed module would pass it and fail only when that code path runs;
- CLI tests capture stderr apart from stdout on every supported click (through `tests/clirun.py`).
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

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


@functools.lru_cache(maxsize=None)  # read-only trees, parsed once for the ~300 tests that read them
def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@functools.lru_cache(maxsize=None)  # a tree is walked by several tests and the import graph: once, in ast.walk order
def walk(tree: ast.AST) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(tree))


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
    for node in walk(tree):
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
    for node in walk(tree):
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
    for node in walk(tree):
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
            "jaxdiag._render.github, jaxdiag._render.junit, jaxdiag._core._report\n"
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
    """A variant (the same defect in another context, e.g. JXR013 for JXR006 under `grad`) shares its samples, or
    has its own named after itself (JXB024, told apart from JXB010 on other code)."""
    wrong = [f"{code}: {name}" for code, r in sorted(_catalog().items())
             for which, name in (("bad", r.bad_sample), ("good", r.good_sample))
             if name and name != f"{(code if r.has_own_samples else r.variant_of or code).lower()}_{which}.py"]
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


# --- the catalog owns severity and text -------------------------------------------------------------------------

CATALOG = PACKAGE / "_rules"
CODE_RE = re.compile(r"\bJX[A-Z]\d")


def _docstring_nodes(tree: ast.Module) -> set[int]:
    """ids of the string constants that are docstrings (documentation may name codes)."""
    ids = set()
    for node in walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def code_literals(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, text) of every string constant naming a rule code (`"JXG017"`, `"JXR9"`, f"...JXR008..."), docstrings
    and command-line help texts (`help=...`) excepted."""
    docs = _docstring_nodes(tree)
    docs |= {id(k.value) for node in walk(tree) if isinstance(node, ast.Call) for k in node.keywords
             if k.arg in ("help", "doc") and isinstance(k.value, (ast.Constant, ast.BinOp, ast.JoinedStr))}
    return [(node.lineno, node.value) for node in walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            and CODE_RE.search(node.value)]


def severity_keywords(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, call) for every call passing `severity=`, and every `Finding(...)` construction."""
    hits = []
    for node in walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func).split(".")[-1]
            if any(k.arg == "severity" for k in node.keywords) or name == "Finding":
                hits.append((node.lineno, ast.unparse(node)[:80]))
    return hits


@pytest.mark.parametrize("source,count", [
    ('blocked["JXG017"] = 1', 1),
    ('require(st, ("JXG017", "JXG012"))', 2),
    ('x = f"JXR008 (removed-jax-api) cannot show"', 1),
    ('def f():\n    """JXB010: documented."""\n    return rules.X', 0),
])
def test_code_literal_detector(source, count):
    assert len(code_literals(ast.parse(source))) == count


@pytest.mark.parametrize("source,count", [
    ("rules.X.finding(location=loc, severity='info')", 1),
    ("Finding('JXB001', 'n', 'error', 'm')", 1),
    ("rules.X.finding(location=loc, dim=3)", 0),
])
def test_severity_detector(source, count):
    assert len(severity_keywords(ast.parse(source))) == count


@pytest.mark.parametrize("path", [p for p in modules() if CATALOG not in p.parents], ids=rel)
def test_no_severity_or_finding_outside_the_catalog(path):
    hits = severity_keywords(parse(path))
    assert not hits, f"{rel(path)} decides a severity or builds a Finding itself; the catalog owns both " \
                     f"(rules.X.finding(location=..., **fields)): " + "; ".join(f"line {n}: {c}" for n, c in hits)


@pytest.mark.parametrize("path", [p for p in modules() if CATALOG not in p.parents], ids=rel)
def test_no_rule_code_literals_outside_the_catalog(path):
    hits = code_literals(parse(path))
    assert not hits, f"{rel(path)} writes rule codes as strings; use the Rule objects (rules.X, rules.X.code): " \
                     + "; ".join(f"line {n}: {text[:60]!r}" for n, text in hits)


def test_every_rule_has_named_templates():
    from jaxdiag._rules import RULES, template_fields

    bare = [code for code, r in RULES.items() if r.message.strip() in ("{message}", "{evidence}")]
    assert not bare, f"message templates must carry the wording that names the defect, not only a slot: {bare}"
    for code, r in RULES.items():
        for name in template_fields(r.message) | template_fields(r.fix):
            assert name.isidentifier(), f"{code}: positional or odd field {name!r} in its templates"


def test_variants_point_at_rules_of_another_severity_or_a_note():
    from jaxdiag._rules import RULES

    for code, r in RULES.items():
        if r.variant_of:
            other = RULES[r.variant_of]
            assert other.severity != r.severity, f"{code} and its variant {other.code} share a severity: one rule"


# --- the import graph -------------------------------------------------------------------------------------------

def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(current: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    if node.level == 0:
        base = node.module or ""
    else:
        package = current.split(".") if is_package else current.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    return [f"{base}.{a.name}" for a in node.names] + [base]


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    ids = set()
    for node in walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            ids.update(id(n) for child in node.body for n in ast.walk(child))
    return ids


@functools.lru_cache(maxsize=None)  # built once; the tests only read it
def import_graph() -> dict[str, set[str]]:
    """jaxdiag module -> the jaxdiag modules it imports anywhere in its body (function-level imports included: a
    lazy import is still a dependency), `if TYPE_CHECKING:` blocks excepted."""
    files = {_module_name(p): p for p in modules()}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = parse(path)
        skip = _type_checking_nodes(tree)
        deps: set[str] = set()
        for node in walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.ImportFrom):
                candidates = _resolve(name, path.name == "__init__.py", node)
            elif isinstance(node, ast.Import):
                candidates = [a.name for a in node.names]
            else:
                continue
            deps.update(c for c in candidates if c in files and c != name)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _without_package_inits(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Package `__init__`s that only re-export (`jaxdiag`, `jaxdiag._rules`, `jaxdiag._checks`) are where Python
    itself starts every submodule import; edges from a submodule to its own package's `__init__` are that, not a
    design dependency."""
    return {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in graph.items()}


def test_import_graph_detector_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_check_imports_the_engine():
    graph = import_graph()
    bad = sorted(m for m, deps in graph.items() if m.startswith("jaxdiag._checks")
                 and deps & {"jaxdiag._run._engine", "jaxdiag._jobs._lint", "jaxdiag._parent._cli"})
    assert not bad, f"checks importing the engine (the engine imports the checks): {bad}"


def test_the_report_model_imports_no_renderer():
    deps = import_graph()["jaxdiag._core._report"]
    assert not deps, f"jaxdiag/_core/_report.py imports {sorted(deps)}; renderers register the text view instead"


def test_no_import_cycles():
    cycles = _cycles(_without_package_inits(import_graph()))
    assert not cycles, f"import cycles: {cycles}"
# Where catching every exception is allowed. The boundary is the only place that catches what user code raises
# (and marks jaxdiag's own failures inside user calls as internal errors); the others are the top-level handlers
# that turn jaxdiag's own bug into an internal error (check status `error`, exit 3). Anywhere else, a broad
# `except` would hide jaxdiag's bugs or blame them on the user.
BROAD_CATCH_ALLOWED = {
    ("jaxdiag/_harness/boundary.py", "call_user"),
    ("jaxdiag/_harness/boundary.py", "jaxdiag_code"),
    ("jaxdiag/_run/_engine.py", "run_subject_by_check"),  # one check's internal error; the other checks still run
    ("jaxdiag/_jobs/_lint.py", "_check"),  # one target's internal error under `jaxdiag check`; the others still run
    ("jaxdiag/_parent/_cli.py", "_guard"),  # the CLI's last resort for every command: exit 3
    ("jaxdiag/_parent/_cli.py", "_emit"),  # a renderer's bug: exit 3
    ("jaxdiag/_mesh/_sharding_child.py", "main"),  # the child's last resort: reported to the parent as exit 3
    ("jaxdiag/_mesh/_sharding_child.py", "run_subject"),  # as _engine.run_subject, in the sharding child
    ("jaxdiag/_jobs/_workers.py", "worker_main"),  # a worker forwards what stops it to the parent, which reports it
    ("jaxdiag/_jobs/_child.py", "main"),  # the supervised child forwards whatever stops it to the parent, as data
    ("jaxdiag/_harness/boundary.py", "catch_abort"),  # SystemExit & co. from user code -> the target's result
    # `jaxdiag record` runs inside the user's own program: a recorder failure must never change what it does
    ("jaxdiag/_jobs/_record.py", "_observe"),
}
BROAD = {"Exception", "BaseException"}


def _broad_handlers(tree: ast.Module) -> list[tuple[str, int]]:
    """(enclosing function, line) of every `except:`, `except Exception`, `except BaseException` (also in tuples)."""
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.ExceptHandler):
                types = child.type.elts if isinstance(child.type, ast.Tuple) else [child.type]
                if child.type is None or any(_dotted(t).split(".")[-1] in BROAD for t in types if t is not None):
                    found.append((function, child.lineno))
            visit(child, name)

    visit(tree, "<module>")
    return found


def test_only_the_boundary_catches_every_exception():
    offenders = [f"{rel(path)}:{line} in {function}" for path in modules()
                 for function, line in _broad_handlers(parse(path))
                 if (rel(path), function) not in BROAD_CATCH_ALLOWED]
    assert not offenders, ("catch what user code raises with `_harness.call_user`, and name the exception "
                           "types otherwise:\n" + "\n".join(offenders))


def test_the_broad_catch_detector_sees_every_form():
    source = "def f():\n    try: pass\n    except: pass\n    try: pass\n    except (ValueError, Exception): pass\n"
    assert [line for _, line in _broad_handlers(ast.parse(source))] == [3, 5]


# ---------------------------------------------------------------------------------------------------------------
# Every module imports
# ---------------------------------------------------------------------------------------------------------------

# The bundled examples (`jaxdiag.samples` in an installed wheel) are data, not jaxdiag code: some call FFI kernels
# that only the tests build.
NOT_IMPORTED = ("jaxdiag.samples",)


def jaxdiag_module_names() -> list[str]:
    import pkgutil

    import jaxdiag

    failed: list[str] = []
    names = [m.name for m in pkgutil.walk_packages(jaxdiag.__path__, "jaxdiag.", onerror=failed.append)]
    assert not failed, f"packages that fail to import while walked: {failed}"
    return sorted(n for n in names if not n.startswith(NOT_IMPORTED))


def test_every_module_is_walked():
    """The walk sees every .py file under jaxdiag/ (so the import test below misses none)."""
    files = {".".join(p.relative_to(ROOT).with_suffix("").parts) for p in modules()}
    files = {f[: -len(".__init__")] if f.endswith(".__init__") else f for f in files} - {"jaxdiag"}
    assert files == set(jaxdiag_module_names())


def test_every_module_imports():
    import importlib

    broken = []
    for name in jaxdiag_module_names():
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - every failure is listed, not just the first
            broken.append(f"{name}: {type(exc).__name__}: {exc}")
    assert not broken, "\n".join(broken)


def test_cli_tests_capture_stderr_apart():
    """click < 8.2 mixes stderr into stdout unless asked; tests/clirun.py asks on every release, so no test builds
    typer's CliRunner itself (its `result.stderr` raises on the lower-bound click)."""
    direct = [rel(p) for p in sorted((ROOT / "tests").glob("*.py")) if p.name != "clirun.py"
              and re.search(r"^from typer\.testing import CliRunner", p.read_text(encoding="utf-8"), re.MULTILINE)]
    assert not direct, f"use `from clirun import Runner as CliRunner` in {direct}"


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_test_modules_do_not_import_each_other():
    """Shared test helpers live in helper modules (clirun.py, markers.py, fix_samples.py, jax_state.py, ...), never
    in a test_* module or conftest.py: importing one runs its module-level setup (pytest imports conftest itself)
    and ties two test files' edits together."""
    tests = ROOT / "tests"
    test_modules = {p.stem for p in tests.rglob("test_*.py") if "data" not in p.parts} | {"conftest"}
    offenders = {f"{p.relative_to(ROOT)} imports {name}" for p in tests.rglob("*.py") if "data" not in p.parts
                 for name in _imported_modules(p) & test_modules}
    assert not offenders, sorted(offenders)


# ---------------------------------------------------------------------------------------------------------------
# The supervisor's parent side never imports JAX (nor, so, the user's code): docs/cli.md and CONTRIBUTING
# ---------------------------------------------------------------------------------------------------------------

PARENT_SIDE = ("_rules", "_render")


def test_the_parent_side_imports_no_jax():
    script = ("import sys\n" + "".join(f"import jaxdiag.{m}\n" for m in PARENT_SIDE)
              + "from jaxdiag._parent._cli import app\n"
              + "leaked = sorted(m for m in sys.modules if m == 'jax' or m.startswith(('jax.', 'jaxlib')))\n"
              + "print(leaked)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_contributing_names_the_side_of_every_parent_module():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    side = text[text.index("PARENT SIDE"):text.index("CHILD SIDE")]
    listed = text[text.index("Parent side (never imports JAX)"):].split("\n\n")[0]
    assert "_supervisor.py" in side
    missing = [m for m in PARENT_SIDE if m.rpartition(".")[2] not in listed]
    assert not missing, f"CONTRIBUTING's parent-side list lacks {missing}"


# ---------------------------------------------------------------------------------------------------------------
# Every emission site passes exactly its rule's template fields: read statically, so a misspelt field is a failing
# test, not an internal error on the one input that reaches the site.
# ---------------------------------------------------------------------------------------------------------------


def _emitted_rules(expr: ast.expr, assigned: dict[str, ast.expr]) -> list[Any] | None:
    """The catalog rules `expr` can be (`rules.X`, `rules.X if c else rules.Y`, a local bound to one of those)."""
    from jaxdiag import _rules

    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id in ("rules", "_rules"):
        rule = getattr(_rules, expr.attr, None)
        return [rule] if isinstance(rule, _rules.Rule) else None
    if isinstance(expr, ast.IfExp):
        body, orelse = _emitted_rules(expr.body, assigned), _emitted_rules(expr.orelse, assigned)
        return body + orelse if body and orelse else None
    if isinstance(expr, ast.Name) and expr.id in assigned:
        return _emitted_rules(assigned[expr.id], assigned)
    return None


def emission_field_errors(tree: ast.Module) -> tuple[list[str], int]:
    """(`line CODE: fields ...` for each `.finding(...)` whose keywords are not its rule's fields, sites that could
    not be resolved: a `**fields` call or a rule chosen at run time)."""
    errors, unresolved = [], 0
    functions = [n for n in walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for function in functions:
        assigned = {n.targets[0].id: n.value for n in walk(function) if isinstance(n, ast.Assign)
                    and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)}
        for node in walk(function):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "finding"):
                continue
            chosen = _emitted_rules(node.func.value, assigned)
            if chosen is None or any(k.arg is None for k in node.keywords):
                unresolved += 1
                continue
            given = {k.arg for k in node.keywords} - {"location"}
            errors += [f"line {node.lineno} {r.code}: passes {sorted(given)}, its templates use {sorted(r.fields)}"
                       for r in chosen if given != r.fields]
    return errors, unresolved


def test_the_emission_field_detector_catches_a_misspelt_field():
    from jaxdiag import _rules

    rule = next(r for r in _rules.RULES.values() if r.fields)
    name = next(n for n in dir(_rules) if getattr(_rules, n) is rule)
    good = ", ".join(f"{f}=1" for f in sorted(rule.fields))
    source = f"def f():\n    yield rules.{name}.finding(location=None, {good}, misspelt=2)\n"
    errors, unresolved = emission_field_errors(ast.parse(source))
    assert len(errors) == 1 and "misspelt" in errors[0] and unresolved == 0
    assert emission_field_errors(ast.parse(source.replace(", misspelt=2", ""))) == ([], 0)


def test_every_emission_site_passes_its_rules_fields():
    errors, unresolved = [], 0
    for path in modules():
        if CATALOG in path.parents:
            continue
        found, skipped = emission_field_errors(parse(path))
        errors += [f"{rel(path)} {e}" for e in found]
        unresolved += skipped
    assert not errors, "\n".join(errors)
    # `**fields` sites (a finding re-emitted under another rule) are few; the rest are all checked above
    assert unresolved <= 8, f"{unresolved} emission sites the detector cannot resolve"


# ---------------------------------------------------------------------------------------------------------------
# Layers: the folders are the layers, bottom to top. A module imports from its own layer or below (function-level
# imports included), never above; no module grows past MAX_LINES.
# ---------------------------------------------------------------------------------------------------------------

LAYERS = (
    ("_core", "_rules"),  # plain data, errors, the registries, configuration: no JAX, both sides of the boundary
    ("_compat", "_render"),  # JAX internals (the only place); report renderers
    ("_harness",),  # the only way into user code
    ("_loading",),  # targets, SPECs and example inputs, layouts
    ("_checks",),  # the checks, one family per package or module
    ("_evidence",),  # the exposing transformation, repro scripts
    ("_fixes",),  # source edits verified by re-running checks
    ("_run", "_mesh"),  # child side: one target through the engine; the sharding child
    ("_jobs",),  # child side: the supervised child's jobs, `check` over a project
    ("_parent",),  # parent side: CLI and supervisor, never JAX
    ("_api", "pytest_plugin", "__init__", "__main__"),  # the public surface
)
MAX_LINES = 600


def _layer_of(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    return next(i for i, names in enumerate(LAYERS) if top in names)


def test_every_package_and_root_module_has_a_layer():
    tops = {m.split(".")[1] if "." in m else "__init__" for m in import_graph()}
    placed = {name for names in LAYERS for name in names}
    assert tops <= placed, f"not in LAYERS: {sorted(tops - placed)}"


def test_no_upward_imports():
    graph = _without_package_inits(import_graph())
    upward = [f"{m} -> {d}" for m, deps in sorted(graph.items()) for d in sorted(deps)
              if _layer_of(d) > _layer_of(m)]
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_the_layer_detector_sees_an_upward_import():
    assert _layer_of("jaxdiag._core._report") < _layer_of("jaxdiag._run._engine") < _layer_of("jaxdiag._api")


def test_no_module_is_over_the_line_limit():
    long = {rel(p): n for p in modules() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them along their seams): {long}"


# ---------------------------------------------------------------------------------------------------------------
# The state checks share is typed: no `Any` field in it, no attribute set that its class does not declare, and no
# `# type: ignore[attr-defined]` anywhere (an attribute the type checker cannot see is looked up by name, saying why).
# ---------------------------------------------------------------------------------------------------------------

SHARED_STATE = {  # file -> classes holding what one check computes and another reads
    PACKAGE / "_harness" / "cache.py": ("SubjectCache", "ShardingMemo"),
    PACKAGE / "_checks" / "_gradref" / "_state.py": ("GradMemo", "GradState"),
}


def _any_fields(cls: ast.ClassDef) -> list[str]:
    """Fields whose annotation mentions `Any` (bare, or inside a container or a union)."""
    return [ast.unparse(node) for node in cls.body if isinstance(node, ast.AnnAssign)
            if any(isinstance(n, ast.Name) and n.id == "Any" or isinstance(n, ast.Attribute) and n.attr == "Any"
                   for n in ast.walk(node.annotation))
            or isinstance(node.annotation, ast.Constant) and "Any" in re.findall(r"\w+", str(node.annotation.value))]


def _undeclared_attributes(cls: ast.ClassDef) -> list[str]:
    declared = {node.target.id for node in cls.body if isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)}
    assigned = {target.attr for node in ast.walk(cls) if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                for target in (target.elts if isinstance(target, ast.Tuple) else [target])
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id == "self"}
    return sorted(assigned - declared)


def _classes(path: Path, names: tuple[str, ...]) -> list[ast.ClassDef]:
    found = [node for node in parse(path).body if isinstance(node, ast.ClassDef) and node.name in names]
    assert {c.name for c in found} == set(names), f"{rel(path)}: expected classes {names}"
    return found


def test_the_typing_detectors_see_what_they_are_meant_to_see():
    cls = ast.parse("class C:\n    a: Any\n    b: dict[str, typing.Any]\n    c: 'list[Any]'\n    d: int\n"
                    "    def __init__(self):\n        self.d = 1\n        self.e, self.f = 2, 3\n").body[0]
    assert isinstance(cls, ast.ClassDef)
    assert [f.split(":")[0] for f in _any_fields(cls)] == ["a", "b", "c"]
    assert _undeclared_attributes(cls) == ["e", "f"]


@pytest.mark.parametrize("path", sorted(SHARED_STATE), ids=rel)
def test_the_shared_check_state_is_typed(path):
    for cls in _classes(path, SHARED_STATE[path]):
        assert not _any_fields(cls), f"{cls.name}: fields typed Any: {_any_fields(cls)}"
        assert not _undeclared_attributes(cls), f"{cls.name}: attributes not declared: {_undeclared_attributes(cls)}"


def test_no_attr_defined_ignores():
    hits = [f"{rel(p)}:{i}" for p in modules() for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if re.search(r"type:\s*ignore\[[^\]]*attr-defined", line)]
    assert not hits, f"`# type: ignore[attr-defined]` (look the attribute up by name and say why): {hits}"
