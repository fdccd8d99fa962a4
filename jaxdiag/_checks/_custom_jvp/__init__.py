"""JVP-rule checks shared by custom_jvp rules and primitive JVP rules.

The rule is called directly, as JAX calls it (`rule(*nondiff, primals, tangents)` for custom_jvp,
`rule(primals, tangents, **params)` for a primitive), with seeded tangents:
- the output is a pair, tangents match the primal's structure, shape and tangent dtype (JXG007), the primal
  equals the function's output (JXG021), the rule does not raise (JXG017; JXG022 on float0, JXG015 when written
  for another argument order); a primitive without a rule is JXR006;
- the tangent map is linear: additive, homogeneous, zero to zero (JXG020, with why grad fails or is wrong);
- tangents agree with float64 finite differences and autodiff of the undecorated primal (custom_jvp: JXG014,
  a warning; primitive: JXG001, an error);
- symbolic zero tangents are handled when JAX passes them (JXG006);
- reverse mode works and agrees with forward mode (custom_jvp; primitives in `_primitive_ad.py`).

- every argument on the edge of its domain, one argument differentiated at a time: no NaN/inf from a symbolic
  zero made dense (`_boundary.py`, JXG027; also custom_vjp bwds and primitive transpose rules).

Modules: `_call.py` (calling the rule), `_output.py`, `_linearity.py`, `_reference.py`, `_boundary.py` (the checks).
"""

from __future__ import annotations

from ._boundary import derivative_boundary
from ._call import KINDS, T, names, rule_location
from ._linearity import eager_vjp, jvp_linearity, pullback_at_first_cotangent
from ._output import jvp_rule_output
from ._reference import jvp_reference, jvp_reverse, jvp_symbolic_zeros

__all__ = ["CHECKS", "KINDS", "T", "eager_vjp", "names", "pullback_at_first_cotangent", "rule_location"]

CHECKS = [jvp_rule_output, jvp_linearity, jvp_reference, jvp_symbolic_zeros, jvp_reverse, derivative_boundary]
