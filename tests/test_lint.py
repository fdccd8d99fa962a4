"""`jaxdiag check`: discovery, example inputs, configuration, suppressions, import failures, exit codes.

Most tests replace the check list with one probe check, so they test the lint layer (what is found, filtered and
reported) independently of what the real checks find; one test runs the real checks on a package a new user
might write.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from lint_fixture import ALL_TARGETS, FUNCS, MORE, PRIMS, PROBE, probe, write_pkg
from clirun import Runner as CliRunner  # stdout/stderr apart on every click
from clirun import check_once_per_request

import jaxdiag
from jaxdiag._run import _engine
from jaxdiag._parent._cli import app
from jaxdiag._core._errors import UsageError
from jaxdiag._jobs._lint import check_paths

runner = CliRunner()

@pytest.fixture()
def pkg(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return write_pkg(tmp_path)


@pytest.fixture()
def probe_only(monkeypatch) -> None:
    monkeypatch.setattr(_engine, "ALL_CHECKS", [probe])


# needs_p needs a bind param nobody gives (JXN012): accepted as unverified where a test is about something else
ALLOW_NEEDS_P = '[tool.jaxdiag.allow-unchecked]\n"*:needs_p" = "needs a bind param"\n'


def invoke(*args: str):
    # In this process (the probe check is monkeypatched in) and uncached: -j/--timeout/cache are test_parallel's.
    return runner.invoke(app, ["check", "-j", "1", "--timeout", "0", "--no-cache", *args])


def codes_by_target(report) -> dict[str, list[str]]:
    return {t.target: sorted(f.code for f in t.findings) for t in report.targets}


# ---------------------------------------------------------------------------------------------------------------
# Discovery
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_new_user_package_without_config_is_found_and_checked(pkg):
    """Real checks, no configuration: every target once, each checked on inferred inputs or told what to add."""
    report = check_paths(["lintpkg"])
    targets = [t for t in report.targets if t.kind != "module"]
    assert [t.target for t in targets] == ALL_TARGETS
    for t in targets:
        assert t.inputs or {"JXN004", "JXN012"} & {f.code for f in t.findings}, t.target
    needs = next(t for t in targets if t.target.endswith(":needs_p"))
    note = next(f for f in needs.findings if f.code == "JXN012")
    assert note.severity == "info"
    assert "axis" in note.message
    assert '[tool.jaxdiag.targets."lintpkg/prims.py:needs_p"]\nargs = ["f32[3]"]\nparams = {axis = …}' in note.fix
    assert note.location and note.location.line == PRIMS.splitlines().index('needs_p = Primitive("needs")') + 1
    scaled = next(t for t in targets if t.target.endswith(":scaled"))
    assert scaled.inputs == ["f32[4]", "f32[4]"]  # from the module's JAXDIAG dict


def test_module_names_files_and_plain_folders(pkg, tmp_path, monkeypatch, probe_only):
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # `lintpkg` is no longer a path here: a module name on --app-dir
    by_name = check_paths(["lintpkg"], app_dir=str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert [t.target for t in by_name.targets if t.kind != "module"] == [
        t.replace("lintpkg/sub/more.py", "lintpkg.sub.more").replace("lintpkg/funcs.py", "lintpkg.funcs")
        .replace("lintpkg/prims.py", "lintpkg.prims") for t in ALL_TARGETS]
    one_file = check_paths(["lintpkg/prims.py"])
    assert [t.target for t in one_file.targets if t.kind != "module"] == [
        "lintpkg/prims.py:good_p", "lintpkg/prims.py:bad_p", "lintpkg/prims.py:needs_p"]
    loose = tmp_path / "scripts"
    loose.mkdir()
    (loose / "ops.py").write_text(FUNCS)
    (loose / "test_ops.py").write_text("raise RuntimeError('not imported')\n")
    assert [t.target for t in check_paths(["scripts"]).targets] == [
        "scripts/ops.py:smooth_bad", "scripts/ops.py:clipped", "scripts/ops.py:row_sum"]


def test_check_module_api_takes_a_module_object_or_a_name(pkg, probe_only, monkeypatch):
    import importlib

    monkeypatch.syspath_prepend(str(pkg.parent))  # importable by name, whatever ran before
    module = importlib.import_module("lintpkg.funcs")
    report = jaxdiag.check_module(module)
    assert [t.target for t in report.targets] == ["lintpkg.funcs:smooth_bad", "lintpkg.funcs:clipped",
                                                  "lintpkg.funcs:row_sum"]
    assert codes_by_target(report)["lintpkg.funcs:smooth_bad"] == sorted([PROBE, "JXN001"])
    assert not report.ok
    assert jaxdiag.check_module("lintpkg.funcs", ignore=[PROBE]).ok


def test_tests_are_skipped_unless_included(pkg, probe_only):
    result = invoke("lintpkg", "--include-tests")
    assert result.exit_code == 2
    assert "lintpkg.tests.test_it" in result.output and "test modules are not imported" in result.output


def test_a_packages_own_test_helpers_are_test_modules():
    """A `testing`/`_testing` module holds stand-ins for the package's own tests (a native resource a callback
    writes to, without bounds checks): walked only with --include-tests, like `tests` and `test_*` modules."""
    from jaxdiag._jobs._discovery import _is_test_name

    assert all(_is_test_name(n) for n in ("tests", "test_it", "it_test", "conftest", "testing", "_testing"))
    assert not any(_is_test_name(n) for n in ("testing_utils", "attest", "latest", "contest", "kernels"))


def test_same_package_name_in_another_folder_is_reimported(tmp_path, monkeypatch, probe_only):
    first = write_pkg(tmp_path / "a")
    second = write_pkg(tmp_path / "b", extra={"lintpkg/extra.py": FUNCS.replace("smooth_bad", "smooth_other")})
    monkeypatch.chdir(tmp_path)
    assert not any("extra" in t.target for t in check_paths([str(first)]).targets)
    assert any(t.target == "b/lintpkg/extra.py:smooth_other" for t in check_paths([str(second)]).targets)


# ---------------------------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------------------------


def test_pyproject_paths_targets_and_params(pkg, tmp_path, probe_only):
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent('''
        [tool.jaxdiag]
        paths = ["lintpkg/prims.py"]
        seed = 7

        [tool.jaxdiag.targets."lintpkg.prims:needs_p"]
        args = ["f32[2,3]"]
        params = {axis = 1}

        [tool.jaxdiag.targets."lintpkg/prims.py:good_p"]
        args = ["f32[5]"]
    '''))
    result = invoke("--format", "json")
    data = json.loads(result.output)
    inputs = {t["target"]: t["inputs"] for t in data["targets"]}
    assert inputs["lintpkg/prims.py:needs_p"] == ["f32[2,3]"]  # params reached bind: no JXN004
    assert inputs["lintpkg/prims.py:good_p"] == ["f32[5]"]
    assert not {"JXN004", "JXN012"} & {f["code"] for t in data["targets"] for f in t["findings"]}
    assert result.exit_code == 1  # the probe's warning on bad_p


def test_select_and_ignore_from_config_and_cli(pkg, tmp_path, probe_only):
    (tmp_path / "pyproject.toml").write_text('[tool.jaxdiag]\nselect = ["JXN"]\n' + ALLOW_NEEDS_P)
    data = json.loads(invoke("lintpkg", "--format", "json").output)
    assert {f["code"] for t in data["targets"] for f in t["findings"]} == {"JXN001", "JXN012"}  # needs_p: a bind param
    data = json.loads(invoke("lintpkg", "--format", "json", "--select", PROBE).output)  # CLI replaces select
    assert {f["code"] for t in data["targets"] for f in t["findings"]} == {PROBE}
    result = invoke("lintpkg", "--select", PROBE, "--ignore", PROBE[:4])
    assert result.exit_code == 0


def test_per_target_ignores_with_module_path_and_glob_keys(pkg, tmp_path, probe_only):
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(f'''
        [tool.jaxdiag.per-target-ignores]
        "lintpkg.prims:bad_p" = ["{PROBE}"]
        "lintpkg/funcs.py:*" = ["{PROBE}", "JXN"]
    ''') + ALLOW_NEEDS_P)
    result = invoke("lintpkg", "--format", "json")
    data = json.loads(result.output)
    codes = {t["target"]: {f["code"] for f in t["findings"]} for t in data["targets"]}
    assert codes["lintpkg/prims.py:bad_p"] == {"JXN001"}
    assert codes["lintpkg/funcs.py:smooth_bad"] == set()
    assert result.exit_code == 0


def test_bad_configuration_is_exit_2(pkg, tmp_path, probe_only):  # targets before the bad SPEC: probed, not checked
    (tmp_path / "pyproject.toml").write_text('[tool.jaxdiag]\nselct = ["JXB"]\n')
    result = invoke("lintpkg")
    assert result.exit_code == 2 and "selct" in result.output
    (tmp_path / "pyproject.toml").write_text('[tool.jaxdiag.targets."lintpkg.prims:good_p"]\nargs = ["f32[3"]\n')
    result = invoke("lintpkg")
    assert result.exit_code == 2 and "lintpkg/prims.py:good_p" in result.output and "f32[3" in result.output
    (tmp_path / "pyproject.toml").write_text('[tool.jaxdiag.targets."lintpkg.prims:nope"]\nargs = ["f32[3]"]\n')
    result = invoke("lintpkg")
    assert result.exit_code == 2 and "'nope'" in result.output
    (tmp_path / "pyproject.toml").write_text('[tool.jaxdiag]\npaths = ["src/lintpkg"]\n')
    result = invoke()
    assert result.exit_code == 2 and "'src/lintpkg': no such file" in result.output
    assert "pyproject.toml" in result.output
    assert "Traceback" not in result.output


def test_pre_commit_hook_definition():
    """The hook file parses as pre-commit reads it, and its entry is a real jaxdiag command."""
    yaml = pytest.importorskip("yaml")
    hooks = yaml.safe_load((Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml").read_text())
    assert isinstance(hooks, list) and len(hooks) == 1
    hook = hooks[0]
    assert {"id", "name", "entry", "language"} <= set(hook)
    assert hook["id"] == "jaxdiag" and hook["language"] == "python" and hook["types"] == ["python"]
    assert hook["pass_filenames"] is False and hook["require_serial"] is True  # booleans, not strings
    program, command = hook["entry"].split()
    assert program == "jaxdiag"
    assert runner.invoke(app, [command, "-h"]).exit_code == 0


# ---------------------------------------------------------------------------------------------------------------
# Suppressions
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["impl_comment", "creation_comment"])
def test_inline_suppression_on_def_line_or_primitive_creation_line(tmp_path, monkeypatch, probe_only, where):
    """The probe's finding sits on `def bad_impl`; the comment works there and on `bad_p = Primitive("bad")`."""
    monkeypatch.chdir(tmp_path)
    write_pkg(tmp_path, **{where: f"  # jaxdiag: ignore[{PROBE}]"})
    report = check_paths(["lintpkg/prims.py"])
    assert codes_by_target(report)["lintpkg/prims.py:bad_p"] == ["JXN001"]
    assert "JXN005" not in report.codes()


def test_inline_suppression_without_anchor_stays_on_its_line(tmp_path, monkeypatch, probe_only):
    monkeypatch.chdir(tmp_path)
    write_pkg(tmp_path, helper_comment=f"  # jaxdiag: ignore[{PROBE}]")
    report = check_paths(["lintpkg/prims.py"])
    assert PROBE in codes_by_target(report)["lintpkg/prims.py:bad_p"]


def test_unused_inline_suppressions_are_reported(tmp_path, monkeypatch, probe_only):
    monkeypatch.chdir(tmp_path)
    write_pkg(tmp_path, impl_comment=f"  # jaxdiag: ignore[JXB001, {PROBE}]", helper_comment="  # jaxdiag: ignore")
    report = check_paths(["lintpkg/prims.py"])
    unused = sorted((f.location.line, f.message) for f in report.findings if f.code == "JXN005")
    lines = PRIMS.splitlines()
    impl_line = next(i for i, text in enumerate(lines, 1) if text.startswith("def bad_impl"))
    helper_line = next(i for i, text in enumerate(lines, 1) if text.startswith("def helper"))
    assert unused == [(impl_line, "`# jaxdiag: ignore[JXB001]` suppressed nothing on this line."),
                      (helper_line, "`# jaxdiag: ignore` suppressed nothing on this line.")]
    assert all(f.severity == "info" for f in report.findings if f.code == "JXN005")
    assert PROBE not in report.codes()  # the used half of the comment still works
    assert report.count("error") == report.count("warning") == 0
    assert [t.unverified for t in report.not_verified] == ["not-checkable"]  # needs_p: nobody gave its bind param


def test_unused_config_suppressions_are_reported(pkg, tmp_path, probe_only):
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(f'''
        [tool.jaxdiag]
        paths = ["lintpkg"]

        [tool.jaxdiag.per-target-ignores]
        "lintpkg.prims:bad_p" = ["{PROBE}", "JXG"]
        "lintpkg.gone:thing" = ["{PROBE}"]
    '''))
    report = check_paths([])
    notes = sorted((f.location.path, f.location.line, f.message) for f in report.findings if f.code == "JXN005")
    assert notes == [
        ("pyproject.toml", 6, "per-target-ignores['lintpkg.prims:bad_p'] entry JXG suppressed nothing."),
        ("pyproject.toml", 7, "per-target-ignores key 'lintpkg.gone:thing' suppressed nothing (it matches no target "
                              "found in the configured paths)."),
    ]
    named = check_paths(["lintpkg/funcs.py"])  # a partial run cannot tell that a key is stale
    assert "JXN005" not in named.codes()


def test_unused_suppressions_of_unchecked_targets_are_not_reported(tmp_path, monkeypatch, probe_only):
    monkeypatch.chdir(tmp_path)
    write_pkg(tmp_path)
    prims = tmp_path / "lintpkg/prims.py"
    prims.write_text(prims.read_text().replace("def needs_impl(x, *, axis):",
                                               "def needs_impl(x, *, axis):  # jaxdiag: ignore[JXB001]"))
    report = check_paths(["lintpkg/prims.py"])
    assert "JXN012" in report.codes() and "JXN005" not in report.codes()


# ---------------------------------------------------------------------------------------------------------------
# Import failures and exit codes
# ---------------------------------------------------------------------------------------------------------------


def test_import_failure_is_exit_2_unless_keep_going(tmp_path, monkeypatch, probe_only):
    monkeypatch.chdir(tmp_path)
    write_pkg(tmp_path, extra={"lintpkg/broken.py": "import jax\n\nCONFIG = {}['missing']\n"})
    result = invoke("lintpkg")
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert "lintpkg.broken" in result.output and "lintpkg/broken.py:3" in result.output
    assert "KeyError" in result.output and "--keep-going" in result.output
    result = invoke("lintpkg", "--keep-going", "--format", "json")
    assert result.exit_code == 5  # the other modules were checked, but not everything discovered was verified
    data = json.loads(result.output)
    failed = next(t for t in data["targets"] if t["kind"] == "module" and t["target"] == "lintpkg/broken.py")
    assert failed["findings"] == []  # not a rule: a blocking problem
    (problem,) = failed["problems"]
    assert problem["kind"] == "import-failed" and "KeyError" in problem["message"]
    assert problem["location"] == {"path": "lintpkg/broken.py", "line": 3, "function": "<module>"}
    assert {t["target"] for t in data["targets"]} >= set(ALL_TARGETS)
    assert data["summary"]["import_failures"] == 1
    assert {"target": "lintpkg/broken.py", "reason": "import-failed"} in data["summary"]["not_verified"]


def test_an_import_failing_on_a_removed_jax_api_is_that_apis_finding_at_the_users_line(tmp_path, monkeypatch,
                                                                                        probe_only):
    """`jax.core.Primitive` at module level raises inside JAX's deprecation module: the import failure pointed at
    jax/_src/deprecations.py and said nothing of the replacement. It now points at the user's line and carries
    JXR008 with the table's advice (or the changelog, for an attribute the table does not know)."""
    monkeypatch.chdir(tmp_path)
    old = "import jax\n\n\nold_p = jax.core.no_such_api('old')\n"
    write_pkg(tmp_path, extra={"lintpkg/old.py": old, "deplib/__init__.py": old,
                               "lintpkg/uses_dep.py": "import deplib\n"})
    data = json.loads(invoke("lintpkg", "--keep-going", "--format", "json").output)
    failed = {t["target"]: t for t in data["targets"] if t["kind"] == "module"}
    assert failed["lintpkg/old.py"]["problems"][0]["location"]["path"] == "lintpkg/old.py"
    (finding,) = failed["lintpkg/old.py"]["findings"]
    assert finding["code"] == "JXR008" and finding["location"]["line"] == 4
    assert "`jax.core.no_such_api`" in finding["message"] and "changelog" in finding["fix"]
    # the same line in a dependency it imports: fixed by upgrading that dependency, not a finding of this package
    assert failed["lintpkg/uses_dep.py"]["problems"][0]["location"]["path"] == "deplib/__init__.py"
    assert failed["lintpkg/uses_dep.py"]["findings"] == []


def test_an_import_of_a_name_jax_removed_is_that_apis_finding(tmp_path, monkeypatch, probe_only):
    """Every module importing the package's broken helper fails on the helper's line: one JXR008 for that line (on
    the first module the walk imports), the others stay import failures pointing at it."""
    monkeypatch.chdir(tmp_path)
    write_pkg(tmp_path, extra={"lintpkg/old.py": "from jax.lib import no_such_client\n",
                               "lintpkg/uses_old.py": "from lintpkg import old\n",
                               "lintpkg/uses_old_too.py": "from lintpkg.old import no_such_client\n"})
    data = json.loads(invoke("lintpkg", "--keep-going", "--format", "json").output)
    failed = {t["target"]: t for t in data["targets"] if t["kind"] == "module"}
    assert set(failed) == {"lintpkg/old.py", "lintpkg/uses_old.py", "lintpkg/uses_old_too.py"}
    assert all(t["problems"][0]["location"]["path"] == "lintpkg/old.py" for t in failed.values())
    (finding,) = [f for t in failed.values() for f in t["findings"]]
    assert finding["code"] == "JXR008" and "`jax.lib.no_such_client`" in finding["message"]


def test_a_plain_shared_library_in_a_package_folder_is_not_an_import_failure(tmp_path, monkeypatch, probe_only):
    """A package shipping the native library it loads itself (`ctypes.CDLL`, an FFI's loader) as `name.so`: the
    walk imported it as an extension module and reported "dynamic module does not define module export function"
    as the package's import failure, so nothing was verified."""
    import ctypes.util
    import shutil

    found = ctypes.util.find_library("m")
    folders = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
    library = next((Path(d) / found for d in folders if found and (Path(d) / found).is_file()), None)
    if library is None:
        pytest.skip("no C math library file to stand for a package's native library")
    monkeypatch.chdir(tmp_path)
    write_pkg(tmp_path)
    shutil.copy(library, tmp_path / "lintpkg" / "native_kernels.so")
    data = json.loads(invoke("lintpkg", "--keep-going", "--format", "json").output)
    assert data["summary"]["import_failures"] == 0, data["summary"]
    # Python source raising the same words is a module that failed to import, never skipped: no run turns green so
    (tmp_path / "lintpkg" / "fake.py").write_text(
        "raise ImportError('dynamic module does not define module export function (PyInit_fake)')\n")
    data = json.loads(invoke("lintpkg", "--keep-going", "--format", "json").output)
    assert data["summary"]["import_failures"] == 1, data["summary"]


@pytest.mark.parametrize("filters", [["--select", "JXB"], ["--ignore", "JXR"], ["--ignore", "JX"],
                                     ["--ignore", "JXR905"], ["--select", "JXN"], ["--exit-zero"]])
def test_no_filter_hides_an_import_failure(tmp_path, monkeypatch, probe_only, filters):
    monkeypatch.chdir(tmp_path)
    # without prims.py, whose needs_p is a target not verified (exit 5 of its own): the import failure alone makes 5
    write_pkg(tmp_path, extra={"lintpkg/__init__.py": "", "lintpkg/prims.py": "",
                               "lintpkg/broken.py": "raise ImportError('no GPU')\n"})
    result = invoke("lintpkg", "--keep-going", "--format", "json", *filters)
    assert result.exit_code == 5, result.output
    data = json.loads(result.output)
    assert [p["kind"] for t in data["targets"] for p in t["problems"]] == ["import-failed"]


def test_import_failure_through_the_api_fails_the_report(tmp_path, monkeypatch, probe_only):
    monkeypatch.chdir(tmp_path)
    write_pkg(tmp_path, extra={"lintpkg/broken.py": "raise ImportError('no GPU')\n"})
    report = check_paths(["lintpkg"], keep_going=True, ignore=["JX"])
    assert not report.ok and report.exit_code == 5 and report.problems_of("import-failed")
    with pytest.raises(AssertionError, match="import-failed"):
        report.raise_if_failed()
    assert "import-failed" in str(report) and "no GPU" in str(report)


def test_deprecated_codes_still_work_with_a_note(pkg, tmp_path, probe_only):
    (tmp_path / "pyproject.toml").write_text('[tool.jaxdiag]\nignore = ["JXR900"]\n')
    data = json.loads(invoke("lintpkg", "--format", "json").output)
    codes = {f["code"] for t in data["targets"] for f in t["findings"]}
    assert "JXN001" not in codes  # JXR900 still ignores inputs-inferred, now JXN001
    notes = [f for t in data["targets"] if t["kind"] == "config" for f in t["findings"] if f["code"] == "JXN006"]
    assert len(notes) == 1 and "JXR900" in notes[0]["message"] and "JXN001" in notes[0]["fix"]
    assert notes[0]["location"]["path"] == "pyproject.toml"


@pytest.mark.parametrize("where", ["cli", "config", "per-target", "inline"])
def test_unknown_codes_are_exit_2_before_any_check(pkg, tmp_path, monkeypatch, where):
    ran = []
    monkeypatch.setattr(_engine, "ALL_CHECKS", [])
    monkeypatch.setattr(_engine, "run_subject", lambda *a, **k: ran.append(a))
    argv = ["lintpkg"]
    if where == "cli":
        argv += ["--ignore", "JXB999"]
    elif where == "config":
        (tmp_path / "pyproject.toml").write_text('[tool.jaxdiag]\nselect = ["JXB999"]\n')
    elif where == "per-target":
        (tmp_path / "pyproject.toml").write_text('[tool.jaxdiag.per-target-ignores]\n"lintpkg.*" = ["JXB999"]\n')
    else:
        (pkg / "sub" / "extra.py").write_text("x = 1  # jaxdiag: ignore[JXB999]\n")
    result = invoke(*argv)
    assert result.exit_code == 2 and "JXB999" in result.output and result.output.count("\n") == 1, result.output
    assert not ran


def test_missing_paths_are_exit_2(pkg):
    (pkg / "notes.txt").write_text("not code\n")
    for argv, expected in (([], "nothing to check"), (["nope_pkg_xyz"], "not found"),
                           (["nope.py"], "no such file"), (["lintpkg.prims:good_p"], "jaxdiag batching"),
                           (["lintpkg/notes.txt"], "not a Python file")):
        result = invoke(*argv)
        assert result.exit_code == 2, argv
        assert expected in result.output, (argv, result.output)


def test_exit_codes(pkg, tmp_path, probe_only, monkeypatch):
    check_once_per_request(monkeypatch, tmp_path)  # `--exit-zero` is applied here, to the same report
    assert invoke("lintpkg/sub").exit_code == 0
    # lintpkg has findings and a primitive whose bind params nobody gave (JXN012): a target not verified wins
    assert invoke("lintpkg").exit_code == 5
    assert invoke("lintpkg", "--exit-zero").exit_code == 5  # --exit-zero turns 1 into 0, nothing else
    assert invoke("lintpkg", "--ignore", "JXN").exit_code == 5  # ignoring the note never hides the fact
    (tmp_path / "pyproject.toml").write_text(ALLOW_NEEDS_P)
    assert invoke("lintpkg").exit_code == 1
    assert invoke("lintpkg", "--exit-zero").exit_code == 0
    assert invoke("lintpkg", "--ignore", PROBE).exit_code == 0
    (tmp_path / "pyproject.toml").unlink()
    crash = FUNCS.replace("smooth_bad", "smooth_crash")
    (pkg / "crashing.py").write_text(crash)
    result = invoke("lintpkg/crashing.py")
    assert result.exit_code == 3 and "internal error" in result.output
    assert invoke("lintpkg/crashing.py", "--exit-zero").exit_code == 3


def test_output_is_deterministic(pkg, probe_only):
    def strip_seconds(text: str) -> dict:
        data = json.loads(text)
        for t in data["targets"]:
            for c in t["checks"]:
                c["seconds"] = 0
        return data

    first = strip_seconds(invoke("lintpkg", "--format", "json").output)
    assert first == strip_seconds(invoke("lintpkg", "--format", "json").output)


def test_jaxdiag_dict_must_be_well_formed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(MORE.replace('"args": ["f32[2]"]', '"argz": ["f32[2]"]'))
    with pytest.raises(UsageError, match=r"JAXDIAG\['plain'\]"):
        check_paths(["m.py"])


@pytest.mark.parametrize("how", ["ignore", "select", "per-target"])
def test_suppressing_a_code_never_changes_which_checks_run(how):
    """Control flow sees every finding: filtering happens once, after the checks, so the check statuses (and the
    blockers between checks) are the same whatever is suppressed."""
    from jaxdiag._checks._base import Options

    root = Path(__file__).resolve().parent.parent / "samples"
    target = f"{root / 'jxg012_bad.py'}:my_sin"
    plain = _engine.run(target, ["f32[3]"], {}, Options(command="grad"))
    assert "JXG012" in plain.codes()
    kwargs = {"ignore": {"ignore": ["JXG012"]}, "select": {"select": ["JXB"]},
              "per-target": {"per_target_ignore": {"*jxg012_bad.py:*": ["JXG"]}}}[how]
    filtered = _engine.run(target, ["f32[3]"], {}, Options(command="grad"), **kwargs)
    assert "JXG012" not in filtered.codes()

    def statuses(report):
        return [(c.name, c.status, c.detail) for t in report.targets for c in t.checks]

    assert statuses(filtered) == statuses(plain)
