"""JXS: sharding (`jaxdiag sharding`): jit with sharded inputs, custom_partitioning callbacks and Shardy rules,
shard_map, and the gathering cost of opaque calls, checked on a virtual CPU mesh in a child process."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._catalog import Rule

if TYPE_CHECKING:
    from . import _fields

SHARDED_RESULT_MISMATCH: Rule[_fields.JXS001] = Rule(
    "JXS001", "sharded-result-mismatch", "error",
    "jit on sharded inputs gives different numbers than the unsharded computation.",
    "Runs `jax.jit(f)` on a virtual CPU mesh with each input placed replicated, with each dimension sharded over "
    "each mesh axis, and with bounded combinations, and compares with the unsharded result (dtype tolerances). "
    "For a `custom_partitioning` op the finding sits at its `partition` callback and names the input sharding "
    "that exposed it. A user primitive is also run inside `shard_map`, one example per device, against the "
    "example alone.",
    "A `partition` that keeps a transformed or reduced dimension sharded makes every device compute on its own "
    "slice (an FFT of a quarter of the signal), silently: exact when replicated, wrong when sharded.",
    "jxs001_bad.py", "jxs001_good.py",
    message="Wrong results under sharding: {evidence}",
    fix="{fix}",
    decision="how the operation treats a sharded dimension: partitioned with the collectives it needs, or declared "
             "gathered",
)
PARTITION_SHARDING_MISMATCH: Rule[_fields.JXS002] = Rule(
    "JXS002", "partition-output-sharding-mismatch", "error",
    "`partition` returns a lowered function whose per-device result does not fit the result sharding it returns, "
    "or a result sharding other than the declared one with results that then differ from the unsharded ones.",
    "Spies on the op's callbacks under jit with sharded inputs and compares, for each input sharding, the result "
    "sharding the partitioner asked `partition` for with the one `partition` returned, and the results with the "
    "unsharded ones; reports JAX's `Mismatch in result shapes` when the lowered function's result does not match "
    "the returned sharding. Exact results under a mismatch are JXS007 (a cost, not an error).",
    "Compilation fails for the input shardings that expose it (a replicated input still works), or the op "
    "silently computes wrong numbers under them.",
    "jxs002_bad.py", "jxs002_good.py",
    message="`partition` returns another result sharding than the declared one: {evidence}",
    fix="{fix}",
    decision="which result sharding partition returns and computes: the declared one, or the one its lowered "
             "function produces",
)
SHARDING_RULE_NOT_PASSTHROUGH: Rule[_fields.JXS003] = Rule(
    "JXS003", "sharding-rule-not-passthrough", "error",
    "The Shardy `sharding_rule` declares a dimension as passing through, the op mixes values along it, and the "
    "results under a sharding of it differ from the unsharded ones.",
    "For each factor the rule maps from an operand dimension to a result dimension (not listed as reduction, "
    "need-replication or permutation factor), splits the operand along it, applies the op to each piece and "
    "compares the concatenation with the op on the whole array. A factor the op mixes is then compiled under "
    "Shardy (switched on for the check where this JAX defaults to GSPMD) with that dimension sharded: an error "
    "when the results differ from the unsharded ones, JXS008 (a cost) when `partition` gathers it and they agree.",
    "Shardy keeps a pass-through dimension sharded and hands `partition` per-device slices along it: an FFT, a "
    "sort or a cumulative sum along that dimension is then computed per slice.",
    "jxs003_bad.py", "jxs003_good.py",
    message="The sharding_rule passes a mixed dimension through: {evidence}",
    fix="{fix}",
    decision="whether the dimension passes through (then the op must not mix values along it) or is mixed (then "
             "declare it so in sharding_rule)",
)
SHARD_MAP_RULE_MISSING: Rule[_fields.JXS004] = Rule(
    "JXS004", "shard-map-rule-missing", "error",
    "A user primitive lacks what `shard_map` needs from it on this JAX version, and shard_map or `grad` through it "
    "fails.",
    "Runs the primitive inside `shard_map` over the mesh (every operand sharded, one example per device; then one "
    "operand replicated, or sharded over fewer mesh axes) and `grad` of a psum-reduced loss through it, against the "
    "same computation without shard_map. A failure is this rule when this JAX's requirement explains it: on JAX "
    "that tracks varying mesh axes (`vma`), an abstract eval that types an output with fewer axes than its "
    "operands (the finding sits there); on jax 0.5, replication check and rewrite rules missing for `check_rep`. "
    "A primitive that runs correctly is clean whatever its abstract eval returns.",
    "Inside shard_map the output is typed as identical on every device while it differs per device: JAX inserts "
    "casts that fail under `grad` (`pvary is a invariant->variant collective`) or refuses to trace.",
    "jxs004_bad.py", "jxs004_good.py",
    message="shard_map needs a rule this primitive lacks: {evidence}",
    fix="{fix}",
    depends_on_values=False,
    evidence_from_inputs=False,
    decision="the replication or varying-axes rule the primitive needs under shard_map on this JAX version",
)
SHARDED_CALL_GATHERS: Rule[_fields.JXS005] = Rule(
    "JXS005", "sharded-call-gathers", "warning",
    "An opaque user call (ffi_call, pure_callback, a primitive lowered to a custom call) makes XLA gather its "
    "sharded operands onto every device.",
    "Compiles `jax.jit` with sharded inputs and reads the partitioned HLO: the user's custom call runs on the "
    "full, global operand, with all-gather / all-to-all collectives in front of it. Reports the bytes moved per "
    "call.",
    "Results stay correct but each call costs a full copy of the operand per device, which defeats sharding; "
    "wrap the call in `shard_map` (when it works per shard) or give it a `custom_partitioning` rule.",
    "jxs005_bad.py", "jxs005_good.py",
    message="XLA gathers the operands of an opaque call: {evidence}",
    fix="{fix}",
    decision="whether the gather is acceptable, or the call gets a sharding-aware form (custom_partitioning, or "
             "shard_map around it)",
)
PARTITION_CALLBACK_RAISED: Rule[_fields.JXS006] = Rule(
    "JXS006", "partition-callback-raised", "error",
    "A `custom_partitioning` callback (`partition`, `infer_sharding_from_operands`) raised for some input "
    "sharding.",
    "Compiles jit with each enumerated input sharding and reports the callback's own exception with the sharding "
    "that triggered it.",
    "Callbacks run inside XLA's compiler, so their exception surfaces as an opaque compile error only when a user "
    "first shards the input that way.",
    "jxs006_bad.py", "jxs006_good.py",
    message="A custom_partitioning callback raised: {evidence}",
    fix="{fix}",
    depends_on_values=False,
    decision="what partition does for the input sharding its callback raised on: support it, or declare another "
             "sharding",
)
PARTITION_RESULT_RESHARDED: Rule[_fields.JXS007] = Rule(
    "JXS007", "partition-result-resharded", "warning",
    "`partition` returns another result sharding than the declared one; the results are exact, and XLA "
    "reconciles the two with collectives around every call.",
    "Spies on the op's callbacks under jit with sharded inputs, compares the result sharding the partitioner "
    "asked `partition` for with the one it returned, checks that the results still equal the unsharded ones, and "
    "reads the bytes the reconciling collectives move off the partitioned HLO (an all-gather receives its result "
    "less its own operand). Found at the callback at fault: `partition` when the op keeps the declared dimension "
    "independent, `infer_sharding_from_operands` when it declares sharded a dimension the op mixes. A mismatch "
    "reconciled by a local re-slice (nothing moved) is not reported; one whose results differ is JXS002.",
    "The partitioner planned the rest of the program around the declared sharding; a different returned one "
    "costs collectives around every call. Results are right, so only performance suffers, by the bytes stated.",
    "jxs007_bad.py", "jxs007_good.py",
    message="`partition` returns another result sharding than the declared one, reconciled by XLA: {evidence}",
    fix="{fix}",
    decision="whether partition returns the declared result sharding (no collectives) or the declaration changes "
             "to match it",
)
SHARDING_RULE_GATHERS: Rule[_fields.JXS008] = Rule(
    "JXS008", "sharding-rule-passthrough-gathered", "warning",
    "The Shardy `sharding_rule` passes a dimension the op mixes through, but `partition` gathers it, so results "
    "are exact and XLA pays collectives around every call.",
    "For each pass-through factor the op mixes (the op on slices along it, concatenated, differs from the op on "
    "the whole array), compiles jit under Shardy (switched on for the check where this JAX defaults to GSPMD) "
    "with that dimension sharded over each mesh axis, compares with the unsharded result, and reads the bytes "
    "moved off the partitioned HLO. Results that differ are JXS003; exact results with nothing moved are not "
    "reported.",
    "Shardy keeps the dimension sharded on the result, so every call gathers the operand and re-slices the "
    "result: correct, but a rule that gives the result dimension its own factor (or declares it as needing "
    "replication) lets the partitioner plan the gather instead. The custom_partitioning FFT as JAX's "
    "documentation writes it (`... i -> ... i`) is this case.",
    "jxs008_bad.py", "jxs008_good.py",
    message="The sharding_rule passes a mixed dimension through, and `partition` gathers it: {evidence}",
    fix="{fix}",
    decision="whether the dimension is gathered (then declare it so in sharding_rule) or partition handles it "
             "without a gather",
)
SHARD_MAP_GRAD_UNSUMMED: Rule[_fields.JXS009] = Rule(
    "JXS009", "shard-map-grad-unsummed", "error",
    "Inside `shard_map`, a user primitive's abstract eval types its output with fewer varying mesh axes than its "
    "operands, and `grad` with a replicated operand is silently wrong.",
    "Runs the primitive inside `shard_map` with every operand sharded (one example per device) and, in turn, "
    "with one operand replicated or sharded over fewer mesh axes, takes `grad` of a psum-reduced loss with "
    "respect to each float operand, and compares with the gradient of the same loss without shard_map. Reported "
    "at the abstract eval when it types an output with fewer varying axes than the operands have.",
    "JAX sums the cotangent of a replicated operand over the devices only where the types say its use varies "
    "(the transpose of `pvary` is `psum`). An output typed as identical on every device hides that, so each "
    "device keeps its own part of the gradient and nothing raises.",
    "jxs009_bad.py", "jxs009_good.py",
    message="grad through shard_map is silently wrong: {evidence}",
    fix="{fix}",
    decision="the output's varying mesh axes in the abstract eval (those of its operands), or a psum where the "
             "primitive reduces over them",
)
