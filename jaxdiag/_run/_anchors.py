"""The lines a target's report is anchored at: where an inline suppression or intent marker covers every finding
about it, and where its documentation is read (`_core._filtering`)."""

from __future__ import annotations

from .._core import _locate
from .._core._report import Location, TargetReport
from .._loading._targets import Target


def with_own_anchors(anchors: list[Location], report: TargetReport) -> list[Location]:
    """The target's anchors, then those the report of a nested rule holds of its own (its definition)."""
    return list(anchors) + [a for a in report.anchors if a not in anchors]


def suppression_anchors(target: Target) -> list[Location]:
    """The line that defines the target, where an inline suppression covers every finding about it."""
    if target.kind == "primitive":
        from ._nested import primitive_location

        loc = primitive_location(target.obj, target.module)
    elif target.kind in ("custom_vjp", "custom_jvp", "custom_vmap"):
        loc = _locate.locate(getattr(target.obj, "fun", None) or target.obj)
    else:
        return []
    return [loc] if loc else []
