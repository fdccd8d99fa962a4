"""The only package that touches JAX internals.

Every private import, rule-registry access and version difference lives here, so a JAX release that moves
something breaks this one package. Feature detection is preferred over version comparison.

`__init__` re-exports every name of the submodules, so callers write `_compat.X`: `_base` (imports, versions, JAX
types, config flags), `_registries` (rule registries), `_state` (snapshot/restore of everything patched,
x64 scope, sys.path), `_custom` (custom_vjp/jvp/vmap objects), `_jaxprs` (equations, foreign calls), `_selects`
(selects hiding a NaN), `_autodiff` (AD values, transpose spy), `_vmap` (batching-rule interception),
`_own_programs` (how jaxdiag's own programs are compiled), `_operands` (what an equation of a traced program
receives when it runs), `_platform` (where a primitive can run), `_removed`
(removed public attributes) and `_views` (jaxprs with source lines, cross-platform lowering).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from jax.interpreters import ad, batching, mlir

if TYPE_CHECKING:
    from jax.extend.core import Primitive
else:  # the type checker sees the import above. The class itself, from where JAX defines it: importing
    # `jax.extend.core` imports all of `jax.extend` (Pallas among it), 20 ms of every cold check.
    try:
        from jax._src.core import Primitive
    except ImportError:  # pragma: no cover - a JAX that moved it
        from jax.extend.core import Primitive

if TYPE_CHECKING:
    from ._autodiff import (
        ad_zero, custom_vjp_primal, float0_zeros, is_symbolic_zero, is_tracer, is_unexpected_tracer_error,
        jvp_perturbed, jvp_primal_tangent, resolve_positional, rule_user_functions, spy_transpose_rule,
        symbolic_zero, tangent_aval,
    )
    from ._base import (
        JAX_VERSION, JAXLIB_VERSION, ClosedJaxpr, CustomVJPPrimal, Jaxpr, ShapedArray, SymbolicZero, UndefinedPrimal,
        Zero, _ad, config_values, custom_jvp_type, custom_vjp_type, custom_vmap_type, float0, instantiate_zeros,
        is_jit_wrapped, is_primitive, is_undefined_primal, jit_static_args, device_array, tangent_dtype,
        x64_enabled,
    )
    from ._own_programs import default_compiles, fast_runs, own_jit
    from ._operands import operands_at, reaches_operands
    from ._custom import (
        bwd_cotangent_mismatch, custom_jvp_parts, custom_vjp_parts, custom_vmap_parts, install_call_hooks,
        is_custom_jvp, is_custom_vjp, is_custom_vmap, record_custom_calls, spy_custom_vmap_rule,
        transpose_cotangent_error, transpose_cotangent_mismatch,
    )
    from ._jaxprs import (
        FOREIGN_CALL_PRIMITIVES, SEQUENTIAL_VMAP_METHODS, axis_size_of, batched_by_custom_rule,
        calls_custom_vjp, custom_call_perturbation, eager_semantics, eqn_source_function,
        eqn_source_line, ffi, foreign_call_target, is_foreign_call, index_operand_bounds, input_dependent_operands,
        iter_eqns, unread_outputs, jaxpr_as_fun, loops_in, recompiles_eagerly, same_program_as_jit, sub_jaxprs,
        vmap_method_none_raises,
        vmap_method_of, with_vmap_methods, wraps,
    )
    from ._selects import MaskedNonFinite, masked_nonfinite, saturated_nonfinite
    from ._registries import (
        _batching_table, abstract_eval_rule, batching_rule, batching_rule_is_fancy, batching_rule_leading_args,
        drop_registrations_since, has_abstract_eval, has_any_lowering, has_batching_rule, has_impl, has_lowering,
        impl,
        is_builtin_primitive, jvp_rule, lowering_rule, registered_rules, registration_keys, rule_bound_primitives,
        rule_reachable_primitives,
        rule_registries, transpose_only, transpose_rule, transposed_tangents, user_impl,
    )
    from ._state import (
        apply_environment_flags, compilation_cache, global_state, restore_global_state, restore_jax_state,
        run_scope, snapshot_jax_state, state_changes, x64_scope,
    )
    from ._platform import (
        accelerator_only_lowering, callback_error_line, is_callback_failure, is_platform_error, lowering_platforms,
        needs_concrete_values, raised_by_host_code, raised_by_kernel,
    )
    from ._removed import (
        DROP_IN, REMOVED_BY_JAX, REMOVED_IN_NEWER_JAX, removed_api_advice, removed_api_uses, removed_apis_still_here,
    )
    from ._solves import SolveCall, is_custom_root, is_linear_solve_eqn, jaxpr_source, record_solves, solve_calls_in
    from ._views import lower_for_platform, pretty_jaxpr
    from ._vmap import (
        abstract_eval_output, generic_batcher_name, intercept_batching_rules, is_abstract_value,
        is_foreign_abstract_value, output_dependence,
        record_primitive_binds, shaped_array, user_batching_primitives,
    )

# Each name -> the submodule defining it: a submodule is imported when one of its names is first used, so a run
# loads only the parts of this package its checks touch (the TYPE_CHECKING imports above say the same to mypy;
# tests/test_speed_imports.py holds the two to each other).
_SUBMODULES: dict[str, tuple[str, ...]] = {
    "_autodiff": ("ad_zero", "custom_vjp_primal", "float0_zeros", "is_symbolic_zero", "is_tracer",
        "is_unexpected_tracer_error", "jvp_perturbed", "jvp_primal_tangent", "resolve_positional",
        "rule_user_functions",
        "spy_transpose_rule", "symbolic_zero", "tangent_aval"),
    "_base": ("ClosedJaxpr", "CustomVJPPrimal", "JAXLIB_VERSION", "JAX_VERSION", "Jaxpr", "ShapedArray",
        "SymbolicZero", "UndefinedPrimal", "Zero", "_ad", "config_values", "custom_jvp_type", "custom_vjp_type",
        "custom_vmap_type", "device_array", "float0", "instantiate_zeros", "is_jit_wrapped", "is_primitive",
        "is_undefined_primal", "jit_static_args", "tangent_dtype", "x64_enabled"),
    "_own_programs": ("default_compiles", "fast_runs", "own_jit"),
    "_operands": ("operands_at", "reaches_operands"),
    "_custom": ("bwd_cotangent_mismatch", "custom_jvp_parts", "custom_vjp_parts", "custom_vmap_parts",
        "install_call_hooks", "is_custom_jvp", "is_custom_vjp", "is_custom_vmap", "record_custom_calls",
        "spy_custom_vmap_rule", "transpose_cotangent_error",
        "transpose_cotangent_mismatch"),
    "_jaxprs": ("FOREIGN_CALL_PRIMITIVES", "SEQUENTIAL_VMAP_METHODS", "axis_size_of", "batched_by_custom_rule",
        "calls_custom_vjp", "custom_call_perturbation",
        "eager_semantics",
        "eqn_source_function",
        "eqn_source_line", "ffi", "foreign_call_target", "index_operand_bounds", "input_dependent_operands",
        "unread_outputs", "is_foreign_call", "iter_eqns", "jaxpr_as_fun", "loops_in", "recompiles_eagerly",
        "same_program_as_jit",
        "sub_jaxprs", "vmap_method_none_raises", "vmap_method_of", "with_vmap_methods", "wraps"),
    "_registries": ("_batching_table", "abstract_eval_rule", "batching_rule", "batching_rule_is_fancy",
        "batching_rule_leading_args", "drop_registrations_since", "has_abstract_eval", "has_any_lowering",
        "has_batching_rule",
        "has_impl", "has_lowering", "impl", "is_builtin_primitive", "jvp_rule", "lowering_rule", "registered_rules",
        "registration_keys", "rule_bound_primitives", "rule_reachable_primitives", "rule_registries",
        "transpose_only", "transpose_rule", "transposed_tangents", "user_impl"),
    "_state": ("apply_environment_flags", "compilation_cache", "global_state", "restore_global_state",
        "restore_jax_state", "run_scope", "snapshot_jax_state", "state_changes", "x64_scope"),
    "_platform": ("accelerator_only_lowering", "callback_error_line", "is_callback_failure", "is_platform_error",
        "lowering_platforms", "needs_concrete_values", "raised_by_host_code", "raised_by_kernel"),
    "_removed": ("DROP_IN", "REMOVED_BY_JAX", "REMOVED_IN_NEWER_JAX", "removed_api_advice", "removed_api_uses",
        "removed_apis_still_here"),
    "_solves": ("SolveCall", "is_custom_root", "is_linear_solve_eqn", "jaxpr_source", "record_solves",
        "solve_calls_in"),
    "_selects": ("MaskedNonFinite", "masked_nonfinite", "saturated_nonfinite"),
    "_views": ("lower_for_platform", "pretty_jaxpr"),
    "_vmap": ("abstract_eval_output", "generic_batcher_name", "intercept_batching_rules", "is_abstract_value",
        "is_foreign_abstract_value",
        "output_dependence", "record_primitive_binds", "shaped_array", "user_batching_primitives"),
}
_OWNER = {name: module for module, names in _SUBMODULES.items() for name in names}

__all__ = [
    "SolveCall",
    "bwd_cotangent_mismatch",
    "transpose_cotangent_error",
    "transpose_cotangent_mismatch",
    "is_custom_root",
    "is_linear_solve_eqn",
    "jaxpr_source",
    "jvp_primal_tangent",
    "record_solves",
    "solve_calls_in",
    "accelerator_only_lowering",
    "callback_error_line",
    "is_callback_failure",
    "is_platform_error",
    "lowering_platforms",
    "needs_concrete_values",
    "raised_by_host_code",
    "raised_by_kernel",
    "FOREIGN_CALL_PRIMITIVES",
    "JAXLIB_VERSION",
    "JAX_VERSION",
    "REMOVED_BY_JAX",
    "DROP_IN",
    "REMOVED_IN_NEWER_JAX",
    "SEQUENTIAL_VMAP_METHODS",
    "ClosedJaxpr",
    "CustomVJPPrimal",
    "Jaxpr",
    "Primitive",
    "ShapedArray",
    "SymbolicZero",
    "UndefinedPrimal",
    "Zero",
    "_ad",
    "_batching_table",
    "abstract_eval_output",
    "abstract_eval_rule",
    "ad",
    "ad_zero",
    "axis_size_of",
    "batching",
    "batching_rule",
    "batching_rule_is_fancy",
    "batching_rule_leading_args",
    "config_values",
    "custom_jvp_parts",
    "custom_jvp_type",
    "custom_vjp_parts",
    "custom_vjp_primal",
    "compilation_cache",
    "custom_vjp_type",
    "device_array",
    "custom_vmap_parts",
    "install_call_hooks",
    "custom_vmap_type",
    "drop_registrations_since",
    "eqn_source_function",
    "eqn_source_line",
    "ffi",
    "float0",
    "float0_zeros",
    "foreign_call_target",
    "generic_batcher_name",
    "has_abstract_eval",
    "has_any_lowering",
    "has_batching_rule",
    "has_impl",
    "has_lowering",
    "impl",
    "instantiate_zeros",
    "intercept_batching_rules",
    "is_abstract_value",
    "is_foreign_abstract_value",
    "is_builtin_primitive",
    "is_custom_jvp",
    "is_custom_vjp",
    "is_custom_vmap",
    "is_foreign_call",
    "batched_by_custom_rule",
    "is_jit_wrapped",
    "jit_static_args",
    "default_compiles",
    "fast_runs",
    "own_jit",
    "operands_at",
    "reaches_operands",
    "is_primitive",
    "is_symbolic_zero",
    "is_tracer",
    "is_undefined_primal",
    "is_unexpected_tracer_error",
    "index_operand_bounds",
    "input_dependent_operands",
    "unread_outputs",
    "iter_eqns",
    "MaskedNonFinite",
    "masked_nonfinite",
    "saturated_nonfinite",
    "jaxpr_as_fun",
    "jvp_perturbed",
    "jvp_rule",
    "lower_for_platform",
    "lowering_rule",
    "mlir",
    "output_dependence",
    "pretty_jaxpr",
    "record_custom_calls",
    "record_primitive_binds",
    "registered_rules",
    "registration_keys",
    "rule_bound_primitives",
    "rule_reachable_primitives",
    "rule_registries",
    "removed_api_advice",
    "removed_api_uses",
    "removed_apis_still_here",
    "resolve_positional",
    "apply_environment_flags",
    "calls_custom_vjp",
    "custom_call_perturbation",
    "eager_semantics",
    "loops_in",
    "recompiles_eagerly",
    "user_impl",
    "global_state",
    "restore_global_state",
    "restore_jax_state",
    "run_scope",
    "rule_user_functions",
    "shaped_array",
    "snapshot_jax_state",
    "state_changes",
    "spy_custom_vmap_rule",
    "spy_transpose_rule",
    "same_program_as_jit",
    "sub_jaxprs",
    "symbolic_zero",
    "tangent_aval",
    "tangent_dtype",
    "transpose_only",
    "transpose_rule",
    "transposed_tangents",
    "user_batching_primitives",
    "vmap_method_none_raises",
    "vmap_method_of",
    "with_vmap_methods",
    "wraps",
    "x64_enabled",
    "x64_scope",
]


def __getattr__(name: str) -> Any:
    module = _OWNER.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later uses skip this function
    return value
