"""(to be written)"""

from __future__ import annotations

from ._base import Check

CHECKS: list[Check] = []
