"""JXR: registration (impl, abstract eval, lowering, missing rules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._catalog import Rule, variant

if TYPE_CHECKING:
    from . import _fields

MISSING_IMPL: Rule[_fields.JXR001] = Rule(
    "JXR001", "missing-impl", "error",
    "The primitive has no impl rule, so it cannot run eagerly.",
    "Checks that `prim.def_impl(...)` was called.",
    "Eager calls fail with `NotImplementedError: Evaluation rule for '<name>' not implemented`.",
    "jxr001_bad.py", "jxr001_good.py",
    message="{var} has no impl (`{var}.def_impl(...)` was never called): eager calls fail with "
            "`NotImplementedError: Evaluation rule for '{prim_name}' not implemented`.{also}",
    fix="{fix}",
    depends_on_values=False,
    evidence_from_inputs=False,
)
MISSING_ABSTRACT_EVAL: Rule[_fields.JXR002] = Rule(
    "JXR002", "missing-abstract-eval", "error",
    "The primitive has no abstract evaluation rule, so jit, vmap and grad cannot trace it.",
    "Checks that `prim.def_abstract_eval(...)` was called.",
    "Eager-only tests pass, but every trace fails with `NotImplementedError: Abstract evaluation for '<name>' not "
    "implemented`.",
    "jxr002_bad.py", "jxr002_good.py",
    message="{var} has no abstract evaluation rule: eager calls and eager vmap work, but `jax.jit`, "
            "`jax.grad` and `jax.make_jaxpr` fail with `NotImplementedError: Abstract evaluation for "
            "'{prim_name}' not implemented`.{observed}",
    fix="{fix}",
    depends_on_values=False,
    evidence_from_inputs=False,
    decision="which output shapes and dtypes the primitive has for every input shape and params: a new abstract "
             "evaluation rule, where jaxdiag saw the impl's outputs only for the shapes it ran",
)
ABSTRACT_EVAL_MISMATCH: Rule[_fields.JXR003] = Rule(
    "JXR003", "abstract-eval-mismatch", "error",
    "The abstract evaluation rule disagrees with what the impl returns (shape, dtype or number of outputs).",
    "Runs the impl on concrete inputs and compares each output's shape and dtype with the abstract eval's "
    "`ShapedArray`s; also checks the abstract eval returns `ShapedArray`s (a sequence of them iff "
    "`multiple_results`).",
    "Eager mode silently uses the impl's result; under `jit` lowering fails with an MLIR verifier error far from "
    "the cause, and every transformation plans with the wrong shapes.",
    "jxr003_bad.py", "jxr003_good.py",
    message="Abstract eval disagrees with the impl: {evidence}",
    fix="{fix}",
    depends_on_values=False,
)
MISSING_LOWERING: Rule[_fields.JXR004] = Rule(
    "JXR004", "missing-lowering", "warning",
    "No MLIR lowering is registered for the CPU platform, so the primitive fails under `jax.jit`.",
    "Checks `mlir.register_lowering(prim, ...)` for the platform jaxdiag runs on (or for all platforms). A "
    "primitive with no lowering for any platform whose package interprets jaxprs itself, looking up a handler by "
    "each equation's primitive (an exporter or a verifier: `handlers.get(eqn.primitive.name)` in a loop over "
    "`jaxpr.eqns`), exists for that interpreter, which jit never is: it is not reported, and the check's skip "
    "names where the package does so.",
    "`jax.jit` fails with `NotImplementedError: MLIR translation rule for primitive '<name>' not found for "
    "platform cpu`. Use `mlir.lower_fun(impl, multiple_results=...)` when the impl is written in `jax.numpy`.",
    "jxr004_bad.py", "jxr004_good.py",
    message="{var} has no MLIR lowering for cpu: `jax.jit` of any function using it fails with "
            "`NotImplementedError: MLIR translation rule for primitive '{prim_name}' not found for platform "
            "cpu`.",
    fix="{fix}",
    depends_on_values=False,
    evidence_from_inputs=False,
)
MISSING_BATCHING_RULE: Rule[_fields.JXR005] = Rule(
    "JXR005", "missing-batching-rule", "warning",
    "The primitive has no batching rule, so `jax.vmap` (and `jacfwd`) fail.",
    "Checks that a rule is registered in `batching.primitive_batchers`.",
    "`vmap` fails with `NotImplementedError: Batching rule for '<name>' not implemented`. Elementwise primitives "
    "can use `batching.defvectorized(prim)`; others need a rule that moves the batch axis and calls `bind`. A "
    "warning under `jaxdiag check`, which cannot know whether the primitive is ever vmapped (like a missing "
    "lowering); `jaxdiag batching`, which was asked to vmap it, reports JXR012, an error.",
    "jxr005_bad.py", "jxr005_good.py",
    message="{var} has no batching rule: `jax.vmap` (and `jax.jacfwd`) of anything using it fails with "
            "`NotImplementedError: Batching rule for '{prim_name}' not implemented`.",
    fix="{fix}",
    depends_on_values=False,
    evidence_from_inputs=False,
)
MISSING_JVP_RULE: Rule[_fields.JXR006] = Rule(
    "JXR006", "missing-jvp-rule", "info",
    "The primitive has no JVP rule, so `jax.grad`, `jax.jvp` and `jacfwd` fail.",
    "Checks that a rule is registered in `ad.primitive_jvps` (for example with `ad.defjvp`).",
    "Differentiation fails with `NotImplementedError: Differentiation rule for '<name>' not implemented`. Only a "
    "note under `jaxdiag check`: many primitives are never differentiated, and one differentiated only through a "
    "custom_vjp/custom_jvp around it never needs a JVP rule. `jaxdiag grad`, which was asked to differentiate it, "
    "reports JXR013, an error.",
    "jxr006_bad.py", "jxr006_good.py",
    message="{prim} has no JVP rule: jax.grad, jax.jvp and jacfwd fail with `NotImplementedError: "
            "Differentiation rule for '{prim}' not implemented`.",
    fix="Register one: `ad.defjvp({var}, lambda g, {args}, **params: ...)` (one function per argument), "
        "or `ad.primitive_jvps[prim] = rule` with rule(primals, tangents, **params) -> (primal_out, "
        "tangent_out).",
    depends_on_values=False,
    decision="whether the primitive is differentiated at all (then a JVP rule with its derivative, which jaxdiag "
             "cannot write) or never (then nothing to register)",
)
MISSING_TRANSPOSE_RULE: Rule[_fields.JXR007] = Rule(
    "JXR007", "missing-transpose-rule", "warning",
    "The primitive's JVP is linear (it binds the primitive on the tangent) but it has no transpose rule.",
    "Checks primitives whose JVP rule re-binds the primitive on tangents for an `ad.primitive_transposes` entry.",
    "Forward mode works, but `jax.grad` fails with `NotImplementedError: Transpose rule (for reverse-mode "
    "differentiation) for '<name>' not implemented`. A warning under `jaxdiag check` (forward mode may be all the "
    "project uses); `jaxdiag grad`, which was asked for reverse mode, reports JXR014, an error.",
    "jxr007_bad.py", "jxr007_good.py",
    message="{prim} is linear in its JVP (the JVP rule binds {prim} on the tangents) but has no transpose "
            "rule: jax.jvp works, jax.grad with respect to {args_names} fails with `NotImplementedError: "
            "Transpose rule (for reverse-mode differentiation) for '{prim}' not implemented`.",
    fix="Register the adjoint: `ad.primitive_transposes[{var}] = lambda ct, {args}, **params: [...]` "
        "returning one cotangent per argument (None for arguments that are not `ad.UndefinedPrimal`), or "
        "use `ad.deflinear2`.",
    depends_on_values=False,
    evidence_from_inputs=False,
    decision="the transpose of the JVP's linear map (one cotangent per linear argument), or a JVP rule that does "
             "not bind the primitive on the tangent",
)
REMOVED_JAX_API: Rule[_fields.JXR008] = Rule(
    "JXR008", "removed-jax-api", "error",
    "A rule uses a JAX internal that no longer exists on this JAX release (e.g. `batching.not_mapped`).",
    "Recognises `AttributeError`s raised from a rule that name a `jax` module attribute.",
    "The rule crashes as soon as it runs; `batching.not_mapped` was removed in JAX 0.10 (use `None`).",
    "jxr008_bad.py", "jxr008_good.py",
    message="{where} uses `{module}.{attr}`, which does not exist on JAX {jax_version}: {exc_error}.",
    fix="Replace `{attr}`: {advice}.",
    depends_on_values=False,
    evidence_from_inputs=False,
)
WRONG_RULE_SIGNATURE: Rule[_fields.JXR009] = Rule(
    "JXR009", "wrong-rule-signature", "error",
    "A rule was called with the arguments JAX passes and rejected them (missing positional, unexpected keyword).",
    "Recognises `TypeError`s raised by the call into the rule itself: a fancy `(axis_data, args, dims)` rule "
    "registered as a legacy one, or a rule without `**params`.",
    "JAX passes the primitive's bind parameters as keywords; a rule that does not accept them fails with an "
    "error naming only the rule's own function.",
    "jxr009_bad.py", "jxr009_good.py",
    message="Rule signature does not match JAX's call: {evidence}",
    fix="{fix}",
    depends_on_values=False,
    evidence_from_inputs=False,
    decision="the signature the rule takes (the one JAX calls it with) and how its body uses the arguments",
)
LOWERING_MISMATCH: Rule[_fields.JXR010] = Rule(
    "JXR010", "lowering-mismatch", "error",
    "`jax.jit` of the primitive fails or gives a different result than the eager impl.",
    "Runs the primitive once under `jax.jit` (abstract eval + the CPU lowering) and compares with the impl; an "
    "output the impl does not repeat when run again on the same inputs (unwritten scratch) is not compared (a note "
    "says so).",
    "Eager tests pass while every jitted caller fails with an MLIR verifier error, or silently computes something "
    "else: the lowering was written for another function, another dtype, or another `multiple_results`.",
    "jxr010_bad.py", "jxr010_good.py",
    message="jit disagrees with the impl: {evidence}",
    fix="{fix}",
    decision="which of the two is right, the lowering or the eager impl; jaxdiag sees only that jit and eager "
             "results differ",
)
TARGET_RAISED: Rule[_fields.JXR011] = Rule(
    "JXR011", "target-raised", "error",
    "The target raised on the example inputs, so its batching could not be checked.",
    "Calls the primitive's impl (or the function) once on the example inputs before any transformation.",
    "Either the example inputs are not what the target expects (pass `--arg`), or the impl itself is broken; "
    "nothing under vmap can be checked until one example runs.",
    message="{subject_name}'s {where} raised {exc_error} on the example inputs ({inputs_text}); nothing "
            "under vmap could be checked.",
    fix="If these inputs are not what it expects, pass matching ones with --arg (e.g. --arg f32[4,3]); "
        "otherwise fix the {where} so that one example runs.",
    drawn_values_only=True,
)
VMAP_WITHOUT_BATCHING_RULE: Rule[_fields.JXR012] = variant(
    MISSING_BATCHING_RULE, "JXR012", "vmap-without-batching-rule", "error",
    differs="Reported by `jaxdiag batching`, which was asked to vmap the primitive: an error there.",
    summary="`jaxdiag batching` was asked to check a primitive that has no batching rule: `jax.vmap` of it fails.",
    what="Checks that a rule is registered in `batching.primitive_batchers` before running any vmap check.",
    why="`vmap` fails with `NotImplementedError: Batching rule for '<name>' not implemented`. The same defect is "
        "JXR005 (a warning) under `jaxdiag check`, which cannot know whether the primitive is ever vmapped.",
)
GRAD_WITHOUT_JVP_RULE: Rule[_fields.JXR013] = variant(
    MISSING_JVP_RULE, "JXR013", "grad-without-jvp-rule", "error",
    differs="Reported by `jaxdiag grad`, which was asked to differentiate the primitive: an error there.",
    summary="`jaxdiag grad` was asked to differentiate a primitive that has no JVP rule: `jax.grad`, `jax.jvp` and "
            "`jacfwd` fail.",
    why="Differentiation fails with `NotImplementedError: Differentiation rule for '<name>' not implemented`. The "
        "same defect is JXR006 (a note) under `jaxdiag check`, which cannot know whether the primitive is "
        "differentiated.",
)
GRAD_WITHOUT_TRANSPOSE_RULE: Rule[_fields.JXR014] = variant(
    MISSING_TRANSPOSE_RULE, "JXR014", "grad-without-transpose-rule", "error",
    differs="Reported by `jaxdiag grad`, which was asked for reverse mode: an error there.",
    summary="`jaxdiag grad` was asked to differentiate a primitive whose JVP is linear (it binds the primitive on "
            "the tangent) but that has no transpose rule: `jax.grad` fails.",
    why="Forward mode works, but `jax.grad` fails with `NotImplementedError: Transpose rule (for reverse-mode "
        "differentiation) for '<name>' not implemented`. The same defect is JXR007 (a warning) under "
        "`jaxdiag check`.",
)
PLATFORM_LOWERING_MISSING: Rule[_fields.JXR015] = Rule(
    "JXR015", "platform-lowering-missing", "warning",
    "A platform the project declares (`--platforms`, `platforms` in pyproject.toml, or `platforms` in the "
    "module's `JAXDIAG` entry) has no lowering for the primitive.",
    "Lowers `jax.jit` of the primitive for each declared platform with cross-platform lowering, which needs no "
    "such device: a CPU-only machine can check the CUDA, ROCm and TPU lowerings.",
    "A lowering registered with `platform=\"cpu\"` passes every test on a laptop and CI, and `jax.jit` fails "
    "with `NotImplementedError: MLIR translation rule for primitive '<name>' not found for platform cuda` on the "
    "first GPU. `mlir.lower_fun(impl, ...)` registered without `platform=` serves every platform.",
    "jxr015_bad.py", "jxr015_good.py",
    message="No lowering for a declared platform: {evidence}",
    fix="{fix}",
    depends_on_values=False,
    evidence_from_inputs=False,
)
