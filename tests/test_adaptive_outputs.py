"""A function whose output size depends on its values (probe module tests/data/adaptive/support.py): finite
differences have no quotient there. They stacked evaluations of different shapes, an internal error (exit 3) on a
published adaptive-fit library; now the difference is reported as not possible and the reference comes from
elsewhere (autodiff of the primal)."""

from __future__ import annotations

from pathlib import Path

from clirun import check_json

DATA = Path(__file__).parent / "data"


def test_an_output_whose_size_follows_the_values_is_no_internal_error() -> None:
    code, report = check_json("adaptive.support", DATA)
    (target,) = report["targets"]
    assert report["summary"]["internal_errors"] == 0 and code == 0, target["checks"]
    assert {c["name"]: c["status"] for c in target["checks"]}["jvp-reference"] == "passed"
