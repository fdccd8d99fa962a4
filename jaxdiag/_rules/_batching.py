"""JXB: primitive batching rules (and ffi_call / pure_callback vmap_method)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._catalog import VS_LOOP_MESSAGE, X64_ONLY_FIX, X64_ONLY_MESSAGE, Rule, variant

if TYPE_CHECKING:
    from . import _fields

BATCH_DIM_OUT_OF_RANGE: Rule[_fields.JXB001] = Rule(
    "JXB001", "batch-dim-out-of-range", "error",
    "The batching rule returned an output batch dim outside `0 <= dim < out.ndim`.",
    "Validates every output dim the rule returns against the rank of that output before JAX sees it.",
    "JAX fails deep inside vmap with `IndexError: tuple index out of range` (or `AssertionError: (-1, 2)` for a "
    "negative dim), naming neither the primitive nor the rule.",
    "jxb001_bad.py", "jxb001_good.py",
    message="Batch dim out of range: {evidence}",
    fix="{fix}",
    depends_on_values=False,
)
BATCH_DIM_WRONG_TYPE: Rule[_fields.JXB002] = Rule(
    "JXB002", "batch-dim-wrong-type", "error",
    "The batching rule returned an output batch dim that is not a Python `int` or `None`.",
    "Checks `type(dim) is int or dim is None` for every output dim (numpy integers and arrays are rejected).",
    "JAX raises `batch dim should be int or None` without naming the primitive.",
    "jxb002_bad.py", "jxb002_good.py",
    message="Batch dim of the wrong type: {evidence}",
    fix="{fix}",
    depends_on_values=False,
)
MISSING_NONE_FOR_UNBATCHED_OUTPUT: Rule[_fields.JXB003] = Rule(
    "JXB003", "unbatched-output-reported-batched", "warning",
    "An output that never depends on the batched inputs is reported batched; return `None` for its dim.",
    "Compares the output across examples and checks that it does not depend on any batched input; reported "
    "batched with the right size, it works but materialises a copy per example and defeats `out_axes=None`.",
    "`jax.vmap(f, out_axes=None)` fails for that output (`vmap has mapped output but out_axes is None`) and the "
    "constant is broadcast to the batch size for nothing.",
    "jxb003_bad.py", "jxb003_good.py",
    message="Unbatched output reported batched: {evidence}",
    fix="{fix}",
)
BATCH_AXIS_SIZE_MISMATCH: Rule[_fields.JXB004] = Rule(
    "JXB004", "batch-axis-size-mismatch", "error",
    "An output's size at the returned batch dim is not the vmap axis size.",
    "Checks `out.shape[dim] == axis_size` for every batched output (JAX itself never checks this, even under "
    "`jax.enable_checks`).",
    "vmap silently returns an array of the wrong shape (e.g. `(3,)` instead of `(4, 3)` when a constant output is "
    "given the input's batch dim); the failure surfaces later in unrelated code.",
    "jxb004_bad.py", "jxb004_good.py",
    message="Batch axis of the wrong size: {evidence}",
    fix="{fix}",
    depends_on_values=False,
)
BATCH_RESULT_MISMATCH: Rule[_fields.JXB005] = Rule(
    "JXB005", "batched-result-mismatch", "error",
    "`vmap` of the primitive differs from applying it to each example and stacking the results.",
    "Compares `vmap(f, in_axes)` with a per-example loop over distinct random examples, for in_axes 0, -1, a middle "
    "axis, each argument unbatched, pairwise combinations, nested vmap, batch size 1, and under `jit`. Before a "
    "difference is reported the loop runs once more: where it gives other values (a kernel leaving part of its "
    "output unwritten, state kept between calls) the outputs are not a function of the inputs and nothing is "
    "judged (a note says so).",
    "The rule computes something else than the primitive under a batch, typically because it assumes the batch "
    "axis is at 0 or that every argument is batched: results are silently wrong.",
    "jxb005_bad.py", "jxb005_good.py",
    message=VS_LOOP_MESSAGE,
    fix="{fix}",
)
BATCHING_RULE_RAISED: Rule[_fields.JXB006] = Rule(
    "JXB006", "batching-rule-raised", "error",
    "The batching rule raised an exception for some combination of batch dims.",
    "Calls vmap with every in_axes variant and reports the exception and the in_axes that triggered it.",
    "Rules often assume every operand is batched (`jnp.moveaxis(y, None, 0)`), or that the batch dim is 0.",
    "jxb006_bad.py", "jxb006_good.py",
    message="Batching rule raised: {evidence}",
    fix="{fix}",
    depends_on_values=False,
)
BATCHING_RULE_REFUSES: Rule[_fields.JXB014] = Rule(
    "JXB014", "batching-rule-refuses", "warning",
    "The batching rule refuses some batch dims with its own `raise` statement: vmap fails there on purpose.",
    "Like JXB006, but the exception comes from a `raise` written in the rule's own body, or a "
    "`raise NotImplementedError(...)` in your own code below the rule (a helper it calls, or the primitive's impl "
    "its bind reaches), or a `raise` there whose message "
    "refuses (\"cannot\", \"not supported\") or asks for an issue about the case (unless it calls itself a bug; "
    "not from JAX or NumPy, and not an `assert`): the author saw the case and chose to refuse it with a message "
    "for the user. Only when no batched call jaxdiag made works: a rule that refuses some batch dims and batches "
    "others correctly has drawn its contract (a JXN020 note).",
    "`jax.vmap` fails with the rule's message for every caller, which can be the intent (an operation that must "
    "never be batched) or a limitation to lift.",
    "jxb014_bad.py", "jxb014_good.py",
    message="Batching rule refuses on purpose: {evidence} The rule raises this itself, with its own `raise` "
            "statement, so the refusal looks deliberate; plain `jax.vmap` fails the same way.",
    fix="{fix} If the refusal is intended, say so in the primitive's documentation and suppress this warning "
        "with `# jaxdiag: ignore[JXB014]` on the rule's `def` line.",
    decision="whether to support these batch dims (a batched computation in place of the raise) or to keep the "
             "refusal on purpose (then suppress the warning)",
)
X64_ONLY_BATCHING: Rule[_fields.JXB015] = Rule(
    "JXB015", "x64-only-batching-defect", "warning",
    "A batching defect that shows only with `jax_enable_x64` on: the same check passes on the 32-bit version of "
    "the inputs with x64 off.",
    "When a 64-bit spec (f64, i64, u64, c128) turned x64 on and a batching check failed, the target is checked "
    "again on the 32-bit specs (f32, i32, u32, c64) with x64 off; an error that this run does not show is reported "
    "here, with the original rule's code, evidence and fix.",
    "Real for users who enable x64, invisible to everyone else: often a hard-coded 32-bit dtype in the rule.",
    "jxb015_bad.py", "jxb015_good.py",
    message=X64_ONLY_MESSAGE,
    fix=X64_ONLY_FIX,
    decision="the dtype the rule computes in under x64 (the inputs' own, or a fixed 32-bit one), which is a choice "
             "about your precision, not a mechanical edit",
)
MULTIPLE_RESULTS_STRUCTURE: Rule[_fields.JXB007] = Rule(
    "JXB007", "multiple-results-structure", "error",
    "A `multiple_results` primitive's batching rule must return (sequence of outputs, sequence of dims) with one "
    "entry per output.",
    "Checks that both are lists or tuples of the length the abstract eval gives.",
    "An int instead of a list of dims gives `TypeError: 'int' object is not iterable`; a short list gives a "
    "`safe_zip` error; a bare array is iterated row by row and can be silently wrong.",
    "jxb007_bad.py", "jxb007_good.py",
    message="Wrong multiple_results structure: {evidence}",
    fix="{fix}",
    depends_on_values=False,
)
RULE_RETURN_NOT_PAIR: Rule[_fields.JXB008] = Rule(
    "JXB008", "rule-return-not-pair", "error",
    "A single-result primitive's batching rule must return exactly `(out, dim)`.",
    "Checks that the rule returns a pair whose first element is an array (not a list) and second an int or None.",
    "Forgetting the dim makes JAX unpack the output array itself; returning `([out], [d])` gives `not a valid JAX "
    "type`.",
    "jxb008_bad.py", "jxb008_good.py",
    message="Batching rule does not return (out, dim): {evidence}",
    fix="{fix}",
    depends_on_values=False,
)
BATCHED_SHAPE_MISMATCH: Rule[_fields.JXB009] = Rule(
    "JXB009", "batched-shape-mismatch", "error",
    "An output with its batch dim removed does not have the shape or dtype the abstract eval gives per example.",
    "Removes the returned batch dim from each output and compares with the per-example abstract eval.",
    "Downstream code planned with the abstract eval's shapes; the batched value no longer matches them.",
    "jxb009_bad.py", "jxb009_good.py",
    message="Batched shape disagrees with the abstract eval: {evidence}",
    fix="{fix}",
    depends_on_values=False,
)
UNBATCHED_OUTPUT_VARIES: Rule[_fields.JXB010] = Rule(
    "JXB010", "unbatched-output-varies", "error",
    "An output reported unbatched (`None`) differs from example to example.",
    "Compares the per-example results of an output the rule reports as `None`.",
    "JAX broadcasts the single value to every example: all but one example get a wrong result.",
    "jxb010_bad.py", "jxb010_good.py",
    message="Output reported unbatched varies across examples: {evidence}",
    fix="{fix}",
    decision="where no axis of the rule's output matches the per-example values (one that does is returned, as a "
             "diff): whether this output is meant to differ per example (computed per example, batched) or to be "
             "shared by the whole batch (computed from the unbatched operands only)",
)
# JXB010's defect read as a design: the one value is an aggregate of the batch (an "unvmap": a batch statistic, a
# stop condition the whole batch shares), which is the rule's whole point or a reduction over the batch axis by
# mistake; the evidence cannot tell which, so a warning naming both readings.
UNBATCHED_OUTPUT_IS_BATCH_AGGREGATE: Rule[_fields.JXB024] = variant(
    UNBATCHED_OUTPUT_VARIES, "JXB024", "unbatched-output-is-batch-aggregate", "warning",
    differs="The one value returned unbatched equals a reduction over the batch of the per-example outputs (their "
            "maximum, minimum, sum, mean, logical OR or AND) or the whole batch itself: batch-wide by construction, "
            "which can be the design, so a warning.",
    summary="An output reported unbatched (`None`) is one batch-wide value: a reduction over the batch of the "
            "per-example results, or the whole batch.",
    what="Like JXB010, compares the per-example results of an output the rule reports as `None`; when the one value "
         "the rule returned equals the maximum, minimum, sum, mean, logical OR or AND over the batch of the "
         "per-example outputs (or the stacked outputs themselves), it names that aggregate. Returning one example's "
         "result, or a value no aggregate explains, stays JXB010.",
    why="vmap no longer means \"the same function per example\": `jax.vmap(f)(xs)[i]` depends on the other examples. "
        "That is the contract of an \"unvmap\" primitive (a batch-wide maximum, a stop flag that is true when any "
        "example's is), and a silent bug everywhere else (a reduction that forgot the batch axis). If intended, say "
        "so on the reported line with `# jaxdiag: intended[JXB024]`: that silences this finding only. A docstring "
        "or leading comment of the rule, or of a function that binds the primitive, saying that it ignores the "
        "batch or returns a batch-wide value (\"As `jnp.all`, but ignores batch dimensions\") reads the same.",
    bad_sample="jxb024_bad.py", good_sample="jxb024_good.py",
    stated_intent="batch",
    message="Output reported unbatched is a batch-wide value: {evidence}",
    decision="whether the output is batch-wide by design (then mark it intended) or meant per example (then reduce "
             "over the example's own axes and return the batch axis)",
)
OUT_AXES_TUPLE_FOR_LIST: Rule[_fields.JXB011] = Rule(
    "JXB011", "out-axes-tuple-for-list-output", "warning",
    "A `multiple_results` primitive returns a list; a tuple `out_axes` such as `(0, None)` is not a tree prefix.",
    "Where a tuple `out_axes` is actually used on a wrapper that returns `prim.bind(...)` (`--out-axes`, or a "
    "`jax.vmap(wrapper, out_axes=(...))` call in the wrapper's module), runs that call and explains the failure. "
    "A wrapper returning the list is correct code otherwise and is not reported.",
    "`jax.vmap(f, out_axes=(0, None))` fails with `ValueError: vmap out_axes specification must be a tree prefix "
    "of the corresponding value`. Use `out_axes=[0, None]`, or return `tuple(prim.bind(...))` from the wrapper.",
    "jxb011_bad.py", "jxb011_good.py",
    message="Tuple out_axes for a list output: {evidence}",
    fix="{fix}",
    depends_on_values=False,
)
VMAP_CALL_FAILED: Rule[_fields.JXB012] = Rule(
    "JXB012", "vmap-call-failed", "error",
    "The `in_axes` / `out_axes` you asked for do not work with this target; jaxdiag explains JAX's error.",
    "Reproduces `vmap(f, in_axes, out_axes)` with the given axes and translates JAX's error into plain words.",
    "JAX's messages about tree prefixes and axis sizes rarely say which argument or output is at fault.",
    message="The requested vmap fails: {evidence}",
    fix="{fix}",
    depends_on_values=False,
)
VMAP_RAISED: Rule[_fields.JXB013] = Rule(
    "JXB013", "vmap-raised", "error",
    "`vmap` of the target raises although calling it on each example works, and no batching rule is at fault.",
    "Runs every in_axes variant; reports the exceptions raised outside any user batching rule, with the in_axes.",
    "Python control flow on array values (`if x.sum() > 0`), `int(x)` or NumPy calls on traced values work "
    "eagerly but not on vmap's tracers: the function cannot be batched as written.",
    "jxb013_bad.py", "jxb013_good.py",
    message="{variant_describe} raised {exc_error}, although {name} runs on each example.{also}{works}",
    fix="{vmap_raised_fix}",
    depends_on_values=False,
    decision="how to write the operation vmap rejects (Python control flow on array values, a call that needs "
             "concrete values) with batchable JAX operations such as jnp.where or lax.cond; jaxdiag sees the "
             "error, not the semantics you want per example",
)
FFI_VMAP_METHOD_MISSING: Rule[_fields.JXB020] = Rule(
    "JXB020", "ffi-vmap-method-missing", "error",
    "An `ffi_call` / `pure_callback` has no `vmap_method`, so it cannot be used under `vmap`.",
    "Reads `vmap_method` from every `ffi_call`/`pure_callback` equation in the jaxpr, and tries `broadcast_all` and "
    "`expand_dims` on the kernel to say which choice is correct.",
    "vmap fails with `NotImplementedError: vmap is only supported for the ffi_call primitive when vmap_method is "
    "one of ...`. (JAX 0.5 still falls back to a sequential loop with a DeprecationWarning; jaxdiag reports JXB023, "
    "a warning, there.)",
    "jxb020_bad.py", "jxb020_good.py",
    message="{call_describe}{call_where} has no vmap_method (None), so {consequence}.",
    fix="Pass `vmap_method=` to the {primitive} at {line}: {choices}. {which_methods_work}",
    depends_on_values=False,
    evidence_from_inputs=False,
)
FFI_KERNEL_NOT_BATCH_AWARE: Rule[_fields.JXB021] = Rule(
    "JXB021", "ffi-kernel-not-batch-aware", "error",
    "Under `vmap`, the foreign kernel gives results that differ from calling it per example: it is not "
    "batch-aware for the declared `vmap_method`.",
    "Compares vmap of the function with a per-example loop (in_axes 0, -1, each argument unbatched, nested vmap), "
    "with every other foreign call made sequential; blames the call when `vmap_method=\"sequential\"` fixes the "
    "difference, and shows the operand shapes the kernel was handed.",
    "`expand_dims` and `broadcast_all` hand the kernel one buffer with a leading batch axis; a kernel that treats "
    "the buffer as one row silently mixes examples. `vmap_method=\"sequential\"` is always correct.",
    "jxb021_bad.py", "jxb021_good.py",
    message="{call_describe}{call_where} declares vmap_method='{method}', but the {noun} is not batch-aware: "
            "{variant_describe} {observed}. With '{method}' the {noun} is handed {buffers}{handed}, and must "
            "treat the leading axis as a batch. With vmap_method='sequential' the same call matches the loop.",
    fix="Declare `vmap_method=\"sequential\"` at {line} (one {noun} call per example, always correct), or "
        "make `{target}` batch-aware: treat the leading dimensions as a batch and only the trailing ones "
        "as one example{broadcast}.",
)
FFI_LEGACY_VECTORIZED: Rule[_fields.JXB022] = Rule(
    "JXB022", "ffi-legacy-vectorized", "warning",
    "`vmap_method=\"legacy_vectorized\"` is deprecated.",
    "Reads `vmap_method` from every `ffi_call`/`pure_callback` equation and checks whether `expand_dims` (its "
    "replacement) matches the per-example loop for that kernel.",
    "Its semantics are ambiguous (unbatched operands are passed without a batch axis) and it is slated for "
    "removal; choose `expand_dims`, `broadcast_all` or `sequential`.",
    "jxb022_bad.py", "jxb022_good.py",
    message="{call_describe}{call_where} declares the deprecated vmap_method='legacy_vectorized' (it hands "
            "the {noun} {handed_what}); it is slated for removal.",
    fix="Replace it at {line} with {advice}.",
    depends_on_values=False,
    evidence_from_inputs=False,
)
FFI_VMAP_METHOD_FALLBACK: Rule[_fields.JXB023] = variant(
    FFI_VMAP_METHOD_MISSING, "JXB023", "ffi-vmap-method-fallback", "warning",
    differs="On a JAX release that still runs a call without `vmap_method` sequentially (0.5): a warning there.",
    summary="An `ffi_call` / `pure_callback` has no `vmap_method`; this JAX release still runs it under `vmap` with "
            "a deprecated sequential fallback.",
    why="Works today (one kernel call per example, with a DeprecationWarning) and fails on newer JAX with "
        "`NotImplementedError: vmap is only supported for the ffi_call primitive when vmap_method is one of ...`, "
        "reported there as JXB020 (an error).",
    evidence_from_inputs=False,
)
OUT_OF_RANGE_INDEX_ONLY: Rule[_fields.JXB016] = Rule(
    "JXB016", "out-of-range-index-only", "warning",
    "A batching difference shows only at index values outside the operand's range.",
    "Integer inputs that index an operand (gather, scatter, dynamic_slice) and have no declared range are also "
    "drawn at and beyond the edges of the axis they index. A finding that those values show, and in-range indices "
    "do not, is re-run without them and reported here, naming the values.",
    "gather and dynamic_slice clamp an out-of-range index and scatter drops it: a rule that handles them "
    "differently is wrong only for callers that pass such indices, which many libraries never do.",
    "jxb016_bad.py", "jxb016_good.py",
    message="{code} only at out-of-range index values ({values}); every in-range index agrees: {evidence}",
    fix="{fix}\nIf no caller passes such indices, declare the operand's range (e.g. `{spec}`), and this probe is "
        "not run.",
    decision="whether out-of-range indices can reach this rule (then how it treats them: clip, fill or raise, as "
             "the impl does) or never do (then declare the operand's range)",
)
BATCHED_VJP_MISMATCH: Rule[_fields.JXB017] = Rule(
    "JXB017", "batched-vjp-mismatch", "error",
    "`jax.vjp(jax.vmap(f))` differs from the stacked per-example VJPs (summed over the batch for an unbatched "
    "argument), while `jax.vmap(f)` itself is right.",
    "Runs reverse mode through vmap with every argument batched, each argument unbatched in turn (its cotangent is "
    "the sum of the examples') and batch size 1, with a different cotangent per example, and compares with "
    "`jax.vjp` of each example; the transpose rule is spied on to name the operand shapes it received.",
    "The batching rule decides what shapes the transpose rule sees: an unbatched operand given a size-1 or a "
    "broadcast batch dim, or the batch axis where a data axis was, passes every forward check and makes gradients "
    "of vmapped code silently wrong.",
    "jxb017_bad.py", "jxb017_good.py",
    message="vjp of vmap differs from the per-example VJPs: {evidence}",
    fix="{fix}",
    decision="how the transpose rule reads the sizes it needs (from the axes the operand's data occupy whatever "
             "batch axes are in front, or from the primitive's params); the formula is yours",
)
BATCHED_VJP_FAILS: Rule[_fields.JXB018] = Rule(
    "JXB018", "batched-vjp-fails", "error",
    "`jax.vjp(jax.vmap(f))` raises, while `jax.vmap(f)` and the per-example VJPs work.",
    "Runs reverse mode through vmap as JXB017 does; the transpose rule is spied on to name the cotangent it "
    "returned and the operand it was for.",
    "A batching rule that gives an unbatched operand a size-1 batch dim passes the forward checks (broadcasting "
    "hides it), then the transpose rule returns a full-batch cotangent for that size-1 operand and JAX fails with "
    "`Expected cotangent type float32[1,2] but got float32[3,2]` (or a reshape error), naming no rule.",
    "jxb018_bad.py", "jxb018_good.py",
    message="vjp of vmap fails although vmap and the per-example VJPs work: {evidence}",
    fix="{fix}",
    depends_on_values=False,
    decision="where the fix belongs: the batching rule (broadcast an unbatched operand to the full batch size) or "
             "the transpose rule (sum each cotangent back to its operand's shape)",
)
