"""Public JAX attributes that newer releases removed (what an old release cannot show by running a rule): the
table, and finding their uses in a rule's code.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator
from typing import Any

from .._core._locate import is_user_code
from ._registries import _closure_vars

# ---------------------------------------------------------------------------------------------------------------
# --- public JAX attributes that newer releases removed (what an old release cannot show by running a rule) ---
# ---------------------------------------------------------------------------------------------------------------

# THE table of removed JAX attributes (the JXR008 finding's advice and the JXN003 portability note both read it).
# Attributes present on jax 0.5.3 and absent from jax 0.10.2, measured by diffing `dir()` of each module on the two
# releases (only those extension code plausibly uses), plus `jax.core.Primitive` and `jax.interpreters.xla`'s
# `ShapedArray`, which moved. On a release that removed them, a rule using one raises AttributeError when it runs,
# which the checks report as JXR008 with this advice (`removed_api_advice`). On a release that still has them
# nothing fails, so `removed_api_uses` finds them in the rule's code instead. The value is the replacement, where
# there is one; DROP_IN holds those that are a drop-in expression, so a fix can rewrite the user's line.
REMOVED_BY_JAX = "0.10"  # the release the table was measured against, for messages (never compared)
REMOVED_IN_NEWER_JAX: dict[str, dict[str, str]] = {
    "jax.interpreters.batching": {
        "not_mapped": "use `None` for an unbatched dim (`d is None`)",
        "NotMapped": "use `None` (`type(None)`) for an unbatched dim",
        "moveaxis": "use `jnp.moveaxis`, or `batching.bdim_at_front(x, bx, size)`",
        "matchaxis": "move the batch axis with `jnp.moveaxis` / `batching.bdim_at_front`",
        "broadcast_batcher": "register with `batching.defbroadcasting(prim)`",
        "vectorized_batcher": "register with `batching.defvectorized(prim)`",
        "reducer_batcher": "register with `batching.defreducer(prim, ...)`",
        "zero_if_mapped": "", "BatchTracer": "", "BatchTrace": "", "batch_jaxpr": "", "batch": "",
        "vtile": "", "Zero": "use `jax.interpreters.ad.Zero`",
    },
    "jax.interpreters.ad": {
        "linear_jvp": "register with `ad.deflinear2(prim, transpose)`",
        "linear_transpose": "register with `ad.deflinear2(prim, transpose)`",
        "linear_transpose2": "register with `ad.deflinear2(prim, transpose)`",
        "standard_jvp": "register with `ad.defjvp(prim, *rules)`",
        "standard_jvp2": "register with `ad.defjvp2(prim, *rules)`",
        "bilinear_transpose": "register with `ad.defbilinear(prim, lhs_rule, rhs_rule)`",
        "defjvp_zero": "", "zeros_like_p": "use `jnp.zeros_like`", "zero_jvp": "", "backward_pass": "",
        "vjp": "use `jax.vjp`", "jvp_jaxpr": "", "call_transpose": "", "map_transpose": "",
    },
    "jax.interpreters.mlir": {
        "custom_call": "use `jax.ffi.ffi_call` / `jax.ffi.ffi_lowering`",
        "hlo": "", "func_dialect": "",
        "dense_bool_elements": "", "dense_bool_array": "", "ReplicaAxisContext": "",
    },
    "jax.core": {
        "get_aval": "use `jax.typeof(x)` or `x.aval`", "concrete_or_error": "", "is_concrete": "",
        "mapped_aval": "", "unmapped_aval": "", "new_jaxpr_eqn": "", "call": "", "call_impl": "",
        "CallPrimitive": "", "UnshapedArray": "use `ShapedArray`", "DShapedArray": "use `ShapedArray`",
        "valid_jaxtype": "", "primal_dtype_to_tangent_dtype": "", "check_jaxpr": "", "subjaxprs": "",
        "find_top_trace": "", "Primitive": "import it from `jax.extend.core` (`from jax.extend.core import Primitive`)",
    },
    "jax.interpreters.xla": {"canonicalize_dtype": "use `jax.dtypes.canonicalize_dtype`",
                             "ShapedArray": "import it from `jax.core` (`from jax.core import ShapedArray`)"},
    "jax.lax": {"zeros_like_array": "use `jnp.zeros_like(x)` (or `ad.instantiate_zeros(t)` for a tangent)"},
    "jax.lib": {
        "xla_client": "use `jax.ffi` / `jax.extend` instead of `jax.lib.xla_client`",
        "xla_extension": "", "xla_bridge": "use `jax.devices()` or `jax.extend.backend`",
    },
    "jax.custom_derivatives": {"custom_jvp_call_jaxpr_p": "", "custom_vjp_call_jaxpr_p": ""},
}


# Removed attributes whose replacement is an expression that fits where the old name stood.
DROP_IN = {"not_mapped": "None", "zeros_like_array": "jnp.zeros_like"}


def removed_api_advice(module: str, attr: str) -> str:
    """What to use instead of `module.attr` (a `jax` module attribute a rule read and this JAX lacks), from the table:
    the entry of that module, else of any module with that attribute (a name read through a re-exporting module),
    else a pointer to the changelog."""
    public = module.replace("jax._src.", "jax.", 1)
    known = [REMOVED_IN_NEWER_JAX.get(public, {})] + list(REMOVED_IN_NEWER_JAX.values())
    advice = next((table[attr] for table in known if table.get(attr)), "")
    if not advice and _still_here(module, attr):  # `from jax.config import config`: a module no more
        return f"`{module}.{attr}` is no longer a module of its own: `from {module} import {attr}`"
    if not advice:
        return f"look up what replaced `{module}.{attr}` in the JAX changelog"
    if attr in REMOVED_IN_NEWER_JAX.get(public, {}):  # measured there: say when it went
        advice += f"; `{public}.{attr}` was removed in JAX {REMOVED_BY_JAX}"
    return advice


def _public_module_name(module: Any) -> str:
    """`jax._src.interpreters.batching` -> `jax.interpreters.batching` (the removals are keyed by public name)."""
    return str(getattr(module, "__name__", "")).replace("jax._src.", "jax.", 1)


def _still_here(public: str, attr: str) -> bool:
    import importlib
    import warnings

    try:
        module = importlib.import_module(public)
    except ImportError:
        return False
    with warnings.catch_warnings():  # deprecated attributes warn on access
        warnings.simplefilter("ignore")
        return hasattr(module, attr)


@functools.lru_cache(maxsize=None)
def removed_apis_still_here() -> tuple[tuple[str, str], ...]:
    """(module, attribute) pairs of REMOVED_IN_NEWER_JAX that this JAX release still has: a rule using one works
    here and breaks on upgrade. Empty on a release that removed them all (the rule then raises, and JXR008 shows)."""
    return tuple((m, a) for m, attrs in REMOVED_IN_NEWER_JAX.items() for a in attrs if _still_here(m, a))


def _code_objects(code: Any) -> Iterator[Any]:
    yield code
    for const in code.co_consts:
        if inspect.iscode(const):
            yield from _code_objects(const)


def removed_api_uses(fn: Any) -> list[tuple[str, str, int | None, str]]:
    """(module, attribute, line, replacement) for each attribute of REMOVED_IN_NEWER_JAX that `fn`'s code reads and
    this JAX still has: `batching.not_mapped`, `jax.interpreters.batching.not_mapped`, or a `not_mapped` imported
    from that module into the function's globals. Read from the bytecode, nested functions included."""
    import dis

    present = set(removed_apis_still_here())
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = inspect.unwrap(fn) if callable(fn) else fn
    code = getattr(fn, "__code__", None)
    if not present or code is None or not is_user_code(fn):
        return []  # nothing to find, or JAX's own helper (`defvectorized`'s batcher, ...)
    env = dict(getattr(fn, "__globals__", {}))
    env.update(_closure_vars(fn))
    by_name = {a: m for m, a in present}
    found: dict[tuple[str, str], int | None] = {}
    for co in _code_objects(code):
        current: Any = None  # the value the last load produced, when it is a module or an attribute of one
        line = None
        for ins in dis.get_instructions(co):
            if ins.starts_line:
                line = ins.starts_line if isinstance(ins.starts_line, int) else getattr(ins, "line_number", None)
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF"):
                name = ins.argval if isinstance(ins.argval, str) else getattr(ins.argval, "name", None)
                current = env.get(name) if isinstance(name, str) else None
                module = by_name.get(name) if isinstance(name, str) else None
                if module is not None and isinstance(name, str) and name in env and not inspect.ismodule(env[name]):
                    imported = _module_attr(module, name)
                    if env[name] is imported:
                        found.setdefault((module, name), line)
            elif ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and inspect.ismodule(current):
                public = _public_module_name(current)
                if (public, ins.argval) in present:
                    found.setdefault((public, ins.argval), line)
                current = getattr(current, ins.argval, None)
            else:
                current = None
    return [(m, a, line, REMOVED_IN_NEWER_JAX[m][a]) for (m, a), line in found.items()]


def _module_attr(module: str, attr: str) -> Any:
    import importlib
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(importlib.import_module(module), attr, object())
