"""Fresh-draw retries cost only what they must: structural findings are not re-tried, value-dependent ones re-run
only the checks that reported them, and a check stops being re-run once each of its findings has missed a draw."""

from __future__ import annotations

from pathlib import Path

import pytest

import jaxdiag
from jaxdiag._run import _engine, _fresh_draws
from jaxdiag._checks._base import Options, Subject
from jaxdiag._harness.cache import SubjectCache
from jaxdiag._core._report import Finding

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


@pytest.fixture
def reruns(monkeypatch):
    """Every re-run the engine asks for: (seed, check names)."""
    calls: list[tuple[int, list[str]]] = []
    real = _engine.run_checks

    def spy(subject, options, cache, names):
        calls.append((options.seed, list(names)))
        return real(subject, options, cache, names)

    monkeypatch.setattr(_engine, "run_checks", spy)
    return calls


def test_a_structural_finding_is_not_retried(reruns):
    report = jaxdiag.check_batching(f"{SAMPLES / 'jxb001_bad.py'}:norm_p", "f32[3]")
    assert "JXB001" in {f.code for f in report.findings}
    assert reruns == []


def test_a_value_dependent_finding_reruns_only_its_checks(reruns):
    report = jaxdiag.check_grad(f"{SAMPLES / 'clip_precondition.py'}:clip", "f32[4]", "f32[]", "f32[]", seed=0)
    flagged = [f for f in report.findings if f.severity in ("error", "warning")]
    assert flagged and all("independent draws" in f.message for f in flagged)
    ran = {c.name for c in report.targets[0].checks}
    assert reruns and all(set(names) < ran for _, names in reruns)  # a strict subset: never the whole subject
    assert [seed for seed, _ in reruns] == sorted({seed for seed, _ in reruns})  # each fresh seed once


def _finding(code: str, severity: str = "error") -> Finding:
    return Finding(code=code, name=code.lower(), severity=severity, message=f"{code} seen")


def _fake_runs(shows: dict[int, set[str]], log: list):
    """A run_checks that reports, on the draw with seed offset `s`, the codes in shows[s] from check 'c'."""

    def run(subject, options, cache, names):
        log.append(list(names))
        return {"c": [_finding(code) for code in sorted(shows[options.seed])]} if "c" in names else {}

    return run


def test_a_finding_seen_on_every_draw_is_kept_as_is_after_every_seed():
    log: list = []
    shows = {s: {"JXB005"} for s in _fresh_draws.RETRY_SEEDS}
    subject = Subject(label="f", kind="function", obj=None, specs=[])
    out = _fresh_draws.confirm_on_fresh_draws(subject, Options(), SubjectCache(), {"c": [_finding("JXB005")]},
                                              _fake_runs(shows, log))
    assert [f.message for f in out] == ["JXB005 seen"]
    assert log == [["c"]] * len(_fresh_draws.RETRY_SEEDS)


def test_retries_stop_once_the_finding_has_missed_a_draw():
    log: list = []
    shows = {s: set() for s in _fresh_draws.RETRY_SEEDS}
    subject = Subject(label="f", kind="function", obj=None, specs=[])
    out = _fresh_draws.confirm_on_fresh_draws(subject, Options(), SubjectCache(example=[]),
                                              {"c": [_finding("JXG014", "warning")], "d": [_finding("JXR006", "info")]},
                                              _fake_runs(shows, log))
    assert log == [["c"]]  # decided after one fresh draw; the info finding's check never re-ran
    assert "Seen on 1 of 2 independent draws" in out[0].message and out[1].message == "JXR006 seen"


def test_value_independence_is_a_catalog_property():
    from jaxdiag import _rules

    by_code = {rule.code: rule for rule in _rules.iter_rules()}
    assert _fresh_draws.VALUE_INDEPENDENT == {c for c, r in by_code.items() if not r.depends_on_values}
    # structure and raises are the same on every draw; value comparisons and the target's own raise are not
    assert {"JXB001", "JXB006", "JXR001", "JXG017"} <= _fresh_draws.VALUE_INDEPENDENT
    assert not {"JXB005", "JXG001", "JXG014", "JXR011"} & _fresh_draws.VALUE_INDEPENDENT
