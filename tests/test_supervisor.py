"""The supervisor (issue: exit 0 means verified): user code that exits, crashes, raises a BaseException, hangs,
prints, leaves threads or changes JAX's state is a result for its target, never a pass, never the end of the run.

Fast tier: the in-process API and the report's coverage; one real CLI child (the parent never imports JAX).
Slow tier: the whole battery of probes through real child processes (tests/data/supervisor/probes.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import pytest

import jaxdiag
from jaxdiag import _compat
from jaxdiag import _rules as rules
from jaxdiag._harness import user_interrupts
from jaxdiag._core._filtering import Filter
from jaxdiag._core._report import CheckResult, Problem, Report, TargetReport

from clirun import missing_vmap_method_code

DATA = Path(__file__).resolve().parent / "data" / "supervisor"
PROBES = DATA / "probes.py"
INPROCESS = DATA / "inprocess.py"
ROOT = Path(__file__).resolve().parent.parent


def grad(name: str, **kwargs):
    return jaxdiag.check_grad(f"{INPROCESS}:{name}", "f32[3]", **kwargs)


# ---------------------------------------------------------------------------------------------------------------
# In process (the Python API's default): a BaseException from a rule is a result, and state is restored
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, code, reason", [("system_exit", "JXU001", "exited"),
                                                ("custom_base", "JXU003", "raised")])
def test_a_base_exception_from_a_rule_is_the_targets_result(name, code, reason):
    report = grad(name)
    (finding,) = [f for f in report.findings if f.code == code]
    assert finding.severity == "error" and finding.location is not None
    assert finding.location.path.endswith("inprocess.py")  # the user's raising line, not jaxdiag's
    assert [t.unverified for t in report.not_verified] == [reason]
    assert not report.ok and report.exit_code == 5


def test_a_keyboard_interrupt_is_the_users_ctrl_c_in_process_and_the_rules_in_a_child():
    with pytest.raises(KeyboardInterrupt):  # in the caller's process it may be a real Ctrl-C: it propagates
        grad("keyboard_interrupt")
    user_interrupts(True)  # as in a child, which ignores SIGINT
    try:
        report = grad("keyboard_interrupt")
    finally:
        user_interrupts(False)
    assert "JXU003" in report.codes() and report.exit_code == 5


def test_blocking_results_survive_every_filter_and_the_exit_zero_code():
    for selectors in ({"ignore": ["JXU"]}, {"ignore": ["JXU001"]}, {"select": ["JXB"]}, {"ignore": ["JX"]}):
        report = grad("system_exit", **selectors)
        assert "JXU001" in report.codes() and report.exit_code == 5, selectors


def test_threads_left_running_are_an_error():
    report = grad("thread")
    try:
        (finding,) = [f for f in report.findings if f.code == "JXU005"]
        assert "left-behind" in finding.message and finding.severity == "error"
    finally:  # end the threads the rule started (the module loaded by path is in sys.modules under its name)
        for module in list(sys.modules.values()):
            release = getattr(module, "RELEASE", None)
            if getattr(module, "__file__", None) == str(INPROCESS) and release is not None:
                release.set()


@pytest.mark.parametrize("name, changed", [("flags", "jax_debug_nans False -> True"),
                                           ("sin_rule", "the JVP rule of sin")])
def test_changed_jax_state_is_reported_and_restored(name, changed):
    before = _compat.global_state()
    report = grad(name)
    (finding,) = [f for f in report.findings if f.code == "JXU006"]
    assert changed in finding.message and finding.severity == "warning"
    assert _compat.state_changes(before, _compat.global_state()) == []
    assert not jax.config.jax_debug_nans


def test_a_flag_the_package_sets_at_import_is_its_configuration_not_a_checks_change():
    before = _compat.global_state()
    report = jaxdiag.check_grad(f"{DATA / 'configures_at_import.py'}:cube", "f32[3]")
    assert "JXU006" not in report.codes() and report.ok, report.codes()
    assert _compat.state_changes(before, _compat.global_state()) == []  # restored all the same
    assert not jax.config.jax_debug_infs


# ---------------------------------------------------------------------------------------------------------------
# Coverage: every discovered target is checked or counted, with its reason
# ---------------------------------------------------------------------------------------------------------------


def _target(name: str, *statuses: str, findings=(), problems=()) -> TargetReport:
    return TargetReport(name, "function", checks=[CheckResult(f"c{i}", s, 0.0) for i, s in enumerate(statuses)],
                        findings=list(findings), problems=list(problems))


def test_coverage_reasons_and_exit_code_precedence():
    no_inputs = rules.INPUTS_NOT_INFERRED.finding(target="t", tried="f32[3]", error="e", params_hint="",
                                                  snippet="", jaxdiag_dict="JAXDIAG", module="m")
    report = Report([_target("ok", "passed"), _target("skipped", "skipped", "skipped"),
                     _target("no_inputs", "skipped", findings=[no_inputs])])
    Filter(ignore=["JXN"]).apply(report)  # the note is hidden, the fact is not
    assert [(t.target, t.unverified) for t in report.not_verified] == [("skipped", "no-check-ran"),
                                                                       ("no_inputs", "no-inputs")]
    assert report.summary["discovered"] == 3 and report.summary["checked"] == 1
    assert report.exit_code == 5 and not report.ok
    report.targets.append(_target("bug", "error"))
    assert report.exit_code == 3  # jaxdiag's own error wins
    failed = Report([_target("m", problems=[Problem("import-failed", "boom")])])
    failed.targets[0].kind = "module"
    Filter().apply(failed)
    assert failed.exit_code == 5 and failed.summary["not_verified"] == [{"target": "m", "reason": "import-failed"}]


def test_a_source_scans_pass_alone_verifies_nothing():
    """A target whose only passing check reads the rule's source (the removed-API scan) while every check of what the
    rule computes skipped was counted verified (a custom_jvp whose operands its call site never perturbs). A
    source scan's failure is still a verdict: its finding stands, the target was checked."""
    scanned = _target("scanned", "skipped")
    scanned.checks.insert(0, CheckResult("removed-api-grad", "passed", 0.0, static=True))
    failed = _target("outdated", "skipped")
    failed.checks.insert(0, CheckResult("removed-api-grad", "failed", 0.0, static=True))
    report = Report([scanned, failed, _target("ran", "passed")])
    Filter().apply(report)
    assert [(t.target, t.unverified) for t in report.not_verified] == [("scanned", "no-check-ran")]
    from jaxdiag._checks import _portability

    assert all(c.static for c in _portability.CHECKS)


def test_allow_unchecked_is_the_only_way_to_accept_an_unverified_target():
    report = Report([_target("pkg.mod:kernel", "skipped"), _target("pkg.mod:f", "passed")])
    Filter(allow_unchecked={"pkg.mod:kern*": "needs a GPU"}).apply(report)
    assert report.ok and report.exit_code == 0
    assert report.summary["not_verified"] == [{"target": "pkg.mod:kernel", "reason": "no-check-ran",
                                               "allowed": "needs a GPU"}]


def test_allow_unchecked_needs_a_reason():
    from jaxdiag._core._config import parse
    from jaxdiag._core._errors import UsageError

    assert parse({"allow-unchecked": {"a:b": "why"}}).allow_unchecked == {"a:b": "why"}
    assert parse({"allow-unchecked": [{"target": "a:b", "reason": "why"}]}).allow_unchecked == {"a:b": "why"}
    for bad in ({"a:b": ""}, {"a:b": 3}, ["a:b"], "a:b"):
        with pytest.raises(UsageError, match="allow-unchecked"):
            parse({"allow-unchecked": bad})


def test_an_empty_check_is_not_verified(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "nothing.py").write_text("X = 1\n")
    report = jaxdiag.check_module("empty/nothing.py")
    assert report.exit_code == 5 and report.summary["not_verified"] == [{"target": "(no targets)",
                                                                         "reason": "no-targets"}]


def test_the_progress_display_counts_targets_and_names_the_running_check():
    from jaxdiag._parent._progress import SLOW_SECONDS, _Display

    class Recorder:
        def update(self, task, **fields):
            self.fields = fields

    recorder = Recorder()
    view = _Display(recorder, 0)
    view.update({"event": "discovered", "total": 3, "cached": 1})
    view.update({"event": "check", "target": "m:f", "check": "grad-composition"})
    view.update({"event": "done", "target": "m:f", "findings": 2})
    assert recorder.fields["completed"] == 2 and recorder.fields["total"] == 3
    assert "m:f: grad-composition" in recorder.fields["description"] and "2 findings" in recorder.fields["description"]
    view.since -= SLOW_SECONDS + 5
    view.update({"event": "tick"})
    assert "running" in recorder.fields["description"]


# ---------------------------------------------------------------------------------------------------------------
# Real children
# ---------------------------------------------------------------------------------------------------------------


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxdiag", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.supervised
def test_the_parent_never_imports_jax_and_an_os_exit_is_not_a_pass():
    script = ("import sys\nfrom jaxdiag._parent._cli import app\n"
              f"code = app(['grad', {str(PROBES) + ':os_exit'!r}, '--arg', 'f32[3]', '--format', 'json'], "
              "standalone_mode=False)\n"
              "sys.stderr.write(f'JAX_IMPORTED={\"jax\" in sys.modules}\\n')\nsys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "JAX_IMPORTED=False" in done.stderr, done.stderr
    assert done.returncode == 5, done.stderr
    data = json.loads(done.stdout)
    (finding,) = data["targets"][0]["findings"]
    assert finding["code"] == "JXU001" and "exited with code 0" in finding["message"]
    assert data["summary"]["not_verified"][0]["reason"] == "exited"


@pytest.mark.slow
@pytest.mark.supervised
@pytest.mark.parametrize("name, code, reason", [("system_exit", "JXU001", "exited"),
                                                ("sys_exit_3", "JXU001", "exited"),
                                                ("keyboard_interrupt", "JXU003", "raised"),
                                                ("custom_base", "JXU003", "raised"),
                                                ("segfault", "JXU002", "crashed")])
def test_single_command_turns_each_ending_into_a_result(name, code, reason):
    done = _cli("grad", f"{PROBES}:{name}", "--arg", "f32[3]", "--format", "json")
    assert done.returncode == 5, done.stderr
    data = json.loads(done.stdout)
    assert code in {f["code"] for f in data["targets"][0]["findings"]}
    assert data["summary"]["not_verified"][0]["reason"] == reason


@pytest.mark.slow
@pytest.mark.supervised
def test_a_hang_is_stopped_at_the_time_limit_naming_the_check():
    start = time.monotonic()
    done = _cli("grad", f"{PROBES}:hang", "--arg", "f32[3]", "--format", "json", "--timeout", "5")
    assert time.monotonic() - start < 120
    assert done.returncode == 5
    (finding,) = json.loads(done.stdout)["targets"][0]["findings"]
    assert finding["code"] == "JXU004" and "check `" in finding["message"]


@pytest.mark.slow
@pytest.mark.supervised
def test_user_output_never_reaches_the_report_stream():
    done = _cli("grad", f"{PROBES}:chatty", "--arg", "f32[3]", "--format", "json")
    data = json.loads(done.stdout)  # megabytes printed by the rule did not corrupt it
    assert done.returncode == 0 and "native-level output" in data["targets"][0]["output"]
    text = _cli("grad", f"{PROBES}:chatty", "--arg", "f32[3]", "-v")
    assert "captured stdout" in text.stdout and len(text.stdout) < 100_000


@pytest.mark.slow
@pytest.mark.supervised
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_check_reports_every_target_whatever_the_others_do(jobs):
    done = _cli("check", str(PROBES), "-j", jobs, "--timeout", "20", "--no-cache", "--format", "json", timeout=900)
    assert done.returncode == 5, done.stderr
    data = json.loads(done.stdout)
    reasons = {e["target"].rpartition(":")[2]: e["reason"] for e in data["summary"]["not_verified"]}
    assert reasons == {"os_exit": "exited", "system_exit": "exited", "sys_exit_3": "exited",
                       "keyboard_interrupt": "raised", "custom_base": "raised", "segfault": "crashed",
                       "hang": "timed-out"}
    codes = {t["target"].rpartition(":")[2]: {f["code"] for f in t["findings"]} for t in data["targets"]}
    assert "JXU005" in codes["thread"] and "JXU006" in codes["x64"] and "JXU006" in codes["debug_nans"]
    assert not codes["fine"] - {"JXN001"}  # the neighbours of x64 and debug_nans are checked as if nothing happened
    assert data["summary"]["discovered"] == 12 and data["summary"]["checked"] == 5


@pytest.mark.slow
@pytest.mark.supervised
def test_a_crash_while_tracing_the_package_for_its_callbacks_ends_only_that_function():
    """The traced-reach phase (callbacks and rules found by tracing public functions) crashed in a worker and was
    then run again in the supervised child, where the same segfault ended the run: no target was reported. Now
    the phase runs again in a new worker without the function that crashed, which gets the JXU002."""
    done = _cli("check", str(DATA / "reachcrash"), "-j", "1", "--no-cache", "--format", "json", timeout=600)
    assert done.returncode == 5, done.stderr
    data = json.loads(done.stdout)
    found = {t["target"].rpartition(":")[2]: t for t in data["targets"]}
    crash = found["crashing"]["findings"]
    assert [f["code"] for f in crash] == ["JXU002"] and crash[0]["location"]["line"] == _line_of("def crashing")
    assert [e["reason"] for e in data["summary"]["not_verified"]] == ["crashed"]
    # traced after the crash (the code this JAX release gives a callback without vmap_method)
    assert missing_vmap_method_code() in {f["code"] for f in found["scaled (calls a callback)"]["findings"]}
    assert found["smooth"]["verified"]


def test_the_crashing_threads_frames_are_read_from_faulthandlers_output():
    from jaxdiag._parent._supervisor import crash_frames

    output = ("Fatal Python error: Segmentation fault\n\nThread 0x1 (most recent call first):\n"
              '  File "/pkg/watch.py", line 67 in watch\n\nCurrent thread 0x2 (most recent call first):\n'
              '  File "/lib/ctypes.py", line 519 in string_at\n  File "/pkg/native.py", line 5 in <module>\n\n'
              "Extension modules: numpy\n")
    assert crash_frames(output) == [("/lib/ctypes.py", 519), ("/pkg/native.py", 5)]  # not the other thread's
    assert crash_frames("no crash here") == []


@pytest.mark.slow
@pytest.mark.supervised
def test_a_module_whose_import_crashes_is_reported_and_keep_going_checks_the_others():
    """A submodule segfaulting at import killed the child during the walk: the whole package was one JXU002 on the
    package, nothing checked. The crash now names the module, and with --keep-going the walk runs again without
    it: its JXU002 sits at the line faulthandler names, its neighbour is checked."""
    package = str(DATA / "importcrash")
    alone = json.loads(_cli("check", package, "--no-cache", "--format", "json").stdout)
    (finding,) = alone["targets"][0]["findings"]
    assert finding["code"] == "JXU002" and "importcrash.native" in finding["message"], finding
    done = _cli("check", package, "--keep-going", "--no-cache", "--format", "json")
    assert done.returncode == 5, done.stderr
    found = {t["target"]: t for t in json.loads(done.stdout)["targets"]}
    crashed = found[f"{package.removeprefix(str(ROOT) + '/')}/native.py"]
    (crash,) = crashed["findings"]
    assert crash["code"] == "JXU002" and crash["location"]["line"] == _line_of("ctypes.string_at", "importcrash",
                                                                              "native.py")
    assert "Segmentation fault" in crashed["output"]  # the dying process's stack, for -v
    assert [t["verified"] for name, t in found.items() if name.endswith("softplus")] == [True]


@pytest.mark.slow
@pytest.mark.supervised
def test_tracing_a_function_that_never_returns_is_stopped_at_the_time_limit():
    """The traced-reach phase had no time limit and, with no target discovered, ran in the supervised child: a
    callback's host code that never returns hung the run. Each unit now has the per-target limit, and the phase
    runs in a worker even when it is the only task."""
    done = _cli("check", str(DATA / "reachhang"), "-j", "1", "--timeout", "5", "--no-cache", "--format", "json",
                timeout=120)
    assert done.returncode == 5, done.stderr
    data = json.loads(done.stdout)
    found = {t["target"].rpartition(":")[2]: t for t in data["targets"]}
    assert [f["code"] for f in found["hanging"]["findings"]] == ["JXU004"]
    assert found["hanging"]["findings"][0]["location"]["line"] == _line_of("def hanging", "reachhang")
    assert missing_vmap_method_code() in {f["code"] for f in found["scaled (calls a callback)"]["findings"]}


@pytest.mark.slow
@pytest.mark.supervised
def test_tracing_after_recorded_calls_also_runs_in_a_worker(tmp_path):
    """With recorded calls that no discovered target claims, the traced-reach phase must wait for their results
    (a site a recorded call checked is not traced again), and it ran in the supervised child then: the hanging
    callback hung the whole run. It now runs after them, in a worker, with the same per-unit time limit."""
    import shutil

    src = tmp_path / "src"
    shutil.copytree(DATA / "reachhang", src / "reachhang", ignore=shutil.ignore_patterns("__pycache__"))
    with open(src / "reachhang" / "ops.py", "a") as ops:  # a rule made at run time: its call stays unclaimed
        ops.write("\n\ndef make_cube():\n    @jax.custom_jvp\n    def cube(x):\n        return x ** 3\n\n"
                  "    @cube.defjvp\n    def cube_jvp(primals, tangents):\n"
                  "        return cube(primals[0]), 3 * primals[0] ** 2 * tangents[0]\n\n    return cube\n")
    env = {**os.environ, "PYTHONPATH": str(src)}
    use = "import jax.numpy as jnp; from reachhang import ops; ops.make_cube()(jnp.arange(3.0))"
    recorded = subprocess.run([sys.executable, "-m", "jaxdiag", "record", "--", sys.executable, "-c", use],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert recorded.returncode == 0, recorded.stderr
    assert "make_cube" in (tmp_path / ".jaxdiag" / "calls.json").read_text()
    done = subprocess.run([sys.executable, "-m", "jaxdiag", "check", "reachhang", "-j", "1", "--timeout", "5",
                           "--no-cache", "--format", "json"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 5, done.stderr
    found = {t["target"].rpartition(":")[2]: t for t in json.loads(done.stdout)["targets"]}
    assert [f["code"] for f in found["hanging"]["findings"]] == ["JXU004"]
    assert missing_vmap_method_code() in {f["code"] for f in found["scaled (calls a callback)"]["findings"]}
    assert any("make_cube" in label and t["verified"] for label, t in found.items())  # the recorded rule


def _line_of(text: str, package: str = "reachcrash", module: str = "ops.py") -> int:
    lines = (DATA / package / module).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith(text))


@pytest.mark.slow
@pytest.mark.supervised
@pytest.mark.parametrize("signum, code, word", [(signal.SIGINT, 130, "interrupted"),
                                                (signal.SIGTERM, 143, "terminated")])
def test_signals_stop_the_child_and_leave_no_temporary_folder(signum, code, word, tmp_path):
    scratch = tmp_path / "tmp"  # this run's own temporary folder: other runs on the machine cannot blur the result
    scratch.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "jaxdiag", "check", str(PROBES), "--no-cache", "-j", "1"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(scratch)})
    deadline = time.monotonic() + 120
    while not list(scratch.glob("jaxdiag-run-*/jaxdiag-xla-*")) and time.monotonic() < deadline:
        time.sleep(0.2)  # into the run: the child made its scratch cache
    time.sleep(2)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code and stderr == f"jaxdiag: error: {word}\n", stderr
    # the parent kills the child's whole process group before removing the run's folder, so nothing is left at once:
    # not the folder (a worker still writing would put it back), not multiprocessing's socket folders
    assert sorted(scratch.iterdir()) == []


@pytest.mark.slow
@pytest.mark.supervised
def test_the_sharding_child_ended_by_user_code_is_that_targets_result(tmp_path):
    (tmp_path / "m.py").write_text("import os\nimport jax.numpy as jnp\n\n\ndef f(x):\n    os._exit(0)\n"
                                   "    return jnp.sin(x)\n")
    done = subprocess.run([sys.executable, "-m", "jaxdiag", "sharding", "m.py:f", "--arg", "f32[8]", "--format",
                           "json"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 5, done.stderr
    data = json.loads(done.stdout)
    assert data["summary"]["not_verified"] == [{"target": "m.py:f", "reason": "exited"}]
    assert [f["code"] for f in data["targets"][0]["findings"]] == ["JXU001"]


@pytest.mark.parametrize("provenance, severity", [("inferred", "warning"), ("declared", "error")])
def test_a_crash_is_graded_by_the_inputs_the_check_ran_on(provenance, severity):
    """A kernel segfaulting on inputs jaxdiag synthesised (indices outside its contract, a structure no caller
    builds) is at most a warning that names them, as every finding on inferred inputs is; on inputs the user gave,
    an error. The target stays unverified either way."""
    from jaxdiag._core import _provenance
    from jaxdiag._parent._supervisor import Job, _stopped_report

    job = Job("diagnose", {}, "kernels.py:gather_p", "primitive")
    stopped = {"check": "batching-rule", "subject": job.label,
               "inputs": {"provenance": provenance, "specs": ["f32[3]", "i32[3]@0..2"]}}
    report = _stopped_report(job, stopped, -11, "")
    _provenance.grade(report)
    (finding,) = report.targets[0].findings
    assert (finding.code, finding.severity) == ("JXU002", severity)
    assert ("on f32[3] i32[3]@0..2 inferred" in finding.message) == (provenance == "inferred")
    assert report.exit_code == 5  # not verified either way


@pytest.mark.slow
@pytest.mark.supervised
def test_a_crash_on_inferred_inputs_is_a_warning_end_to_end():
    done = _cli("grad", f"{PROBES}:segfault", "--format", "json")
    assert done.returncode == 5, done.stderr
    (finding,) = [f for f in json.loads(done.stdout)["targets"][0]["findings"] if f["code"] == "JXU002"]
    assert finding["severity"] == "warning" and "inferred" in finding["message"], finding


@pytest.mark.slow
@pytest.mark.supervised
def test_a_crash_while_a_call_of_the_package_is_prepared_names_the_inputs_it_ran_on():
    """A crash while jaxdiag runs a rule's call site (before any check starts) named no inputs, so it stayed an
    error whatever they were. The carrier now says what it runs on: the author's documented call is declared (an
    error naming it), a caller run on inputs jaxdiag inferred is at most a warning."""
    done = _cli("check", str(DATA / "examplecrash"), "-j", "1", "--no-cache", "--format", "json")
    assert done.returncode == 5, done.stderr
    found = {t["target"].rpartition("/")[2]: t["findings"] for t in json.loads(done.stdout)["targets"]}
    (documented,) = found["documented.py:crash_p"]
    assert (documented["code"], documented["severity"]) == ("JXU002", "error"), documented
    assert documented["inputs"] == {"provenance": "declared", "specs": ["f32[3]"]}, documented
    (inferred,) = found["undocumented.py:undocumented_crash_p"]
    assert (inferred["code"], inferred["severity"]) == ("JXU002", "warning"), inferred
    assert "f32[3] inferred" in inferred["message"], inferred
