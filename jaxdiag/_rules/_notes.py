"""JXN: notes about the run itself (info only): what jaxdiag inferred, which domain it drew from, which checks it
skipped and why, which targets it could not check, which suppressions suppressed nothing.

A note never fails a run. Import failures and jaxdiag's own internal errors are not notes nor rules: they are
blocking problems (`jaxdiag._core._report.Problem`) that no `--select`/`--ignore` or suppression can hide.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._catalog import Rule, variant

if TYPE_CHECKING:
    from . import _fields
from ._differentiation import DERIVATIVE_RULE_RAISED, SECOND_ORDER_FAILURE

INPUTS_INFERRED: Rule[_fields.JXN001] = Rule(
    "JXN001", "inputs-inferred", "info",
    "No `--arg` was given; jaxdiag inferred example inputs.",
    "Reports the argument specs jaxdiag inferred from the signature and a ladder of small shapes.",
    "Inferred shapes may not exercise every code path; pass `--arg` (or configure `args` in pyproject.toml).",
    message="no --arg given; inferred {count} argument(s): {specs}",
    fix="Pass --arg SPEC for each positional argument to check other shapes and dtypes.",
)
DOMAIN_FALLBACK: Rule[_fields.JXN002] = Rule(
    "JXN002", "domain-fallback", "info",
    "The target was non-finite on normal inputs, or refused their values; jaxdiag drew inputs from another domain.",
    "Reports the domain (positive, unit interval, small magnitude) used after the default draws gave NaN or inf, or "
    "made the target raise on values whose shapes it accepts (an impl checking `x >= 0`, a NumPy factorisation "
    "of a matrix that is not positive definite). Normal draws are kept only when three "
    "of them run (one, for a target whose call takes over half a second).",
    "Fix the domain yourself with `--arg f32[3]@positive` (also `@unit`, `@small`, `@normal`, `@LO..HI`).",
    message="{target} {why} on standard-normal inputs; drew inputs from the {domain!r} domain instead.",
    fix="Pin the domain with --arg {pinned} (one per argument) to silence this note.",
)
CHECK_SKIPPED: Rule[_fields.JXN003] = Rule(
    "JXN003", "check-skipped", "info",
    "A check was skipped; the finding says why.",
    "Reports checks that could not run (an earlier defect blocks them, a feature missing on this JAX release).",
    "A skipped check is not a passed one: fix the blocking defect and run again.",
    message="{reason} (skipped in check `{check}`)",
)
INPUTS_NOT_INFERRED: Rule[_fields.JXN004] = Rule(
    "JXN004", "inputs-not-inferred", "info",
    "jaxdiag could not infer example inputs for this target; it was not checked.",
    "Reports targets found by `jaxdiag check` that ran on none of the inferred shapes.",
    "Add `[tool.jaxdiag.targets.\"module:attr\"] args = [...]` to pyproject.toml so the target is checked.",
    message="could not infer example inputs for {target} (tried {tried}; last error: {error}); it was not checked.",
    fix="Add its inputs to pyproject.toml (one SPEC per positional argument, e.g. f32[2,3], i32[5]{params_hint}):"
        "\n{snippet}\nor define {jaxdiag_dict} in {module}.",
    leaves_unverified="no-inputs",
)
UNUSED_SUPPRESSION: Rule[_fields.JXN005] = Rule(
    "JXN005", "unused-suppression", "info",
    "A `# jaxdiag: ignore[CODE]` comment or configured ignore matched no finding.",
    "Reports suppressions that suppressed nothing, as ruff's RUF100 does.",
    "A stale suppression hides the next real defect on that line; remove it.",
    message="{suppression} suppressed nothing{where}.",
    fix="{action}",
)
DEPRECATED_CODE: Rule[_fields.JXN006] = Rule(
    "JXN006", "deprecated-code", "info",
    "A rule code written in `--select`/`--ignore`, pyproject.toml or an inline suppression was renamed.",
    "Reports each old code used, and the code it now stands for.",
    "The old code still works for now; a future release may drop it. Run notes moved from `JXR900`-`JXR904` to "
    "their own prefix `JXN`, and an import failure (formerly `JXR905`) is no longer a rule at all: it always "
    "fails the run and cannot be ignored.",
    message="{old} is a deprecated code{meaning}.",
    fix="{action}",
)
FUNCTION_GRAD_NOT_CHECKED: Rule[_fields.JXN007] = variant(
    DERIVATIVE_RULE_RAISED, "JXN007", "function-grad-not-checked", "info",
    differs="Under `jaxdiag check`, for a function nobody may differentiate, outside any rule jaxdiag can blame: "
            "a note.",
    summary="`jax.grad` of a function found by `jaxdiag check` fails, so its gradient was not checked.",
    what="`jaxdiag check` walks functions nobody may differentiate (one calling an `ffi_call` or a `pure_callback`); "
         "when `jax.grad` of one fails outside any rule jaxdiag can blame, it says so here. `jaxdiag grad` on the "
         "same function reports JXG017 (an error): there you asked for its gradient.",
    why="Only a problem if something differentiates the function.",
    bad_sample=None, good_sample=None, depends_on_values=True,
    message="jax.grad of {function} fails: {error}.{hint} Its gradient was not checked.",
    fix="If it is differentiated, {remedy}; then run `jaxdiag grad`.",
)
SECOND_ORDER_NOT_CHECKED: Rule[_fields.JXN008] = variant(
    SECOND_ORDER_FAILURE, "JXN008", "second-order-not-checked", "info",
    differs="Under `jaxdiag check`, which cannot know whether anything differentiates the rule twice: a note.",
    summary="Grad of grad (or jvp of vjp) fails for a custom rule found by `jaxdiag check`, so second derivatives "
            "were not checked.",
    what="Many rules are never differentiated twice, so under `check` a failing second derivative is a note; "
         "`jaxdiag grad --order 2` reports it as JXG023 (an error): there you asked for second derivatives.",
    why="Hessians, `jax.hessian` and Newton steps fail if anything differentiates the rule twice.",
    message="{how} of {function} fails: {error}. First-order gradients work, but Hessians, jax.hessian and "
            "Newton steps fail.",
    fix="If second derivatives are needed, write the rule with differentiable jax.numpy operations (no NumPy, no "
        "Python control flow on values, no pure_callback without its own derivative).",
)
INPUTS_RECORDED: Rule[_fields.JXN010] = Rule(
    "JXN010", "inputs-recorded", "info",
    "The target was checked on inputs recorded from your own code (`jaxdiag record`).",
    "Reports the recorded call used (argument specs, bind params) and the value domain its observed range chose.",
    "Recorded inputs are what your code really passes; re-record after changing the call sites.",
    message="{how}: {inputs}{params}",
)
DEPENDENCY_MISSING: Rule[_fields.JXN011] = Rule(
    "JXN011", "dependency-missing", "info",
    "The target (or a module) needs an optional dependency that is not installed; it was not checked.",
    "Reports targets whose call raised ModuleNotFoundError/ImportError on every example input, and, with "
    "`--keep-going`, submodules whose import needs a module that is not installed.",
    "Install the dependency in the environment jaxdiag runs in to check this target.",
    message="{error} (optional dependency {dependency!r} is not installed; {what} was not checked)",
    fix="Install {dependency!r} to check {what}.",
    leaves_unverified="dependency-missing",
)
TARGET_NOT_CHECKABLE: Rule[_fields.JXN012] = Rule(
    "JXN012", "target-not-checkable", "info",
    "jaxdiag cannot build inputs for this target from what it knows; the finding says exactly why and what to add.",
    "Reports a primitive whose rules need bind params nobody gave, static arguments without a default, rules only "
    "ever called with callables or treedefs, closure rules no recorded call reaches.",
    "Give the inputs in pyproject.toml or a JAXDIAG dict, or record your own calls with `jaxdiag record`.",
    message="{reason}; it was not checked.",
    fix="{fix}",
    leaves_unverified="not-checkable",
)
VALUES_NOT_COMPARED: Rule[_fields.JXN013] = Rule(
    "JXN013", "values-not-compared", "info",
    "The target cannot run on this platform (a GPU/TPU kernel on a CPU-only machine); its rules were checked "
    "abstractly, without comparing values.",
    "When the example call raises from a Pallas/Triton/Mosaic kernel, or a primitive is lowered only for `cuda`, "
    "`rocm` or `tpu`, jaxdiag traces instead of running: the abstract eval, the batching rule under "
    "`jax.eval_shape(jax.vmap(...))` for every in_axes variant (malformed returns get their normal JXB codes), the "
    "JVP rule's tangent avals and the transpose rule's or bwd's cotangent avals. No kernel runs.",
    "Shapes, dtypes and batch dims can be wrong independently of the kernel; a CPU-only CI still catches those. "
    "Wrong values need the platform itself.",
    "jxn013_bad.py", "jxn013_good.py",
    message="{target} cannot run here: {reason}. Values not compared; the checks that only trace shapes, dtypes and "
            "batch dims ran: {checks}.",
    fix="Run jaxdiag on a machine with the kernel's platform to compare values as well.",
)
INPUTS_FROM_CALL_SITE: Rule[_fields.JXN016] = Rule(
    "JXN016", "inputs-from-call-site", "info",
    "The target was checked at the values and bind params its own package's code passes it, not on inputs "
    "jaxdiag made up.",
    "When `jaxdiag check` has no inputs for a rule (none declared or recorded), it looks in the package for a "
    "public function that calls it (directly or up to three calls away), runs that function on inferred inputs and "
    "checks the rule where the call hands it its arguments: their shapes and dtypes (matrices stay matrices, "
    "integer operands stay integers), the bind params built at run time (`outs=` shape structs), and which "
    "operands the caller stop-gradients. It does so when the rule cannot be checked alone (bind params or "
    "inputs nobody gave) and when the call site passes what inference would not draw: an integer operand or an "
    "array of rank 2 or more. Keyword-only arguments of that function are the literals the package's own calls "
    "pass it; a parameter taking a function gets a jaxdiag stand-in, which the note names as assumed. A primitive "
    "that only another primitive's JVP or transpose rule binds (a factory's JVP primitive, the "
    "reverse primitive its transpose binds) is checked where that rule binds it, with the function that reaches "
    "the other primitive differentiated (`jax.jvp`, then `jax.grad`): the note names the rule.",
    "The caller's own inputs are still inferred, so findings stay graded as seen on inferred inputs; declare the "
    "rule's inputs or record your calls to check it on your exact values.",
    message="checked where {carrier} calls it{route} ({carrier} ran on {carrier_inputs}{keywords}): {inputs}{params}",
)
TANGENTS_REFUSED: Rule[_fields.JXN018] = Rule(
    "JXN018", "tangents-refused-on-purpose", "info",
    "The JVP rule refuses tangents of some arguments with its own `raise` and runs with them held constant: those "
    "arguments were checked as not differentiated.",
    "When a JVP rule raises on purpose (a `raise` statement of its own, or a `raise NotImplementedError` in a "
    "helper of yours, as for JXG025) on a tangent for every argument, jaxdiag calls it again with one argument's "
    "tangent at a time. An argument whose tangent alone makes it raise, while another argument's alone runs, is "
    "outside the rule's differentiation contract (\"differentiating with respect to the sample points is not "
    "supported\"): it is held constant in every check of the target, and the other arguments are checked as usual. "
    "A rule that refuses every argument is JXG025.",
    "Nothing to change if the refusal is the contract. To tell JAX as well, make the argument non-differentiable "
    "(`nondiff_argnums`), or stop its gradient where your code passes it.",
    "jxn018_bad.py", "jxn018_good.py",
    message="{rule} refuses tangents of {refused} on purpose ({error}); the other arguments were checked with "
            "{them} held constant",
)
BATCH_DIMS_REFUSED: Rule[_fields.JXN020] = Rule(
    "JXN020", "batch-dims-refused-on-purpose", "info",
    "The batching rule refuses some batch dims with its own `raise` and batches others correctly: the refused "
    "ones are outside its vmap contract, the others were checked.",
    "The batching counterpart of JXN018. A rule that refuses a batch dims combination deliberately (its own "
    "`raise`, or a refusal raised in a helper of yours, as for JXB014: \"Ai cannot be vectorized\", \"vmap over the "
    "sampling grid is not supported\") while another combination it was called with matches the per-example "
    "loop has drawn the line of what it batches: an index array or a grid shared by the whole batch, weights "
    "that are never per-example. jaxdiag names the refused combinations and the one that works, and every "
    "accepted combination is compared with the loop as usual. A rule that refuses every batched call jaxdiag "
    "made is JXB014 (a warning: `jax.vmap` of the primitive fails for everyone).",
    "Nothing to change if the refusal is the contract: a caller who vmaps over a refused operand gets your "
    "message. Lift it (batch that operand, or loop over it with `jax.lax.map`) if your users need it.",
    "jxn020_bad.py", "jxn020_good.py",
    message="{owner}'s batching rule refuses on purpose ({error}) when called by {refused}. It batches {works}; "
            "the combinations it accepts were checked against the per-example loop",
)
NAMED_AXIS: Rule[_fields.JXN021] = Rule(
    "JXN021", "checked-under-named-axis", "info",
    "The target calls collectives over a named axis (`lax.psum(x, axis_name)`): it was checked as it runs on a "
    "mesh, on two devices of that axis.",
    "A rule whose collectives need a mapped axis cannot run outside a `shard_map` (\"unbound axis name\"). "
    "jaxdiag runs it under `jax.vmap(..., axis_name=name, axis_size=2)`, which gives the collectives their meaning "
    "over two devices: each takes one device's arguments, device 0 as drawn and device 1 with every float array "
    "reversed along every axis (integer and boolean arrays the same on both). An output shard_map types as the "
    "same on every device (a `psum`'s) is compared once, as `shard_map` returns an unmapped output; the others (an "
    "`all_gather`'s, a `ppermute`'s: each device gets its own cotangent) are stacked, one row per device. For a "
    "custom_vjp, an argument whose cotangent the bwd reduces over the axis itself (`lax.psum(dw, axis_name)`: a "
    "replicated weight) is passed the same to both devices and its cotangent taken once. Every check then runs on "
    "that two-device function: a bwd dropping the other devices' cotangents, or sending a `ppermute` the wrong "
    "way, differs from JAX's autodiff of the primal and from finite differences. A static `axis_name` without a "
    "default is given its parameter's name. On a JAX that does not type values as varying over a mesh axis "
    "(`vma`, jax 0.5) the rule is not run, and JXN003 says so.",
    "Nothing to change: the note says how the collectives were exercised. To check on a real mesh layout (your "
    "`in_specs`), call the rule from a `shard_map`ped function and check that function with `jaxdiag sharding`.",
    "jxn021_bad.py", "jxn021_good.py",
    message="{target} calls collectives over the named axis {axis!r}: checked on {devices} devices of it "
            "(`jax.vmap(..., axis_name={axis!r}, axis_size={devices})`; device 1 gets every float argument reversed)",
)
FORWARD_MODE_UNSUPPORTED: Rule[_fields.JXN019] = Rule(
    "JXN019", "reverse-mode-only", "info",
    "A primitive's JVP rule returns its tangent as a primitive JAX can only transpose: jax.grad works, jax.jvp, "
    "jacfwd and hessian do not. Reverse mode was checked against finite differences instead.",
    "A JVP rule that binds, for its tangent, a primitive with a transpose rule but no impl and no lowering (an FFI "
    "library's reverse kernel is what that transpose binds) is reverse-mode only by design: `jax.grad` and "
    "`jax.vjp` linearize the tangent away and run the transpose, while `jax.jvp`, `jax.jacfwd` and `jax.hessian` "
    "must evaluate it and fail (\"Evaluation rule ... not implemented\"). jaxdiag does not call that a broken "
    "rule: it checks `jax.vjp` of the primitive against finite differences of its impl (a wrong reverse kernel is "
    "JXG001, located at the transpose rule), and the primitive the transpose alone uses is no target of its own.",
    "Only a problem where forward mode is needed: then give the tangent primitive an impl and a lowering (or write "
    "the tangent with jax.numpy operations).",
    "jxn019_bad.py", "jxn019_good.py",
    message="{rule}'s tangent is {tangent}, which JAX can only transpose (it has a transpose rule, but no impl or "
            "lowering): jax.grad and jax.vjp of {prim} work and were checked against finite differences; jax.jvp, "
            "jax.jacfwd and jax.hessian fail with `{error}`",
    fix="If forward mode is needed, give {tangent} an impl and a lowering, or compute the tangent with jax.numpy "
        "operations.",
)
BIND_PARAMS_ASSUMED: Rule[_fields.JXN017] = Rule(
    "JXN017", "bind-params-assumed", "info",
    "A primitive's required bind params were passed as a literal by no call site; jaxdiag assumed values for them.",
    "A primitive whose impl or abstract eval requires a keyword bind param (an int that sets output shapes, a "
    "shape tuple) is usually bound as `_p.bind(x, L=L)` inside a wrapper, never with a literal. `jaxdiag check` "
    "follows the variable to the wrapper's callers in the package (a literal they pass, or their own parameter's "
    "default), takes the literal default of the package function the impl hands the param to, and gives a param "
    "the package binds only as another's partner (`upsampfac=upsampfac_T` in a transpose rule) that partner's "
    "value; failing that, for an int-like or shape-like param, it tries a short ladder of small values (tuples of "
    "the length the package's binds give) and keeps the first on which the impl runs and the abstract eval "
    "describes its output. The note names every assumed value and where it came from.",
    "Findings on assumed values are graded as seen on inferred inputs; pass the values your code binds with "
    "`--param NAME=VALUE` (or `params` in [tool.jaxdiag.targets]), or record your calls with `jaxdiag record`.",
    message="no --param given for {target}; checked with bind param(s) {assumed}",
    fix="Pass --param NAME=VALUE (or `params` in [tool.jaxdiag.targets]) with the values your code binds.",
)
