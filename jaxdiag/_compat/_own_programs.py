"""jaxdiag's own programs (the grad compositions, a rule over several tangent sets, the jit variants of vmap, the
jit of a primitive's bind, the fused batching variants): compiled for how they are used, once, and run once or
twice on a handful of elements.

Such a program is compiled at XLA's backend optimisation level 0: the backend's optimisation (LLVM -O2 on CPU)
costs more compile time than it can save. On CPU, XLA's older elemental emitter also compiles each fusion in about
half the time of the fusion emitters (jaxlib 0.10: 12 batched dots 108 -> 57 ms, a grad composite 86 -> 37 ms).

Level 0 keeps the HLO, not always the values: the machine code differs (at -O2, `a * b + c` is one fused
multiply-add, rounded once; at level 0 it is rounded twice, as eagerly), and a computation that amplifies rounding
(a type-3 NUFFT's spreading grid) gave a gradient 60% off at level 0 that XLA's defaults and the eager run agree
on. So a finding is never made from these options alone: a check whose error or warning came after a fast-compiled
program ran is run again inside `default_compiles()`, where every program has XLA's defaults, the ones the user's
own programs have, and that run's findings are the ones reported (`_run/_confirm.py`). `fast_runs` counts the runs
of fast-compiled programs, so the engine knows whether a check used one.

Except where the program loops many times: a `while_loop` (its trip count is unknown when compiling: a solver or
an adaptive quadrature iterates to convergence) or a long `scan` runs its body over and over, and there the
optimised code repays its compile. One fused batching program of an adaptive quadrature (29 vmap variants, 108k
equations) compiled in 5.5 s and ran in 27 s at level 0; with XLA's defaults 6.1 s and 7.8 s. Such a program gets
XLA's default options, the ones the user's own programs have (the fusion emitter off at the default level compiled
it in 49 s: the two options go together).

The options are set per program, through the compile of its lowering, never as a process flag: the user's own
programs in the same process keep theirs. A release whose `jax.jit` takes no compiler options compiles as usual,
and an option the installed XLA does not know is dropped at the first compile that meets it (`_compile`),
never an error in the user's run.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from typing import Any

import jax

OWN_PROGRAM_OPTIONS: dict[str, Any] = {"xla_backend_optimization_level": 0}
_CPU_PROGRAM_OPTIONS: dict[str, Any] = {"xla_cpu_use_fusion_emitters": False}
LONG_SCAN = 100  # a scan of this many iterations or more loops "many times" (a per-example lax.map does not)


def _jit_takes_compiler_options() -> bool:
    import inspect

    try:
        return "compiler_options" in inspect.signature(jax.jit).parameters
    except (TypeError, ValueError):  # pragma: no cover - a signature inspect cannot read
        return False


_JIT_COMPILER_OPTIONS = _jit_takes_compiler_options()
_OPTIONS: list[dict[str, Any]] = []  # the options of a program without long loops, once a compile settled them
_DEFAULTS_ONLY = [False]  # inside `default_compiles()`: every program compiles with XLA's default options
_FAST_RUNS = [0]  # runs of programs compiled with options other than XLA's defaults (`fast_runs`)


@contextmanager
def default_compiles() -> Iterator[None]:
    """Every own program compiled or run in this scope has XLA's default options, as the user's programs do (a
    separate executable from the fast one: both stay cached)."""
    before = _DEFAULTS_ONLY[0]
    _DEFAULTS_ONLY[0] = True
    try:
        yield
    finally:
        _DEFAULTS_ONLY[0] = before


def fast_runs() -> int:
    """How many times a program compiled with options other than XLA's defaults has run in this process."""
    return _FAST_RUNS[0]


def _known_options() -> dict[str, Any]:
    """OWN_PROGRAM_OPTIONS, plus the CPU ones when the default backend is the CPU, until a compile showed that this
    XLA refuses them (`_compile`): XLA refuses an unknown option only when it compiles, and a trivial program
    compiled once per process to ask cost every cold check one more program."""
    if _OPTIONS:
        return _OPTIONS[0]
    options = dict(OWN_PROGRAM_OPTIONS)
    if jax.default_backend() == "cpu":
        options.update(_CPU_PROGRAM_OPTIONS)
    return options


_REFUSED = (jax.errors.JaxRuntimeError, ValueError, TypeError)  # what a compile raises on an option it refuses


def _compile(lowered: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """`lowered.compile(compiler_options=options)` and the options it compiled with. Where the options hold the CPU
    ones, not yet settled, and the compile fails: once more without them, and a success settles them as unknown to
    this XLA (the first success with them, as known). A program that fails without them too raises its own error
    and settles nothing."""
    cpu = not _OPTIONS and bool(_CPU_PROGRAM_OPTIONS) and _CPU_PROGRAM_OPTIONS.items() <= options.items()
    if not cpu:
        return lowered.compile(compiler_options=options), options
    try:
        executable = lowered.compile(compiler_options=options)
    except _REFUSED as refused:  # an option this XLA does not know, or the program's own failure
        without = {k: v for k, v in options.items() if k not in _CPU_PROGRAM_OPTIONS}
        try:
            executable = lowered.compile(compiler_options=without)
        except _REFUSED:
            raise refused from None
        _OPTIONS[:] = [dict(OWN_PROGRAM_OPTIONS)]
        return executable, without
    _OPTIONS[:] = [dict(options)]
    return executable, options


def loops_many_times(closed: Any) -> bool:
    """Whether the traced program `closed` runs a loop body many times: a while loop, or a scan of LONG_SCAN
    iterations or more (nested ones included)."""
    from ._jaxprs import iter_eqns

    return any(eqn.primitive.name == "while" or (eqn.primitive.name == "scan"
                                                 and int(eqn.params.get("length", 0)) >= LONG_SCAN)
               for eqn in iter_eqns(closed))


def program_options(closed: Any) -> dict[str, Any]:
    """The compiler options of jaxdiag's program traced as `closed`: XLA's defaults where it loops many times, the
    fast-compiling ones otherwise."""
    return {} if loops_many_times(closed) else dict(_known_options())


class OwnProgram:
    """`jax.jit(fn)` compiled with `program_options` of its trace: one executable per input structure and types,
    as jit keeps one per signature."""

    def __init__(self, fn: Any) -> None:
        self._jitted = jax.jit(fn)
        self._executables: dict[Hashable, tuple[Any, bool]] = {}  # -> (executable, compiled with other options)
        self.options_used: list[dict[str, Any]] = []  # in compile order (tests read it)

    def __call__(self, *args: Any) -> Any:
        leaves, tree = jax.tree_util.tree_flatten(args)
        defaults = _DEFAULTS_ONLY[0]
        key = (defaults, tree, *map(_signature, leaves))
        compiled = self._executables.get(key)
        if compiled is None:
            traced = self._jitted.trace(*args)
            executable, options = _compile(traced.lower(), {} if defaults else program_options(traced.jaxpr))
            self.options_used.append(options)
            compiled = self._executables[key] = (executable, bool(options))
        executable, fast = compiled
        _FAST_RUNS[0] += fast
        return executable(*args)

    def trace(self, *args: Any) -> Any:
        """`jax.jit(fn).trace(*args)`: the program a call on these arguments compiles (a cache hit after that call)."""
        return self._jitted.trace(*args)


def _signature(leaf: Any) -> Hashable:
    """What a compiled executable is specialised on, for one argument leaf."""
    shape = getattr(leaf, "shape", None)
    return (type(leaf), None if shape is None else tuple(shape), str(getattr(leaf, "dtype", "")),
            getattr(leaf, "weak_type", None), getattr(leaf, "sharding", None))


def own_jit(fn: Any) -> Any:
    """`jax.jit(fn)` for a program jaxdiag builds and calls at the top level (JAX refuses compiler options on a jit
    that runs inside another trace, such as `vmap(jit f)`), compiled with `program_options`."""
    if _JIT_COMPILER_OPTIONS:
        return OwnProgram(fn)
    return jax.jit(fn)
