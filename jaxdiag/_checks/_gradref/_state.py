"""The subject's arguments and outputs: `Arg`, `GradMemo` and `GradState` (built once per subject, cached in
`ctx.cache`), `state(ctx)` and `require` (skip a check an earlier finding blocks).
"""

from __future__ import annotations

import enum
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import jax
import numpy as np

from ... import _compat
from ... import _rules as rules
from ..._core import _locate
from ..._loading._operand_names import is_tolerance
from .._base import Context, Options, SkipCheck, Subject
from ._compiled import CompiledGradient
from ._fd import FiniteDifferences
from ._gauge import Gauges, gauges
from ._source import argument_names, error_text, output_names
from ._values import all_finite, aval_text, device_zeros, is_inexact, quiet_call, to_f64

# ---------------------------------------------------------------------------------------------------------------
# The subject's arguments and outputs
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Arg:
    pos: int
    name: str
    value: Any  # a jax Array for array arguments, the fixed Python value otherwise
    static: bool  # not an array (an int axis, a callable): never perturbed
    nondiff: bool  # listed in nondiff_argnums
    unperturbed: bool = False  # JAX never perturbs it at the rule's call site in its function (Subject.unperturbed)
    received: tuple[np.ndarray, ...] = ()  # the tangents its function hands the rule here (Subject.received_tangents)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(np.shape(self.value))

    @property
    def dtype(self) -> np.dtype:
        return np.asarray(self.value).dtype if self.static else np.dtype(self.value.dtype)

    @property
    def diff(self) -> bool:
        """Perturbed by the checks: a floating (or complex) array outside nondiff_argnums that JAX can perturb."""
        return not self.static and not self.nondiff and not self.unperturbed and is_inexact(self.dtype)

    @property
    def text(self) -> str:
        return f"{self.name} ({aval_text(self.value)})" if not self.static else f"{self.name} (= {self.value!r})"


# ---------------------------------------------------------------------------------------------------------------
# What the grad checks compute once and share
# ---------------------------------------------------------------------------------------------------------------


class NotComputed(enum.Enum):
    """The value of a `GradMemo` entry nothing has computed yet: distinct from a computed `None` (a reference VJP
    that does not run is known to be None and is not tried again)."""

    NOT_COMPUTED = "not computed yet"


NOT_COMPUTED = NotComputed.NOT_COMPUTED

# An array as the checks hold it: a jax Array (what JAX hands the rules) or a NumPy array (references in float64).
Array = Union[jax.Array, np.ndarray]
# A key of the custom JVP rule's tangent outputs (`_custom_jvp._call.T`): ("j", d) joint direction d,
# ("a", pos, d) argument `pos` alone, ("z", pos) `pos` alone with symbolic zeros for the others.
TangentKey = tuple[Union[str, int], ...]
# An eager pullback of the subject: cotangent leaves -> one cotangent per differentiable argument (None if it raised)
Pullback = Callable[[Sequence[Array]], Union[list[np.ndarray], None]]


@dataclass(slots=True)
class GradMemo:
    """What one grad check computes and the others of the same subject reuse, one typed field per entry. An entry
    that a check leaves for others (rather than one any check computes on first use) is declared, as "grad.FIELD",
    in `@check(needs=/reads=/provides=)`: the engine runs the checks providing it before those reading it."""

    # lazily computed by GradState itself, whichever check asks first
    out: object = NOT_COMPUTED  # the subject's output pytree at the example
    out_leaves: list[Array] | NotComputed = NOT_COMPUTED
    out_names: list[str] | NotComputed = NOT_COMPUTED
    cotangents: dict[int, list[Array]] = field(default_factory=dict)  # seeded output cotangents, by set
    directions: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)  # (arg position, d) -> float64
    received: dict[int, dict[int, np.ndarray]] = field(default_factory=dict)  # d -> arg position -> direction
    tangents: dict[tuple[int, int], Array] = field(default_factory=dict)  # (arg position, d) -> in its dtype
    fd: FiniteDifferences | NotComputed = NOT_COMPUTED
    gradient: CompiledGradient | NotComputed = NOT_COMPUTED  # G(x) = J(x)^T cotangents(0), compiled
    reference_vjp: Callable[..., object] | None | NotComputed = NOT_COMPUTED  # None: autodiff of fun fails
    reference_jvp_error: BaseException | None = None  # JAX's JVP of fun failed once: not tried again
    zero_cotangents: dict[int, object] = field(default_factory=dict)  # output k -> the zero bwd receives there
    eager_vjp: tuple[Pullback | None, BaseException | None] | NotComputed = NOT_COMPUTED  # jax.vjp of the subject
    eager_cotangents: dict[int, list[np.ndarray] | None] = field(default_factory=dict)  # id(ws) -> its pullback
    eager_cotangent_errors: dict[int, BaseException | None] = field(default_factory=dict)
    jvp_tangents: dict[TangentKey, list[np.ndarray] | None] = field(default_factory=dict)  # None: the rule raised
    jvp_programs: dict[tuple[int, ...], Callable[..., object]] = field(default_factory=dict)  # by tangent positions
    gauges: Gauges | NotComputed = NOT_COMPUTED  # eigenvectors' and singular vectors' gauge directions
    # produced by a check
    fwd: tuple[object, object] | NotComputed = NOT_COMPUTED  # vjp-fwd: fwd's (primal_out, residuals)
    bwd_full: dict[int, object] | NotComputed = NOT_COMPUTED  # vjp-bwd-structure: bwd's entries by position
    eager_grad: list[object] | NotComputed = NOT_COMPUTED  # the eager gradient at `cotangents(0)` (bwd, transpose)
    reported_errors: set[str] = field(default_factory=set)  # first lines of errors a finding already explains
    # why second derivatives say nothing here, set by a first-order reference check: its derivative is already an
    # error (second derivatives of a wrong gradient are wrong too, a consequence rather than another defect), or it
    # could not be judged on these inputs (grad-second-order skips, saying this)
    second_order_moot: str = ""
    # arguments a JVP rule treats as constants (JXG034): second derivatives are taken with them held, or their
    # ignored dependence shows again in the gradient's derivative, as a mismatch in the other arguments
    second_order_held: set[int] = field(default_factory=set)
    reverse_nonfinite: bool = False  # jvp-reverse reported a NaN cotangent (JXG027): the edge probe adds nothing
    bwd_not_linear: bool = False  # vjp-linearity reported JXG036: the cotangent probes would restate it
    reverse_only: object = None  # jvp-rule-output: the tangent primitive JAX can only transpose (JXN019)


def spec_positions(subject: Subject, count: int) -> list[int]:
    """The positional argument each of the subject's first `count` specs fills: its static arguments hold the other
    positions."""
    return [i for i in range(count + len(subject.static_args)) if i not in subject.static_args]


class GradState:
    """Everything the grad checks share about one subject; built lazily, cached in `ctx.cache.grad`. Every attribute
    is declared here and set in `__init__` (`__slots__`: none can be added later); what checks compute and share is
    in `memo`."""

    __slots__ = ("subject", "kind", "options", "rng", "blocked", "memo", "fun", "fwd", "bwd", "jvp_rule", "nondiff",
                 "symbolic_zeros", "args", "diff", "dyn")

    subject: Subject
    kind: str
    options: Options
    rng: np.random.Generator  # the grad checks' shared draws (directions, cotangents), memoised in `memo`
    # rule (or a named blocker no rule stands for) -> why later checks cannot trust the rules' output
    blocked: dict[rules.Rule | str, str]
    memo: GradMemo
    fun: Callable[..., object] | None  # the undecorated primal of a custom_vjp/custom_jvp (a primitive has none)
    fwd: Callable[..., object] | None
    bwd: Callable[..., object] | None
    jvp_rule: Callable[..., object] | None
    nondiff: tuple[int, ...]
    symbolic_zeros: bool
    args: list[Arg]  # every positional argument
    diff: list[Arg]  # the ones the checks perturb (`Arg.diff`)
    dyn: list[Arg]  # the ones outside nondiff_argnums: one bwd cotangent each (static or not)

    def __init__(self, ctx: Context):
        subject = ctx.subject
        self.subject = subject
        self.kind = subject.kind
        self.options = ctx.options
        self.rng = np.random.default_rng(zlib.crc32(f"{ctx.options.seed}:{subject.seed_key}:grad".encode()))
        self.blocked = {}
        self.memo = GradMemo()
        self.fun, self.fwd, self.bwd, self.jvp_rule = None, None, None, None
        self.nondiff, self.symbolic_zeros = (), False  # a primitive has no `fun`: the checks reading it skip it
        obj = subject.obj
        if self.kind == "custom_vjp":
            self.fun, self.fwd, self.bwd, self.nondiff, self.symbolic_zeros = _compat.custom_vjp_parts(obj)
        elif self.kind == "custom_jvp":
            self.fun, self.jvp_rule, self.nondiff, self.symbolic_zeros = _compat.custom_jvp_parts(obj)
        self.args = self._arguments(ctx)
        self.diff = [a for a in self.args if a.diff]
        self.dyn = [a for a in self.args if not a.nondiff]

    def _arguments(self, ctx: Context) -> list[Arg]:
        subject = ctx.subject
        arrays = [_compat.device_array(x) for x in ctx.example()]
        full = subject.full_args(arrays) if subject.static_args else tuple(arrays)
        if self.fun is not None:
            full = _compat.resolve_positional(self.fun, full)  # defaults of nondiff parameters (log_ndtr)
        static_pos = set(subject.static_args) | set(range(len(arrays) + len(subject.static_args), len(full)))
        names = argument_names(self.fun if self.fun is not None else _name_source(subject), len(full))
        array_pos = spec_positions(subject, len(arrays))
        unperturbed = {array_pos[k] for k in subject.unperturbed if k < len(array_pos)}
        # a tolerance is the algorithm's setting: held constant, as every caller holds it (`_operand_names`)
        unperturbed |= {i for i, name in enumerate(names) if is_tolerance(name)}
        received = {array_pos[k]: tuple(ts) for k, ts in subject.received_tangents.items() if k < len(array_pos)}
        return [Arg(i, names[i], v, i in static_pos or not hasattr(v, "dtype"), i in self.nondiff,
                    i in unperturbed, received.get(i, ())) for i, v in enumerate(full)]

    # ---- calling ------------------------------------------------------------------------------------------

    def values(self, replace: dict[int, Any] | None = None) -> list[Any]:
        replace = replace or {}
        return [replace.get(a.pos, a.value) for a in self.args]

    def call_target(self, values: Sequence[Any]) -> Any:
        """The subject itself (the custom_* object, `prim.bind`, the function) on full positional values."""
        if self.kind == "primitive":
            return self.subject.obj.bind(*values, **self.subject.params)
        return self.subject.obj(*values, **self.subject.keywords)

    def call_primal(self, values: Sequence[Any]) -> Any:
        """The undecorated primal where there is one (custom_*.fun), the subject otherwise."""
        return self.fun(*values) if self.fun is not None else self.call_target(values)

    def diff_fn(self, call: Callable[[Sequence[Any]], Any], values: Sequence[Any] | None = None
                ) -> Callable[..., Any]:
        """`call` as a function of the differentiable arguments only, for jax.vjp/jvp/grad: the others fixed at the
        example's values, or at `values` (full positional values other than the state's own: an argument put on the
        edge of its domain, the example moved beside a kink)."""
        positions = [a.pos for a in self.diff]
        fixed = list(self.values() if values is None else values)

        def fn(*diffs: Any) -> Any:
            full = list(fixed)
            for pos, d in zip(positions, diffs):
                full[pos] = d
            return call(full)

        return fn

    def target_at(self, values: Sequence[Any]) -> Callable[..., Any]:
        """The subject as a function of the differentiable arguments, the others fixed at `values`."""
        return self.diff_fn(self.call_target, values)

    @property
    def diff_values(self) -> list[Any]:
        return [a.value for a in self.diff]

    # ---- primal output --------------------------------------------------------------------------------------

    @property
    def out(self) -> Any:
        """The subject's output at the example (the custom_* function's primal; the primitive's bind)."""
        if self.memo.out is NOT_COMPUTED:
            # custom_*: the undecorated primal is exactly what an eager call of the object computes, minus the
            # custom-call machinery
            out, exc = quiet_call(self.call_primal, self.values())
            if exc is not None:
                raise SkipCheck(f"{self.subject.label} fails on the example inputs: {error_text(exc)}")
            other = next((x for x in jax.tree_util.tree_leaves(out)
                          if not hasattr(x, "dtype") and not isinstance(x, (bool, int, float, complex))), None)
            if other is not None:  # a function that returns a function (a factory's product that builds another)
                raise SkipCheck(f"{self.subject.label} returns {type(other).__name__} {_short(other)}, not arrays: "
                                "there is nothing to differentiate")
            self.memo.out = out
        return self.memo.out

    @property
    def out_leaves(self) -> list[Array]:
        if self.memo.out_leaves is NOT_COMPUTED:  # Python scalars in the output become arrays (they have no dtype)
            self.memo.out_leaves = [x if hasattr(x, "dtype") else _compat.device_array(x)
                                    for x in jax.tree_util.tree_leaves(self.out)]
        return self.memo.out_leaves

    @property
    def out_names(self) -> list[str]:
        if self.memo.out_names is NOT_COMPUTED:
            self.memo.out_names = output_names(self.fun if self.fun is not None else _name_source(self.subject),
                                               self.out)
        return self.memo.out_names

    def out_diff(self, k: int) -> bool:
        return is_inexact(np.dtype(self.out_leaves[k].dtype))

    # ---- seeded cotangents and directions -------------------------------------------------------------------

    def cotangents(self, which: int = 0) -> list[Any]:
        """Random cotangent leaves for the outputs (float0 zeros for integer outputs); `which` picks a set."""
        memo = self.memo.cotangents
        if which not in memo:
            drawn = [self._random_like(leaf) if self.out_diff(k) else None for k, leaf in enumerate(self.out_leaves)]
            drawn = [np.zeros_like(w) if w is not None and k in self.unread else w for k, w in enumerate(drawn)]
            if self.gauges.directions:  # blind to the vectors' norms and phases, which no derivative fixes (`_gauge`)
                drawn = [None if w is None else b.astype(w.dtype) for w, b in zip(drawn, self.gauges.blind(drawn))]
            # jax Arrays, as JAX passes them: NumPy arrays promote differently (2.0 * a bf16 ndarray is float64)
            memo[which] = [_compat.float0_zeros(leaf.shape) if w is None else _compat.device_array(w)
                           for w, leaf in zip(drawn, self.out_leaves)]
        return memo[which]

    @property
    def gauges(self) -> Gauges:
        """The gauge directions of outputs holding eigenvectors or singular vectors of an argument (`_gauge`)."""
        if isinstance(self.memo.gauges, NotComputed):
            self.memo.gauges = gauges([a.value for a in self.diff], self.out_leaves)
        return self.memo.gauges

    @property
    def unread(self) -> frozenset[int]:
        """Outputs the rule's call site never reads (`Subject.unread_outputs`): a primitive's, by position."""
        return self.subject.unread_outputs if self.kind == "primitive" else frozenset()

    def comparable(self, tangents: list[Any]) -> list[Any]:
        """Output tangents as the rule's and the reference's are compared: less their parts along every gauge
        direction, and zero on the outputs the call site never reads."""
        if self.unread:
            tangents = [np.zeros_like(to_f64(t)) if k in self.unread and t is not None else t
                        for k, t in enumerate(tangents)]
        if not self.gauges.directions:
            return tangents
        return self.gauges.tangent_free([to_f64(t) if k in self.gauges.vectors and t is not None else t
                                         for k, t in enumerate(tangents)])

    def direction(self, arg: Arg, d: int) -> np.ndarray:
        """Direction `d` for `arg` in float64: normal entries scaled by max(1, |x|), so a step stays relative."""
        memo = self.memo.directions
        if (arg.pos, d) not in memo:
            v = to_f64(self._random_like(arg.value)) * np.maximum(1.0, np.abs(to_f64(arg.value)))
            if arg.received:  # inside the span of what its function gives it
                v = self._received_direction(arg, d)
            # rounded to the argument's dtype: the tangent a rule receives is exactly this direction
            memo[arg.pos, d] = to_f64(v.astype(arg.dtype))
        return memo[arg.pos, d]

    def _received_direction(self, arg: Arg, d: int) -> np.ndarray:
        """Direction `d` in the span of the tangents the rule receives: one random real combination (real keeps a
        complex structure such as Hermitian) shared by every argument, so tangents the function ties stay tied, at
        the size of a random direction (`max(1, |x|)` per entry)."""
        memo = self.memo.received
        if d not in memo:
            holders = [a for a in self.args if a.received]
            coefficients = self.rng.standard_normal(len(holders[0].received))
            raw = {a.pos: sum(c * to_f64(t) for c, t in zip(coefficients, a.received)) for a in holders}
            size = np.sqrt(sum(float(np.sum(np.abs(v) ** 2)) for v in raw.values()))
            want = np.sqrt(sum(float(np.sum(np.maximum(1.0, np.abs(to_f64(a.value))) ** 2)) for a in holders))
            memo[d] = {pos: np.asarray(v) * (want / size if size > 0 else 1.0) for pos, v in raw.items()}
        return memo[d][arg.pos]

    def _random_like(self, x: Any) -> np.ndarray:
        shape, dtype = tuple(np.shape(x)), np.dtype(x.dtype)
        value = self.rng.standard_normal(shape)
        if dtype.kind == "c":
            value = value + 1j * self.rng.standard_normal(shape)
        return np.asarray(value).astype(dtype)

    def tangent(self, arg: Arg, d: int) -> Any:
        """Direction `d` of `arg` in the argument's own dtype (what a JVP rule receives)."""
        memo = self.memo.tangents
        if (arg.pos, d) not in memo:
            memo[arg.pos, d] = _compat.device_array(self.direction(arg, d).astype(arg.dtype))
        return memo[arg.pos, d]

    def zero_tangent(self, arg: Arg) -> Any:
        """The zero tangent JAX passes a custom JVP rule for an argument it does not perturb: zeros of the argument's
        own dtype for a floating one (also one left unperturbed at its call site), float0 for integers and bools."""
        if not arg.static and is_inexact(arg.dtype):
            return device_zeros(arg.shape, arg.dtype)
        return _compat.float0_zeros(arg.shape)

    # ---- finite differences -----------------------------------------------------------------------------------

    @property
    def fd(self) -> "FiniteDifferences":
        if self.memo.fd is NOT_COMPUTED:
            self.memo.fd = FiniteDifferences(self)
        return self.memo.fd

    @property
    def gradient(self) -> CompiledGradient:
        if self.memo.gradient is NOT_COMPUTED:
            self.memo.gradient = CompiledGradient(self)
        return self.memo.gradient

    # ---- autodiff of the undecorated primal ------------------------------------------------------------------

    def reference_vjp(self) -> Callable[..., object] | None:
        """JAX's VJP of the undecorated primal (custom_*.fun) at the example, or None where it does not run."""
        known = self.memo.reference_vjp
        if not isinstance(known, NotComputed):
            return known
        found: Callable[..., object] | None = None
        if self.fun is not None and self.diff:
            res, exc = quiet_call(jax.vjp, self.diff_fn(self.call_primal), *self.diff_values)
            if exc is None:
                found = res[1]
        self.memo.reference_vjp = found
        return found

    def reference_cotangent(self, ws: Sequence[Any]) -> list[Any] | None:
        """`vjp(w)` of the undecorated primal (JAX's convention, also for complex values: what a correct bwd
        returns for the same `w`), one entry per differentiable argument."""
        res = self.reference_cotangent_raw(ws)
        return res if res is not None and all_finite(res) else None

    def reference_cotangent_raw(self, ws: Sequence[Any]) -> list[Any] | None:
        """`reference_cotangent` with its non-finite entries kept (None only where autodiff does not run): the
        elementwise reference for "NaN/inf on one side only"."""
        vjp_fn = self.reference_vjp()
        if vjp_fn is None:
            return None
        res, exc = quiet_call(vjp_fn, jax.tree_util.tree_unflatten(self.out_treedef, list(ws)))
        if exc is not None:
            return None
        return [np.asarray(r) for r in res]

    def reference_jvp(self, tangents: Sequence[Any], raw: bool = False) -> list[np.ndarray] | None:
        """JAX's JVP of the undecorated primal for tangents of the differentiable args, as output leaves (None
        where it has NaN/inf entries, unless `raw`)."""
        if self.fun is None:
            return None
        if self.memo.reference_jvp_error is not None:
            return None
        res, exc = quiet_call(jax.jvp, self.diff_fn(self.call_primal), tuple(self.diff_values), tuple(tangents))
        if exc is not None:
            self.memo.reference_jvp_error = exc
            return None
        leaves = [np.asarray(t) for t in jax.tree_util.tree_leaves(res[1])]
        return leaves if raw or all_finite(leaves) else None

    @property
    def out_treedef(self) -> Any:
        if self.subject.kind == "primitive" and self.subject.obj.multiple_results:
            # Under every transformation a multiple-results bind returns a list, even when the eager impl returns
            # a tuple (equinox's announce_jaxpr_p): cotangents must take the list, or JAX rejects their structure.
            return jax.tree_util.tree_structure(list(self.out))
        return jax.tree_util.tree_structure(self.out)


def _name_source(subject: Any) -> Any:
    """The function whose signature names a subject's arguments (for a primitive, its user-written impl, else its
    abstract eval: an impl `partial(dispatch.apply_primitive, p)` is JAX's own, `(prim, *args)`)."""
    if subject.kind == "primitive":
        impl, abstract = _compat.impl(subject.obj), _compat.abstract_eval_rule(subject.obj)
        if impl is not None and not _locate.is_user_code(impl) and abstract is not None:
            return abstract
        return impl or abstract
    return subject.obj


def state(ctx: Context) -> GradState:
    if ctx.cache.grad is None:
        ctx.cache.grad = GradState(ctx)
    return ctx.cache.grad


def require(st: GradState, blockers: Sequence[rules.Rule] = ()) -> None:
    """SkipCheck when an earlier finding makes the rules' output unusable for this check: any blocker, or only
    those of `blockers` (and `REVERSE_ONLY` always: no check can evaluate such a JVP rule). Findings are never
    filtered at this point, so suppressing a code never skips a check."""
    for blocker, why in st.blocked.items():
        if not blockers or blocker in blockers or blocker == REVERSE_ONLY:
            name = blocker.code if isinstance(blocker, rules.Rule) else blocker
            raise SkipCheck(f"blocked by {name}: {why}")


# The stages of `GradState.blocked`, as checks declare them (`@check(provides=..., reads=...)`): "grad.blocked.NAME"
# is what check NAME puts there. A check calling `require` reads the stages it must not run past, so the engine
# runs the checks setting them first.
VJP_BLOCKERS = ("grad.blocked.vjp-fwd", "grad.blocked.vjp-bwd-structure", "grad.blocked.vjp-cotangents")
JVP_BLOCKERS = ("grad.blocked.jvp-rule-output", "grad.blocked.jvp-linearity", "grad.blocked.jvp-symbolic-zeros")
EVERY_BLOCKER = (*VJP_BLOCKERS, *JVP_BLOCKERS, "grad.blocked.primitive-transpose", "grad.blocked.custom-solves",
                 "grad.blocked.function-grad")

# A blocker that no rule selects: fwd's residuals are not arrays (reported as JXG012), which makes every later
# check that calls bwd meaningless, but is not the fwd/primal mismatch that `require(st, (VJP_FWD_MISMATCH,))` means.
RESIDUALS_NOT_ARRAYS = "fwd-residuals"
# Another: the JVP rule's tangent is a primitive JAX can only transpose (JXN019). Forward mode cannot run, so every
# check that evaluates the JVP rule is blocked; `reverse-only-reference` checks reverse mode instead.
REVERSE_ONLY = "reverse-mode-only"


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
