"""Outputs that are not a function of the inputs (a kernel's unwritten scratch, a call counter, a wall-clock time):
the eager run disagrees with itself there, so no transformation can be compared with it; the comparison is not
judged, and a note says why (fixture tests/data/acc/unwritten_output.py)."""

from __future__ import annotations

from pathlib import Path

import jaxdiag

ACC = Path(__file__).resolve().parent / "data" / "acc"


def test_a_kernel_leaving_part_of_its_output_unwritten_is_not_judged_against_jit_or_vmap_there():
    report = jaxdiag.check_batching(f"{ACC / 'unwritten_output.py'}:fill_p", "f32[4]")
    findings = report.targets[0].findings
    assert not [f for f in findings if f.severity != "info"], [f.message for f in findings]
    skipped = [f.message for f in findings if "returns other values" in f.message]
    assert len(skipped) == 2, [f.message for f in findings]  # the vmap-vs-loop comparison and jit-vs-impl
