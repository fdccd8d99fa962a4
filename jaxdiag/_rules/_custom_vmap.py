"""JXV: jax.custom_batching.custom_vmap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._catalog import VS_LOOP_MESSAGE, Rule, variant

if TYPE_CHECKING:
    from . import _fields

VMAP_OUT_BATCHED_STRUCTURE: Rule[_fields.JXV001] = Rule(
    "JXV001", "out-batched-structure", "error",
    "A custom_vmap rule's `out_batched` must have exactly the output's pytree structure.",
    "Compares the structures of the rule's two return values.",
    "JAX fails with `structure of output value and output batching specification ... do not match`.",
    "jxv001_bad.py", "jxv001_good.py",
    message="`{rule_name}`: {problem} ({where}). JAX fails with `ValueError: structure of output value and "
            "output batching specification returned by custom vmap rule ... do not match`.",
    fix="In `{rule_name}`, return `out_batched` with exactly the output's structure, one bool per "
        "output: e.g. `{corrected_return}`.",
    depends_on_values=False,
)
VMAP_DECLARED_UNBATCHED_VARIES: Rule[_fields.JXV002] = Rule(
    "JXV002", "declared-unbatched-but-batched", "error",
    "An output declared unbatched (`out_batched=False`) carries a batch axis or differs across examples.",
    "Checks the output's shape against the per-example output (no batch axis allowed) and compares vmap with the "
    "per-example loop.",
    "JAX broadcasts the value again: shape `(4, 4)` instead of `(4,)`, silently.",
    "jxv002_bad.py", "jxv002_good.py",
    message="Output declared unbatched is batched: {evidence}",
    fix="{fix}",
)
VMAP_BATCH_AXIS_NOT_LEADING: Rule[_fields.JXV003] = Rule(
    "JXV003", "batch-axis-not-leading", "error",
    "An output declared batched must have the batch axis first, of size `axis_size`.",
    "Checks each batched output's leading dimension and looks for the batch axis elsewhere.",
    "A trailing batch axis is silently read as the leading one (results transposed); a missing one gives "
    "`IndexError: tuple index out of range`.",
    "jxv003_bad.py", "jxv003_good.py",
    message="`{rule_name}` declares {labels} batched (`True` in out_batched) but returned shape {shape}: "
            "{what} ({where}).",
    fix="{fix}",
    depends_on_values=False,
)
VMAP_RESULT_MISMATCH: Rule[_fields.JXV004] = Rule(
    "JXV004", "custom-vmap-result-mismatch", "error",
    "vmap of the custom_vmap function differs from the per-example loop.",
    "Runs the rule under vmap for every `in_batched` combination (in_axes 0, -1, each argument unbatched, batch "
    "size 1, nested vmap) and calls it with every flag False, comparing with the function per example.",
    "A rule that ignores `in_batched` can work by accident for one combination and be wrong or crash for "
    "another.",
    "jxv004_bad.py", "jxv004_good.py",
    message=VS_LOOP_MESSAGE,
    fix="{fix}",
    decision="what the rule computes for each example (or batch-wide semantics declared intended)",
)
VMAP_RULE_RAISED: Rule[_fields.JXV005] = Rule(
    "JXV005", "custom-vmap-rule-error", "error",
    "The custom_vmap rule is missing, raised, or did not return `(out, out_batched)`.",
    "Calls the rule for every `in_batched` combination JAX can pass and reports what went wrong. All False (vmap "
    "of the call's own `jvp`) is tried only where JAX can differentiate the call that way: not for a call made "
    "only inside a custom_jvp/custom_vjp's primal function, which that rule differentiates.",
    "JAX reports `too many values to unpack` or `No batching rule defined`, far from the rule.",
    "jxv005_bad.py", "jxv005_good.py",
    message="custom_vmap rule failed: {evidence}",
    fix="{fix}",
    depends_on_values=False,
)
VMAP_GRAD_LIMITATION: Rule[_fields.JXV006] = Rule(
    "JXV006", "custom-vmap-grad-outside-vmap", "info",
    "`grad` of a custom_vmap function outside `vmap` fails: a known JAX limitation, not your bug.",
    "Under `jaxdiag grad` (and `check`), tries `jax.grad` of the function outside vmap; for a custom_vmap found "
    "inside a function, only when grad of that function fails too.",
    "JAX raises `Linearization failed to produce known values for all output primals`. Wrap the function in "
    "`jax.custom_jvp`/`custom_vjp`, or differentiate `vmap(f)`.",
    message="`jax.grad` of `{name}` outside vmap raises {error}. custom_vmap has no reverse-mode rule: a "
            "known JAX limitation, not a defect of your rule{works}.",
    fix="If `{name}` must be differentiable on its own, wrap it with `jax.custom_vjp` outside the "
        "custom_vmap (`@jax.custom_vjp` above `@custom_vmap`, then `defvjp(fwd, bwd)`), or "
        "`jax.custom_jvp`.",
)
# A JXG code only because it was the one free when this rule was added; it is the JXV004 defect read as a design,
# so `--ignore JXV004` and `--ignore JXV` cover it too.
VMAP_BATCH_AGGREGATE: Rule[_fields.JXG035] = variant(
    VMAP_RESULT_MISMATCH, "JXG035", "custom-vmap-batch-aggregate", "warning",
    differs="The vmapped output is the same for every example and equals a reduction over the batch of the "
            "per-example outputs (their maximum, minimum, sum or mean): an aggregate by construction, which can be "
            "the design, so a warning.",
    summary="A custom_vmap rule returns one batch-wide value (the maximum, minimum, sum or mean over the batch of "
            "the per-example results) for every example.",
    what="Like JXV004, compares vmap of the function with the per-example loop; when the vmapped output does not "
         "vary along the batch and equals a reduction over the batch axis of the per-example outputs, the rule "
         "aggregates across examples on purpose (a shared normaliser, a batch statistic) or by mistake (a reduction "
         "over the wrong axis). Returning one example's result for every example stays JXV002/JXV004.",
    why="vmap no longer means \"the same function per example\": jax.vmap(f)(xs)[i] depends on the other examples. "
        "That can be the contract (batch statistics), and it breaks code that assumes per-example semantics (a loop, "
        "a different batch split, a batch of 1). If intended, say so at the rule with "
        "`# jaxdiag: intended[JXG035]` on its `def` line: that silences this finding only.",
    bad_sample=None, good_sample=None,
    message="`{rule_name}` returns as {label}, for every example, the {reduction} over the batch of what `{fn_name}` "
            "gives per example ({where}): one value for all {size} examples, where calling `{fn_name}` on each "
            "example gives {spread}. Either the rule aggregates across the batch by design (a batch statistic), or it "
            "reduces over the batch axis by mistake and vmap of `{fn_name}` is silently not per-example.",
    fix="If batch-wide semantics are intended, document them and add `# jaxdiag: intended[JXG035]` to the def line "
        "of `{rule_name}`; otherwise reduce over the example's own axes only and return the batch axis first "
        "(`True` in out_batched).",
    stated_intent="batch",
)
