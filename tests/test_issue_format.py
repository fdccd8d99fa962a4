"""`--format issue`: a ready-to-file Markdown issue for each finding located in a library outside the project, one
line for findings in the project itself. The project (tests/data/ci_issue/project) imports a small library that
lives in another folder (tests/data/ci_issue/lib, put on sys.path)."""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pytest
from clirun import Runner

from jaxdiag._parent._cli import app
from jaxdiag._render import issue, render
from jaxdiag._core._report import Finding, Location, Report, TargetReport

DATA = Path(__file__).resolve().parent / "data" / "ci_issue"
PROJECT, LIB = DATA / "project", DATA / "lib"
OPS = LIB / "minilib" / "ops.py"


def _line(path: Path, text: str) -> int:
    hits = [n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(hits) == 1, hits
    return hits[0]


def _report_from_dict(data: dict) -> Report:
    """A report as another process hands it over: plain dicts only, no live subject."""
    targets = [TargetReport(t["target"], t["kind"], list(t["inputs"]),
                            findings=[Finding.from_dict(f) for f in t["findings"]]) for t in data["targets"]]
    return Report(targets, data["jaxdiag_version"], data["jax_version"])


@pytest.fixture
def in_project(monkeypatch):
    monkeypatch.chdir(PROJECT)
    monkeypatch.syspath_prepend(str(LIB))
    monkeypatch.syspath_prepend(str(PROJECT))


@pytest.mark.slow  # two CLI runs (~8 s); the fast tier renders hand-made reports below
def test_library_bug_becomes_an_issue_and_the_json_gives_the_same_text(in_project):
    result = Runner().invoke(app, ["batching", "app.py:feature", "--arg", "f32[3]", "--format", "json"])
    assert result.exit_code == 1, result.output
    report = _report_from_dict(json.loads(result.stdout))
    text = render(report, "issue")
    bug = _line(OPS, "# the bug")
    # title names the library and the rule function; the suspected line is quoted with its number, marked
    assert text.count("\n## minilib: ") == 1, text
    title = next(line for line in text.splitlines() if line.startswith("## "))
    assert "`_norm_batching`" in title
    assert f"`minilib/ops.py:{bug}` in `_norm_batching`" in text
    assert f"> {bug} |     return jnp.sqrt(jnp.sum(x * x, axis=axes)), bx" in text
    for section in ("### What happens", "### Expected", "### Where", "### Reproduce", "### Suggested fix",
                    "### Versions"):
        assert section in text, section
    finding = next(f for f in report.findings if f.location and f.location.path == str(OPS))
    assert finding.message.strip() in text and finding.fix.strip() in text
    # a command that reproduces it, with the example inputs, and writes the plain-JAX script
    assert "jaxdiag batching app.py:feature --arg 'f32[3]' --select " + finding.code + " --repro repro/" in text
    assert f"| Python | {platform.python_version()} |" in text and f"| jax | {report.jax_version} |" in text
    assert "| jaxlib | " in text and "| minilib | unknown" in text  # the local library has no installed metadata
    # the CLI's own --format issue prints the same text as the report rebuilt from JSON
    direct = Runner().invoke(app, ["batching", "app.py:feature", "--arg", "f32[3]", "--format", "issue"])
    assert direct.exit_code == 1 and direct.stdout == text


def _hand_report(path: str, line: int, code: str = "JXB001", target: str = "app.py:f > p") -> Report:
    finding = Finding(code, "batch-dim-out-of-range", "error", "Batch dim out of range: the rule is wrong.",
                      "Return `out, 0`.", Location(path, line, "_rule"))
    return Report([TargetReport(target, "primitive", ["f32[3]"], findings=[finding])], "9.9", "0.10.2")


def test_findings_in_the_project_are_one_line(in_project):
    report = _hand_report("app.py", _line(PROJECT / "app.py", "# the bug"), code="JXG014")
    text = render(report, "issue")
    assert "## " not in text
    lines = [line for line in text.splitlines() if line.strip()]
    assert len([line for line in lines if "Not issue material" in line]) == 1
    assert f"app.py:{_line(PROJECT / 'app.py', '# the bug')} JXG014" in text
    assert "nothing to file upstream" in text


def test_site_packages_library_is_named_with_its_installed_version(tmp_path, monkeypatch):
    """A library in a site-packages folder (here inside the project, as in a `.venv`): outside the project all the
    same, named and versioned from the dist-info beside it, with its tracker from Project-URL."""
    site = tmp_path / ".venv" / "lib" / "site-packages"
    (site / "fancylib" / "sub").mkdir(parents=True)
    for init in (site / "fancylib" / "__init__.py", site / "fancylib" / "sub" / "__init__.py"):
        init.write_text("")
    module = site / "fancylib" / "sub" / "kernels.py"
    module.write_text("def _rule(args, dims):\n    return args[0], dims[0]\n")
    info = site / "fancy_lib-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fancy-lib\nVersion: 1.2.3\n"
                                   "Project-URL: Bug Tracker, https://github.com/example/fancy-lib/issues\n")
    (info / "RECORD").write_text("fancylib/__init__.py,,\nfancylib/sub/kernels.py,,\n")
    monkeypatch.chdir(tmp_path)
    assert issue.is_outside_project(str(module)) and not issue.is_outside_project("mine.py")
    lib = issue.library_of(str(module))
    assert (lib.package, lib.distribution, lib.version) == ("fancylib", "fancy-lib", "1.2.3")
    text = render(_hand_report(str(module), 2), "issue")
    assert "## fancylib: " in text and "`fancylib/sub/kernels.py:2` in `_rule`" in text
    assert "| fancy-lib | 1.2.3 |" in text
    assert "file at https://github.com/example/fancy-lib/issues" in text
    assert "> 2 |     return args[0], dims[0]" in text


def test_a_library_file_that_cannot_be_read_still_gives_an_issue(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = render(_hand_report("/nonexistent/somelib/mod.py", 7), "issue")
    assert "## mod: " in text and "`mod.py:7`" in text and "```python" not in text


def test_the_plain_jax_script_a_finding_carries_is_embedded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    report = _hand_report("/elsewhere/lib/mod.py", 3)
    report.findings[0].repro = "import jax\nassert False, 'the defect'\n"  # type: ignore[attr-defined]
    text = render(report, "issue")
    assert "```python\nimport jax\nassert False, 'the defect'\n```" in text
    assert "--repro repro/" not in text


def test_the_title_is_short_even_when_the_message_has_no_headline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    report = _hand_report("/elsewhere/lib/mod.py", 3)
    report.findings[0].message = "word " * 60
    title = next(line for line in render(report, "issue").splitlines() if line.startswith("## "))
    assert title == "## mod: batch dim out of range in `_rule`"
