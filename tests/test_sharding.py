"""`jaxdiag sharding`: every JXS sample pair on a virtual CPU mesh (the rule on the bad file, at the line its
`# jaxdiag-expect: JXS00N` marker names; nothing on the good file), the false-alarm sweep over JAX's own ops, the
child process (environment, errors), the CLI, the API and `check` with `sharding = true`.

Each child process costs a JAX start-up plus one compilation per input sharding, so the default tier runs one
child for all of its targets (`fast_report`); everything else is marked slow.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import jax
import pytest

import jaxdiag

from jaxdiag._compat import _sharding as cs
from jaxdiag._core._filtering import Filter

from jaxdiag._mesh import _sharding
from jaxdiag._core._errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
TESTS = Path(__file__).resolve().parent
SAMPLE_ARGS = {"jxs001": ("fft_real", "f32[8,16]"), "jxs002": ("scale", "f32[8,16]"),
               "jxs003": ("running_total", "f32[8,16]"), "jxs004": ("soft_sign_p", "f32[4]"),
               "jxs005": ("cumsum_rows", "f32[8,16]"), "jxs006": ("row_norms", "f32[8,16]"),
               "jxs007": ("scale", "f32[8,16]"), "jxs008": ("fft_last", "c64[8,16]"),
               "jxs009": ("scale_p", "f32[4]")}
FAST = ["jxs001_bad", "jxs001_good", "jxs004_bad", "jxs004_good", "jxs005_bad", "jxs008_bad", "jxs008_good",
        "jxs009_bad", "jxs009_good"]
SLOW = sorted({f"{c}_{w}" for c in SAMPLE_ARGS for w in ("bad", "good")} - set(FAST))


def expected_lines(stem: str) -> dict[str, set[int]]:
    """Marker lines per code: `# jaxdiag-expect: JXS001` in the sample."""
    lines: dict[str, set[int]] = {}
    for number, text in enumerate((SAMPLES / f"{stem}.py").read_text().splitlines(), start=1):
        marker = text.partition("jaxdiag-expect:")[2]
        for code in re.findall(r"\bJX[A-Z]\d{3}\b", marker):
            lines.setdefault(code, set()).add(number)
    return lines


def entry(stem: str) -> dict:
    attr, spec = SAMPLE_ARGS[stem[:6]]
    args = [spec, spec] if stem.startswith("jxs009") else [spec]  # x and a weight of its shape
    return {"ref": f"samples/{stem}.py:{attr}", "args": args, "params": {}}


def run(stems: list[str], extra: tuple[dict, ...] = (), **options) -> dict[str, list]:
    """One child for every sample (and `extra` entries); {file stem: [target reports]}."""
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        report = _sharding.run_in_child([entry(s) for s in stems] + list(extra), (2, 4), **options)
    finally:
        os.chdir(cwd)
    assert not report.internal_errors, [c.detail for c in report.internal_errors]
    by_stem: dict[str, list] = {s: [] for s in stems}
    for target in report.targets:
        stem = target.target.split(":")[0].rsplit("/", 1)[-1][:-3]
        by_stem.setdefault(stem, []).append(target)
    return by_stem


def assert_sample(stem: str, targets: list) -> None:
    findings = [f for t in targets for f in t.findings]
    problems = [f for f in findings if f.severity in ("error", "warning")]
    code = stem[:6].upper()
    if stem.endswith("_good"):
        assert not problems, [(f.code, f.message) for f in problems]
        return
    hits = [f for f in problems if f.code == code]
    assert hits, f"samples/{stem}.py should report {code}; got {[(f.code, f.message) for f in findings]}"
    marked = expected_lines(stem)
    for f in problems:
        assert f.code in marked, f"{stem}: unexpected {f.code}: {f.message}"
        assert f.location is not None and f.location.path.endswith(f"{stem}.py"), f.location
        assert f.location.line in marked[f.code], (f.code, f.location.line, marked[f.code])
        assert f.fix, f"{f.code} has no fix"


# Inputs only the richer --arg forms and --param express (tests/data/sharding_inputs.py), as `jaxdiag sharding`
# sends them: parsed by the CLI, pickled to the child.
INPUT_FORMS = {
    "scaled": (["f32[8]", "0.5"], {}),
    "noisy": (["key[]", "f32[8]"], {}),
    "tree_total": (['{"w": f32[8], "b": f32[8]}'], {}),
    "pair_total": (["(f32[8], 2)"], {}),
    "log_of": (["f32[8]@positive"], {}),
    "scale_p": (["f32[8]"], {"factor": 3.0}),
}


def input_form_entries() -> tuple[dict, ...]:
    from jaxdiag._loading._inputs import parse_arg

    return tuple({"ref": f"tests/data/sharding_inputs.py:{name}", "args": [parse_arg(a) for a in args],
                  "params": params} for name, (args, params) in INPUT_FORMS.items())


@pytest.fixture(scope="module")
def fast_report():
    # + a target no placement can shard (f32[3] on 2x4), which must say so rather than pass quietly, and a plain
    # primitive (a fresh ShapedArray, no JVP) that works inside shard_map
    return run(FAST, ({"ref": "tests/sharding_targets.py:total", "args": ["f32[3]"]},
                      {"ref": "tests/data/shard/vma_members.py:plain_p", "args": ["f32[4]"]}), max_placements=6)


@pytest.mark.slow  # a child of its own (the fast tier keeps the CLI's parsing of every form, below)
def test_every_arg_form_reaches_the_child():
    """Each target raises unless its input arrived in its form (a static float, a typed key, a dict or tuple
    pytree, positive values, a bind parameter): clean reports whose sharded comparison ran prove they did."""
    by_stem = run([], input_form_entries(), max_placements=6)
    reports = {t.target.rpartition(":")[2]: t for t in by_stem["sharding_inputs"]}
    assert set(reports) == set(INPUT_FORMS)
    for name, report in reports.items():
        assert report.findings == [], (name, [(f.code, f.message) for f in report.findings])
        assert ("sharded-results", "passed") in [(c.name, c.status) for c in report.checks], (name, report.checks)
    assert reports["log_of"].inputs == ["f32[8]@positive"]  # the domain reached the draws (no fallback note)
    assert reports["noisy"].inputs[0] == "key[]"


@pytest.mark.parametrize("stem", FAST)
def test_fast_samples(fast_report, stem):
    if stem == "jxs009_bad" and not VMA:
        return test_without_vma_types_shard_map_refuses_the_primitive_for_its_replication_rules(fast_report)
    assert_sample(stem, fast_report[stem])


# JAX before the varying-axes (`vma`) types checks replication with per-primitive rules: shard_map refuses a user
# primitive that registers none, so the silent class of JXS009 cannot happen there and JXS004 is the true verdict.
VMA = cs.tracks_varying_axes()


def test_without_vma_types_shard_map_refuses_the_primitive_for_its_replication_rules(fast_report):
    if VMA:
        pytest.skip("this JAX types varying mesh axes: the primitive is judged by running it (JXS009 or clean)")
    for stem in ("jxs009_bad", "vma_members"):
        codes = {(f.code, f.severity) for t in fast_report[stem] for f in t.findings}
        assert ("JXS004", "error") in codes, (stem, codes)


def test_fft_mismatch_names_the_input_sharding_and_values(fast_report):
    finding = next(f for t in fast_report["jxs001_bad"] for f in t.findings if f.code == "JXS001")
    assert re.search(r"input P\(None, '[ab]'\)", finding.message), finding.message
    assert "got" in finding.message and "expected" in finding.message and "max abs difference" in finding.message
    assert "P(None, None)" in finding.message  # the replicated placement agrees
    assert "partition_fft" in finding.fix and "dimension 1" in finding.fix


def test_the_documented_fft_is_a_cost_warning_with_bytes_not_an_error(fast_report):
    """The custom_partitioning FFT as JAX documents it (`... i -> ... i`, partition gathering the last axis) gives
    exact results under every sharding: one warning at the rule's line stating what moves, no JXS002/JXS003."""
    findings = [f for t in fast_report["jxs008_bad"] for f in t.findings]
    assert [(f.code, f.severity) for f in findings] == [("JXS008", "warning")], [(f.code, f.message) for f in findings]
    (finding,) = findings
    assert "'... i -> ... i'" in finding.message and "Results are exact" in finding.message
    # f32 complex [8,16] is 1 KiB: a device holding half of the last axis receives the other half
    assert re.search(r"\b512 B received per device and call \(all-gather c64\[8,8\] -> c64\[8,16\]\)",
                     finding.message), finding.message
    assert finding.location is not None and finding.location.function == "sharding_rule"


def test_a_plain_primitive_that_works_inside_shard_map_is_clean(fast_report):
    if not VMA:
        pytest.skip("shard_map on this JAX refuses a primitive without replication rules (see the test above)")
    (target,) = fast_report["vma_members"]
    assert target.findings == [], [(f.code, f.message) for f in target.findings]
    assert ("shard-map", "passed") in [(c.name, c.status) for c in target.checks], target.checks


def test_a_silently_wrong_shard_map_grad_is_at_the_abstract_eval(fast_report):
    if not VMA:
        pytest.skip("no varying-axes types on this JAX: the silent class cannot happen (JXS004 instead)")
    (finding,) = [f for t in fast_report["jxs009_bad"] for f in t.findings]
    assert (finding.code, finding.severity) == ("JXS009", "error")
    assert finding.location is not None and finding.location.function == "_scale_abstract_eval"
    # the replicated operand is the one whose cotangent is never summed
    assert re.search(r"operand (\d) replicated.* never sums the cotangent of operand \1 ", finding.message), \
        finding.message
    assert "expected" in finding.message and "pcast" in finding.fix


def test_shard_map_layouts_cover_replicated_and_fewer_axes():
    from jaxdiag._checks._sharding_map import layouts

    found = [layout.axes for layout in layouts(2, ("a", "b"))]
    assert found[0] == (("a", "b"), ("a", "b"))
    assert ((), ("a", "b")) in found and (("a", "b"), ()) in found  # each operand replicated in turn
    assert (("a",), ("a", "b")) in found and (("a", "b"), ("a",)) in found  # varying over fewer axes
    assert [layout.axes for layout in layouts(1, ("a", "b"))] == [(("a", "b"),)]


def test_bytes_moved_are_read_off_partitioned_hlo():
    from jaxdiag._checks._sharding import moved_bytes

    hlo = """
  %param = f32[8,4]{1,0} parameter(0)
  %copy = f32[8,4]{0,1} copy(%param)
  %all-gather = f32[8,16]{0,1} all-gather(%copy), channel_id=1, replica_groups=[2,4]<=[8], dimensions={1}
  ROOT %all-to-all = f32[8,16]{1,0} all-to-all(%all-gather), dimensions={0}
"""
    moved = moved_bytes(hlo)
    assert moved.per_device == (8 * 16 - 8 * 4) * 4 + 8 * 16 * 4
    assert moved.parts == ("all-gather f32[8,4] -> f32[8,16]", "all-to-all f32[8,16] -> f32[8,16]")
    assert moved_bytes("ROOT %add = f32[4]{0} add(%a, %b)").per_device == 0


def expected_marks(path: Path, partitioner: str) -> dict[str, set[tuple[str, int]]]:
    """{op: {(code, line)}} from `# expect: CODE` marks (a code may say `(GSPMD)` or `(Shardy)`: only there), per
    block: each op's block starts at a comment line in column 0 and defines one op (`@custom_partitioning` then
    `def NAME`, or `NAME = _elementwise(...)`)."""
    marks: dict[str, set[tuple[str, int]]] = {}
    blocks: list[list[tuple[int, str]]] = []
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        if text.startswith("# "):
            blocks.append([])
        if blocks:
            blocks[-1].append((number, text))
    for block in blocks:
        source = "\n".join(text for _, text in block)
        op = re.search(r"@custom_partitioning\ndef (\w+)|^(\w+) = _elementwise\(", source, re.M)
        if op is None:
            continue
        found = marks.setdefault(op.group(1) or op.group(2), set())
        for number, text in block:
            for code, only in re.findall(r"\b(JX[A-Z]\d{3})(?: \((GSPMD|Shardy)\))?", text.partition("# expect:")[2]):
                if not only or only == partitioner:
                    found.add((code, number))
    return marks


def test_an_unshardable_input_is_a_note_not_a_pass(fast_report):
    (target,) = fast_report["sharding_targets"]
    assert [(f.code, f.severity) for f in target.findings] == [("JXN003", "info")]
    assert "only the replicated placement ran" in target.findings[0].message


def test_inputs_come_from_the_modules_jaxdiag_dict_without_arg(monkeypatch):
    from jaxdiag._run import _engine
    from jaxdiag._mesh import _sharding_child

    monkeypatch.chdir(ROOT)
    resolved = _engine.resolve("samples/jxs002_good.py:scale")
    assert _sharding_child.configured_inputs("samples/jxs002_good.py:scale", resolved, ".") == (["f32[8,16]"], {})
    resolved = _engine.resolve("tests/sharding_targets.py:total")
    assert _sharding_child.configured_inputs("tests/sharding_targets.py:total", resolved, ".") == ([], {})


def test_gathering_cost_reports_bytes_moved(fast_report):
    finding = next(f for t in fast_report["jxs005_bad"] for f in t.findings if f.code == "JXS005")
    assert finding.severity == "warning"
    assert "512 B" in finding.message  # f32[8,16]: the global operand
    assert re.search(r"\d+ B moved per call", finding.message), finding.message
    assert "shard_map" in finding.fix and "custom_partitioning" in finding.fix


@pytest.fixture(scope="module")
def slow_report():
    # + the fast tier's bad samples again, on the default options (`jaxdiag sharding`'s own, which
    # docs/jax-vs-jaxdiag.md's rows show: test_docs_table_rows_say_what_jaxdiag_sharding_says)
    return run(SLOW + [s for s in FAST if s.endswith("_bad")])


@pytest.mark.slow
def test_docs_table_rows_say_what_jaxdiag_sharding_says(slow_report):
    """docs/jax-vs-jaxdiag.md's row of every JXS rule holds the first sentence of its bad sample's finding under
    `jaxdiag sharding`'s defaults (and what plain JAX says now): CI's `scripts/docs_tables.py --check
    --rows-from-tests` trusts these rows rather than run the samples a second time. On the table's JAX release
    only (JAX's messages change between releases)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import docs_tables as tables
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    block = tables._block(tables.TABLE_DOC.read_text(encoding="utf-8")) or ""
    recorded = tables.VERSION_RE.search(block)
    if recorded is None or recorded.group(1) != jax.__version__:
        pytest.skip(f"the table was generated with another JAX release than {jax.__version__}")
    rows = tables.doc_rows(block)
    codes = [c for c in tables.table_codes() if c.startswith("JXS")]
    assert codes and all(tables.checked_by_the_tests(c) for c in codes)
    for code in codes:
        name = jaxdiag.RULES[code].bad_sample
        findings = [f for t in slow_report[name[:-3]] for f in t.findings]
        cells = tables.row_cells(code, name, tables.jaxdiag_cell(code, findings))
        wanted = tables.row_line(*cells, f"sharding samples/{name}:…")
        assert rows.get(code) == wanted, f"the row for {code} is stale: run `python scripts/docs_tables.py`\n" \
            f"  doc:  {rows.get(code)}\n  now:  {wanted}"


@pytest.mark.slow
@pytest.mark.parametrize("stem", SLOW)
def test_slow_samples(slow_report, stem):
    assert_sample(stem, slow_report[stem])


SWEEP = [("fft_last", ["f32[8,16]"]), ("total", ["f32[8,16]"]), ("sort_rows", ["f32[8,16]"]),
         ("matmul", ["f32[8,16]", "f32[16,8]"]), ("uses_lower_fun_primitive", ["f32[8,16]"]),
         ("cumulative_sin_p", ["f32[8,16]"]), ("jit_mix", ["f32[8,16]", "f32[4,16]"])]


@pytest.mark.slow
def test_false_alarm_sweep_over_jax_ops_under_sharding():
    entries = [{"ref": f"{TESTS / 'sharding_targets.py'}:{name}", "args": args, "params": {}} for name, args in SWEEP]
    report = _sharding.run_in_child(entries, (2, 4))
    assert not report.internal_errors, [c.detail for c in report.internal_errors]
    problems = [(t.target, f.code, f.message) for t in report.targets for f in t.findings
                if f.severity in ("error", "warning")]
    assert not problems, problems
    ran = {c.name for t in report.targets for c in t.checks if c.status == "passed"}
    assert {"sharded-results", "shard-map"} <= ran, ran  # the sweep really compared something


# --- options, the child process, API and CLI ------------------------------------------------------------------


@pytest.mark.parametrize("text,shape", [("2x4", (2, 4)), ("8", (8,)), ("2X2x2", (2, 2, 2)), (" 4x2 ", (4, 2))])
def test_parse_mesh(text, shape):
    assert _sharding.parse_mesh(text) == shape


@pytest.mark.parametrize("text", ["", "2x", "x4", "2*4", "0x4", "8x16", "a"])
def test_parse_mesh_rejects(text):
    with pytest.raises(UsageError):
        _sharding.parse_mesh(text)


def test_child_env_appends_the_flag_without_touching_the_parent():
    before = dict(os.environ)
    env = _sharding.child_env(8, {"XLA_FLAGS": "--xla_cpu_enable_fast_math=false", "PATH": "/bin"})
    assert env["XLA_FLAGS"] == "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=8"
    assert env["JAX_PLATFORMS"] == "cpu" and env["PATH"] == "/bin"
    assert _sharding.child_env(4, {})["XLA_FLAGS"] == "--xla_force_host_platform_device_count=4"
    assert dict(os.environ) == before


def test_placements_are_bounded_and_start_replicated():
    from jaxdiag._checks._sharding import placements, show_spec
    from jaxdiag._loading._inputs import parse_spec

    found = placements([parse_spec("f32[8,16]")], (2, 4), ("a", "b"), 12)
    shown = [" ".join(show_spec(s) for s in p.specs) for p in found]
    assert shown[0] == "P(None, None)" and len(found) == len(set(shown)) <= 12
    assert {"P('a', None)", "P('b', None)", "P(None, 'a')", "P(None, 'b')"} <= set(shown)
    assert "P('a', 'b')" in shown  # a combination
    odd = placements([parse_spec("f32[3,5]")], (2, 4), ("a", "b"), 12)
    assert len(odd) == 1  # nothing divides: replicated only


def test_report_round_trips_through_the_child_json():
    from jaxdiag._core._report import CheckResult, Finding, Location, Report, TargetReport

    report = Report([TargetReport("m:f", "function", ["f32[3]"], [CheckResult("c", "failed", 0.5, "JXS001")],
                                  [Finding("JXS001", "n", "error", "msg", "fix", Location("a.py", 3, "f"))])],
                    "0.1", "0.10")
    again = _sharding.report_from_dict(json.loads(json.dumps(report.to_dict())))
    assert again.to_dict() == report.to_dict()


def test_object_targets_become_importable_refs():
    from sharding_targets import cumulative_sin_p, total

    assert _sharding.target_ref(total) == "sharding_targets:total"
    assert _sharding.target_ref(cumulative_sin_p) == "sharding_targets:cumulative_sin_p"
    with pytest.raises(UsageError):
        _sharding.target_ref(lambda x: x)


def test_config_key_is_validated(tmp_path):
    from jaxdiag._core import _config

    assert _config.parse({"sharding": True}).sharding is True
    assert _config.parse({}).sharding is False
    with pytest.raises(UsageError):
        _config.parse({"sharding": "yes"})


@pytest.mark.slow
def test_cli_exit_codes_and_json(tmp_path):
    env = dict(os.environ)
    cmd = [sys.executable, "-m", "jaxdiag", "sharding", "samples/jxs002_bad.py:scale", "--arg", "f32[8,16]",
           "--format", "json"]
    done = subprocess.run(cmd, cwd=ROOT, check=False, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert [f["code"] for t in data["targets"] for f in t["findings"]] == ["JXS002"]
    assert os.environ.get("XLA_FLAGS") == env.get("XLA_FLAGS")
    bad = subprocess.run([sys.executable, "-m", "jaxdiag", "sharding", "samples/jxs002_bad.py:scale", "--mesh",
                          "2x"], cwd=ROOT, check=False, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("jaxdiag: error: bad --mesh")
    ignored = subprocess.run(cmd + ["--ignore", "JXS002"], cwd=ROOT, check=False, capture_output=True, text=True,
                             timeout=600)
    assert ignored.returncode == 0, ignored.stderr


@pytest.mark.slow
def test_api_takes_objects_and_a_mesh(monkeypatch):
    import jaxdiag

    monkeypatch.syspath_prepend(str(SAMPLES))
    monkeypatch.chdir(ROOT)
    import jxs001_bad  # type: ignore[import-not-found]

    report = jaxdiag.check_sharding(jxs001_bad.fft_real, "f32[8,16]", mesh="4x2", max_placements=6)
    assert not report.ok and "JXS001" in report.codes()
    assert "a=4 x b=2" in next(f.message for f in report.findings if f.code == "JXS001")


@pytest.mark.slow
def test_check_runs_sharding_when_configured(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxdiag]\nsharding = true\n")
    (tmp_path / "ops.py").write_text((SAMPLES / "jxs002_bad.py").read_text())
    done = subprocess.run([sys.executable, "-m", "jaxdiag", "check", "ops.py", "--format", "json"], cwd=tmp_path,
                          check=False, capture_output=True, text=True, timeout=600)
    data = json.loads(done.stdout)
    codes = {f["code"] for t in data["targets"] for f in t["findings"]}
    assert "JXS002" in codes and done.returncode == 1, (codes, done.stderr)
    (tmp_path / "pyproject.toml").write_text("[tool.jaxdiag]\n")
    off = subprocess.run([sys.executable, "-m", "jaxdiag", "check", "ops.py", "--format", "json"], cwd=tmp_path,
                         check=False, capture_output=True, text=True, timeout=600)
    assert not any(f["code"].startswith("JXS") for t in json.loads(off.stdout)["targets"] for f in t["findings"])


# --- the child's per-target time limit --------------------------------------------------------------------------

# A stand-in for the child process (no JAX: it starts in a fraction of a second): it finishes the first target,
# starts the second at a known check, then never returns.
FAKE_CHILD = r"""
import json, pickle, sys, time
request = pickle.load(sys.stdin.buffer)
first = {"target": "m.py:first", "kind": "function", "findings": [], "checks": [], "config_keys": ["m.py:first"]}
with open(request["partial_path"], "a") as handle:
    handle.write(json.dumps({"entry": 0, "targets": [first]}) + "\n")
status = {"entry": 1, "label": "m.py:second", "check": "sharded-results", "subject": "m.py:second",
          "target_started": time.time(), "anchors": [{"path": "m.py", "line": 7, "function": "second"}]}
with open(request["status_path"] + ".tmp", "w") as handle:
    json.dump(status, handle)
import os
os.replace(request["status_path"] + ".tmp", request["status_path"])
while True:
    time.sleep(0.05)
"""


def test_a_target_past_the_time_limit_is_stopped_with_a_note(monkeypatch):
    """The stopped target gets JXU004 (a blocking error: not verified) naming the check and its line, the finished
    one keeps its report, the one never reached says it was not run, and the child is gone."""
    monkeypatch.setattr(_sharding, "CHILD_COMMAND", (sys.executable, "-c", FAKE_CHILD))
    entries = [{"ref": f"m.py:{name}", "args": [], "params": {}} for name in ("first", "second", "third")]
    start = time.monotonic()
    report = _sharding.run_in_child(entries, (2,), timeout=0.5)
    assert time.monotonic() - start < 30
    assert [t.target for t in report.targets] == ["m.py:first", "m.py:second", "m.py:third"]
    first, second, third = report.targets
    assert first.findings == []
    (note,) = second.findings
    assert (note.code, note.severity) == ("JXU004", "error")
    assert "check `sharded-results` on m.py:second" in note.message and "limit of 0.5 s" in note.message
    assert note.location is not None and (note.location.path, note.location.line) == ("m.py", 7)
    assert [(c.name, c.status) for c in second.checks] == [("sharded-results", "skipped")]
    assert [f.code for f in third.findings] == ["JXN003"] and "m.py:second" in third.findings[0].message
    Filter().apply(report)  # coverage is judged where every report is filtered
    reasons = {t.target: t.unverified for t in report.not_verified}
    assert reasons["m.py:second"] == "timed-out" and reasons["m.py:third"] == "no-check-ran"
    assert not report.ok and not report.internal_errors and report.exit_code == 5


def test_a_child_that_never_starts_its_first_target_is_stopped(monkeypatch):
    monkeypatch.setattr(_sharding, "CHILD_COMMAND", (sys.executable, "-c", "import time; time.sleep(600)"))
    monkeypatch.setattr(_sharding, "START_SECONDS", 0.5)
    report = _sharding.run_in_child([{"ref": "m.py:f", "args": [], "params": {}}], (2,), timeout=0.2)
    (note,) = report.targets[0].findings
    assert note.code == "JXU004" and "no target had started" in note.message


@pytest.mark.slow
def test_cli_stops_a_target_that_never_returns():
    """The real child, through the CLI: `--timeout 3` on a target that never returns ends with JXU004 (exit 5: not
    verified), well before the default limit."""
    target = f"{TESTS / 'data' / 'sharding_waits.py'}:waits"
    done = subprocess.run([sys.executable, "-m", "jaxdiag", "sharding", target, "--arg", "f32[8]", "--timeout", "3",
                           "--format", "json"], cwd=ROOT, check=False, capture_output=True, text=True, timeout=600)
    assert done.returncode == 5, done.stderr
    (target_report,) = json.loads(done.stdout)["targets"]
    (note,) = target_report["findings"]
    assert note["code"] == "JXU004" and "limit of 3 s" in note["message"], note
    # the first call on drawn inputs (before any check) is where it never returns
    assert "while running a first call on drawn inputs" in note["message"], note["message"]
    assert note["location"]["path"].endswith("sharding_waits.py"), note
    bad = subprocess.run([sys.executable, "-m", "jaxdiag", "sharding", target, "--timeout", "-1"], cwd=ROOT,
                         check=False, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("jaxdiag: error: --timeout"), bad.stderr


# --- `jaxdiag sharding` takes the inputs every command takes ------------------------------------------------------


def test_sharding_command_parses_every_arg_form_and_param(monkeypatch):
    """The CLI parses --arg and --param as batching and grad do and hands the child the parsed templates; a bad one
    is a one-line usage error before any child starts."""
    from clirun import Runner

    from jaxdiag._parent._cli import app
    from jaxdiag._loading._inputs import parse_arg

    sent: list = []

    def fake_child(entries, mesh, **options):
        sent.append((entries, mesh, options))
        from jaxdiag._core._report import Report

        return Report([], "0")

    monkeypatch.setattr(_sharding, "run_in_child", fake_child)
    monkeypatch.chdir(ROOT)
    forms = ["f32[8]@positive", "0.5", "key[]", '{"w": f32[8], "b": f32[8]}', "(f32[8], 2)", "int32", "None"]
    argv = ["sharding", "tests/data/sharding_inputs.py:scaled", "--mesh", "4", "--timeout", "7", "--seed", "3"]
    result = Runner().invoke(app, argv + [x for a in forms for x in ("--arg", a)] + ["--param", "factor=3.0"])
    assert result.exit_code == 0, result.output
    ((entry,), mesh, options) = sent[0]
    assert entry["args"] == [parse_arg(a) for a in forms] and entry["params"] == {"factor": 3.0}
    assert mesh == (4,) and options["timeout"] == 7 and options["seed"] == 3
    for bad in (["--arg", "f32[3]@2..1"], ["--param", "axis=(0,"], ["--arg", "f32[3"], ["--timeout", "-1"],
                ["--mesh", "2x"], ["--select", "XYZ"]):
        result = Runner().invoke(app, ["sharding", "tests/data/sharding_inputs.py:scaled", *bad])
        assert result.exit_code == 2 and result.stderr.startswith("jaxdiag: error:"), (bad, result.output)
        assert len(result.stderr.splitlines()) == 1, result.stderr
    assert len(sent) == 1  # no child for bad input


@pytest.mark.slow
def test_cli_sharding_param_and_pytree_args():
    """Through the real child: a primitive without its required bind parameter is a usage error naming
    `--param factor=…`; with it, and a pytree with a static leaf, the targets are checked clean."""
    base = [sys.executable, "-m", "jaxdiag", "sharding"]
    missing = subprocess.run(base + ["tests/data/sharding_inputs.py:scale_p", "--arg", "f32[8]"], cwd=ROOT,
                             check=False, capture_output=True, text=True, timeout=600)
    assert missing.returncode == 2 and "--param factor=" in missing.stderr, missing.stderr
    assert len(missing.stderr.splitlines()) == 1, missing.stderr
    for target, extra in (("scale_p", ["--arg", "f32[8]", "--param", "factor=3.0"]),
                          ("pair_total", ["--arg", "(f32[8], 2)"])):
        done = subprocess.run(base + [f"tests/data/sharding_inputs.py:{target}", *extra, "--format", "json"],
                              cwd=ROOT, check=False, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        (report,) = json.loads(done.stdout)["targets"]
        assert report["findings"] == [] and any(c["name"] == "sharded-results" and c["status"] == "passed"
                                                for c in report["checks"]), report


# --- other members of each class: custom_partitioning ops and user primitives ----------------------------------

DATA = TESTS / "data" / "shard"
CP_ARGS = {"fft_rows": ["c64[8,16]"], "triple": ["f32[8,16]"], "shifted_total": ["f32[8,16]", "f32[8,16]"],
           "column_sums": ["f32[8,16]"], "running_rows": ["f32[8,16]"], "doubled": ["f32[8,16]"]}


def _findings_by_target(report) -> dict[str, set[tuple[str, int]]]:
    assert not report.internal_errors, [c.detail for c in report.internal_errors]
    return {t.target.rpartition(":")[2]: {(f.code, f.location.line) for f in t.findings
                                          if f.severity in ("error", "warning") and f.location is not None}
            for t in report.targets}


@pytest.mark.slow
@pytest.mark.parametrize("partitioner", ["Shardy", "GSPMD"])
def test_custom_partitioning_members_are_judged_by_evidence_at_the_callback(monkeypatch, partitioner):
    """Gathering another axis, a replicated second operand, a reduction inside partition, infer at fault (GSPMD),
    propagate_user_sharding exercised (GSPMD): each finding at the callback or rule line marked in the module."""
    monkeypatch.setenv("JAX_USE_SHARDY_PARTITIONER", "1" if partitioner == "Shardy" else "0")
    entries = [{"ref": f"{DATA / 'cp_members.py'}:{name}", "args": args, "params": {}}
               for name, args in CP_ARGS.items()]
    got = _findings_by_target(_sharding.run_in_child(entries, (2, 4)))
    want = expected_marks(DATA / "cp_members.py", partitioner)
    assert set(want) == set(CP_ARGS)
    assert got == want


@pytest.mark.slow
@pytest.mark.parametrize("mesh", [(2, 4), (8,), (2, 2, 2)])
def test_shard_map_members_on_other_meshes(mesh):
    """An output typed after the replicated operand (JXS009), a lax-written JVP under a fresh ShapedArray (grad
    raises: JXS004), a plain primitive (clean), whatever the mesh's axes."""
    args = {"plain_p": ["f32[8]"], "weighted_p": ["f32[8]", "f32[8]"], "mixed_p": ["f32[8]", "f32[8]"]}
    entries = [{"ref": f"{DATA / 'vma_members.py'}:{name}", "args": a, "params": {}} for name, a in args.items()]
    got = _findings_by_target(_sharding.run_in_child(entries, mesh))
    assert got == expected_marks(DATA / "vma_members.py", "Shardy")
