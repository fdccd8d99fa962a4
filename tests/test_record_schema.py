"""Recordings are data: `.jaxdiag/calls.json` is validated against its schema (docs/json.md) before any check, and
anything else is exit 2 naming the JSON path of the bad field; only the project's own modules under the
recording's root are carriers; a call may name an installed library's rule, defined in that library. Hand-made
bad recordings live in tests/data/recbad/bad/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from clirun import Runner

from jaxdiag._jobs import _record_schema
from jaxdiag._parent._cli import app
from jaxdiag._jobs._record_schema import RecordingError

RECBAD = Path(__file__).parent / "data" / "recbad"

# file in recbad/bad/ -> (JSON path named, what the line says)
BAD = {
    "via_os_system": ("calls[0].via.target", "module 'os'"),
    "via_null_arg": ("calls[0].via.args[0]", "expected a SPEC string, got null"),
    "via_imported_callable": ("calls[0].via.target", "does not define a module-level function 'joined'"),
    "via_outside_root": ("calls[0].via.target", "is not one of the project's own modules"),
    "library_target_defined_in_project": ("calls[0].defined_at", "a module outside it"),
    "target_missing_module": ("calls[0].target", "module 'nosuchmodule' is not a Python file"),
    "kind_unknown": ("calls[0].kind", "expected one of primitive"),
    "count_string": ("calls[0].count", "expected an integer"),
    "args_not_list": ("calls[0].args", "expected a list of SPEC strings, got a string"),
    "huge_shape": ("calls[0].args[0]", "MAX_ELEMENTS"),
    "deep": ("calls[0].ranges[0]", "MAX_DEPTH"),
    "range_reversed": ("calls[0].ranges[0]", "min 3 is above max 1"),
    "unknown_field": ("calls[0].command", "unknown field"),
    "schema_2": ("schema", "expected 1, got 2"),
    "param_not_literal": ("calls[0].params.fn", "expected a Python literal"),
    "bad_domain_dtype": ("calls[0].via.args[0]", "overflows f32"),
    "nan_range": ("calls.json", "NaN is not a JSON number"),
    "not_json": ("calls.json", "not valid JSON"),
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the recbad project (recops.py) as the current folder, with an empty .jaxdiag/."""
    shutil.copy(RECBAD / "recops.py", tmp_path / "recops.py")
    (tmp_path / ".jaxdiag").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check_exit_2(project: Path) -> str:
    result = Runner().invoke(app, ["check", "recops.py", "--output", str(project / "report.json")])
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jaxdiag: error: "), result.stderr
    assert not (project / "report.json").exists()
    return lines[0]


def test_every_hand_made_bad_recording_is_covered():
    assert sorted(p.stem for p in (RECBAD / "bad").glob("*.json")) == sorted(BAD)


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_recording_is_exit_2_naming_the_field(project, name):
    shutil.copy(RECBAD / "bad" / f"{name}.json", project / ".jaxdiag" / "calls.json")
    line = check_exit_2(project)
    where, says = BAD[name]
    assert f"calls.json: {where}" in line or (where == "calls.json" and "calls.json:" in line), line
    assert says in line, line


def test_a_recorded_os_system_carrier_never_runs(project):
    shutil.copy(RECBAD / "bad" / "via_os_system.json", project / ".jaxdiag" / "calls.json")
    check_exit_2(project)
    assert not (project / "PWNED").exists()


def test_the_good_recording_is_accepted(project):
    shutil.copy(RECBAD / "good.json", project / ".jaxdiag" / "calls.json")
    calls = _record_schema.load(str(project / ".jaxdiag" / "calls.json"), [str(project)])
    assert [c["via"]["target"] for c in calls] == ["recops:run"]


def _good() -> dict:
    return json.loads((RECBAD / "good.json").read_text())


def _load(project: Path, data: object, search: tuple[Path, ...] = ()) -> str:
    path = project / ".jaxdiag" / "calls.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    with pytest.raises(RecordingError) as info:
        _record_schema.load(str(path), [str(project), *map(str, search)])
    return str(info.value)


@pytest.mark.parametrize("field", ["target", "kind", "args", "via", "ranges", "params", "name", "count",
                                   "replayable"])
def test_null_or_wrongly_typed_fields_name_their_path(project, field):
    data = _good()
    data["calls"][0][field] = 5 if field in ("via", "ranges", "params", "replayable") else None
    message = _load(project, data)
    assert f"calls[0].{field}:" in message and "\n" not in message


def test_too_many_entries_and_oversized_strings(project):
    data = _good()
    data["calls"] = data["calls"] * (_record_schema.MAX_CALLS + 1)
    assert "MAX_CALLS" in _load(project, data)
    data = _good()
    data["calls"][0]["name"] = "n" * (_record_schema.MAX_TEXT + 1)
    assert "calls[0].name:" in _load(project, data) and "MAX_TEXT" in _load(project, data)
    data = _good()
    data["calls"][0]["via"]["args"] = ["f32[3]" + " " * 20_000]
    assert "calls[0].via.args[0]:" in _load(project, data)


def test_json_deeper_than_the_reader_allows_is_exit_2_not_a_crash(project):
    assert "MAX_DEPTH" in _load(project, '{"schema": 1, "calls": ' + "[" * 100_000 + "]" * 100_000 + "}")


def test_a_module_of_the_project_inside_a_virtual_environment_is_not_its_own(project):
    venv = project / ".venv" / "lib" / "site-packages"
    venv.mkdir(parents=True)
    (venv / "vendored.py").write_text("def run(x):\n    return x\n")
    data = _good()
    data["calls"][0]["via"]["target"] = "vendored:run"
    path = project / ".jaxdiag" / "calls.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RecordingError, match="not one of the project's own modules"):
        _record_schema.load(str(path), [str(project), str(venv)])


def test_the_recorder_writes_only_what_the_validator_accepts(project):
    from jaxdiag._jobs import _record

    good = _good()["calls"][0]
    records = {
        ("own",): dict(good),
        ("library",): dict(good, target="json:dumps", defined_at=f"{json.__file__}:1", via=None),
        ("library_at_a_project_line",): dict(good, target="json:loads"),
        ("carried_by_os",): dict(good, target="recops:run", via={"target": "os:system", "args": ["'x'"],
                                                                  "ranges": None}),
    }
    output = project / ".jaxdiag" / "calls.json"
    _record._merge_into(str(output), records)
    written = _record_schema.load(str(output), [str(project)])
    assert sorted((c["target"], (c["via"] or {}).get("target")) for c in written) == [
        ("json:dumps", None), ("recops:run", None), ("recops:scale_p", "recops:run")]


def test_a_call_of_an_installed_librarys_rule_is_kept_but_never_its_carrier(project, tmp_path_factory):
    """`jaxdiag check thatlib` uses the calls a project recorded of an installed library's rules: nothing imports a
    call's target by name. A carrier is imported and called, so it stays the project's own."""
    site = tmp_path_factory.mktemp("site")
    (site / "thatlib").mkdir()
    (site / "thatlib" / "__init__.py").write_text("def op(x):\n    return x\n")
    data = _good()
    data["calls"][0].update(target="thatlib:op", defined_at=f"{site / 'thatlib' / '__init__.py'}:1", via=None)
    path = project / ".jaxdiag" / "calls.json"
    path.write_text(json.dumps(data))
    assert _record_schema.load(str(path), [str(project), str(site)])[0]["target"] == "thatlib:op"
    data["calls"][0]["via"] = {"target": "thatlib:op", "args": ["f32[3]"], "ranges": None}
    assert "calls[0].via.target" in _load(project, data, (site,))


def test_a_module_in_a_project_folder_off_the_path_is_the_projects_own(project):
    """A carrier in tests/helpers.py (pytest put tests/ on the path while recording) is found in the project."""
    (project / "tests").mkdir()
    helper = "import recops\n\n\ndef run(x):\n    return recops.run(x)\n"
    (project / "tests" / "helpers_for_recbad.py").write_text(helper)
    data = _good()
    data["calls"][0]["via"]["target"] = "helpers_for_recbad:run"
    path = project / ".jaxdiag" / "calls.json"
    path.write_text(json.dumps(data))
    assert _record_schema.load(str(path), [str(project)])[0]["via"]["target"] == "helpers_for_recbad:run"
