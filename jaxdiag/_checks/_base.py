"""What a check is and what it gets: the `Subject` under test and a `Context` with seeded inputs and caches."""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .._core import _commands
from .. import _compat
from .._loading._inputs import ArgSpec, choose_batch_size, draw
from .._core._report import Finding, Location
from .._harness.boundary import Signal
from .._harness.cache import SubjectCache


class SkipCheck(Signal):
    """Raised by a check that cannot run here; the message says why (shown as the check's detail).

    `note=True` when the skip hides something the user must hear about, typically a defect this JAX release cannot
    show (a rule using an internal that only newer releases removed): the engine then also reports the reason as
    a JXR902 check-skipped finding (info) at `location`, rather than a silent pass. `findings`: what the check
    found before it could go no further (a note that says why), reported with the skip: a check that compared
    nothing is never a pass.
    """

    def __init__(self, reason: str = "", *, note: bool = False, location: Location | None = None,
                 findings: Sequence[Finding] = ()) -> None:
        super().__init__(reason)
        self.note = note
        self.location = location
        self.findings = list(findings)


@dataclass
class Subject:
    """One thing to check: the target itself, or a user primitive / custom function found inside it.

    `call(*args)` applies it to positional arrays: `prim.bind(*args, **params)` for a primitive, `obj(*args)`
    otherwise. `specs` describe one example (no batch axis); `domain` is where example values come from.
    """

    label: str
    kind: str
    obj: Any
    specs: list[ArgSpec]
    params: dict[str, Any] = field(default_factory=dict)
    domain: str = "normal"
    location: Location | None = None
    module: str = ""
    parent: "Subject | None" = None
    eqn_location: Location | None = None  # the line in the parent function that created this call
    # Positional arguments that are not arrays (an int axis, a callable in nondiff_argnums), by position: `specs`
    # describe the array arguments only and `call` puts these back in place.
    static_args: dict[int, Any] = field(default_factory=dict)
    # The user's real signature when it has pytrees or keys: `obj` is then a flat view of `original` taking one
    # array per spec (see _layout), and `arg_texts` say what each positional argument was.
    original: Any = None
    arg_texts: list[str] | None = None
    layout: Any = None  # the `_layout.Layout` the flat view was made with (a view of another object takes it too)
    # Indices into `specs` that JAX never perturbs at this nested rule's call site in its function (a symbolic-zero
    # tangent there: stop-gradiented, built from integers, refused by a wrapper); the grad checks leave them fixed.
    unperturbed: frozenset[int] = frozenset()
    # Index into `specs` -> the tangents this nested rule receives there when the function's own inputs are perturbed
    # (one per random direction of those inputs, pushed through the function's JVP): a Gram matrix's Cholesky gets
    # only Hermitian tangents. The grad checks draw their directions in the span of these (`GradState.direction`).
    received_tangents: dict[int, list[np.ndarray]] = field(default_factory=dict)
    # A nested primitive the function binds only under tracing (inside jit, scan, ...): its impl never runs in the
    # user's program, so it is not called eagerly; its per-example reference runs under jax.jit like their code.
    traced_only: bool = False
    # Indices into `specs` of a nested primitive's operands that depend on none of its function's inputs (a captured
    # constant, an index built in the function): vmap of the function never batches them, so neither do the checks.
    unbatched: frozenset[int] = frozenset()
    # Indices into `specs` of a nested primitive's operands that are its function's own inputs, bound unchanged (a
    # thin public wrapper's parameters): the function says nothing of how they vary; its callers do (`_call_sites`).
    handed_through: frozenset[int] = frozenset()
    # Of those, the ones every call of that wrapper in the package builds from static configuration (its int and
    # str settings: `_configured_operands`): the package never batches them, nor differentiates them.
    configured: frozenset[int] = frozenset()
    # A nested primitive's outputs (by position) that its function never reads (`d, W, S = p.bind(...); return d, W`):
    # no derivative the package takes reaches them, so the grad checks give them zero cotangents and compare no
    # tangent of theirs. Where every bind of the rule in the function drops them.
    unread_outputs: frozenset[int] = frozenset()
    # A nested custom_* call made only inside a custom_jvp/custom_vjp's primal function: JAX differentiates it through
    # that enclosing rule, never through its own JVP (so, for a custom_vmap, never `vmap` of its `jvp`).
    inside_custom_derivative: bool = False
    # Where its inputs come from (`_core._provenance`), set as its checks start: the engine's and the parent's reports
    # of a check that never finished (a crash, the time limit) are graded by it.
    provenance: str = ""
    # The named axis its collectives run over (`_run/_named_axis`): `obj` is then its view on that axis's devices.
    named_axis: str = ""
    # Keyword options passed on every call of a function target (`_run/_asked_options`: what its own error asked for).
    keywords: dict[str, Any] = field(default_factory=dict)

    @property
    def never_batched(self) -> frozenset[int]:
        """Operands no use of this nested rule batches: built from none of its function's inputs, or configured."""
        return self.unbatched | self.configured

    @property
    def input_texts(self) -> list[str]:
        """What the report shows as inputs: one text per positional argument."""
        return list(self.arg_texts) if self.arg_texts is not None else [str(s) for s in self.specs]

    @property
    def keyword_texts(self) -> list[str]:
        """What the report shows of the keyword options every call passes: `num_iters=4`."""
        return [f"{name}={value!r}" for name, value in self.keywords.items()]

    def call(self, *args: Any) -> Any:
        # Users call JAX code with jax Arrays (or tracers), and an eager bind hands its operands to the impl
        # unchanged: an impl written in jax.numpy (`buffer.at[i].set(v)`) must not get the NumPy example buffers,
        # nor a function that indexes its input with a traced loop counter (`x[i]` inside fori_loop).
        args = tuple(_as_jax_operand(x) for x in args)
        if self.static_args:
            args = self.full_args(args)
        if self.kind == "primitive":
            return self.obj.bind(*args, **self.params)
        return self.obj(*args, **self.keywords)

    def full_args(self, arrays: Any) -> tuple:
        """The positional arguments: `arrays` (one per spec) with `static_args` inserted at their positions."""
        arrays = list(arrays)
        n = len(arrays) + len(self.static_args)
        return tuple(self.static_args[i] if i in self.static_args else arrays.pop(0) for i in range(n))

    @property
    def seed_key(self) -> str:
        """A canonical identity of the target: seeds derive from it, so a report does not depend on how the target
        is spelled. The module part is reduced to its module's own name: `pkg.mod:f`, `src/pkg/mod.py:f` and
        `/tmp/x/src/pkg/mod.py:f` all give `mod:f`."""
        module_part, sep, rest = self.label.partition(":")
        stem = os.path.basename(module_part).removesuffix(".py")
        return stem.rsplit(".", 1)[-1] + sep + rest

    @property
    def name(self) -> str:
        if self.kind == "primitive":
            return self.obj.name
        obj = self.original if self.original is not None else self.obj
        fn = getattr(obj, "fun", None) or obj
        return getattr(fn, "__name__", None) or self.label


@dataclass
class Options:
    command: str = "batching"  # a command of the registry (`_commands.COMMANDS`): it says which families run
    seed: int = 0
    in_axes: Any = None
    out_axes: Any = None
    order: int = 1
    include_jax: bool = False
    fixes: bool = False  # propose source edits and verify them by re-running the checks (--diff / --fix)
    show_jaxpr: bool = False  # attach the exposing jaxpr to each finding (--show-jaxpr)
    platforms: tuple[str, ...] = ("cpu",)  # platforms whose lowering must exist (--platforms)
    # where given inputs come from ("declared" or "recorded"; `_provenance`): inputs the engine infers are "inferred"
    provenance: str = "declared"
    # the options of a registry command that have no typed field above (a new family's), by name
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def for_command(cls, command: str, **values: Any) -> "Options":
        """The options of one run of `command`: known names fill the typed fields, the others go to `extra`."""
        names = {f.name for f in fields(cls)} - {"extra", "command"}
        typed = {k: v for k, v in values.items() if k in names}
        return cls(command=command, **typed, extra={k: v for k, v in values.items() if k not in names})

    def runs(self, family: str) -> bool:
        return _commands.runs(self.command, family)


class Context:
    """Per (subject, check): seeded RNG, example inputs, shared caches across checks of the same subject."""

    def __init__(self, subject: Subject, options: Options, check_name: str, cache: SubjectCache):
        self.subject = subject
        self.options = options
        self.check_name = check_name
        self.cache = cache  # shared by all checks of this subject: reuse traces and reference results
        seed = zlib.crc32(f"{options.seed}:{subject.seed_key}:{check_name}".encode())
        self.rng = np.random.default_rng(seed)

    @property
    def specs(self) -> list[ArgSpec]:
        return self.subject.specs

    def call(self, *args: Any) -> Any:
        return self.subject.call(*args)

    def example(self) -> list[np.ndarray]:
        """One example's arguments (the same for every check of this subject)."""
        if self.cache.example is None:
            rng = np.random.default_rng(zlib.crc32(f"{self.options.seed}:{self.subject.seed_key}:example".encode()))
            self.cache.example = [draw(s, rng, self.subject.domain) for s in self.specs]
        return self.cache.example

    def draw(self, spec: ArgSpec, lead: tuple[int, ...] = ()) -> np.ndarray:
        return draw(spec, self.rng, self.subject.domain, lead)

    def draw_examples(self, batch: int) -> list[np.ndarray]:
        """`batch` distinct examples stacked on a new leading axis, one array per argument. A nested rule checked at
        the values its function passes it gets rows near those values: random draws could break a precondition
        every real caller keeps (increasing save times, a positive step), which is not the rule's defect."""
        if self.cache.observed and self.cache.example is not None:
            return [_rows_near(x, batch) for x in self.cache.example]
        return [self.draw(s, (batch,)) for s in self.specs]

    def batch_size(self, extra_shapes: Iterable[tuple[int, ...]] = ()) -> int:
        return choose_batch_size([s.shape for s in self.specs] + list(extra_shapes))


def _rows_near(x: np.ndarray, batch: int) -> np.ndarray:
    """`batch` rows: `x` itself, then `x` shrunk by 1 % per row (a positive factor keeps order, signs and strict
    inequalities; rows differ by more than the comparison tolerance, so a batching rule that mixes them up shows);
    non-float arrays repeated as they are."""
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.inexact):
        return np.stack([x] * batch)
    return np.stack([(x * 0.99 ** j).astype(x.dtype) for j in range(batch)])


def _as_jax_operand(x: Any) -> Any:
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype != _compat.float0:
        return _compat.device_array(x)
    return x


@dataclass(frozen=True)
class Check:
    """A named check: runs for the given command family on the given subject kinds and yields findings.

    What it shares with the other checks of a subject is declared, by name: a field of `SubjectCache`
    ("jit_broken"), of the grad checks' `GradMemo` ("grad.eager_grad"), or a stage of the grad blockers
    ("grad.blocked.vjp-fwd": what that check put in `GradState.blocked`). The engine orders the checks from these
    (`_checks._order`), never from where a module lists them:
    - `provides`: what it leaves for later checks;
    - `needs`: what must exist before it runs: every check providing it runs first, also when only this check is
      re-run (a fresh-draw retry), and a run where no applicable check provides it is jaxdiag's own bug;
    - `reads`: what it uses when an earlier check left it (a blocker, a result it would otherwise recompute): it
      runs after the checks providing it, but a retry of this check alone does not bring them back.
    Lazily computed entries that any check computes on first use (`example_output`, `GradState.out`) need no
    declaration: whoever asks first computes them.
    """

    name: str
    family: str  # "batching" or "grad"
    kinds: frozenset[str]
    run: Callable[[Context], Iterable[Finding]]
    needs: frozenset[str] = frozenset()
    reads: frozenset[str] = frozenset()
    provides: frozenset[str] = frozenset()
    # reads the rule's source, never runs it (a removed-API scan): a pass verifies nothing of its behaviour
    static: bool = False

    def applies(self, subject: Subject, options: Options) -> bool:
        return options.runs(self.family) and subject.kind in self.kinds


def check(name: str, family: str, kinds: Iterable[str], *, needs: Iterable[str] = (), reads: Iterable[str] = (),
          provides: Iterable[str] = (), static: bool = False
          ) -> Callable[[Callable[[Context], Iterable[Finding]]], Check]:
    """Decorator: `@check("batching-spy", "batching", {"primitive"})` turns a generator function into a Check;
    `needs`/`reads`/`provides` declare the shared state it uses (see `Check`)."""

    def wrap(fn: Callable[[Context], Iterable[Finding]]) -> Check:
        return Check(name=name, family=family, kinds=frozenset(kinds), run=fn, needs=frozenset(needs),
                     reads=frozenset(reads), provides=frozenset(provides), static=static)

    return wrap
