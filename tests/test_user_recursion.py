"""A user rule that re-enters itself without end (a batching rule vmapping its own primitive, a JVP rule taking
`jax.jvp` of its own primitive) exhausts Python's stack wherever the last frame is, often in jaxdiag's spy around
the rule: the harness tells that from jaxdiag's own failure by the user's function repeating on the stack, and it
is the user's finding (tests/data/acc/self_reentry.py), never an internal error."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clirun import check_json

from jaxdiag._harness.boundary import JaxdiagBug, jaxdiag_code

ACC = Path(__file__).parent / "data" / "acc"


@pytest.mark.slow  # a whole module checked (about 4 s); the boundary's readings below stay fast
def test_a_batching_rule_that_vmaps_its_own_primitive_is_the_users_finding_with_its_line():
    _, data = check_json(f"{ACC / 'self_reentry.py'}", ACC)
    targets = {t["target"].rpartition(":")[2]: t for t in data["targets"]}
    assert not [p for t in targets.values() for p in t.get("problems", [])]  # was: 4 internal errors on tile_p
    raised = [f for f in targets["tile_p"]["findings"] if f["code"] == "JXB006"]
    assert raised and "RecursionError" in raised[0]["message"] and "re-enters itself" in raised[0]["fix"]
    source = (ACC / "self_reentry.py").read_text().splitlines()
    assert "jax.vmap(tile_p.bind)" in source[raised[0]["location"]["line"] - 1]  # the rule's own line
    assert not [f for f in targets["tile_ok_p"]["findings"] if f["severity"] != "info"]  # lax.map: no re-entry
    assert "JXG017" in {f["code"] for f in targets["cube_p"]["findings"]}


def _recurse(depth: int) -> None:  # a user function re-entering itself until the stack runs out
    with jaxdiag_code("a spy around the rule"):
        pass
    _recurse(depth + 1)


def test_a_recursion_limit_hit_in_jaxdiags_code_is_the_users_only_when_a_user_function_repeats():
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(300)  # a short stack: the test runs in milliseconds
    try:
        with pytest.raises(RecursionError) as caught:
            _recurse(0)
        assert not isinstance(caught.value, JaxdiagBug)
    finally:
        sys.setrecursionlimit(limit)
    with pytest.raises(JaxdiagBug):  # no user function on the stack repeats: jaxdiag's own
        with jaxdiag_code("jaxdiag's bookkeeping"):
            raise RecursionError("maximum recursion depth exceeded")
