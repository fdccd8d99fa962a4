"""The result cache cannot lie: an entry that is not exactly what jaxdiag wrote for its key is a miss (never a
pass, never a crash), a cache folder another user could write is refused, the cache lives beside the project's
pyproject.toml or in the per-user cache folder, an edit re-checks only the targets that depend on it, and cache
entries and `--fix` write files whole or not at all.

(`tests/test_parallel.py` keeps the tests of hits, seeds, configuration and incomplete runs.)
"""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
from pathlib import Path
from typing import Any, Iterator

import pytest
from clirun import Runner as CliRunner

from jaxdiag._jobs import _cache, _cache_trust, _parallel
from jaxdiag._run import _engine
from jaxdiag._loading import _targets
from jaxdiag._core._atomic import write_atomic
from jaxdiag._parent._cli import app
from jaxdiag._fixes._edits import Fix, SourceEdit, write_fixes
from jaxdiag._jobs._lint import check_paths

runner = CliRunner()

# A custom_jvp whose JVP is wrong (d/dx x**3 is 3 x**2): a finding that an edited entry could hide.
WRONG = '''
import jax


@jax.custom_jvp
def cube(x):
    return x ** 3


@cube.defjvp
def cube_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return cube(x), 2 * x ** 2 * t
'''

RIGHT = WRONG.replace("2 * x ** 2 * t", "3 * x ** 2 * t").replace("cube", "other")


def forget_modules(folder: Path) -> None:
    """What a new `jaxdiag check` process starts with: none of the project's modules imported yet."""
    # module files are spelled as imported: under the folder as given or as resolved (no resolve() of every
    # module's file, which stat-ed each part of thousands of paths per test)
    prefixes = tuple(f"{spelled}{os.sep}" for spelled in {str(folder), str(folder.resolve())})
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None) or ""
        if where.startswith(prefixes):
            del sys.modules[name]
    for path in [p for p in _targets._FILE_MODULES if Path(p).is_relative_to(folder.resolve())]:
        del _targets._FILE_MODULES[path]


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.jaxdiag]\n")
    (tmp_path / "wrong.py").write_text(textwrap.dedent(WRONG))
    sys.modules.pop("wrong", None)
    yield tmp_path
    forget_modules(tmp_path)


@pytest.fixture()
def engine_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The targets the engine actually checked (a cache hit never reaches the engine)."""
    calls: list[str] = []
    real = _engine.run_unfiltered

    def counting(target: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(target.ref)
        return real(target, *args, **kwargs)

    monkeypatch.setattr(_engine, "run_unfiltered", counting)
    return calls


def entries(root: Path) -> list[Path]:
    """The targets' entries: not the run's traced-reach phase's (`_keys.check_traced`), which has no report
    when no module makes a rule inside a function."""
    return sorted(p for p in root.glob(f"v{_cache.CACHE_FORMAT}/*/*.json")
                  if json.loads(p.read_text() or "{}").get("outcome", {}).get("reports", [None]))


def only_entry(project: Path) -> tuple[Path, dict[str, Any]]:
    [path] = entries(project / ".jaxdiag_cache")
    return path, json.loads(path.read_text())


def errors(report: Any) -> list[str]:
    """Codes of the errors and warnings (a wrong JVP is one of them)."""
    return [f.code for t in report.targets for f in t.findings if f.severity != "info"]


def without_seconds(report: Any) -> dict[str, Any]:
    data = report.to_dict()
    for target in data["targets"]:
        for check in target["checks"]:
            check["seconds"] = 0
    return data


def run_cli(*args: str) -> Any:
    return runner.invoke(app, ["check", "-j", "1", "--timeout", "0", *args])


# ---------------------------------------------------------------------------------------------------------------
# An entry that is not what jaxdiag wrote is a miss
# ---------------------------------------------------------------------------------------------------------------


def test_an_entry_edited_to_hide_a_finding_is_a_miss(project: Path, engine_calls: list[str]) -> None:
    first = check_paths(["wrong.py"], cache=True)
    found = errors(first)
    assert found  # the wrong JVP
    path, entry = only_entry(project)
    for report in entry["outcome"]["reports"]:
        report["findings"] = []  # "this target is clean"
    path.write_text(json.dumps(entry))
    engine_calls.clear()
    again = check_paths(["wrong.py"], cache=True)
    assert engine_calls == ["wrong.py:cube"] and errors(again) == found


def test_an_entry_copied_under_another_key_is_a_miss(project: Path, engine_calls: list[str]) -> None:
    """The digest covers the key: another target's clean entry, renamed and relabelled, does not pass."""
    check_paths(["wrong.py"], cache=True)
    path, entry = only_entry(project)
    cache = _cache.ResultCache(project / ".jaxdiag_cache")
    other = "f" * 64
    cache.put(other, entry["outcome"])
    planted = json.loads(cache._path(other).read_text())
    planted["key"] = entry["key"]
    path.write_text(json.dumps(planted))
    assert cache.get(entry["key"]) is None and cache.get(other) == entry["outcome"]


def test_an_entry_forged_with_a_recomputed_digest_is_a_miss(project: Path, engine_calls: list[str]) -> None:
    """The digest is keyed by this user's secret: whoever edits an entry and recomputes an unkeyed digest of it (the
    recipe is in the source), or signs it with a secret of their own, still gets the target checked again."""
    import hashlib
    import hmac

    found = errors(check_paths(["wrong.py"], cache=True))
    path, entry = only_entry(project)
    key, outcome = entry["key"], entry["outcome"]
    for report in outcome["reports"]:
        report["findings"] = []
    canonical = json.dumps(outcome, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    message = f"jaxdiag-cache-{_cache.CACHE_FORMAT}\0{key}\0{canonical}".encode()
    for digest in (hashlib.sha256(message).hexdigest(), hmac.new(b"k" * 32, message, hashlib.sha256).hexdigest()):
        path.write_text(json.dumps({**entry, "outcome": outcome, "digest": digest}))
        engine_calls.clear()
        assert errors(check_paths(["wrong.py"], cache=True)) == found and engine_calls == ["wrong.py:cube"]


def test_a_cache_folder_from_another_user_or_machine_never_hits(project: Path, tmp_path_factory: pytest.TempPathFactory,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               engine_calls: list[str]) -> None:
    """A `.jaxdiag_cache` committed to a repository or restored from elsewhere was signed with another secret: every
    entry is a miss there. The secret is made once, private, and kept: the same user's next run hits."""
    check_paths(["wrong.py"], cache=True)
    secret_file = Path(os.environ["XDG_CACHE_HOME"]) / "jaxdiag" / "key"
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600 and len(secret_file.read_bytes()) == 32
    engine_calls.clear()
    check_paths(["wrong.py"], cache=True)
    assert engine_calls == []  # the same user: a hit
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("elsewhere")))  # another user's secret
    assert _cache_trust.signing_secret() != secret_file.read_bytes()
    check_paths(["wrong.py"], cache=True)
    assert engine_calls == ["wrong.py:cube"]


def test_without_a_private_place_for_the_secret_entries_last_one_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A per-user folder others can write could hand out a secret they know: the process's own secret is used
    instead, and nothing is written there."""
    shared = tmp_path / "shared"
    (shared / "jaxdiag").mkdir(parents=True)
    (shared / "jaxdiag").chmod(0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared))
    assert _cache_trust.signing_secret() == _cache_trust._EPHEMERAL_SECRET and not (shared / "jaxdiag" / "key").exists()
    (shared / "jaxdiag").chmod(0o700)
    (shared / "jaxdiag" / "key").write_bytes(b"short")  # not a secret jaxdiag wrote
    assert _cache_trust.signing_secret() == _cache_trust._EPHEMERAL_SECRET


def _signed(key: str, outcome: Any) -> str:
    """An entry whose digest matches its payload: only the shape check stands between it and a hit."""
    digest = _cache._entry_digest(_cache_trust.signing_secret(), key, outcome)
    return json.dumps({"format": _cache.CACHE_FORMAT, "key": key, "digest": digest, "outcome": outcome})


def _garbage(entry: dict[str, Any], text: str) -> dict[str, str | None]:
    """Contents for an entry file, by kind; None: a folder where the file should be."""
    key, outcome = entry["key"], entry["outcome"]
    report = outcome["reports"][0]
    finding = report["findings"][0]

    def with_report(**change: Any) -> str:
        return _signed(key, {**outcome, "reports": [{**report, **change}]})

    def with_finding(**change: Any) -> str:
        return with_report(findings=[{**finding, **change}])

    return {
        "empty": "",
        "truncated": text[: len(text) // 2],
        "not utf-8": "\udcff",
        "not json": "{'key': 1}",
        "a list": "[]",
        "null": "null",
        "deeply nested": "[" * 100_000 + "]" * 100_000,
        "old format, no digest": json.dumps({"key": key, "outcome": outcome}),
        "digest not a string": json.dumps({**entry, "digest": 1}),
        "outcome not a dict": _signed(key, [outcome]),
        "reports not a list": _signed(key, {**outcome, "reports": report}),
        "report missing a field": _signed(key, {**outcome, "reports": [
            {k: v for k, v in report.items() if k != "checks"}]}),
        "report with an unknown field": with_report(verdict="clean"),
        "findings of the wrong type": with_report(findings="none"),
        "finding missing its severity": with_report(findings=[
            {k: v for k, v in finding.items() if k != "severity"}]),
        "severity nobody knows": with_finding(severity="fatal"),
        "code nobody knows": with_finding(code="JXZ999"),
        "line as text": with_finding(location={**finding["location"], "line": "12"}),
        "seconds as bool": with_report(checks=[{**report["checks"][0], "seconds": True}]),
        "problem of no kind": with_report(problems=[{"kind": "oops", "message": "", "location": None, "fix": ""}]),
        "incomplete outcome": _signed(key, {**outcome, "complete": False}),
        "usage error": _signed(key, {**outcome, "usage_error": "boom"}),
        "unchecked line of three": _signed(key, {**outcome, "unchecked_lines": [["a.py", 1, 2]]}),
        "a folder": None,
    }


GARBAGE_KINDS = list(_garbage({"key": "", "outcome": {"reports": [{"findings": [{"location": {}}],
                                                                   "checks": [{}]}]}}, "").keys())


@pytest.fixture()
def cached_entry(project: Path) -> tuple[Path, dict[str, Any], str]:
    check_paths(["wrong.py"], cache=True)
    path, entry = only_entry(project)
    return path, entry, path.read_text()


def test_every_field_of_a_report_passes_the_shape_check() -> None:
    """A report with every optional part filled in is a valid outcome: no field's type is one the check refuses
    (which would make every entry a miss, silently)."""
    from jaxdiag import _rules
    from jaxdiag._core._report import (CheckResult, Location, Problem, TargetReport, serialized_fields,
                                       target_report_to_dict)

    where = Location("m.py", 3, "f")
    finding = _rules.INPUTS_INFERRED.finding(location=where, count=1, specs="f32[3]")
    finding.diff, finding.jaxpr, finding.fix_verified = "--- a\n+++ b\n", "{ lambda ; }", True
    report = TargetReport("m.py:f", "custom_jvp", inputs=["f32[3]"], module="m.py",
                          checks=[CheckResult("jvp", "passed", 0.5, "fine"), CheckResult("vmap", "skipped", 0, "")],
                          findings=[finding], problems=[Problem("import-failed", "boom", where, "fix it")],
                          config_keys=["m.py:f"], anchors=[where])
    outcome = json.loads(json.dumps({"reports": [target_report_to_dict(report)], "unchecked_lines": [["/a.py", 3]],
                                     "usage_error": None, "complete": True}))
    assert _cache.valid_outcome(outcome)
    assert set(outcome) == {f.name for f in serialized_fields(_parallel.Outcome)}  # the mirror is up to date


@pytest.fixture(scope="module")
def genuine(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    """One real entry's key and outcome, made once for the garbage table."""
    folder = tmp_path_factory.mktemp("genuine")
    (folder / "pyproject.toml").write_text("[tool.jaxdiag]\n")
    (folder / "wrong.py").write_text(textwrap.dedent(WRONG))
    here = os.getcwd()
    os.chdir(folder)
    sys.modules.pop("wrong", None)
    try:
        check_paths(["wrong.py"], cache=True)
        [path] = entries(folder / ".jaxdiag_cache")
        entry = json.loads(path.read_text())
    finally:
        os.chdir(here)
        forget_modules(folder)
    return entry["key"], entry["outcome"]


@pytest.mark.parametrize("kind", GARBAGE_KINDS)
def test_any_unexpected_entry_is_a_miss(genuine: tuple[str, dict[str, Any]], tmp_path: Path, kind: str) -> None:
    key, outcome = genuine
    cache = _cache.ResultCache(tmp_path)
    cache.put(key, outcome)
    assert cache.get(key) == outcome  # the genuine entry is a hit
    path = cache._path(key)
    content = _garbage(json.loads(path.read_text()), path.read_text())[kind]
    path.unlink()
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content.encode("utf-8", "surrogateescape"))
    assert cache.get(key) is None
    assert cache.hits == 1 and cache.misses == 1


def _replace(path: Path, content: str | None) -> None:
    path.unlink()
    if content is None:
        path.mkdir()
    else:
        path.write_text(content)


@pytest.mark.parametrize("kind", ["severity nobody knows", "report missing a field", "a folder", "truncated"])
def test_a_malformed_entry_neither_crashes_the_run_nor_loses_the_report(
        cached_entry: tuple[Path, dict[str, Any], str], kind: str, engine_calls: list[str]) -> None:
    path, entry, text = cached_entry
    fresh = check_paths(["wrong.py"])
    _replace(path, _garbage(entry, text)[kind])
    engine_calls.clear()
    again = check_paths(["wrong.py"], cache=True)
    assert engine_calls == ["wrong.py:cube"]
    assert without_seconds(again) == without_seconds(fresh) and errors(again)


def test_an_entry_another_user_owns_or_can_write_is_a_miss(cached_entry: tuple[Path, dict[str, Any], str]) -> None:
    path, entry, _ = cached_entry
    cache = _cache.ResultCache(path.parent.parent.parent)
    os.chmod(path, 0o622)
    assert cache.get(entry["key"]) is None
    os.chmod(path, 0o600)
    if os.getuid() == 0:  # only root can give a file away
        os.chown(path, 12345, -1)
        assert cache.get(entry["key"]) is None
        os.chown(path, 0, -1)
    link = path.with_name("link.json")
    link.symlink_to(path)
    path.rename(path.with_name("elsewhere.json"))
    link.rename(path)  # the entry is now a link to a genuine entry
    assert cache.get(entry["key"]) is None


def test_a_stored_entry_is_written_whole_and_private(cached_entry: tuple[Path, dict[str, Any], str]) -> None:
    path, _, _ = cached_entry
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    root = path.parent.parent.parent
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert not [p for p in root.rglob("*") if p.name.endswith(".tmp")]


# ---------------------------------------------------------------------------------------------------------------
# Trust and location
# ---------------------------------------------------------------------------------------------------------------


def _plant_clean_entry(root: Path) -> tuple[Path, dict[str, Any]]:
    """What a planted entry looks like: well-formed, signed, and clean (the findings taken out)."""
    [path] = entries(root)
    outcome = json.loads(path.read_text())["outcome"]
    for report in outcome["reports"]:
        report["findings"] = []
    path.write_text(_signed(path.stem, outcome))
    return path, outcome


def _refuse(root: Path, how: str) -> str:
    """Make `root` a folder jaxdiag must refuse; returns the reason it gives."""
    if how == "writable by others":
        os.chmod(root, 0o707)
    elif how == "writable by group":
        os.chmod(root, 0o770)
    else:
        if os.getuid() != 0:
            pytest.skip("only root can give a folder away")
        os.chown(root, 12345, -1)
        return "owned by uid 12345"
    return how


@pytest.mark.parametrize("how", ["writable by others", "writable by group", "owned by another user"])
def test_a_cache_folder_others_could_write_is_refused_with_a_warning(
        project: Path, engine_calls: list[str], how: str, capsys: pytest.CaptureFixture[str]) -> None:
    check_paths(["wrong.py"], cache=True)
    root = project / ".jaxdiag_cache"
    path, outcome = _plant_clean_entry(root)
    reason = _refuse(root, how)
    capsys.readouterr()
    engine_calls.clear()
    report = check_paths(["wrong.py"], cache=True)
    assert engine_calls == ["wrong.py:cube"] and errors(report)
    assert capsys.readouterr().err.splitlines() == [f"jaxdiag: warning: not using cache folder {root}: {reason}"]
    assert json.loads(path.read_text())["outcome"] == outcome  # nothing written there either
    assert _cache.untrusted(root) == reason


@pytest.mark.slow  # four `jaxdiag check` processes; the fast tier runs the same cases in this process
@pytest.mark.supervised  # the real child: the refusal must reach the user's stderr, not the captured output
def test_the_cli_never_passes_or_crashes_on_a_bad_entry_and_warns_of_a_refused_folder(project: Path) -> None:
    fresh = run_cli("--format", "json", "wrong.py")
    assert fresh.exit_code == 1, fresh.output
    root = project / ".jaxdiag_cache"
    [path] = entries(root)
    text = path.read_text()
    _plant_clean_entry(root)
    planted = run_cli("--format", "json", "wrong.py")
    assert planted.exit_code == 0  # the control: the CLI's run reads this very entry
    _replace(path, _garbage(json.loads(text), text)["severity nobody knows"])
    garbage = run_cli("--format", "json", "wrong.py")
    assert garbage.exit_code == fresh.exit_code and _zeroed(garbage.stdout) == _zeroed(fresh.stdout)
    path.unlink()
    path.write_text(text)
    _plant_clean_entry(root)
    reason = _refuse(root, "writable by others")
    refused = run_cli("--format", "json", "wrong.py")
    assert refused.exit_code == fresh.exit_code and _zeroed(refused.stdout) == _zeroed(fresh.stdout)
    assert refused.stderr.splitlines() == [f"jaxdiag: warning: not using cache folder {root}: {reason}"]


def _zeroed(text: str) -> dict[str, Any]:
    """A JSON report with its timings zeroed: the only part allowed to differ between two runs."""
    data = json.loads(text)
    for target in data["targets"]:
        for check in target["checks"]:
            check["seconds"] = 0
    return data


def test_the_compilation_cache_avoids_a_refused_folder(project: Path) -> None:
    class Lint:
        class config:
            source = str(project / "pyproject.toml")

    settings = _parallel.RunSettings(cache=True, bound_memory=True)
    assert _parallel._xla_cache_dir(Lint, settings) == str(project / ".jaxdiag_cache" / "xla")  # type: ignore[arg-type]
    os.chmod(project / ".jaxdiag_cache", 0o777)
    with _parallel._run_compilation_cache(Lint, settings):  # type: ignore[arg-type]
        folder = _parallel._xla_cache_dir(Lint, settings)  # type: ignore[arg-type]
        assert folder is not None and not Path(folder).is_relative_to(project) and Path(folder).is_dir()
    assert not Path(folder).exists()  # this run's folder only


def test_without_a_pyproject_the_cache_is_per_user_never_the_working_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine_calls: list[str]) -> None:
    work, xdg, home = tmp_path / "work", tmp_path / "xdg", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    (work / "wrong.py").write_text(textwrap.dedent(WRONG))
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    monkeypatch.setenv("HOME", str(home))
    sys.modules.pop("wrong", None)
    try:
        assert _cache.cache_root(None) == xdg / "jaxdiag"
        check_paths(["wrong.py"], cache=True)
        assert entries(xdg / "jaxdiag") and stat.S_IMODE((xdg / "jaxdiag").stat().st_mode) == 0o700
        assert not list(work.glob(".jaxdiag_cache*"))
        engine_calls.clear()
        check_paths(["wrong.py"], cache=True)
        assert engine_calls == []
        monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # invalid under the XDG spec: ignored
        assert _cache.cache_root(None) == home / ".cache" / "jaxdiag"
        monkeypatch.delenv("XDG_CACHE_HOME")
        assert _cache.cache_root(None) == home / ".cache" / "jaxdiag"
        monkeypatch.setattr(os.path, "expanduser", lambda path: path)  # no home folder at all: no cache
        assert _cache.cache_root(None) is None
        engine_calls.clear()
        check_paths(["wrong.py"], cache=True)
        assert engine_calls == ["wrong.py:cube"] and not list(work.glob(".jaxdiag_cache*"))
    finally:
        forget_modules(work)


# ---------------------------------------------------------------------------------------------------------------
# What the key covers
# ---------------------------------------------------------------------------------------------------------------


def test_editing_one_module_of_a_package_rechecks_only_its_targets(project: Path, engine_calls: list[str]) -> None:
    package = project / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(textwrap.dedent(RIGHT))
    (package / "b.py").write_text(textwrap.dedent(WRONG))
    (package / "c.py").write_text("from . import b\n\n" + textwrap.dedent(RIGHT).replace("other", "c_other"))
    check_paths(["pkg"], cache=True)
    assert sorted(engine_calls) == ["pkg/a.py:other", "pkg/b.py:cube", "pkg/c.py:c_other"]
    b = package / "b.py"
    b.write_text(b.read_text() + "\n# edited\n")
    forget_modules(project)
    engine_calls.clear()
    check_paths(["pkg"], cache=True)
    # a is independent of b (only the import system binds `pkg.b` on the package); c imports b
    assert sorted(engine_calls) == ["pkg/b.py:cube", "pkg/c.py:c_other"]


# ---------------------------------------------------------------------------------------------------------------
# Whole-or-nothing writes
# ---------------------------------------------------------------------------------------------------------------


def test_fix_writes_keep_the_file_mode_and_links_and_never_leave_half_a_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "rule.py"
    source.write_text("a = 1\nb = 2\n")
    os.chmod(source, 0o754)
    link = tmp_path / "link.py"
    link.symlink_to(source)
    fix = Fix("b is 3", (SourceEdit(str(link), 2, 2, "b = 3\n"),))
    assert write_fixes([fix]) == [str(link)]
    assert source.read_text() == "a = 1\nb = 3\n" and link.is_symlink()
    assert stat.S_IMODE(source.stat().st_mode) == 0o754
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.py", "rule.py"]

    # a write that fails half-way (text the file's encoding cannot hold) leaves the file as it was, not truncated
    with pytest.raises(UnicodeEncodeError):
        write_fixes([Fix("unencodable", (SourceEdit(str(source), 1, 1, "a = '\udcff'\n"),))])
    assert source.read_text() == "a = 1\nb = 3\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.py", "rule.py"]

    def full_disk(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError):
        write_atomic(source, "b = 4\n" * 1000)
    assert source.read_text() == "a = 1\nb = 3\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.py", "rule.py"]


# A rule made in a factory: only the traced-reach phase (`_traced_reach`) finds and checks it, through `apply_cube`.
FACTORY = '''
import jax


def make_cube():
    @jax.custom_jvp
    def cube(x):
        return x ** 3

    @cube.defjvp
    def cube_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return cube(x), 2 * x ** 2 * t

    return cube


def apply_cube(x):
    return make_cube()(x)
'''


@pytest.mark.slow  # three runs that trace and check a factory's rule
def test_the_traced_reach_phase_is_read_from_the_cache_and_redone_after_an_edit(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A re-run with nothing changed reads the traced-reach phase's reports back (same report), instead of planning,
    tracing and checking it again; editing the module runs it again."""
    from jaxdiag._jobs import _traced_reach

    (project / "factory.py").write_text(textwrap.dedent(FACTORY))
    calls: list[int] = []
    real = _traced_reach.check_by_tracing

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(_traced_reach, "check_by_tracing", counting)
    cold = check_paths(["factory.py"], cache=True)
    assert any("made in a function" in t.target for t in cold.targets), [t.target for t in cold.targets]
    assert errors(cold), "the factory's wrong JVP is found"
    forget_modules(project)
    warm = check_paths(["factory.py"], cache=True)
    assert len(calls) == 1
    assert without_seconds(warm) == without_seconds(cold)
    (project / "factory.py").write_text(textwrap.dedent(FACTORY).replace("2 * x ** 2", "3 * x ** 2"))
    forget_modules(project)
    fixed = check_paths(["factory.py"], cache=True)
    assert len(calls) == 2
    assert not errors(fixed)


def test_the_last_runs_durations_are_kept_beside_the_cache_and_anything_odd_is_no_estimate(tmp_path: Path) -> None:
    """What `_schedule` orders the next run by: merged run over run; never a verdict, so a bad file is just none."""
    cache = _cache.ResultCache(tmp_path)
    assert cache.durations() == {}
    cache.put_durations({"m:f": 2.5, "m:g": 1})
    cache.put_durations({"m:g": 4.0})  # a later run of m:g only: m:f keeps its figure
    assert cache.durations() == {"m:f": 2.5, "m:g": 4.0}
    path = tmp_path / f"v{_cache.CACHE_FORMAT}" / "durations.json"
    assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0
    path.write_text(json.dumps({"m:f": -1, "m:g": "3", "m:h": True, "m:i": 0.5}))
    assert cache.durations() == {"m:i": 0.5}
    for junk in ("[1, 2]", "{", "\xff"):
        path.write_text(junk, encoding="latin-1")
        assert cache.durations() == {}
