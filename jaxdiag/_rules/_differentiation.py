"""JXG: differentiation (primitive JVP/transpose rules, custom_vjp, custom_jvp)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._catalog import X64_ONLY_FIX, X64_ONLY_MESSAGE, Rule

if TYPE_CHECKING:
    from . import _fields

JVP_MISMATCH: Rule[_fields.JXG001] = Rule(
    "JXG001", "jvp-numerical-mismatch", "error",
    "A primitive's JVP rule disagrees with finite differences of its impl.",
    "Compares the JVP rule's tangent with central differences computed in float64 along random directions. Where "
    "the example sits on a kink of the impl (its one-sided differences disagree however short the step: a ReLU "
    "at 0, spikes on their threshold), the rule's value there is a choice, and it is judged beside the kink, on "
    "both sides of it along the same step.",
    "`jax.grad` and `jax.jvp` return wrong derivatives without any error.",
    "jxg001_bad.py", "jxg001_good.py",
    message="{rule} disagrees with finite differences of {fun}'s impl: {details}. {modes} return these wrong "
            "derivatives without any error.",
    fix="Fix the derivative formula in {rule} for {name} (check the chain-rule factor and the sign).",
)
TRANSPOSE_NOT_ADJOINT: Rule[_fields.JXG002] = Rule(
    "JXG002", "transpose-not-adjoint", "error",
    "The transpose rule is not the adjoint of the JVP: `<w, J v> != <J^T w, v>`.",
    "Runs the dot-product test between the linearized JVP and the transpose rule at random `v`, `w`.",
    "Forward mode and reverse mode give different derivatives; `jax.grad` is silently wrong.",
    "jxg002_bad.py", "jxg002_good.py",
    message="{name} is not the adjoint of {rule}: for a step v in {args_names} and a random output cotangent "
            "w, <w, J v> = {fwd:.6g} (JVP rule) but <J^T w, v> = {rev:.6g} (transpose rule), tolerance "
            "{tol:.0e}. Forward and reverse mode give different derivatives; jax.grad is silently wrong.",
    fix="Make {name} apply the transpose of the JVP's linear map (e.g. A.T @ ct for A @ t, the reverse "
        "of a cumsum for a cumsum, a sum over broadcast axes for a broadcast).",
    decision="the transpose formula: jaxdiag measures that the rule is not the adjoint of the JVP but sees the "
             "linear map only numerically, so it cannot write the adjoint",
)
TRANSPOSE_OUTPUT_STRUCTURE: Rule[_fields.JXG003] = Rule(
    "JXG003", "transpose-output-structure", "error",
    "The transpose rule must return one cotangent per primitive argument (None for non-linear ones), each shaped "
    "like that argument.",
    "Calls the transpose rule with `UndefinedPrimal` linear arguments and validates what it returns.",
    "JAX fails with `safe_zip` errors or `Expected cotangent type float32[2] but got float32[]`, naming no rule.",
    "jxg003_bad.py", "jxg003_good.py",
    message="Transpose rule output has the wrong structure: {evidence}",
    fix="{fix}",
    depends_on_values=False,
)
COTANGENT_DTYPE: Rule[_fields.JXG004] = Rule(
    "JXG004", "cotangent-dtype-drift", "error",
    "A cotangent (from a transpose rule or a custom_vjp bwd) has a different dtype than its primal input.",
    "Compares each returned cotangent's dtype with the input's dtype.",
    "JAX does not check cotangent dtypes: `grad` of a float32 input silently comes back float16, or int32 with "
    "its fraction truncated, or fails later with `lax.add requires arguments to have the same dtypes`.",
    "jxg004_bad.py", "jxg004_good.py",
    message="{owner}'s cotangent for {argument} is {got} but {argument} is {want}: JAX does not check cotangent "
            "dtypes, so jax.grad with respect to {argument} silently returns {got}{truncated}.",
    fix="Cast the cotangent in {owner}: `{cast}` (or compute in the input dtype).",
    depends_on_values=False,
)
TRANSPOSE_ASSUMES_LINEAR_ARG: Rule[_fields.JXG005] = Rule(
    "JXG005", "transpose-assumes-linear-arg", "error",
    "The transpose rule assumes which argument is linear and uses an `UndefinedPrimal` as a value.",
    "Calls the transpose rule with each argument in turn undefined (linear).",
    "JAX fails with `Error interpreting argument to <prim> as a JAX value ... UndefinedPrimal`. Branch on "
    "`ad.is_undefined_primal(x)`.",
    "jxg005_bad.py", "jxg005_good.py",
    message="{name} raised {text} when {which} is the linear (undefined) argument: {cause}",
    fix="In {name}, {remedy}",
    depends_on_values=False,
    decision="which argument each branch of the transpose rule treats as linear (branch on ad.is_undefined_primal) "
             "and the cotangent formula of each branch",
)
SYMBOLIC_ZERO_UNHANDLED: Rule[_fields.JXG006] = Rule(
    "JXG006", "symbolic-zero-unhandled", "error",
    "A rule fails when a tangent or cotangent is a symbolic zero (`ad.Zero`, `SymbolicZero`).",
    "Calls the rule with one input's tangent (or one output's cotangent) symbolically zero.",
    "The rule crashes with `unsupported operand type(s) for *: ... and 'Zero'` when only some inputs are "
    "differentiated. Use `ad.instantiate_zeros(t)` or test `type(t) is ad.Zero`.",
    "jxg006_bad.py", "jxg006_good.py",
    message="Symbolic zero not handled: {evidence}",
    fix="{fix}",
    depends_on_values=False,
    decision="whether the rule keeps a symbolic zero symbolic (skips its term, cheaper) or instantiates it (a "
             "zeros array of the primal's shape and dtype, simpler)",
)
JVP_OUTPUT_STRUCTURE: Rule[_fields.JXG007] = Rule(
    "JXG007", "jvp-output-structure", "error",
    "A JVP rule must return `(primal_out, tangent_out)` with tangents of the primal's structure, shape and "
    "tangent dtype.",
    "Validates the pair, the pytree structure, each tangent's shape and dtype against the primal output.",
    "A wrong tangent shape is silently accepted by `jax.jvp` and crashes `grad` with an unrelated `IndexError`; "
    "returning only the tangent is unpacked row by row.",
    "jxg007_bad.py", "jxg007_good.py",
    message="JVP rule output has the wrong structure: {evidence}",
    fix="{fix}",
    depends_on_values=False,
    decision="the tangent's values, which jaxdiag cannot write (they are your derivative); their structure, "
             "shapes and tangent dtypes follow the primal output",
)
VJP_BWD_STRUCTURE: Rule[_fields.JXG010] = Rule(
    "JXG010", "vjp-bwd-structure", "error",
    "A custom_vjp bwd must return a tuple with one cotangent per differentiable positional argument, each shaped "
    "like that argument.",
    "Calls bwd and compares its output structure and shapes with the primal arguments (after `nondiff_argnums`), "
    "read as JAX reads it: a tree prefix (one entry stands for every leaf of its argument's subtree; an entry for "
    "an argument without array leaves, such as an optional `None`, is ignored). A pytree mismatch is reported "
    "only where JAX itself rejects the result when traced.",
    "`grad` fails with a pytree-structure error, or, worse, a mismatched nesting is accepted for one shape and "
    "not another.",
    "jxg010_bad.py", "jxg010_good.py",
    message="custom_vjp bwd output has the wrong structure: {evidence}",
    fix="{fix}",
    depends_on_values=False,
)
VJP_IGNORED_COTANGENT: Rule[_fields.JXG011] = Rule(
    "JXG011", "vjp-ignored-cotangent", "error",
    "custom_vjp bwd ignores the cotangent of an output that depends on the inputs.",
    "Feeds a cotangent on one output at a time and compares bwd with the autodiff/finite-difference reference.",
    "`grad` through that output is silently zero (or missing that term) whenever the output is used.",
    "jxg011_bad.py", "jxg011_good.py",
    message="{bwd} ignores the cotangent of {name} ({leaf_aval}): two different cotangents on {name} alone "
            "give the same gradients, although {name} depends on the inputs ({where}). So jax.grad through "
            "{name} is silently wrong: the gradient of sum({name}) is {parts}.",
    fix="{fix}",
    decision="whether the ignored output is meant to be differentiable (then bwd adds the VJP of its cotangent) or "
             "not (then stop its gradient in the primal)",
)
VJP_FWD_MISMATCH: Rule[_fields.JXG012] = Rule(
    "JXG012", "vjp-fwd-primal-mismatch", "error",
    "custom_vjp fwd must return `(primal_out, residuals)` with `primal_out` equal to the function's output.",
    "Compares fwd's primal output with `f(*args)`: structure, shape, dtype and value. An output whose value "
    "`f` itself does not repeat when called again on the same arguments (a solver's wall-clock time, a call "
    "counter) is not a function of the inputs: its value is not compared.",
    "`value_and_grad` returns fwd's value, not `f`'s; structure or shape differences surface as confusing errors "
    "blamed on bwd.",
    "jxg012_bad.py", "jxg012_good.py",
    message="custom_vjp fwd does not match the function: {evidence}",
    fix="{fix}",
)
VJP_SWAPPED_COTANGENTS: Rule[_fields.JXG013] = Rule(
    "JXG013", "vjp-swapped-cotangents", "error",
    "custom_vjp bwd returns each argument's gradient in another argument's slot.",
    "Matches bwd's cotangents against the reference gradient of every argument.",
    "`grad(f, argnums=0)` silently returns the gradient with respect to another argument.",
    "jxg013_bad.py", "jxg013_good.py",
    message="{bwd} returns the gradients of {name} and {name_2} in each other's slots: with a cotangent on "
            "{out_names}, its entry for {name} is {get_values}, which is the derivative with respect to "
            "{name_2}, and vice versa. jax.grad(f, argnums=...) silently returns the other argument's "
            "gradient.",
    fix="Swap the entries in {bwd}'s return: the tuple is ordered like the primal's positional arguments "
        "({dyn_list}).{corrected}",
)
CUSTOM_DERIVATIVE_MISMATCH: Rule[_fields.JXG014] = Rule(
    "JXG014", "custom-derivative-mismatch", "warning",
    "The custom derivative differs from the numerical derivative of the primal function the way a deliberate "
    "surrogate does (zeroed, clipped or straight-through directions).",
    "Compares the custom VJP/JVP with finite differences in float64 and JAX's autodiff of the undecorated primal. "
    "Every differing element is zero, has the reference's sign and a smaller magnitude that keeps the order of the "
    "magnitudes (a clip never puts a larger derivative below a smaller one), or equals the cotangent/tangent the "
    "rule received, or bwd is steered by an argument the primal ignores "
    "(`optax.scale_gradient`), or the function takes a PRNG key and the difference is no uniform factor while no "
    "verdict over keys is possible (a Monte-Carlo estimator's derivative equals the derivative only in expectation: "
    "averaged over 256 keys, an unbiased one passes and a biased one is JXG024, but only where autodiff of the "
    "primal is the derivative of its expectation, which a primal with jumps rules out); anything else is JXG024 "
    "(an error).",
    "Either a bug, or deliberate (gradient clipping, straight-through estimators, surrogate gradients). If "
    "deliberate, suppress with `# jaxdiag: ignore[JXG014]` on the `def` line.",
    "jxg014_bad.py", "jxg014_good.py",
    message="{owner}'s {derivative} differs from the numerical derivative of {function}: {details}. This may be "
            "intended (gradient clipping, straight-through estimators, surrogate gradients); otherwise "
            "{consequence}.",
    fix="If deliberate, add `# jaxdiag: ignore[JXG014]` to the def line of {owner}{where}; otherwise {correction}.",
    decision="whether the difference is deliberate (a clipped, zeroed or straight-through gradient: then suppress "
             "it) or a bug (then correct the derivative; a flipped sign or a constant factor gets a diff)",
    stated_intent="derivative",
)
CUSTOM_DERIVATIVE_WRONG: Rule[_fields.JXG024] = Rule(
    "JXG024", "custom-derivative-wrong", "error",
    "The custom derivative is wrong on the interior of the domain: off by a factor or a sign where no clipping, "
    "stop-gradient or straight-through estimator explains it.",
    "Compares the custom VJP/JVP element by element with JAX's autodiff of the undecorated primal (or float64 "
    "finite differences). An element is explained by a deliberate surrogate when the custom value is zero "
    "(stop-gradient, clipped region), has the reference's sign and at most its magnitude in the same order "
    "(gradient clipping: hard, soft or by norm, of the value or of the derivative factor), or equals the "
    "cotangent/tangent the rule received (straight-through). Any other differing element, at a point where the "
    "primal is smooth (finite differences stable under a step change, or autodiff of the primal agreeing), is on "
    "the interior: a larger magnitude, the opposite sign, an unrelated value, or smaller magnitudes in reversed "
    "order (`sigmoid(-x)` written for `sigmoid(x)`). On a kink of the primal at the example itself (a ReLU at 0, "
    "an input on a clip's bound) the rule's value is a choice: it is judged beside the kink, on both sides along "
    "the same step, instead. A function that takes a PRNG key is judged on average over "
    "256 keys split from the example's (its rule may be a Monte-Carlo estimator, right only in expectation): the "
    "per-key differences from autodiff of the primal must average to zero within 5 standard errors. The milder "
    "disagreements are JXG014 (a warning).",
    "No gradient surrogate flips a sign or enlarges a derivative: jax.grad and jax.jvp are silently wrong.",
    "jxg024_bad.py", "jxg024_good.py",
    message="{owner}'s {derivative} is wrong: {details}. The difference is not a clipped, zeroed or passed-through "
            "{derivative} (a sign or a factor off where {function} is smooth): {consequence}.",
    fix="Fix {owner}: {correction}; check the sign and the chain-rule factor.",
    decision="the derivative formula, where no flipped sign or constant factor explains the difference (those get "
             "a diff)",
)
NONDIFF_ARGNUMS_MISUSE: Rule[_fields.JXG015] = Rule(
    "JXG015", "nondiff-argnums-misuse", "error",
    "`nondiff_argnums` is misused: an array argument marked non-differentiable, or bwd ignoring that "
    "non-differentiable arguments come first.",
    "Runs grad under `jit` and inspects bwd's failure for its argument order.",
    "An array in `nondiff_argnums` works eagerly and fails under `jit`/`scan` with an `UnexpectedTracerError`; a "
    "bwd with the wrong order multiplies a residual by a function.",
    "jxg015_bad.py", "jxg015_good.py",
    message="nondiff_argnums misused: {evidence}",
    fix="{fix}",
    decision="which arguments are non-differentiable: an array argument leaves nondiff_argnums (its callers and "
             "bwd's signature change) or stays static on purpose",
)
COMPOSITION_MISMATCH: Rule[_fields.JXG016] = Rule(
    "JXG016", "transform-composition-failure", "error",
    "The gradient fails or differs under `jit(grad f)`, `vmap(grad f)` or `grad(vmap f)`.",
    "Compares the composed transformations with the eager gradient. A difference in float32 (or lower) that is gone "
    "when the same compositions run in float64 on the same values is not reported: a decision on a rounding-level "
    "number (a residual against a tolerance the precision barely reaches) flips between programs, while a wrong "
    "rule is wrong in every precision.",
    "A bwd that converts cotangents to NumPy passes an eager test and fails with `TracerArrayConversionError` "
    "under `jit` or `grad(vmap)`.",
    "jxg016_bad.py", "jxg016_good.py",
    message="Gradient fails or differs under a composed transformation: {evidence}",
    fix="{fix}",
    decision="how to write the code that fails or differs under the composed transformation with operations "
             "that compose (jax.numpy in place of host code, loop bounds that stay static): jaxdiag sees the "
             "failure, not the computation you intend",
)
DERIVATIVE_RULE_RAISED: Rule[_fields.JXG017] = Rule(
    "JXG017", "derivative-rule-raised", "error",
    "A derivative rule (fwd, bwd, JVP or transpose) raised an exception.",
    "Calls every rule directly with the inputs JAX would give and reports the user's own error and line.",
    "JAX's traceback runs through its own internals; jaxdiag names the rule and the argument.",
    "jxg017_bad.py", "jxg017_good.py",
    message="Derivative rule failed: {evidence}",
    fix="{fix}",
    depends_on_values=False,
    decision="what the rule computes for the arguments it raised on: its signature and body",
)
DERIVATIVE_RULE_REFUSES: Rule[_fields.JXG025] = Rule(
    "JXG025", "derivative-rule-refuses", "warning",
    "A derivative rule (fwd, bwd, JVP or transpose) refuses with its own `raise` statement: differentiation "
    "fails there on purpose.",
    "Like JXG017, but the exception comes from a `raise` written in the rule's own body, or a "
    "`raise NotImplementedError(...)` in a helper of your own code the rule calls, or a `raise` there whose message "
    "refuses (\"cannot\", \"not supported\"; not from JAX or NumPy, and not an `assert`): the author chose to "
    "refuse differentiation with a message for the user.",
    "`jax.grad` fails with the rule's message wherever JAX perturbs these inputs, which can be the intent (a "
    "value that must never be differentiated) or a limitation to lift.",
    "jxg025_bad.py", "jxg025_good.py",
    message="Derivative rule refuses on purpose: {evidence} The rule raises this itself, with its own `raise` "
            "statement, so the refusal looks deliberate; plain `jax.grad` fails the same way.",
    fix="{fix} If the refusal is intended, say so where the function is documented and suppress this warning "
        "with `# jaxdiag: ignore[JXG025]` on the rule's `def` line.",
    decision="whether to support differentiation there (a derivative formula in place of the raise) or to keep the "
             "refusal on purpose (then suppress the warning)",
)
X64_ONLY_DIFFERENTIATION: Rule[_fields.JXG026] = Rule(
    "JXG026", "x64-only-derivative-defect", "warning",
    "A differentiation defect that shows only with `jax_enable_x64` on: the same check passes on the 32-bit "
    "version of the inputs with x64 off.",
    "When a 64-bit spec (f64, i64, u64, c128) turned x64 on and a differentiation check failed, the target is "
    "checked again on the 32-bit specs (f32, i32, u32, c64) with x64 off; an error that this run does not show is "
    "reported here, with the original rule's code, evidence and fix.",
    "Real for users who enable x64, invisible to everyone else: often a hard-coded float32 in a derivative rule, "
    "so cotangents or tangents come back in the wrong precision.",
    "jxg026_bad.py", "jxg026_good.py",
    message=X64_ONLY_MESSAGE,
    fix=X64_ONLY_FIX,
)
JVP_NOT_LINEAR: Rule[_fields.JXG020] = Rule(
    "JXG020", "jvp-not-linear", "error",
    "The JVP rule's tangent output is not linear in the input tangents.",
    "Tests additivity, homogeneity and zero-in-zero-out at random tangents, and forward against reverse mode; "
    "differences below the rounding of the output's dtype (64 units times the outputs' and tangents' sizes) do not "
    "count: a zero derivative computed by cancellation is rounding, not a nonlinear term.",
    "`jax.jvp` works, but `jax.grad` fails with `Transpose rule ... for 'integer_pow' not implemented` (naming a "
    "lax primitive, not your rule), or, for an affine rule, silently gives a different derivative than `jacfwd`.",
    "jxg020_bad.py", "jxg020_good.py",
    message="JVP rule not linear in the tangents: {evidence}",
    fix="{fix}",
    decision="the linear tangent formula: jaxdiag shows the tangent is not linear in the input tangents but not "
             "which term makes it so",
)
JVP_PRIMAL_MISMATCH: Rule[_fields.JXG021] = Rule(
    "JXG021", "jvp-primal-mismatch", "error",
    "A JVP rule's primal output (custom_jvp rule or primitive JVP rule) differs from the function's output.",
    "Compares the rule's primal output with `f(*args)`: structure, shape, dtype and value.",
    "JAX does not check it: under `jvp`/`grad` the function silently returns a different value than without.",
    "jxg021_bad.py", "jxg021_good.py",
    message="JVP rule's primal differs from the function: {evidence}",
    fix="{fix}",
    decision="which of the two computes the intended value, the function or the rule's primal output; jaxdiag sees "
             "only that they differ",
)
FLOAT0_TANGENT_UNHANDLED: Rule[_fields.JXG022] = Rule(
    "JXG022", "float0-tangent-unhandled", "error",
    "The custom_jvp rule fails on the `float0` tangent JAX passes for an integer or bool argument.",
    "Calls the rule with `float0` tangents for non-float arguments.",
    "Code such as `x * t_n` fails with `UFuncTypeError ... dtype([('float0', 'V')])` once any caller "
    "differentiates the function.",
    "jxg022_bad.py", "jxg022_good.py",
    message="{rule} raised {text}: the tangent of the integer argument(s) {ints} is a float0 array (JAX "
            "passes float0 zeros for integer and bool inputs), and the rule uses it in arithmetic.",
    fix="In {rule}, ignore the tangents of {ints_2} (they are always zero), or mark the argument in "
        "nondiff_argnums.",
    depends_on_values=False,
    decision="whether the integer argument is non-differentiable (mark it in nondiff_argnums, which changes the "
             "rule's signature) or stays a primal argument whose float0 tangent the rule ignores",
)
VJP_DROPPED_ARGUMENT_GRADIENT: Rule[_fields.JXG018] = Rule(
    "JXG018", "vjp-dropped-argument-gradient", "warning",
    "custom_vjp bwd returns None or zeros for an argument the function depends on.",
    "Compares each argument's cotangent with autodiff of the undecorated function and finite differences along "
    "that argument (in the inputs' precision, float64 where that is inconclusive).",
    "Everything upstream of that argument silently gets no gradient (a layer that never trains). Deliberate "
    "only when the argument must not be differentiated; then suppress with `# jaxdiag: ignore[JXG018]`, or say so "
    "in the docstring of bwd, fwd or the function (`teacher → 0`, \"no gradient flows to `mask`\"), which reads "
    "the same.",
    "jxg018_bad.py", "jxg018_good.py",
    message="{bwd} returns {entry} for {text}, but the function depends on {name}{ref_text}: with a "
            "cotangent on {out_names}, finite differences give <w, J v> = {fd_value:.4g} for a step in "
            "{name}. Everything upstream of {name} gets no gradient (e.g. the first layer never trains).",
    fix="Return the VJP with respect to {name} from {bwd}; if {name} is deliberately not differentiated, "
        "say so with jax.lax.stop_gradient in the primal or suppress with `# jaxdiag: ignore[JXG018]` on "
        "the def line of {bwd}.",
    decision="whether the argument is meant to be differentiated (then bwd returns its VJP) or deliberately not "
             "(then stop its gradient in the primal, or suppress the warning)",
)
SECOND_ORDER_MISMATCH: Rule[_fields.JXG019] = Rule(
    "JXG019", "second-order-mismatch", "warning",
    "Second derivatives (grad of grad, jvp of vjp) differ from finite differences of the gradient.",
    "Differentiates the first-order gradient (JAX differentiating your bwd / JVP rule) and compares it with "
    "finite differences of that gradient, autodiff of the undecorated function, and the dot-product test between "
    "grad-of-grad and jvp-of-vjp. The references run in the inputs' precision and are computed again in float64 "
    "where they disagree or are inconclusive (rounding the gradient alone moves its differences by more than the "
    "tolerance: a large background term): only a mismatch the float64 references confirm is reported. Entries "
    "where the gradient has a kink or a jump at the point itself (its one-sided differences do not shrink with "
    "the step: a binary input on its threshold) have no second derivative and are left out; where the gradient "
    "does not move at all along the step, the finding says the rule's second derivative is a surrogate's.",
    "Hessians, Newton steps and meta-learning silently use a wrong second derivative, e.g. when bwd hides a "
    "dependence behind `stop_gradient` or NumPy. A mismatch with the numerical derivative may be deliberate "
    "(hence a warning); a failure or an inconsistency between the two modes is JXG023, an error.",
    "jxg019_bad.py", "jxg019_good.py",
    message="Second derivatives differ from the numerical ones: {evidence}",
    fix="{fix}",
    decision="how the rule itself is differentiated: written with differentiable jax.numpy operations, or given "
             "its own custom rule for the next order",
)
# Not a variant of JXG019: a failure is another defect than a mismatch, and a suppressed deliberate mismatch
# (`# jaxdiag: ignore[JXG019]`, which that rule's fix suggests) must not hide second derivatives that fail.
SECOND_ORDER_FAILURE: Rule[_fields.JXG023] = Rule(
    "JXG023", "second-order-failure", "error",
    "Second derivatives fail (grad of grad, jvp of vjp), or the two modes disagree with each other.",
    "Differentiates the first-order gradient (JAX differentiating your bwd / JVP rule) in both modes and runs the "
    "dot-product test between grad-of-grad and jvp-of-vjp. Where one mode is NaN/inf, the `jnp.where` in the rule "
    "that hides a NaN/inf case at these inputs is named (reverse mode multiplies that case's derivative by 0); NaN in "
    "both modes with no finite reference (a singular point, sqrt's at 0) is not reported.",
    "Hessians, `jax.hessian` and Newton steps fail or are inconsistent. Under `jaxdiag check` a failure (not an "
    "inconsistency) is only a note, JXN008: many rules are never differentiated twice.",
    None, None,
    message="Second derivatives fail or disagree: {evidence}",
    fix="{fix}",
)
DERIVATIVE_NONFINITE: Rule[_fields.JXG027] = Rule(
    "JXG027", "derivative-nonfinite", "error",
    "A derivative rule returns NaN or inf where the reference derivative (autodiff of the primal, finite "
    "differences) is finite.",
    "Compares every entry of the rule's cotangent/tangent with JAX's autodiff of the undecorated primal (or the "
    "finite differences along random directions): an entry that is NaN/inf on the rule's side only is a "
    "defect, never excused as a numerical corner. Also calls JVP rules with a symbolic-zero tangent on each input "
    "and transpose rules / bwds with a symbolic-zero cotangent on each output in turn, and probes the boundary of "
    "the declared domain (0 for log, sqrt, pow; the edge of `@lo..hi`): a zero that was instantiated and then "
    "multiplied by an infinite partial derivative (`0 * inf = NaN`) shows up here. A custom_jvp or primitive JVP "
    "rule is also compared with its own reverse mode, on the draw and on the edge: where `jax.jvp` is finite and "
    "`jax.grad` is not, the `jnp.where` that hides an infinite case from forward mode (`jnp.where(x > 0, t / (2 * "
    "y), 0.0)` at x = 0) is named, read off the rule's program at those inputs.",
    "One NaN entry in a gradient poisons every parameter after the next optimizer step; a kernel that leaves part of "
    "its output buffer unwritten, or a rule that densifies a symbolic zero, does this silently.",
    "jxg027_bad.py", "jxg027_good.py",
    message="{owner}'s {derivative} is NaN/inf where {reference} is finite: {details}. {consequence}.",
    fix="{fix}",
    decision="how the rule treats the entries where it gives NaN or inf: a formula safe at every entry (jnp.where "
             "on the inputs, not on the outputs) or a symbolic zero kept symbolic",
)
REFERENCE_NONFINITE: Rule[_fields.JXG028] = Rule(
    "JXG028", "reference-nonfinite", "info",
    "The reference derivative (autodiff of the undecorated primal) is NaN/inf where the custom rule is finite; "
    "those entries were compared with finite differences only.",
    "Notes the entries where JAX's autodiff of the primal is not finite (the `jnp.where(x > 0, log(x), 0)` trap, "
    "a `sqrt` at 0) while the rule's value is: often the reason the custom rule exists.",
    "Not a defect: it says which part of the check rests on finite differences alone.",
    "jxg028_bad.py", "jxg028_good.py",
    message="Autodiff of {function} gives NaN/inf at {count} of {size} entries of the {derivative} for {name} "
            "where {owner} is finite (e.g. index {index}: autodiff {ref_value}, {owner} {got_value}); those "
            "entries were compared with finite differences only.",
    fix="Nothing to fix if {owner} exists to avoid the NaN of the primal's autodiff.",
    decision="whether the custom rule exists to avoid the primal's non-finite autodiff (then nothing changes) or "
             "the primal should be differentiable there",
)
SOLVE_NOT_INVERSE: Rule[_fields.JXG029] = Rule(
    "JXG029", "solve-not-inverse", "error",
    "The `solve` given to `lax.custom_linear_solve` does not invert its `matvec`.",
    "Applies the traced `solve` to the call's own right-hand side and to a random one, then `matvec` to the "
    "result, and compares with the right-hand side (relative residual, float64 arithmetic on the outputs).",
    "The gradient of `custom_linear_solve` is derived assuming `matvec(solve(matvec, b)) == b` (JAX does not check "
    "it): with a `solve` off by a factor, an unconverged iteration or another system, jax.grad is silently wrong "
    "with respect to everything matvec closes over.",
    "jxg029_bad.py", "jxg029_good.py",
    message="{solve} does not invert {matvec} in custom_linear_solve: {evidence}. The gradient assumes "
            "matvec(solve(matvec, b)) == b, so jax.grad through this solve is silently wrong.",
    fix="Make {solve} return x with {matvec}(x) == b for every right-hand side b{hint}.",
    decision="a solve that inverts matvec: another solver, which jaxdiag cannot write",
)
TRANSPOSE_SOLVE_NOT_INVERSE: Rule[_fields.JXG030] = Rule(
    "JXG030", "transpose-solve-not-inverse", "error",
    "The `transpose_solve` given to `lax.custom_linear_solve` does not invert the transpose of its `matvec`.",
    "Applies the traced `transpose_solve` to random right-hand sides c and the true transpose of `matvec` "
    "(`jax.linear_transpose`) to the result, and compares with c.",
    "Reverse mode (`jax.grad`, `jax.vjp`) of `custom_linear_solve` calls `transpose_solve` on the cotangent: one "
    "that solves with `matvec` instead of its transpose (a `solve` reused on a non-symmetric matrix) gives a "
    "silently wrong gradient while forward mode is right.",
    "jxg030_bad.py", "jxg030_good.py",
    message="{solve} does not invert the transpose of {matvec} in custom_linear_solve: {evidence}. jax.grad and "
            "jax.vjp through this solve are silently wrong (forward mode uses solve and stays right).",
    fix="{fix}",
    decision="a transpose_solve that solves with the transposed matrix (its first argument is the transposed "
             "matvec), or symmetric=True if the matrix is in fact symmetric",
)
SYMMETRIC_MATVEC_NOT_SYMMETRIC: Rule[_fields.JXG031] = Rule(
    "JXG031", "symmetric-solve-not-symmetric", "error",
    "`lax.custom_linear_solve(..., symmetric=True)` with a `matvec` that is not symmetric.",
    "Runs the dot-product test <u, matvec(v)> == <matvec(u), v> on random u, v.",
    "With `symmetric=True` JAX uses `matvec` as its own transpose and `solve` as `transpose_solve`: for a "
    "non-symmetric matrix, reverse-mode gradients are silently wrong.",
    "jxg031_bad.py", "jxg031_good.py",
    message="custom_linear_solve is called with symmetric=True but {matvec} is not symmetric: {evidence}. Reverse "
            "mode then solves with the matrix instead of its transpose, so jax.grad is silently wrong.",
    fix="Drop `symmetric=True` and pass a `transpose_solve` that solves with the transposed matrix (its first "
        "argument is the transposed matvec), or make {matvec} symmetric.",
    decision="whether the matrix is meant to be symmetric (then make matvec symmetric) or not (then drop "
             "symmetric=True and pass a transpose_solve)",
)
ROOT_SOLVE_INCONSISTENT: Rule[_fields.JXG032] = Rule(
    "JXG032", "custom-root-inconsistent", "error",
    "`lax.custom_root`'s `solve` does not return a root of `f`, or its `tangent_solve` does not solve the "
    "linearized system `g(x) = y`.",
    "Runs the traced `solve` from the call's initial guess and evaluates `f` there; runs `tangent_solve` on the "
    "linearization of `f` at that root (as JAX does) with random right-hand sides and applies the linearization "
    "to the result.",
    "The gradient of `custom_root` comes from the implicit function theorem at the point `solve` returns, with "
    "`tangent_solve` inverting the Jacobian there. JAX checks neither: a `tangent_solve` with a wrong sign or "
    "scale, or one valid only for scalar problems, gives silently wrong gradients.",
    "jxg032_bad.py", "jxg032_good.py",
    message="custom_root's {role} {name} is inconsistent with f: {evidence}. The implicit-function gradient "
            "assumes it, so jax.grad through this root is silently wrong.",
    fix="{fix}",
    decision="a solve that returns a root, or a tangent_solve that solves the linearized system it is given: "
             "another solver, which jaxdiag cannot write",
)
FLAT_PRIMAL_SURROGATE: Rule[_fields.JXG033] = Rule(
    "JXG033", "flat-primal-surrogate-derivative", "warning",
    "A custom derivative is nonzero where the primal is flat (its autodiff, or a primitive's finite differences, "
    "exactly zero): a surrogate by construction, such as a score-function (REINFORCE) estimator, a straight-through "
    "gradient of spikes or a relaxed gradient of sampling, rounding or argmax.",
    "Compares the custom VJP/JVP with JAX's autodiff of the undecorated primal. When autodiff gives exactly zero for "
    "an argument (the primal depends on it only through sampling, comparisons, rounding or integer casts) and the "
    "rule's derivative there is finite and nonzero, the rule cannot be the primal's derivative and is not meant to "
    "be: it is reported here instead of as JXG024. A primitive's JVP is judged the same way where finite differences "
    "of its impl are exactly zero at every step (an event kernel reading `spikes > 0`), instead of as JXG001. A "
    "derivative that differs from a nonzero autodiff (a sign, a "
    "constant factor, another formula) stays JXG024.",
    "Deliberate when the rule implements an estimator or a surrogate (the gradient of an expectation estimated "
    "from samples, a straight-through or sigmoid relaxation); a bug when the primal was meant to be "
    "differentiable and lost its dependence on the argument. If intended, say so at the rule with "
    "`# jaxdiag: intended[JXG033]` on its `def` line: that silences this finding only.",
    "jxg033_bad.py", "jxg033_good.py",
    message="{owner}'s {derivative} for {name} is nonzero ({got}) where {function} is flat in {name}: {reference} "
            "gives exactly 0 (it depends on {name} only through sampling, comparisons or rounding). "
            "So {owner} is a surrogate by construction, as a score-function (REINFORCE) estimator or a relaxed "
            "gradient is; if that is not the intent, {function} lost its differentiable dependence on {name} and "
            "jax.grad returns a derivative the primal does not have.",
    fix="If {owner} implements an estimator or a surrogate on purpose, add `# jaxdiag: intended[JXG033]` to its def "
        "line{where}; otherwise make {function} depend on {name} through differentiable operations.",
    decision="whether the derivative is an estimator or a surrogate on purpose (then mark the rule intended) or "
             "the primal lost a dependence it should have (then make it differentiable)",
    stated_intent="derivative",
)
JVP_IGNORES_ARGUMENT: Rule[_fields.JXG034] = Rule(
    "JXG034", "jvp-ignores-argument", "warning",
    "A JVP rule (a custom_jvp's or a primitive's) ignores one argument's tangent entirely although the function "
    "depends on that argument.",
    "Steps one argument at a time: when every step in one argument gives an exactly zero tangent output while finite "
    "differences (or autodiff of the undecorated primal) show the function changing, and the other arguments' "
    "tangents are right, the rule treats that argument as a constant. Reported here rather than as JXG014, so the "
    "marker for this reading silences nothing else. Second derivatives are then checked with that argument held "
    "constant (its lost dependence would show again there).",
    "Deliberate for a hyperparameter nobody differentiates (a threshold, a temperature, a step count held as a "
    "float); a bug when gradients with respect to it are wanted: they are silently zero. A sentence of the "
    "rule's or the function's docstring saying so (\"`scale` is treated as a constant\", `dscale = 0`) reads as "
    "the marker. The custom_vjp counterpart is JXG018.",
    "jxg034_bad.py", "jxg034_good.py",
    message="{rule} ignores the tangent of {name}: a step in {name} gives a zero tangent of {out_name}, but "
            "{function} depends on {name} ({reference} gives {want}). Either {name} is deliberately treated as a "
            "constant (a hyperparameter), or jax.jvp and jax.grad with respect to {name} are silently zero.",
    fix="If {name} is never differentiated on purpose, make that explicit: {explicit}add "
        "`# jaxdiag: intended[JXG034]` to the def line of {rule}{where}; otherwise add the term for {name}'s tangent.",
    decision="whether the argument is meant to be differentiated (then add its tangent term) or not (then "
             "nondiff_argnums or the intended marker)",
)
JVP_CONSTANT_OUTPUT: Rule[_fields.JXG037] = Rule(
    "JXG037", "jvp-constant-output", "warning",
    "A JVP rule gives one output an exactly zero tangent for every step in every argument although that output "
    "changes with them: it holds the output constant (an auxiliary output: residuals, statistics, a diagnostic).",
    "Steps each argument along each seeded direction: when one output's tangent is exactly zero every time while "
    "finite differences (or autodiff of the undecorated primal) show that output changing, and the other outputs' "
    "tangents are right, the rule treats that output as a constant. Reported here rather than as JXG014, so the "
    "marker for this reading silences nothing else. The custom_vjp counterpart is a bwd that ignores an output's "
    "cotangent (JXG011).",
    "Deliberate for an output nobody differentiates (a softmax's running maximum and normaliser returned for a "
    "later pass, a solver's residual norm); a bug when it is differentiated: jax.grad and jax.jvp through it are "
    "silently zero. `jax.lax.stop_gradient` on that output in the function says the same thing to JAX itself.",
    "jxg037_bad.py", "jxg037_good.py",
    message="{rule} holds {out_name} constant: a step in any argument gives it a zero tangent, but {function}'s "
            "{out_name} changes with them ({reference} gives {want} for a step in {name}). Either {out_name} is an "
            "auxiliary output deliberately not differentiated, or jax.jvp and jax.grad through {out_name} are "
            "silently zero.",
    fix="If {out_name} is never differentiated on purpose, say so in {function} itself: return "
        "`jax.lax.stop_gradient(...)` for it (autodiff of the function then agrees with the rule), or add "
        "`# jaxdiag: intended[JXG037]` to the def line of {rule}{where}; otherwise compute its tangent.",
    decision="whether the output is meant to be differentiated (then its tangent term) or not (then stop_gradient "
             "in the function, or the intended marker)",
)
BWD_NOT_LINEAR: Rule[_fields.JXG036] = Rule(
    "JXG036", "bwd-not-linear", "error",
    "A custom_vjp's bwd is not linear in the cotangent: part of a gradient it returns does not scale with the "
    "cotangent (a term not multiplied by `g`).",
    "Calls bwd as JAX does, with the residuals from fwd and a cotangent of zeros on every output: a linear map gives "
    "zeros, so any finite nonzero entry is a term that ignores the cotangent. The evidence also gives bwd at a "
    "random cotangent and at twice it.",
    "`jax.grad` is right only when the cotangent happens to be 1: a weighted loss, a chain rule, a sum over a batch "
    "or an output the caller does not use (JAX passes it zeros) all get a wrong gradient, silently. The numbers "
    "look plausible, so it survives tests that differentiate the function alone.",
    "jxg036_bad.py", "jxg036_good.py",
    message="{bwd} is not linear in the cotangent: {evidence}",
    fix="{fix}",
    decision="which term of the returned gradient is missing its factor of the cotangent",
)
