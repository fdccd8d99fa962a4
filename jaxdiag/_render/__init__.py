"""Renderers: each turns a finished `Report` into text. They never run checks or import JAX."""

from __future__ import annotations

from collections.abc import Callable

from .._core._report import Report
from . import github, issue, json, junit, sarif, text

FORMATS: dict[str, Callable[[Report], str]] = {
    "text": text.render_plain,
    "json": json.render,
    "sarif": sarif.render,
    "github": github.render,
    "junit": junit.render,
    "issue": issue.render,
}


def render(report: Report, fmt: str) -> str:
    return FORMATS[fmt](report)
