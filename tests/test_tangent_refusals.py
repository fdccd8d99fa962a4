"""JVP rules that refuse one argument's tangent on purpose (probe module tests/data/refusals/partial_refusal.py):
the refused argument is outside the rule's differentiation contract, so it is held constant (JXN018 says so) and
the rule is checked on the others, where a wrong tangent is still found. Before, the refusal was a JXG025 warning
and none of the rule's other tangents was checked. A rule that refuses every argument stays JXG025."""

from __future__ import annotations

from pathlib import Path

import pytest

from clirun import check_json

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def targets(module_monkeypatch: pytest.MonkeyPatch) -> dict[str, dict]:
    # in this process, as every CLI test runs `check` (a supervised child imported JAX and jaxdiag anew: 4 s)
    return {t["target"].split(":")[-1]: t for t in check_json("refusals.partial_refusal", DATA)[1]["targets"]}


def _codes(target: dict) -> set[str]:
    return {f["code"] for f in target["findings"]}


def _passed(target: dict) -> set[str]:
    return {c["name"] for c in target["checks"] if c["status"] == "passed"}


def test_a_refused_tangent_is_held_constant_and_the_rest_is_checked(targets: dict[str, dict]) -> None:
    right = targets["weighted_sum"]
    assert "JXN018" in _codes(right) and not _codes(right) & {"JXG025", "JXG017", "JXG024"}, right["findings"]
    assert {"jvp-reference", "jvp-linearity", "jvp-reverse"} <= _passed(right)  # compared on `values`
    note = next(f for f in right["findings"] if f["code"] == "JXN018")
    assert "points" in note["message"] and "not supported" in note["message"]


def test_a_wrong_tangent_of_the_argument_it_supports_is_still_found(targets: dict[str, dict]) -> None:
    assert {"JXN018", "JXG024"} <= _codes(targets["weighted_sum_wrong"]), targets["weighted_sum_wrong"]["findings"]


def test_a_rule_that_refuses_every_argument_is_still_a_deliberate_refusal(targets: dict[str, dict]) -> None:
    assert "JXG025" in _codes(targets["frozen"]) and "JXN018" not in _codes(targets["frozen"])
