"""One try of inputs on a target: does it run (finite), and with the abstract eval agreeing when asked; the
arities inference tries. Shared by the engine and the ladder's climb (`_climb`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from .. import _compat
from .._checks._base import Subject
from .._core._errors import InferenceError, dependency_failure
from .._harness import call_user
from .._loading._inputs import ArgSpec, draw
from . import _signature


def _nonfinite(value: Any) -> bool:
    for leaf in jax.tree_util.tree_leaves(value):
        arr = np.asarray(leaf)
        if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
            return True
        if arr.dtype.name == "bfloat16" and not np.all(np.isfinite(arr.astype(np.float32))):
            return True
    return False


def _try_call(subject: Subject, specs: list[ArgSpec], domain: str, seed: int, agree: bool = False,
              failures: list[BaseException] | None = None) -> tuple[bool, str]:
    """(ran and finite, error text) for one draw of `specs` from `domain` (`agree`: `_assumed_params.disagreement`);
    `failures` receives the exception the user's code raised."""
    rng = np.random.default_rng(seed)
    args = [draw(s, rng, domain) for s in specs]
    saved = subject.specs
    subject.specs = specs
    try:
        ran = call_user(lambda: jax.block_until_ready(subject.call(*args)))
        traced = call_user(lambda: jax.eval_shape(subject.call, *args)) if agree and ran.error is None else None
    finally:
        subject.specs = saved
    if traced is not None:  # only while assuming bind params: the abstract eval must describe what the impl gave
        from ._assumed_params import disagreement

        why = disagreement(ran.value, traced)
        if why:
            return False, why
    if ran.error is not None:  # the user's code rejected these inputs
        exc = ran.error
        if failures is not None:
            failures.append(exc)
        text = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if _compat.is_platform_error(exc) and not text.startswith(_MISSING_DEPENDENCY):
            # a kernel that cannot run on this machine: inputs its trace accepts are inputs (its rules are then
            # checked abstractly, `_checks._abstract`)
            traced = call_user(lambda: jax.eval_shape(subject.call, *args))
            if traced.error is None:
                return True, text
        # what even tracing cannot get past: an import failure, also wrapped in the library's own exception, is a
        # missing dependency (JXN011), not inputs that could not be inferred
        return False, dependency_failure(exc) or text
    return not _nonfinite(ran.value), "non-finite output"


def _arity(subject: Subject, operands: Sequence[Sequence[str]] = ()) -> list[int]:
    """Candidate positional arities (static positions included), most likely first. `operands`: the operand lists
    of the library's own `prim.bind(...)` calls, whose lengths come first for rules taking `*args`."""
    sig = _signature.signature_of(subject)
    bound = list(dict.fromkeys(len(o) for o in operands if o))
    if sig is None:
        return bound + [n for n in (1, 2, 3) if n not in bound]
    params = _signature.positional(sig)
    required = [p for p in params if p.default is p.empty]
    if any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()):
        return bound + [n for n in sorted({len(required), 1, 2, 3} - {0}) if n not in bound] or [1]
    if subject.kind == "primitive":
        return [len(required) - _params_taken(required, subject.params)] if required else [1]
    return [len(required)]


def _params_taken(required: list, params: dict) -> int:
    return sum(1 for p in required if p.name in params)


_MISSING_DEPENDENCY = ("ModuleNotFoundError", "ImportError")


class MissingDependencyError(InferenceError):
    """The target imports an optional dependency at call time that is not installed: not an inference failure."""

    def __init__(self, label: str, error: str):
        super().__init__(f"{label} could not run: {error} (an optional dependency is missing); install it to "
                         "check this target", label=label, tried=[], last_error=error, arity=0)
        match = re.search(r"No module named '([\w.]+)'", error)
        self.dependency = match.group(1).split(".")[0] if match else error
