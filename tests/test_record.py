"""`jaxdiag record` and `pytest --jaxdiag-record`: recorded calls feed `jaxdiag check` (bind params, static args,
pytrees, value domains, closure rules), deterministically.

Runs on tests/data/recpkg: a primitive whose rules need a keyword-only bind param (`width`), a custom_jvp made in a
factory that only ever sees negative inputs (log(-x)), a pytree custom_vjp and the JAX docs' clip_gradient.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from datacli import DATA, data_env, jaxdiag, project

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    work = project(tmp_path_factory.mktemp("record"), "recpkg")
    done = jaxdiag("record", "--", sys.executable, "-m", "recpkg.example", cwd=work)
    assert done.returncode == 0, done.stderr
    assert "recorded 4 distinct call(s)" in done.stderr
    return work


def calls(folder: Path) -> list[dict]:
    return json.loads((folder / ".jaxdiag" / "calls.json").read_text())["calls"]


def line_of(marker: str) -> int:
    lines = (DATA / "recpkg" / "ops.py").read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text)


def test_record_writes_every_distinct_call(recorded):
    by_target = {c["target"]: c for c in calls(recorded)}
    assert set(by_target) == {"recpkg.ops:pad_p", "recpkg.ops:dense", "recpkg.ops:clip_gradient",
                              "recpkg.ops:make_scaled_log.<locals>.scaled_log"}
    pad = by_target["recpkg.ops:pad_p"]
    assert pad["kind"] == "primitive" and pad["params"] == {"width": "2"} and pad["args"] == ["f32[4]"]
    assert pad["ranges"] == [{"min": -2.0, "max": -0.5}]
    clip = by_target["recpkg.ops:clip_gradient"]
    assert clip["args"] == ["-0.1", "0.1", "f32[3]"]
    closure = by_target["recpkg.ops:make_scaled_log.<locals>.scaled_log"]
    assert closure["reachable"] is False
    assert closure["defined_at"].endswith(f"recpkg/ops.py:{line_of('def scaled_log(x):')}")
    assert closure["via"]["target"] == "recpkg.ops:neg_log_sum"
    assert by_target["recpkg.ops:dense"]["args"] == ["{'b': f32[3], 'w': f32[3,4]}", "f32[4]"]


def test_record_is_deterministic(recorded, tmp_path):
    project(tmp_path, "recpkg")
    again = jaxdiag("record", "--", sys.executable, "-m", "recpkg.example", cwd=tmp_path)
    assert again.returncode == 0
    assert (tmp_path / ".jaxdiag" / "calls.json").read_bytes() == (recorded / ".jaxdiag" / "calls.json").read_bytes()


def test_check_uses_the_recording_and_gives_the_same_report_twice(recorded):
    runs = [jaxdiag("check", "recpkg", "--format", "json", cwd=recorded) for _ in range(2)]
    assert runs[0].returncode == 0, runs[0].stdout + runs[0].stderr
    first, second = (json.loads(r.stdout) for r in runs)
    for data in (first, second):
        for t in data["targets"]:
            for c in t["checks"]:
                c.pop("seconds")
    assert first == second
    targets = {t["target"]: t for t in first["targets"]}
    # the bind param came from the recording: the primitive was checked, not reported as missing `width`
    pad = targets["recpkg.ops:pad_p"]
    assert pad["inputs"] == ["f32[4]@negative"]
    assert any(c["status"] == "passed" for c in pad["checks"])
    assert "JXN010" in {f["code"] for f in pad["findings"]}
    # the closure was found through the recording, inside the function that called it, on negative inputs
    closure = [t for name, t in targets.items() if "scaled_log (inside recpkg.ops:neg_log_sum)" in name]
    assert closure and all(c["status"] != "error" for c in closure[0]["checks"])
    assert closure[0]["inputs"] == ["f32[4]@negative"]
    note = next(f for f in closure[0]["findings"] if f["code"] == "JXN010")
    assert note["location"]["line"] == line_of("def scaled_log(x):")
    assert "recpkg.ops:neg_log_sum" not in targets  # the carrier is only the vehicle: not checked itself
    assert "JXN002" not in {f["code"] for t in first["targets"] for f in t["findings"]}  # no domain guessing


USE_OF_THE_LIBRARY = """import jax.numpy as jnp
from recpkg import ops


def total_neg_log(x):  # the project's own function around the library's: it carries the library's closure
    return ops.neg_log_sum(x) * 2.0


def main():
    x = -jnp.linspace(0.5, 2.0, 4)
    print(ops.pad(x, 2), total_neg_log(x))
"""


def test_calls_of_an_installed_library_feed_check_of_that_library(tmp_path):
    """A project uses a library installed outside it (tests/data's recpkg is off the project's root): the calls of
    the library's rules are recorded, and `jaxdiag check recpkg` checks them on those inputs. A closure the library
    makes is carried by the project's function that called the library (`total_neg_log`), never by the library's
    own `neg_log_sum`, which a recording may not name; it is checked once."""
    (tmp_path / "use_lib.py").write_text(USE_OF_THE_LIBRARY)
    done = jaxdiag("record", "--", sys.executable, "-c", "import use_lib; use_lib.main()", cwd=tmp_path)
    assert "recorded 2 distinct call(s)" in done.stderr, done.stderr
    by_target = {c["target"]: c for c in calls(tmp_path)}
    assert by_target["recpkg.ops:pad_p"]["params"] == {"width": "2"}
    assert by_target["recpkg.ops:make_scaled_log.<locals>.scaled_log"]["via"]["target"] == "use_lib:total_neg_log"
    checked = jaxdiag("check", "recpkg", "--format", "json", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    targets = {t["target"]: t for t in json.loads(checked.stdout)["targets"]}
    assert targets["recpkg.ops:pad_p"]["inputs"] == ["f32[4]@negative"]  # the recorded range, not a guess
    assert "JXN010" in {f["code"] for f in targets["recpkg.ops:pad_p"]["findings"]}
    closure = [name for name in targets if "scaled_log" in name]
    assert closure == ["recpkg.ops:make_scaled_log.<locals>.scaled_log (inside use_lib:total_neg_log)"], closure
    assert targets[closure[0]]["inputs"] == ["f32[4]@negative"]


def test_without_a_recording_the_bind_param_comes_from_the_packages_own_call(tmp_path):
    """No recording: the package's example calls `pad(x, 2)`, whose `pad_p.bind(x, width=width)` passes that 2 on:
    the bind param is read by following `width` to that call (JXN017 names it); never an array drawn for an
    inferred caller's argument (a bind param is static)."""
    done = jaxdiag("check", "recpkg", "--format", "json", cwd=tmp_path)
    data = json.loads(done.stdout)
    pad = next(t for t in data["targets"] if t["target"] == "recpkg.ops:pad_p")
    note = next(f for f in pad["findings"] if f["code"] == "JXN017")
    assert "width=2" in note["message"] and "recpkg.example" in note["message"], note["message"]
    assert "Array(" not in note["message"]
    assert not any(f["severity"] in ("error", "warning") for f in pad["findings"])
    assert not any(f["severity"] == "error" for t in data["targets"] for f in t["findings"])


def test_pytest_option_records_the_tests_calls(tmp_path):
    project(tmp_path, "recpkg")
    (tmp_path / "test_uses.py").write_text(
        "import jax.numpy as jnp\nfrom recpkg import ops\n\n"
        "def test_pad():\n    assert ops.pad(-jnp.ones(3), 1).shape == (4,)\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--jaxdiag-record",
                           "test_uses.py"], cwd=tmp_path, env=data_env(tmp_path), capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    recorded = calls(tmp_path)
    assert [(c["target"], c["args"], c["params"]) for c in recorded] == [("recpkg.ops:pad_p", ["f32[3]"],
                                                                          {"width": "1"})]


def test_a_callable_bind_param_is_checked_inside_the_users_own_example_function(tmp_path):
    """`apply_p.bind(x, fn=jnp.sin)`: the param cannot be written to the file; the user's module-level example
    function that called it with arrays only (`carry_example:apply_sin`) carries it, and `jaxdiag check` re-runs it
    and checks the primitive inside. A dtype given as a scalar type (`jnp.bfloat16`) is recorded as `bf16`."""
    project(tmp_path, "carrypkg", "carry_example.py")  # helperlib stays a library outside the project
    done = jaxdiag("record", "--", sys.executable, "-c", "import carry_example; carry_example.main()", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    by_target = {c["target"]: c for c in calls(tmp_path)}
    apply = by_target["carrypkg.ops:apply_p"]
    assert apply["replayable"] is False and apply["params"] == {"fn": "<PjitFunction>"}
    assert apply["via"]["target"] == "carry_example:apply_sin" and apply["via"]["args"] == ["f32[3]"]
    assert by_target["carrypkg.ops:round_trip"]["args"] == ["bf16", "f32[3]"]
    check = jaxdiag("check", "carrypkg", "--format", "json", cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    targets = {t["target"]: t for t in json.loads(check.stdout)["targets"]}
    inside = targets["carrypkg.ops:apply_p (inside carry_example:apply_sin)"]
    assert any(c["status"] == "passed" for c in inside["checks"])
    assert not any(c["status"] == "error" for t in targets.values() for c in t["checks"])
    round_trip = targets["carrypkg.ops:round_trip"]
    assert round_trip["inputs"] == ["bf16", "f32[3]"] and any(c["status"] == "passed" for c in round_trip["checks"])
    # the custom_vjp a helper library's wrapper holds is named after the user's attribute holding the wrapper, and
    # (its arguments being the helper's, not the wrapper's) checked inside the example function that called it
    assert by_target["carrypkg.filtered:softplus"]["kind"] == "custom_vjp"
    assert by_target["carrypkg.filtered:softplus"]["via"]["target"] == "carry_example:soft"
    softplus = targets["carrypkg.filtered:softplus (inside carry_example:soft)"]
    assert any(c["status"] == "passed" for c in softplus["checks"])
    assert not [f for t in targets.values() for f in t["findings"] if f["severity"] != "info"]


JUDGE_SUPPRESSIONS_AFTER_AN_INTERNAL_ERROR = """import json, sys
import jaxdiag
from jaxdiag import _rules as rules
from jaxdiag._jobs import _reach

def broken(*args, **kwargs):
    raise RuntimeError("jaxdiag's own bug")

_reach.check_recorded = broken
report = jaxdiag.check_module("recpkg")
print(json.dumps({"internal": report.summary["internal_errors"],
                  "unused": [f.location.line for t in report.targets for f in t.findings
                             if f.code == rules.UNUSED_SUPPRESSION.code]}))
"""


def test_a_recorded_call_jaxdiag_failed_on_leaves_its_suppressions_unjudged(recorded, tmp_path):
    """jaxdiag's own bug while checking a recorded closure is an internal error, and the closure was not checked: an
    ignore comment on its rule is never called unused (it may be what silences a real finding)."""
    import shutil

    work = tmp_path / "work"
    shutil.copytree(recorded, work)
    ops = work / "src" / "recpkg" / "ops.py"
    ops.write_text(ops.read_text().replace("def scaled_log(x):", "def scaled_log(x):  # jaxdiag: ignore[JXG001]"))
    done = subprocess.run([sys.executable, "-c", JUDGE_SUPPRESSIONS_AFTER_AN_INTERNAL_ERROR], cwd=work,
                          env=data_env(work), capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["internal"] >= 1
    assert line_of("def scaled_log(x):") not in result["unused"], result
