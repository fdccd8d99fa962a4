"""Shared machinery of the grad checks (custom_vjp, custom_jvp, primitive JVP/transpose, functions).

`GradState` is built once per subject and kept in `ctx.cache`: the positional arguments split into differentiable
and fixed ones, the primal output with readable output names, seeded cotangents and directions, float64 finite
differences along those directions, and JAX's autodiff of the undecorated primal. Checks read from it so that a
subject's function is evaluated as few times as possible (the benchmark compares with `jax.test_util`).

Conventions (JAX's own for complex values): a cotangent `w` is passed to every rule (bwd, transpose, pullback)
as JAX passes it, with no conjugation, and the two sides of a linear map are paired bilinearly:
`<a, b>` is `Re(sum(a * b))`, so `<w, J v> == <VJP(w), v>` holds for real and complex inputs alike (JAX's VJP is
the transpose of the R-linear JVP under this pairing, not its Hermitian adjoint).

The package: `_values` (constants, small value helpers), `_source` (errors, names read from the user's source),
`_state` (`Arg`, `GradMemo`, `GradState`), `_fd` (finite differences), `_compare` (dot-product tests) and
`_expectation` (a sampled function's custom derivative over many keys), `_kinks` (an example on a kink of the
primal, where a rule is judged beside it), `_where` (the select that hides a NaN from
forward mode but not from reverse mode); every public name is re-exported here.
"""

from __future__ import annotations

from ._compare import (
    DotCheck, compare_grad, conjugated, constant_factor, deliberate_disagreement, fd_reference_nonzero,
    passed_through, sampled_estimate,
    material_dependence, nan_at_a_zero_output, uniform_ratio, vjp_against_fd,
)
from ._expectation import Expectation, all_unbiased, cotangent_in_expectation, first_biased, tangent_in_expectation
from ._fd import FDResult, FiniteDifferences
from ._kinks import central_at, kink_at_point, moved_values, right_beside_kink, rough_entries
from ._source import (
    argument_names, error_text, function_ast, locate, may_be_singular, output_names, return_values, rule_name,
    short_message, source_of, user_frame,
)
from ._state import (
    EVERY_BLOCKER, JVP_BLOCKERS, NOT_COMPUTED, RESIDUALS_NOT_ARRAYS, REVERSE_ONLY, VJP_BLOCKERS, Arg, GradMemo,
    GradState,
    NotComputed, TangentKey, require, state,
)
from ._values import (
    EPS_F64, N_DIRECTIONS, PRIMAL_TOL, absdot, NonFinite, all_finite, nonfinite_split, value_at, aval_text, close,
    close_scalar, device_zeros, dot, fmt_values, grad_tol, host_linear, is_float0, is_inexact, is_zero,
    leaf_difference, primal_tol, quiet_call, short_dtype, to_f64,
)
from ._where import WHERE_TRAP_FIX, primal_saturates, trap_location, trap_text, where_trap

__all__ = [
    "REVERSE_ONLY",
    "central_at",
    "kink_at_point",
    "moved_values",
    "right_beside_kink",
    "rough_entries",
    "EPS_F64",
    "EVERY_BLOCKER",
    "JVP_BLOCKERS",
    "N_DIRECTIONS",
    "PRIMAL_TOL",
    "Arg",
    "DotCheck",
    "Expectation",
    "cotangent_in_expectation",
    "tangent_in_expectation",
    "all_unbiased",
    "first_biased",
    "FDResult",
    "FiniteDifferences",
    "GradMemo",
    "GradState",
    "NOT_COMPUTED",
    "NotComputed",
    "absdot",
    "NonFinite",
    "all_finite",
    "nonfinite_split",
    "value_at",
    "argument_names",
    "aval_text",
    "close",
    "close_scalar",
    "compare_grad",
    "conjugated",
    "constant_factor",
    "uniform_ratio",
    "deliberate_disagreement",
    "sampled_estimate",
    "passed_through",
    "device_zeros",
    "dot",
    "error_text",
    "fd_reference_nonzero",
    "material_dependence",
    "fmt_values",
    "function_ast",
    "grad_tol",
    "host_linear",
    "is_float0",
    "is_inexact",
    "is_zero",
    "leaf_difference",
    "locate",
    "may_be_singular",
    "output_names",
    "primal_tol",
    "quiet_call",
    "RESIDUALS_NOT_ARRAYS",
    "require",
    "return_values",
    "rule_name",
    "short_dtype",
    "short_message",
    "source_of",
    "TangentKey",
    "state",
    "to_f64",
    "VJP_BLOCKERS",
    "user_frame",
    "vjp_against_fd",
    "nan_at_a_zero_output",
    "WHERE_TRAP_FIX",
    "trap_location",
    "trap_text",
    "where_trap",
    "primal_saturates",
]
