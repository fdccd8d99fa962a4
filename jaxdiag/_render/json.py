"""`--format json`: the versioned schema documented in docs/json.md (`schema: 1`)."""

from __future__ import annotations

import json as _json

from .._core._report import Report


def render(report: Report) -> str:
    return _json.dumps(report.to_dict(), indent=2, sort_keys=False) + "\n"
