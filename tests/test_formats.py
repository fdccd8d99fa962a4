"""`--format sarif|github|junit`: structure, escaping, XML validity, and the same findings as `--format json`."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from lint_fixture import PROBE, probe, write_pkg
from clirun import Runner as CliRunner  # stdout/stderr apart on every click
from clirun import check_once_per_request

from jaxdiag._run import _engine
from jaxdiag import _rules as rules
from jaxdiag._parent._cli import app
from jaxdiag._render import github, junit, render, sarif
from jaxdiag._core._report import CheckResult, Finding, Location, Report, TargetReport

runner = CliRunner()
TRICKY = "100% wrong:\r\nshape (3, 4), not (5, 4); a,b:c"


def sample_report() -> Report:
    """Every severity, a finding without a location, a Windows path, GitHub's special characters, all statuses."""
    bad = rules.BATCH_DIM_OUT_OF_RANGE.finding(evidence=TRICKY, fix="Return `0` for out_axes, 50% of the time: never",
                                               location=Location("pkg/ops.py", 12, "my_rule"))
    warn = rules.MISSING_LOWERING.finding(var="no lowering, so jit fails: my_p", prim_name="my",
                                          fix="mlir.register_lowering(...)",
                                          location=Location("pkg\\win, dir\\ops.py", 3, "my_p"))
    note = rules.INPUTS_INFERRED.finding(count=1, specs="f32[3]", location=None)
    grad = rules.CUSTOM_DERIVATIVE_MISMATCH.finding(
        owner="f_bwd", derivative="gradient", function="f", details="custom derivative differs",
        consequence="jax.grad is silently wrong", where="", correction="check bwd",
        location=Location("pkg/grads.py", 40, "f_bwd"))
    first = TargetReport("pkg.ops:my_p", "primitive", ["f32[3]"], checks=[
        CheckResult("batching-spy", "failed", 0.25, bad.code),
        CheckResult("registration", "failed", 0.01, warn.code),
        CheckResult("vmap-vs-loop", "skipped", 0.0, f"blocked by {bad.code}"),
        CheckResult("boom", "error", 0.0, "internal error in check boom: KeyError: 'x'\n  traceback..."),
    ], findings=[bad, warn, note], module="pkg.ops")
    second = TargetReport("pkg.grads:f", "custom_vjp", ["f32[3]"], checks=[
        CheckResult("custom-vjp", "failed", 0.5, grad.code)], findings=[grad], module="pkg.grads")
    third = TargetReport("pkg.grads:g", "custom_jvp", ["f32[3]"], checks=[CheckResult("custom-jvp", "passed", 0.1)],
                         module="pkg.grads")
    return Report([first, second, third], jaxdiag_version="0.1.0", jax_version="0.10.2")


def identity(finding: dict | Finding) -> tuple:
    if isinstance(finding, Finding):
        finding = finding.to_dict()
    loc = finding["location"] or {}
    return finding["code"], finding["severity"], loc.get("path", "").replace("\\", "/"), loc.get("line")


# ---------------------------------------------------------------------------------------------------------------
# SARIF
# ---------------------------------------------------------------------------------------------------------------


def test_sarif_structure_for_github_code_scanning():
    report = sample_report()
    doc = json.loads(sarif.render(report))
    assert doc["$schema"].endswith("sarif-2.1.0.json") and doc["version"] == "2.1.0"
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "jaxdiag" and driver["version"] == "0.1.0"
    assert driver["informationUri"].startswith("https://")
    assert [r["id"] for r in driver["rules"]] == sorted(rules.RULES)  # every catalog rule
    for r in driver["rules"]:
        catalog = rules.RULES[r["id"]]
        assert r["name"] == catalog.name
        assert r["shortDescription"]["text"] == catalog.summary
        assert catalog.what in r["fullDescription"]["text"] and catalog.why in r["fullDescription"]["text"]
        assert r["help"]["text"] and "## What it does" in r["help"]["markdown"]
        assert r["defaultConfiguration"]["level"] == {"error": "error", "warning": "warning",
                                                      "info": "note"}[catalog.severity]
    results = run["results"]
    assert len(results) == len(report.findings)
    for result, finding in zip(results, report.findings):
        assert result["ruleId"] == finding.code
        assert driver["rules"][result["ruleIndex"]]["id"] == finding.code
        assert result["level"] == {"error": "error", "warning": "warning", "info": "note"}[finding.severity]
        assert finding.message in result["message"]["text"]
        if finding.fix:
            assert finding.fix in result["message"]["text"]
        if finding.location is None:
            assert "locations" not in result
            continue
        physical = result["locations"][0]["physicalLocation"]
        assert physical["region"]["startLine"] == finding.location.line
        uri = physical["artifactLocation"]["uri"]
        assert "\\" not in uri and not uri.startswith("/") and ":" not in uri
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results if "locations" in r]
    assert uris == ["pkg/ops.py", "pkg/win%2C%20dir/ops.py", "pkg/grads.py"]
    assert run["invocations"][0]["executionSuccessful"] is False  # the crashed check
    assert "KeyError" in run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"]


def test_sarif_uri_forms():
    assert sarif.artifact_uri("./pkg/a b.py") == "pkg/a%20b.py"
    assert sarif.artifact_uri("pkg\\sub\\m.py") == "pkg/sub/m.py"
    assert sarif.artifact_uri("/abs/m.py") == "file:///abs/m.py"


# ---------------------------------------------------------------------------------------------------------------
# GitHub workflow commands
# ---------------------------------------------------------------------------------------------------------------

# `::level key=value,key=value::message`: properties contain no raw `,` `:` `%` CR LF; data no raw `%` CR LF.
LINE_RE = re.compile(r"^::(error|warning|notice)( (?P<props>[a-z]+=[^,:\r\n]*(,[a-z]+=[^,:\r\n]*)*))?::"
                     r"(?P<data>[^\r\n]*)$")


def unescape(text: str) -> str:
    return (text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",")
            .replace("%25", "%"))


def test_github_escaping_functions():
    assert github.escape_data("50%\r\nx: a, b") == "50%25%0D%0Ax: a, b"
    assert github.escape_property("C:\\a,b%\n") == "C%3A\\a%2Cb%25%0A"
    assert github.escape_property("%3A") == "%253A"  # `%` first, so escapes are not double-decoded


def test_github_lines_syntax_and_escaping():
    report = sample_report()
    lines = github.render(report).splitlines()
    finding_lines = [line for line in lines if "jaxdiag internal error" not in line]
    assert len(finding_lines) == len(report.findings)
    for line, (target, finding) in zip(finding_lines, [(t, f) for t in report.targets for f in t.findings]):
        match = LINE_RE.match(line)
        assert match, line
        level = {"error": "error", "warning": "warning", "info": "notice"}[finding.severity]
        assert line.startswith(f"::{level} ")
        props = dict(p.split("=", 1) for p in match.group("props").split(","))
        assert unescape(props["title"]) == f"{finding.code} {finding.name}"
        if finding.location:
            assert unescape(props["file"]) == finding.location.path.replace("\\", "/")
            assert props["line"] == str(finding.location.line)
        else:
            assert "file" not in props and "line" not in props
        data = unescape(match.group("data"))
        assert finding.message in data and target.target in data
        assert (f"fix: {finding.fix}" in data) if finding.fix else "fix:" not in data
    first = finding_lines[0]
    assert "100%25 wrong:%0D%0Ashape (3, 4), not (5, 4); a,b:c" in first  # data keeps `:` and `,`
    second = finding_lines[1]
    assert "file=pkg/win%2C dir/ops.py,line=3," in second  # properties escape `,`
    assert lines[-1].startswith("::error title=jaxdiag internal error::pkg.ops%3Amy_p") is False
    assert lines[-1].startswith("::error title=jaxdiag internal error::pkg.ops:my_p: internal error in check boom")


# ---------------------------------------------------------------------------------------------------------------
# JUnit
# ---------------------------------------------------------------------------------------------------------------


def test_junit_is_valid_xml_with_suites_cases_and_failures():
    report = sample_report()
    root = ET.fromstring(junit.render(report))
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["pkg.ops", "pkg.grads"]  # one per module
    ops, grads = suites
    names = [c.get("name") for c in ops.findall("testcase")]
    assert names == ["pkg.ops:my_p [batching-spy]", "pkg.ops:my_p [registration]", "pkg.ops:my_p [vmap-vs-loop]",
                     "pkg.ops:my_p [boom]", "pkg.ops:my_p [findings]"]
    cases = {c.get("name"): c for c in root.iter("testcase")}
    failure = cases["pkg.ops:my_p [batching-spy]"].find("failure")
    assert failure.get("type") == rules.BATCH_DIM_OUT_OF_RANGE.code
    assert TRICKY.replace("\r", "") in failure.text.replace("\r", "")  # XML normalises a raw CR
    assert "no lowering" in cases["pkg.ops:my_p [registration]"].find("failure").text
    assert cases["pkg.ops:my_p [vmap-vs-loop]"].find("skipped").get("message") == (
        f"blocked by {rules.BATCH_DIM_OUT_OF_RANGE.code}")
    assert "KeyError" in cases["pkg.ops:my_p [boom]"].find("error").get("message")
    assert "inferred 1 argument(s): f32[3]" in cases["pkg.ops:my_p [findings]"].find("system-out").text
    assert cases["pkg.grads:f [custom-vjp]"].find("failure").get("type") == rules.CUSTOM_DERIVATIVE_MISMATCH.code
    passed = cases["pkg.grads:g [custom-jvp]"]
    assert list(passed) == []
    assert (ops.get("tests"), ops.get("failures"), ops.get("errors"), ops.get("skipped")) == ("5", "2", "1", "1")
    assert (root.get("tests"), root.get("failures")) == ("7", "3")


def test_junit_drops_characters_xml_cannot_carry():
    finding = rules.BATCHING_RULE_RAISED.finding(evidence="ansi \x1b[31mred\x1b[0m and \x00 nul", fix="")
    report = Report([TargetReport("m:p", "primitive", findings=[finding], module="m")])
    root = ET.fromstring(junit.render(report))
    assert "ansi [31mred[0m and  nul" in root.find(".//failure").text


# ---------------------------------------------------------------------------------------------------------------
# Every format carries the findings of json, on a real `jaxdiag check` run
# ---------------------------------------------------------------------------------------------------------------


# The probe check is monkeypatched into this process: no worker processes, no cache.
IN_PROCESS = ["-j", "1", "--timeout", "0", "--no-cache"]


@pytest.fixture(scope="module")  # six runs of `check` that every test below only reads: made once
def checked(tmp_path_factory, module_monkeypatch) -> dict[str, str]:
    tmp_path = tmp_path_factory.mktemp("formats")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setattr(_engine, "ALL_CHECKS", [probe])
        check_once_per_request(monkeypatch, tmp_path)  # the six runs render one report
        return {**_check_in_every_format(tmp_path), "folder": str(tmp_path)}


def _check_in_every_format(tmp_path) -> dict[str, str]:
    write_pkg(tmp_path, helper_comment="  # jaxdiag: ignore[JXB001]",
              extra={"lintpkg/broken.py": "raise ImportError('no GPU, no luck')\n"})
    outputs = {}
    for fmt in ("json", "sarif", "github", "junit", "text"):
        result = runner.invoke(app, ["check", *IN_PROCESS, "lintpkg", "--keep-going", "--format", fmt,
                                     *(["-v"] if fmt == "text" else [])])
        assert result.exit_code == 5, result.output  # an import failure fails the run even with --keep-going
        outputs[fmt] = result.output
    out_file = tmp_path / "out.sarif"
    result = runner.invoke(app, ["check", *IN_PROCESS, "lintpkg", "--keep-going", "--format", "sarif", "--output",
                                 str(out_file)])
    assert result.exit_code == 5 and result.output == ""
    assert out_file.read_text() == outputs["sarif"]
    return outputs


def test_all_formats_carry_the_same_findings_as_json(checked):
    data = json.loads(checked["json"])
    expected = sorted(identity(f) for t in data["targets"] for f in t["findings"])
    assert {c for c, *_ in expected} >= {PROBE, "JXN001", "JXN012", "JXN005"}  # JXN012: needs_p lacks its bind param
    assert all(path and line for _, _, path, line in expected)  # check mode gives every finding a place
    problems = [(t["target"], p["kind"], p["location"]["path"], p["location"]["line"]) for t in data["targets"]
                for p in t["problems"]]
    assert problems == [("lintpkg/broken.py", "import-failed", "lintpkg/broken.py", 1)]

    run = json.loads(checked["sarif"])["runs"][0]
    level = {"error": "error", "warning": "warning", "note": "info"}
    from_sarif = sorted((r["ruleId"], level[r["level"]],
                         r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                         r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in run["results"])
    assert from_sarif == expected
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    (notification,) = invocation["toolExecutionNotifications"]
    assert notification["descriptor"]["id"] == "import-failed" and notification["level"] == "error"
    assert notification["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "lintpkg/broken.py"

    severity = {"error": "error", "warning": "warning", "notice": "info"}
    from_github = []
    problem_lines = []
    for line in checked["github"].splitlines():
        match = LINE_RE.match(line)
        assert match, line
        props = dict(p.split("=", 1) for p in match.group("props").split(","))
        if unescape(props["title"]).startswith("jaxdiag "):
            problem_lines.append((match.group(1), unescape(props["title"]), unescape(props["file"])))
            continue
        from_github.append((unescape(props["title"]).split()[0], severity[match.group(1)], unescape(props["file"]),
                            int(props["line"])))
    assert sorted(from_github) == expected
    assert problem_lines == [("error", "jaxdiag import failed", "lintpkg/broken.py")]

    root = ET.fromstring(checked["junit"])
    text = "\n".join((e.text or "") for e in root.iter() if e.tag in ("failure", "system-out"))
    blocks = re.findall(r"^(JX[A-Z]\d{3}) [a-z-]+ \[(\w+)\] at (\S+):(\d+) in ", text, flags=re.M)
    assert sorted((c, s, p, int(n)) for c, s, p, n in blocks) == expected
    assert {s.get("name") for s in root.findall("testsuite")} >= {"lintpkg/prims.py", "lintpkg/funcs.py",
                                                                 "lintpkg/broken.py"}
    assert [e.get("type") for e in root.iter("error")] == ["import-failed"]
    assert "import-failed" in checked["text"] and "no GPU" in checked["text"]

    for code, *_ in expected:
        assert code in checked["text"]


def test_machine_formats_are_plain_and_deterministic(checked, monkeypatch):
    for fmt in ("sarif", "github", "junit"):
        assert "\x1b[" not in checked[fmt]
    monkeypatch.chdir(checked["folder"])
    monkeypatch.setattr(_engine, "ALL_CHECKS", [probe])
    again = runner.invoke(app, ["check", *IN_PROCESS, "lintpkg", "--keep-going", "--format", "github"]).output
    assert again == checked["github"]


def test_render_dispatch_knows_every_format():
    """Every format the CLI offers renders through its own renderer and carries every finding's code (the text
    report folds the inputs-inferred note into the target's header)."""
    from jaxdiag._parent._cli import FORMAT_NAMES
    from jaxdiag._render import FORMATS

    report = sample_report()
    assert tuple(FORMATS) == FORMAT_NAMES
    for fmt in FORMAT_NAMES:
        out = render(report, fmt)
        assert out == FORMATS[fmt](report)
        shown = {f.code for f in report.findings} - ({rules.INPUTS_INFERRED.code} if fmt == "text" else set())
        if fmt == "issue":  # issue material is errors and warnings (here all in the project: one line names them)
            shown = {f.code for f in report.findings if f.severity in ("error", "warning")}
        assert all(code in out for code in shown), (fmt, shown)
        assert "pkg/ops.py" in out and "12" in out
    assert "(inferred)" in render(report, "text")


# ---------------------------------------------------------------------------------------------------------------
# One severity per rule, everywhere
# ---------------------------------------------------------------------------------------------------------------


def test_sarif_rule_levels_match_every_result_level(checked):
    run = json.loads(checked["sarif"])["runs"][0]
    levels = {r["id"]: r["defaultConfiguration"]["level"] for r in run["tool"]["driver"]["rules"]}
    assert run["results"]
    for result in run["results"]:
        assert result["level"] == levels[result["ruleId"]], result["ruleId"]
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]


def test_jaxdiag_rules_lists_the_catalog_severity_of_every_rule():
    result = runner.invoke(app, ["rules"])
    assert result.exit_code == 0
    listed = {}
    for line in result.output.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] in rules.RULES:
            listed[parts[0]] = parts[2]
    assert listed == {code: r.severity for code, r in rules.RULES.items()}


def test_every_sample_reports_each_rule_at_its_catalog_severity():
    """The pinned codes of every sample file (verified against real runs by test_samples_table), on every JAX
    release the table covers: a code only ever appears at its rule's catalog severity, or, in a sample that declares
    no inputs (no JAXDIAG dict: they are inferred), graded down to INFERRED_MAX_SEVERITY (`_provenance`)."""
    from expected_codes import EXPECTED, EXPECTED_BY_JAX, SAMPLES

    def allowed(name: str, code: str) -> set[str]:
        rule = rules.RULES[code]
        inferred = "JAXDIAG" not in (SAMPLES / name).read_text(encoding="utf-8")
        return {rule.severity} | ({rules.INFERRED_MAX_SEVERITY} if inferred and rule.evidence_from_inputs else set())

    tables = [EXPECTED, *EXPECTED_BY_JAX.values()]
    wrong = [f"{name}: {code} reported as {sev}, catalog says {rules.RULES[code].severity}"
             for table in tables for name, entry in table.items() for sev, codes in entry.items() for code in codes
             if sev != "problems" and sev not in allowed(name, code)]
    assert not wrong, "\n".join(wrong)


def test_a_finding_cannot_take_another_severity():
    with pytest.raises(TypeError):
        rules.INPUTS_INFERRED.finding(count=1, specs="f32[3]", severity="error")
