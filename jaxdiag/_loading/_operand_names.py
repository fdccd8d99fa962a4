"""What an operand's name says about its values, for operands no other source describes.

An operand named as a numerical tolerance (`tol`, `atol`, `rtol`, a root finder's `xtol`) is a setting of the
algorithm, not data: it is drawn small and positive (`_run._climb`: a random one made a root search stop anywhere,
and its derivative then disagreed with finite differences of a value it never converged to) and never
differentiated (`_checks._gradref.GradState`), as every caller holds it constant.
"""

from __future__ import annotations

import re

TOLERANCE_NAME = re.compile(r"(^|_)([xfg]?tol|atol|rtol|tolerance)$")
TOLERANCE_DOMAIN = "0.000001..0.000002"  # an `@LO..HI` domain of the inputs' SPEC syntax


def is_tolerance(name: str) -> bool:
    return bool(TOLERANCE_NAME.search(name))
