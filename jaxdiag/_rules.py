"""The rule catalog: every diagnostic jaxdiag can emit, defined once.

Like mypy's `errorcodes.py`, defining a `Rule` registers it. Like ruff, each rule carries its own documentation
(`what`, `why`) and names a bad and a good sample under `samples/`, which `jaxdiag rules CODE` prints as the example
and the fix. Checks build findings with `rules.X.finding(...)`; they never write a bare code string.

Severities: `error` (fails or is wrong under a JAX transformation, or the user's rules contradict each other),
`warning` (likely unintended but can be deliberate), `info` (what jaxdiag inferred or skipped).
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._report import Finding, Location

SEVERITIES = ("error", "warning", "info")
CATEGORIES = {
    "JXB": "batching",
    "JXR": "registration",
    "JXG": "differentiation",
    "JXV": "custom_vmap",
}


def _samples_dir() -> Path:
    """The samples shipped with this jaxdiag (package data of `jaxdiag.samples`, never a `samples/` folder that
    happens to be on sys.path); a source checkout used without installing falls back to its own folder."""
    try:
        return Path(str(importlib.resources.files("jaxdiag.samples")))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent / "samples"


SAMPLES_DIR = _samples_dir()

RULES: dict[str, "Rule"] = {}


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: str
    summary: str
    what: str
    why: str
    bad_sample: str | None = None
    good_sample: str | None = None

    def __post_init__(self) -> None:
        assert self.severity in SEVERITIES, self.severity
        assert self.code[:3] in CATEGORIES, self.code
        assert self.code not in RULES, f"duplicate rule code {self.code}"
        RULES[self.code] = self

    @property
    def category(self) -> str:
        return CATEGORIES[self.code[:3]]

    @property
    def explanation(self) -> str:
        return f"## What it does\n{self.what}\n\n## Why is this bad?\n{self.why}\n"

    def sample_path(self, which: str) -> Path | None:
        name = self.bad_sample if which == "bad" else self.good_sample
        return SAMPLES_DIR / name if name else None

    def sample_text(self, which: str) -> str | None:
        path = self.sample_path(which)
        return path.read_text(encoding="utf-8") if path and path.is_file() else None

    def finding(
        self,
        message: str,
        fix: str = "",
        location: "Location | None" = None,
        severity: str | None = None,
    ) -> "Finding":
        from ._report import Finding

        return Finding(
            code=self.code,
            name=self.name,
            severity=severity or self.severity,
            message=message,
            fix=fix,
            location=location,
        )


def rule(code: str) -> Rule:
    """Look a rule up by code; raises KeyError for an unknown code."""
    return RULES[code.upper()]


def matches(code: str, selectors: "list[str] | tuple[str, ...]") -> bool:
    """True when `code` is named by any selector: a full code or a prefix (`JXG`, `JXB0`)."""
    return any(code.startswith(s.strip().upper()) for s in selectors if s.strip())


# =============================================================================================================
# JXR: registration (impl, abstract eval, lowering, missing rules) and notes about the run itself
# =============================================================================================================

MISSING_IMPL = Rule(
    "JXR001", "missing-impl", "error",
    "The primitive has no impl rule, so it cannot run eagerly.",
    "Checks that `prim.def_impl(...)` was called.",
    "Eager calls fail with `NotImplementedError: Evaluation rule for '<name>' not implemented`.",
    "jxr001_bad.py", "jxr001_good.py",
)
MISSING_ABSTRACT_EVAL = Rule(
    "JXR002", "missing-abstract-eval", "error",
    "The primitive has no abstract evaluation rule, so jit, vmap and grad cannot trace it.",
    "Checks that `prim.def_abstract_eval(...)` was called.",
    "Eager-only tests pass, but every trace fails with `NotImplementedError: Abstract evaluation for '<name>' not "
    "implemented`.",
    "jxr002_bad.py", "jxr002_good.py",
)
ABSTRACT_EVAL_MISMATCH = Rule(
    "JXR003", "abstract-eval-mismatch", "error",
    "The abstract evaluation rule disagrees with what the impl returns (shape, dtype or number of outputs).",
    "Runs the impl on concrete inputs and compares each output's shape and dtype with the abstract eval's "
    "`ShapedArray`s; also checks the abstract eval returns `ShapedArray`s (a sequence of them iff "
    "`multiple_results`).",
    "Eager mode silently uses the impl's result; under `jit` lowering fails with an MLIR verifier error far from "
    "the cause, and every transformation plans with the wrong shapes.",
    "jxr003_bad.py", "jxr003_good.py",
)
MISSING_LOWERING = Rule(
    "JXR004", "missing-lowering", "warning",
    "No MLIR lowering is registered for the CPU platform, so the primitive fails under `jax.jit`.",
    "Checks `mlir.register_lowering(prim, ...)` for the platform jaxdiag runs on (or for all platforms).",
    "`jax.jit` fails with `NotImplementedError: MLIR translation rule for primitive '<name>' not found for "
    "platform cpu`. Use `mlir.lower_fun(impl, multiple_results=...)` when the impl is written in `jax.numpy`.",
    "jxr004_bad.py", "jxr004_good.py",
)
MISSING_BATCHING_RULE = Rule(
    "JXR005", "missing-batching-rule", "error",
    "The primitive has no batching rule, so `jax.vmap` (and `jacfwd`) fail.",
    "Checks that a rule is registered in `batching.primitive_batchers`.",
    "`vmap` fails with `NotImplementedError: Batching rule for '<name>' not implemented`. Elementwise primitives "
    "can use `batching.defvectorized(prim)`; others need a rule that moves the batch axis and calls `bind`.",
    "jxr005_bad.py", "jxr005_good.py",
)
MISSING_JVP_RULE = Rule(
    "JXR006", "missing-jvp-rule", "error",
    "The primitive has no JVP rule, so `jax.grad`, `jax.jvp` and `jacfwd` fail.",
    "Checks that a rule is registered in `ad.primitive_jvps` (for example with `ad.defjvp`).",
    "Differentiation fails with `NotImplementedError: Differentiation rule for '<name>' not implemented`.",
    "jxr006_bad.py", "jxr006_good.py",
)
MISSING_TRANSPOSE_RULE = Rule(
    "JXR007", "missing-transpose-rule", "error",
    "The primitive's JVP is linear (it binds the primitive on the tangent) but it has no transpose rule.",
    "Checks primitives whose JVP rule re-binds the primitive on tangents for an `ad.primitive_transposes` entry.",
    "Forward mode works, but `jax.grad` fails with `NotImplementedError: Transpose rule (for reverse-mode "
    "differentiation) for '<name>' not implemented`.",
    "jxr007_bad.py", "jxr007_good.py",
)
REMOVED_JAX_API = Rule(
    "JXR008", "removed-jax-api", "error",
    "A rule uses a JAX internal that no longer exists on this JAX release (e.g. `batching.not_mapped`).",
    "Recognises `AttributeError`s raised from a rule that name a `jax` module attribute.",
    "The rule crashes as soon as it runs; `batching.not_mapped` was removed in JAX 0.10 (use `None`).",
    "jxr008_bad.py", "jxr008_good.py",
)
WRONG_RULE_SIGNATURE = Rule(
    "JXR009", "wrong-rule-signature", "error",
    "A rule was called with the arguments JAX passes and rejected them (missing positional, unexpected keyword).",
    "Recognises `TypeError`s raised by the call into the rule itself: a fancy `(axis_data, args, dims)` rule "
    "registered as a legacy one, or a rule without `**params`.",
    "JAX passes the primitive's bind parameters as keywords; a rule that does not accept them fails with an "
    "error naming only the rule's own function.",
    "jxr009_bad.py", "jxr009_good.py",
)
LOWERING_MISMATCH = Rule(
    "JXR010", "lowering-mismatch", "error",
    "`jax.jit` of the primitive fails or gives a different result than the eager impl.",
    "Runs the primitive once under `jax.jit` (abstract eval + the CPU lowering) and compares with the impl.",
    "Eager tests pass while every jitted caller fails with an MLIR verifier error, or silently computes something "
    "else: the lowering was written for another function, another dtype, or another `multiple_results`.",
    "jxr010_bad.py", "jxr010_good.py",
)
TARGET_RAISED = Rule(
    "JXR011", "target-raised", "error",
    "The target raised on the example inputs, so its batching could not be checked.",
    "Calls the primitive's impl (or the function) once on the example inputs before any transformation.",
    "Either the example inputs are not what the target expects (pass `--arg`), or the impl itself is broken; "
    "nothing under vmap can be checked until one example runs.",
)
INPUTS_INFERRED = Rule(
    "JXR900", "inputs-inferred", "info",
    "No `--arg` was given; jaxdiag inferred example inputs.",
    "Reports the argument specs jaxdiag inferred from the signature and a ladder of small shapes.",
    "Inferred shapes may not exercise every code path; pass `--arg` (or configure `args` in pyproject.toml).",
)
DOMAIN_FALLBACK = Rule(
    "JXR901", "domain-fallback", "info",
    "The target was non-finite on normal inputs; jaxdiag drew inputs from another domain.",
    "Reports the domain (positive, unit interval, small magnitude) used after the default draw gave NaN or inf.",
    "Fix the domain yourself with `--arg f32[3]@positive` (also `@unit`, `@small`, `@normal`, `@LO..HI`).",
)
CHECK_SKIPPED = Rule(
    "JXR902", "check-skipped", "info",
    "A check was skipped; the finding says why.",
    "Reports checks that could not run (an earlier defect blocks them, a feature missing on this JAX release).",
    "A skipped check is not a passed one: fix the blocking defect and run again.",
)
INPUTS_NOT_INFERRED = Rule(
    "JXR903", "inputs-not-inferred", "info",
    "jaxdiag could not infer example inputs for this target; it was not checked.",
    "Reports targets found by `jaxdiag check` that ran on none of the inferred shapes.",
    "Add `[tool.jaxdiag.targets.\"module:attr\"] args = [...]` to pyproject.toml so the target is checked.",
)
UNUSED_SUPPRESSION = Rule(
    "JXR904", "unused-suppression", "info",
    "A `# jaxdiag: ignore[CODE]` comment or configured ignore matched no finding.",
    "Reports suppressions that suppressed nothing, as ruff's RUF100 does.",
    "A stale suppression hides the next real defect on that line; remove it.",
)
IMPORT_FAILED = Rule(
    "JXR905", "import-failed", "error",
    "A module named on the command line failed to import (reported with `--keep-going`).",
    "Imports each module and reports the user's own exception, file and line.",
    "Nothing in that module was checked.",
)

# =============================================================================================================
# JXB: primitive batching rules (and ffi_call / pure_callback vmap_method)
# =============================================================================================================

BATCH_DIM_OUT_OF_RANGE = Rule(
    "JXB001", "batch-dim-out-of-range", "error",
    "The batching rule returned an output batch dim outside `0 <= dim < out.ndim`.",
    "Validates every output dim the rule returns against the rank of that output before JAX sees it.",
    "JAX fails deep inside vmap with `IndexError: tuple index out of range` (or `AssertionError: (-1, 2)` for a "
    "negative dim), naming neither the primitive nor the rule.",
    "jxb001_bad.py", "jxb001_good.py",
)
BATCH_DIM_WRONG_TYPE = Rule(
    "JXB002", "batch-dim-wrong-type", "error",
    "The batching rule returned an output batch dim that is not a Python `int` or `None`.",
    "Checks `type(dim) is int or dim is None` for every output dim (numpy integers and arrays are rejected).",
    "JAX raises `batch dim should be int or None` without naming the primitive.",
    "jxb002_bad.py", "jxb002_good.py",
)
MISSING_NONE_FOR_UNBATCHED_OUTPUT = Rule(
    "JXB003", "unbatched-output-reported-batched", "warning",
    "An output that never depends on the batched inputs is reported batched; return `None` for its dim.",
    "Compares the output across examples and checks that it does not depend on any batched input; reported "
    "batched with the right size, it works but materialises a copy per example and defeats `out_axes=None`.",
    "`jax.vmap(f, out_axes=None)` fails for that output (`vmap has mapped output but out_axes is None`) and the "
    "constant is broadcast to the batch size for nothing.",
    "jxb003_bad.py", "jxb003_good.py",
)
BATCH_AXIS_SIZE_MISMATCH = Rule(
    "JXB004", "batch-axis-size-mismatch", "error",
    "An output's size at the returned batch dim is not the vmap axis size.",
    "Checks `out.shape[dim] == axis_size` for every batched output (JAX itself never checks this, even under "
    "`jax.enable_checks`).",
    "vmap silently returns an array of the wrong shape (e.g. `(3,)` instead of `(4, 3)` when a constant output is "
    "given the input's batch dim); the failure surfaces later in unrelated code.",
    "jxb004_bad.py", "jxb004_good.py",
)
BATCH_RESULT_MISMATCH = Rule(
    "JXB005", "batched-result-mismatch", "error",
    "`vmap` of the primitive differs from applying it to each example and stacking the results.",
    "Compares `vmap(f, in_axes)` with a per-example loop over distinct random examples, for in_axes 0, -1, a middle "
    "axis, each argument unbatched, pairwise combinations, nested vmap, batch size 1, and under `jit`.",
    "The rule computes something else than the primitive under a batch, typically because it assumes the batch "
    "axis is at 0 or that every argument is batched: results are silently wrong.",
    "jxb005_bad.py", "jxb005_good.py",
)
BATCHING_RULE_RAISED = Rule(
    "JXB006", "batching-rule-raised", "error",
    "The batching rule raised an exception for some combination of batch dims.",
    "Calls vmap with every in_axes variant and reports the exception and the in_axes that triggered it.",
    "Rules often assume every operand is batched (`jnp.moveaxis(y, None, 0)`), or that the batch dim is 0.",
    "jxb006_bad.py", "jxb006_good.py",
)
MULTIPLE_RESULTS_STRUCTURE = Rule(
    "JXB007", "multiple-results-structure", "error",
    "A `multiple_results` primitive's batching rule must return (sequence of outputs, sequence of dims) with one "
    "entry per output.",
    "Checks that both are lists or tuples of the length the abstract eval gives.",
    "An int instead of a list of dims gives `TypeError: 'int' object is not iterable`; a short list gives a "
    "`safe_zip` error; a bare array is iterated row by row and can be silently wrong.",
    "jxb007_bad.py", "jxb007_good.py",
)
RULE_RETURN_NOT_PAIR = Rule(
    "JXB008", "rule-return-not-pair", "error",
    "A single-result primitive's batching rule must return exactly `(out, dim)`.",
    "Checks that the rule returns a pair whose first element is an array (not a list) and second an int or None.",
    "Forgetting the dim makes JAX unpack the output array itself; returning `([out], [d])` gives `not a valid JAX "
    "type`.",
    "jxb008_bad.py", "jxb008_good.py",
)
BATCHED_SHAPE_MISMATCH = Rule(
    "JXB009", "batched-shape-mismatch", "error",
    "An output with its batch dim removed does not have the shape or dtype the abstract eval gives per example.",
    "Removes the returned batch dim from each output and compares with the per-example abstract eval.",
    "Downstream code planned with the abstract eval's shapes; the batched value no longer matches them.",
    "jxb009_bad.py", "jxb009_good.py",
)
UNBATCHED_OUTPUT_VARIES = Rule(
    "JXB010", "unbatched-output-varies", "error",
    "An output reported unbatched (`None`) differs from example to example.",
    "Compares the per-example results of an output the rule reports as `None`.",
    "JAX broadcasts the single value to every example: all but one example get a wrong result.",
    "jxb010_bad.py", "jxb010_good.py",
)
OUT_AXES_TUPLE_FOR_LIST = Rule(
    "JXB011", "out-axes-tuple-for-list-output", "warning",
    "A `multiple_results` primitive returns a list; a tuple `out_axes` such as `(0, None)` is not a tree prefix.",
    "Calls `vmap` with a tuple `out_axes` on the wrapper that returns `prim.bind(...)` and explains the failure.",
    "`jax.vmap(f, out_axes=(0, None))` fails with `ValueError: vmap out_axes specification must be a tree prefix "
    "of the corresponding value`. Use `out_axes=[0, None]`, or return `tuple(prim.bind(...))` from the wrapper.",
    "jxb011_bad.py", "jxb011_good.py",
)
VMAP_CALL_FAILED = Rule(
    "JXB012", "vmap-call-failed", "error",
    "The `in_axes` / `out_axes` you asked for do not work with this target; jaxdiag explains JAX's error.",
    "Reproduces `vmap(f, in_axes, out_axes)` with the given axes and translates JAX's error into plain words.",
    "JAX's messages about tree prefixes and axis sizes rarely say which argument or output is at fault.",
)
VMAP_RAISED = Rule(
    "JXB013", "vmap-raised", "error",
    "`vmap` of the target raises although calling it on each example works, and no batching rule is at fault.",
    "Runs every in_axes variant; reports the exceptions raised outside any user batching rule, with the in_axes.",
    "Python control flow on array values (`if x.sum() > 0`), `int(x)` or NumPy calls on traced values work "
    "eagerly but not on vmap's tracers: the function cannot be batched as written.",
    "jxb013_bad.py", "jxb013_good.py",
)
FFI_VMAP_METHOD_MISSING = Rule(
    "JXB020", "ffi-vmap-method-missing", "error",
    "An `ffi_call` / `pure_callback` has no `vmap_method`, so it cannot be used under `vmap`.",
    "Reads `vmap_method` from every `ffi_call`/`pure_callback` equation in the jaxpr, and tries `broadcast_all` and "
    "`expand_dims` on the kernel to say which choice is correct.",
    "vmap fails with `NotImplementedError: vmap is only supported for the ffi_call primitive when vmap_method is "
    "one of ...`. (JAX 0.5 still falls back to a sequential loop with a DeprecationWarning; jaxdiag reports a "
    "warning there.)",
    "jxb020_bad.py", "jxb020_good.py",
)
FFI_KERNEL_NOT_BATCH_AWARE = Rule(
    "JXB021", "ffi-kernel-not-batch-aware", "error",
    "Under `vmap`, the foreign kernel gives results that differ from calling it per example: it is not "
    "batch-aware for the declared `vmap_method`.",
    "Compares vmap of the function with a per-example loop (in_axes 0, -1, each argument unbatched, nested vmap), "
    "with every other foreign call made sequential; blames the call when `vmap_method=\"sequential\"` fixes the "
    "difference, and shows the operand shapes the kernel was handed.",
    "`expand_dims` and `broadcast_all` hand the kernel one buffer with a leading batch axis; a kernel that treats "
    "the buffer as one row silently mixes examples. `vmap_method=\"sequential\"` is always correct.",
    "jxb021_bad.py", "jxb021_good.py",
)
FFI_LEGACY_VECTORIZED = Rule(
    "JXB022", "ffi-legacy-vectorized", "warning",
    "`vmap_method=\"legacy_vectorized\"` is deprecated.",
    "Reads `vmap_method` from every `ffi_call`/`pure_callback` equation and checks whether `expand_dims` (its "
    "replacement) matches the per-example loop for that kernel.",
    "Its semantics are ambiguous (unbatched operands are passed without a batch axis) and it is slated for "
    "removal; choose `expand_dims`, `broadcast_all` or `sequential`.",
    "jxb022_bad.py", "jxb022_good.py",
)

# =============================================================================================================
# JXG: differentiation (primitive JVP/transpose rules, custom_vjp, custom_jvp)
# =============================================================================================================

JVP_MISMATCH = Rule(
    "JXG001", "jvp-numerical-mismatch", "error",
    "A primitive's JVP rule disagrees with finite differences of its impl.",
    "Compares the JVP rule's tangent with central differences computed in float64 along random directions.",
    "`jax.grad` and `jax.jvp` return wrong derivatives without any error.",
    "jxg001_bad.py", "jxg001_good.py",
)
TRANSPOSE_NOT_ADJOINT = Rule(
    "JXG002", "transpose-not-adjoint", "error",
    "The transpose rule is not the adjoint of the JVP: `<w, J v> != <J^T w, v>`.",
    "Runs the dot-product test between the linearized JVP and the transpose rule at random `v`, `w`.",
    "Forward mode and reverse mode give different derivatives; `jax.grad` is silently wrong.",
    "jxg002_bad.py", "jxg002_good.py",
)
TRANSPOSE_OUTPUT_STRUCTURE = Rule(
    "JXG003", "transpose-output-structure", "error",
    "The transpose rule must return one cotangent per primitive argument (None for non-linear ones), each shaped "
    "like that argument.",
    "Calls the transpose rule with `UndefinedPrimal` linear arguments and validates what it returns.",
    "JAX fails with `safe_zip` errors or `Expected cotangent type float32[2] but got float32[]`, naming no rule.",
    "jxg003_bad.py", "jxg003_good.py",
)
COTANGENT_DTYPE = Rule(
    "JXG004", "cotangent-dtype-drift", "error",
    "A cotangent (from a transpose rule or a custom_vjp bwd) has a different dtype than its primal input.",
    "Compares each returned cotangent's dtype with the input's dtype.",
    "JAX does not check cotangent dtypes: `grad` of a float32 input silently comes back float16, or int32 with "
    "its fraction truncated, or fails later with `lax.add requires arguments to have the same dtypes`.",
    "jxg004_bad.py", "jxg004_good.py",
)
TRANSPOSE_ASSUMES_LINEAR_ARG = Rule(
    "JXG005", "transpose-assumes-linear-arg", "error",
    "The transpose rule assumes which argument is linear and uses an `UndefinedPrimal` as a value.",
    "Calls the transpose rule with each argument in turn undefined (linear).",
    "JAX fails with `Error interpreting argument to <prim> as a JAX value ... UndefinedPrimal`. Branch on "
    "`ad.is_undefined_primal(x)`.",
    "jxg005_bad.py", "jxg005_good.py",
)
SYMBOLIC_ZERO_UNHANDLED = Rule(
    "JXG006", "symbolic-zero-unhandled", "error",
    "A rule fails when a tangent or cotangent is a symbolic zero (`ad.Zero`, `SymbolicZero`).",
    "Calls the rule with one input's tangent (or one output's cotangent) symbolically zero.",
    "The rule crashes with `unsupported operand type(s) for *: ... and 'Zero'` when only some inputs are "
    "differentiated. Use `ad.instantiate_zeros(t)` or test `type(t) is ad.Zero`.",
    "jxg006_bad.py", "jxg006_good.py",
)
JVP_OUTPUT_STRUCTURE = Rule(
    "JXG007", "jvp-output-structure", "error",
    "A JVP rule must return `(primal_out, tangent_out)` with tangents of the primal's structure, shape and "
    "tangent dtype.",
    "Validates the pair, the pytree structure, each tangent's shape and dtype against the primal output.",
    "A wrong tangent shape is silently accepted by `jax.jvp` and crashes `grad` with an unrelated `IndexError`; "
    "returning only the tangent is unpacked row by row.",
    "jxg007_bad.py", "jxg007_good.py",
)
VJP_BWD_STRUCTURE = Rule(
    "JXG010", "vjp-bwd-structure", "error",
    "A custom_vjp bwd must return a tuple with one cotangent per differentiable positional argument, each shaped "
    "like that argument.",
    "Calls bwd and compares its output structure and shapes with the primal arguments (after `nondiff_argnums`).",
    "`grad` fails with a pytree-structure error, or, worse, a mismatched nesting is accepted for one shape and "
    "not another.",
    "jxg010_bad.py", "jxg010_good.py",
)
VJP_IGNORED_COTANGENT = Rule(
    "JXG011", "vjp-ignored-cotangent", "error",
    "custom_vjp bwd ignores the cotangent of an output that depends on the inputs.",
    "Feeds a cotangent on one output at a time and compares bwd with the autodiff/finite-difference reference.",
    "`grad` through that output is silently zero (or missing that term) whenever the output is used.",
    "jxg011_bad.py", "jxg011_good.py",
)
VJP_FWD_MISMATCH = Rule(
    "JXG012", "vjp-fwd-primal-mismatch", "error",
    "custom_vjp fwd must return `(primal_out, residuals)` with `primal_out` equal to the function's output.",
    "Compares fwd's primal output with `f(*args)`: structure, shape, dtype and value.",
    "`value_and_grad` returns fwd's value, not `f`'s; structure or shape differences surface as confusing errors "
    "blamed on bwd.",
    "jxg012_bad.py", "jxg012_good.py",
)
VJP_SWAPPED_COTANGENTS = Rule(
    "JXG013", "vjp-swapped-cotangents", "error",
    "custom_vjp bwd returns each argument's gradient in another argument's slot.",
    "Matches bwd's cotangents against the reference gradient of every argument.",
    "`grad(f, argnums=0)` silently returns the gradient with respect to another argument.",
    "jxg013_bad.py", "jxg013_good.py",
)
CUSTOM_DERIVATIVE_MISMATCH = Rule(
    "JXG014", "custom-derivative-mismatch", "warning",
    "The custom derivative differs from the numerical derivative of the primal function.",
    "Compares the custom VJP/JVP with finite differences in float64 and JAX's autodiff of the undecorated primal.",
    "Either a bug, or deliberate (gradient clipping, straight-through estimators, surrogate gradients). If "
    "deliberate, suppress with `# jaxdiag: ignore[JXG014]` on the `def` line.",
    "jxg014_bad.py", "jxg014_good.py",
)
NONDIFF_ARGNUMS_MISUSE = Rule(
    "JXG015", "nondiff-argnums-misuse", "error",
    "`nondiff_argnums` is misused: an array argument marked non-differentiable, or bwd ignoring that "
    "non-differentiable arguments come first.",
    "Runs grad under `jit` and inspects bwd's failure for its argument order.",
    "An array in `nondiff_argnums` works eagerly and fails under `jit`/`scan` with an `UnexpectedTracerError`; a "
    "bwd with the wrong order multiplies a residual by a function.",
    "jxg015_bad.py", "jxg015_good.py",
)
COMPOSITION_MISMATCH = Rule(
    "JXG016", "transform-composition-failure", "error",
    "The gradient fails or differs under `jit(grad f)`, `vmap(grad f)` or `grad(vmap f)`.",
    "Compares the composed transformations with the eager gradient.",
    "A bwd that converts cotangents to NumPy passes an eager test and fails with `TracerArrayConversionError` "
    "under `jit` or `grad(vmap)`.",
    "jxg016_bad.py", "jxg016_good.py",
)
DERIVATIVE_RULE_RAISED = Rule(
    "JXG017", "derivative-rule-raised", "error",
    "A derivative rule (fwd, bwd, JVP or transpose) raised an exception.",
    "Calls every rule directly with the inputs JAX would give and reports the user's own error and line.",
    "JAX's traceback runs through its own internals; jaxdiag names the rule and the argument.",
    "jxg017_bad.py", "jxg017_good.py",
)
JVP_NOT_LINEAR = Rule(
    "JXG020", "jvp-not-linear", "error",
    "The JVP rule's tangent output is not linear in the input tangents.",
    "Tests additivity, homogeneity and zero-in-zero-out at random tangents.",
    "`jax.jvp` works, but `jax.grad` fails with `Transpose rule ... for 'integer_pow' not implemented` (naming a "
    "lax primitive, not your rule), or, for an affine rule, silently gives a different derivative than `jacfwd`.",
    "jxg020_bad.py", "jxg020_good.py",
)
JVP_PRIMAL_MISMATCH = Rule(
    "JXG021", "jvp-primal-mismatch", "error",
    "A JVP rule's primal output (custom_jvp rule or primitive JVP rule) differs from the function's output.",
    "Compares the rule's primal output with `f(*args)`: structure, shape, dtype and value.",
    "JAX does not check it: under `jvp`/`grad` the function silently returns a different value than without.",
    "jxg021_bad.py", "jxg021_good.py",
)
FLOAT0_TANGENT_UNHANDLED = Rule(
    "JXG022", "float0-tangent-unhandled", "error",
    "The custom_jvp rule fails on the `float0` tangent JAX passes for an integer or bool argument.",
    "Calls the rule with `float0` tangents for non-float arguments.",
    "Code such as `x * t_n` fails with `UFuncTypeError ... dtype([('float0', 'V')])` once any caller "
    "differentiates the function.",
    "jxg022_bad.py", "jxg022_good.py",
)
VJP_DROPPED_ARGUMENT_GRADIENT = Rule(
    "JXG018", "vjp-dropped-argument-gradient", "warning",
    "custom_vjp bwd returns None or zeros for an argument the function depends on.",
    "Compares each argument's cotangent with autodiff of the undecorated function and float64 finite differences "
    "along that argument.",
    "Everything upstream of that argument silently gets no gradient (a layer that never trains). Deliberate "
    "only when the argument must not be differentiated; then suppress with `# jaxdiag: ignore[JXG018]`.",
    "jxg018_bad.py", "jxg018_good.py",
)
SECOND_ORDER_MISMATCH = Rule(
    "JXG019", "second-order-mismatch", "warning",
    "With `--order 2`: grad of grad or jvp of vjp fails, or differs from finite differences of the gradient.",
    "Differentiates the first-order gradient (JAX differentiating your bwd / JVP rule) and compares it with "
    "float64 finite differences of that gradient, autodiff of the undecorated function, and the dot-product test "
    "between grad-of-grad and jvp-of-vjp.",
    "Hessians, Newton steps and meta-learning silently use a wrong second derivative, e.g. when bwd hides a "
    "dependence behind `stop_gradient` or NumPy. A failure or an inconsistency between the two modes is an error; "
    "a mismatch with the numerical derivative may be deliberate.",
    "jxg019_bad.py", "jxg019_good.py",
)

# =============================================================================================================
# JXV: jax.custom_batching.custom_vmap
# =============================================================================================================

VMAP_OUT_BATCHED_STRUCTURE = Rule(
    "JXV001", "out-batched-structure", "error",
    "A custom_vmap rule's `out_batched` must have exactly the output's pytree structure.",
    "Compares the structures of the rule's two return values.",
    "JAX fails with `structure of output value and output batching specification ... do not match`.",
    "jxv001_bad.py", "jxv001_good.py",
)
VMAP_DECLARED_UNBATCHED_VARIES = Rule(
    "JXV002", "declared-unbatched-but-batched", "error",
    "An output declared unbatched (`out_batched=False`) carries a batch axis or differs across examples.",
    "Checks the output's shape against the per-example output (no batch axis allowed) and compares vmap with the "
    "per-example loop.",
    "JAX broadcasts the value again: shape `(4, 4)` instead of `(4,)`, silently.",
    "jxv002_bad.py", "jxv002_good.py",
)
VMAP_BATCH_AXIS_NOT_LEADING = Rule(
    "JXV003", "batch-axis-not-leading", "error",
    "An output declared batched must have the batch axis first, of size `axis_size`.",
    "Checks each batched output's leading dimension and looks for the batch axis elsewhere.",
    "A trailing batch axis is silently read as the leading one (results transposed); a missing one gives "
    "`IndexError: tuple index out of range`.",
    "jxv003_bad.py", "jxv003_good.py",
)
VMAP_RESULT_MISMATCH = Rule(
    "JXV004", "custom-vmap-result-mismatch", "error",
    "vmap of the custom_vmap function differs from the per-example loop.",
    "Runs the rule under vmap for every `in_batched` combination (in_axes 0, -1, each argument unbatched, batch "
    "size 1, nested vmap) and calls it with every flag False, comparing with the function per example.",
    "A rule that ignores `in_batched` can work by accident for one combination and be wrong or crash for "
    "another.",
    "jxv004_bad.py", "jxv004_good.py",
)
VMAP_RULE_RAISED = Rule(
    "JXV005", "custom-vmap-rule-error", "error",
    "The custom_vmap rule is missing, raised, or did not return `(out, out_batched)`.",
    "Calls the rule for every `in_batched` combination and reports what went wrong.",
    "JAX reports `too many values to unpack` or `No batching rule defined`, far from the rule.",
    "jxv005_bad.py", "jxv005_good.py",
)
VMAP_GRAD_LIMITATION = Rule(
    "JXV006", "custom-vmap-grad-outside-vmap", "info",
    "`grad` of a custom_vmap function outside `vmap` fails: a known JAX limitation, not your bug.",
    "Under `jaxdiag grad` (and `check`), tries `jax.grad` of the function outside vmap; for a custom_vmap found "
    "inside a function, only when grad of that function fails too.",
    "JAX raises `Linearization failed to produce known values for all output primals`. Wrap the function in "
    "`jax.custom_jvp`/`custom_vjp`, or differentiate `vmap(f)`.",
)


def iter_rules() -> list[Rule]:
    return [RULES[c] for c in sorted(RULES)]
